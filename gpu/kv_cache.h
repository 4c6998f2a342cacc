#pragma once
// The KV cache on the device: per layer, K (after RoPE) and V as [capacity, kv_dim] activations
// (f32 or f16, element_bytes each). It grows by reallocation and copy (capacity doubles) up to an
// optional limit.
#include <cstdint>
#include <memory>
#include <vector>

#include "gpu/memory.h"

namespace tapdiff::gpu {

class Device;
class Stream;

class KvCache {
 public:
  // max_rows: 0 = no limit but the device's.
  KvCache(const Device& device, int n_layers, int kv_dim, std::uint32_t element_bytes, int max_rows);

  // Makes room for rows [0, rows); what the cache held moves with it (copies recorded in the
  // stream; the old buffers live until it completes). UsageError past max_rows.
  void reserve(Stream& stream, int rows);
  int capacity() const { return capacity_; }
  // Rows [first, first + count) of a layer's K (value = false) or V (value = true) [count, kv_dim].
  Region rows(int layer, bool value, int first, int count) const;

 private:
  const Device* device_;
  int n_layers_;
  int kv_dim_;
  std::uint32_t element_bytes_;
  int max_rows_;
  int capacity_ = 0;
  std::unique_ptr<Arena> arena_;
  std::vector<Region> k_, v_;                    // per layer, the whole [capacity, kv_dim]
  std::vector<std::unique_ptr<Arena>> retired_;  // buffers the cache moved out of
};

}  // namespace tapdiff::gpu
