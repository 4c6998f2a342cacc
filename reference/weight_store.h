#pragma once
// The reference engine's weight matrices as Eigen matrices of its scalar type. When their copies
// (dequantized, widened or rounded: weight_matrix.h) fit the memory budget, every matrix is made
// once at load; otherwise the weights are streamed: a layer's matrices are made when the layer
// first asks for one and dropped when another layer does, so the engine holds one layer's copies
// (plus the memory-mapped file) at a time. A Llama-3-8B model in f64 is 64 GB of copies; streamed,
// it is 1.75 GB, at the cost of dequantizing every matrix once per pass.
#include <cstdint>
#include <map>
#include <utility>

#include "model/weights.h"
#include "reference/emulation.h"
#include "reference/weight_matrix.h"

namespace tapdiff::reference {

// A quarter of the machine's physical memory: the default budget.
std::uint64_t default_weight_budget();

template <typename S>
class WeightStore {
 public:
  // Each matrix rounded as an emulation rounds its kind (emulation.h: weight_storage).
  WeightStore(const model::Model& model, const Roundings& roundings, std::uint64_t budget_bytes);

  // A per-layer matrix (layer >= 0) or a global one (token_embd, output; layer -1). Streamed, the
  // reference stays valid until a different layer is asked for.
  const WeightMatrix<S>& get(model::WeightKind kind, int layer = -1);
  bool streaming() const { return streaming_; }
  std::uint64_t copy_bytes() const { return copy_bytes_; }  // of every matrix, as if all were held

 private:
  const model::Model* model_;
  Roundings roundings_;
  std::uint64_t copy_bytes_ = 0;
  bool streaming_ = false;
  std::map<std::pair<model::WeightKind, int>, WeightMatrix<S>> held_;
  int held_layer_ = -2;  // streaming: the layer whose matrices held_ holds
};

extern template class WeightStore<float>;
extern template class WeightStore<double>;

}  // namespace tapdiff::reference
