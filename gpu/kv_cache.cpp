#include "gpu/kv_cache.h"

#include <algorithm>
#include <utility>

#include <fmt/core.h>

#include "gpu/stream.h"
#include "model/errors.h"

namespace tapdiff::gpu {
namespace {

constexpr int kMinRows = 256;
constexpr std::uint64_t kKvBlock = 256ull << 20;

}  // namespace

KvCache::KvCache(const Device& device, std::vector<int> kv_dims, std::uint32_t element_bytes, int max_rows)
    : device_(&device), kv_dims_(std::move(kv_dims)), element_bytes_(element_bytes), max_rows_(max_rows) {}

void KvCache::reserve(Stream& stream, int sequences, int rows) {
  if (rows <= capacity_ && sequences <= sequences_) return;
  if (max_rows_ > 0 && rows > max_rows_)
    throw UsageError(
        fmt::format("the Vulkan engine's KV cache holds at most {} positions (--max-context); position {} "
                    "was asked for",
                    max_rows_, rows - 1));
  int capacity = rows <= capacity_ ? capacity_ : std::max({rows, 2 * capacity_, kMinRows});
  if (max_rows_ > 0) capacity = std::min(capacity, max_rows_);
  sequences = std::max(sequences, sequences_);
  auto arena = std::make_unique<Arena>(*device_, "KV cache", MemoryKind::device_local, kKvBlock);
  const std::string what = sequences > 1 ? fmt::format("{} sequences of {} positions", sequences, capacity)
                                         : fmt::format("{} positions", capacity);
  std::vector<Region> k(kv_dims_.size()), v(kv_dims_.size());
  for (std::size_t l = 0; l < kv_dims_.size(); ++l) {
    if (kv_dims_[l] == 0) continue;
    const std::uint64_t row_bytes = static_cast<std::uint64_t>(kv_dims_[l]) * element_bytes_;
    const std::uint64_t bytes =
        static_cast<std::uint64_t>(sequences) * static_cast<std::uint64_t>(capacity) * row_bytes;
    k[l] = arena->allocate(bytes, fmt::format("the K cache of layer {} ({})", l, what));
    v[l] = arena->allocate(bytes, fmt::format("the V cache of layer {} ({})", l, what));
    // Rows not written yet read as zeros: the tiled attention kernels read whole tiles of cache
    // rows, in a ragged batch also rows past the end of another sequence, weighted by p = 0; 0
    // times the NaN bits memory may hold would be NaN.
    stream.zero(k[l]);
    stream.zero(v[l]);
    const std::uint64_t old_segment = static_cast<std::uint64_t>(capacity_) * row_bytes;
    const std::uint64_t new_segment = static_cast<std::uint64_t>(capacity) * row_bytes;
    for (int s = 0; s < sequences_; ++s) {
      const auto at = static_cast<std::uint64_t>(s);
      stream.copy(k_[l].sub(at * old_segment, old_segment), k[l].sub(at * new_segment, old_segment));
      stream.copy(v_[l].sub(at * old_segment, old_segment), v[l].sub(at * new_segment, old_segment));
    }
  }
  if (arena_) {
    retired_.push_back(std::move(arena_));
    stream.on_complete([this] { retired_.clear(); });
  }
  arena_ = std::move(arena);
  k_ = std::move(k), v_ = std::move(v);
  capacity_ = capacity;
  sequences_ = sequences;
}

Region KvCache::rows(int layer, bool value, int sequence, int first, int count) const {
  TAPDIFF_ASSERT(sequence >= 0 && sequence < sequences_ && first >= 0 && first + count <= capacity_,
                 "KV rows [{}, {}) of sequence {} (capacity {} x {} sequences)", first, first + count, sequence,
                 capacity_, sequences_);
  const auto row = static_cast<std::uint64_t>(kv_dims_.at(static_cast<std::size_t>(layer))) * element_bytes_;
  return all(layer, value)
      .sub(static_cast<std::uint64_t>(base(sequence) + first) * row, static_cast<std::uint64_t>(count) * row);
}

Region KvCache::all(int layer, bool value) const {
  TAPDIFF_ASSERT(layer >= 0 && layer < static_cast<int>(kv_dims_.size()) && !k_.empty() &&
                     kv_dims_[static_cast<std::size_t>(layer)] > 0,
                 "KV cache of layer {}", layer);
  return (value ? v_ : k_)[static_cast<std::size_t>(layer)];
}

}  // namespace tapdiff::gpu
