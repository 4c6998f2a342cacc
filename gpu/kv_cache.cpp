#include "gpu/kv_cache.h"

#include <algorithm>

#include <fmt/core.h>

#include "gpu/stream.h"
#include "model/errors.h"

namespace tapdiff::gpu {
namespace {

constexpr int kMinRows = 256;
constexpr std::uint64_t kKvBlock = 256ull << 20;

}  // namespace

KvCache::KvCache(const Device& device, int n_layers, int kv_dim, std::uint32_t element_bytes, int max_rows)
    : device_(&device), n_layers_(n_layers), kv_dim_(kv_dim), element_bytes_(element_bytes), max_rows_(max_rows) {}

void KvCache::reserve(Stream& stream, int rows) {
  if (rows <= capacity_) return;
  if (max_rows_ > 0 && rows > max_rows_)
    throw UsageError(
        fmt::format("the Vulkan engine's KV cache holds at most {} positions (--max-context); position {} "
                    "was asked for",
                    max_rows_, rows - 1));
  int capacity = std::max({rows, 2 * capacity_, kMinRows});
  if (max_rows_ > 0) capacity = std::min(capacity, max_rows_);
  const std::uint64_t bytes =
      static_cast<std::uint64_t>(capacity) * static_cast<std::uint64_t>(kv_dim_) * element_bytes_;
  auto arena = std::make_unique<Arena>(*device_, "KV cache", MemoryKind::device_local, kKvBlock);
  std::vector<Region> k, v;
  for (int l = 0; l < n_layers_; ++l) {
    k.push_back(arena->allocate(bytes, fmt::format("the K cache of layer {} ({} positions)", l, capacity)));
    v.push_back(arena->allocate(bytes, fmt::format("the V cache of layer {} ({} positions)", l, capacity)));
  }
  for (std::size_t l = 0; l < k_.size(); ++l) {
    stream.copy(k_[l], k[l]);
    stream.copy(v_[l], v[l]);
  }
  if (arena_) {
    retired_.push_back(std::move(arena_));
    stream.on_complete([this] { retired_.clear(); });
  }
  arena_ = std::move(arena);
  k_ = std::move(k), v_ = std::move(v);
  capacity_ = capacity;
}

Region KvCache::rows(int layer, bool value, int first, int count) const {
  TAPDIFF_ASSERT(layer >= 0 && layer < n_layers_ && first >= 0 && first + count <= capacity_,
                 "KV rows [{}, {}) of layer {} (capacity {})", first, first + count, layer, capacity_);
  const Region& whole = (value ? v_ : k_)[static_cast<std::size_t>(layer)];
  const auto row = static_cast<std::uint64_t>(kv_dim_) * element_bytes_;
  return whole.sub(static_cast<std::uint64_t>(first) * row, static_cast<std::uint64_t>(count) * row);
}

}  // namespace tapdiff::gpu
