#include "reference/weight_store.h"

#include <unistd.h>

namespace tapdiff::reference {
namespace {

using model::WeightKind;

// Every matrix of the model, as (kind, layer).
std::vector<std::pair<WeightKind, int>> matrices(const model::Model& m) {
  std::vector<std::pair<WeightKind, int>> all;
  for (const auto& [key, t] : m.tensors())
    if (!model::is_vector(key.first)) all.push_back(key);
  return all;
}

}  // namespace

std::uint64_t default_weight_budget() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return 8ull << 30;  // unknown: 8 GiB
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) / 4;
}

template <typename S>
WeightStore<S>::WeightStore(const model::Model& m, const Roundings& roundings, std::uint64_t budget_bytes)
    : model_(&m), roundings_(roundings) {
  for (const auto& [kind, layer] : matrices(m))
    copy_bytes_ += WeightMatrix<S>::copy_bytes(m.weight(kind, layer), weight_storage(roundings, kind));
  streaming_ = copy_bytes_ > budget_bytes;
  if (streaming_) return;
  for (const auto& [kind, layer] : matrices(m))
    held_.emplace(std::pair(kind, layer), WeightMatrix<S>(m.weight(kind, layer), weight_storage(roundings, kind)));
}

template <typename S>
const WeightMatrix<S>& WeightStore<S>::get(WeightKind kind, int layer) {
  const auto key = std::pair(kind, layer);
  if (streaming_ && layer != held_layer_) {
    held_.clear();
    held_layer_ = layer;
  }
  auto it = held_.find(key);
  if (it == held_.end())
    it = held_.emplace(key, WeightMatrix<S>(model_->weight(kind, layer), weight_storage(roundings_, kind))).first;
  return it->second;
}

template class WeightStore<float>;
template class WeightStore<double>;

}  // namespace tapdiff::reference
