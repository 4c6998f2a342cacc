#pragma once
// The KV cache on the device: per layer, K (after RoPE) and V of every sequence of a batch, as
// activations (f32 or f16, element_bytes each), each layer's rows as wide as its own keys (a layer
// that attends over another's cache holds none). One buffer per layer and K/V holds a segment of
// capacity() rows per sequence: row r of sequence s is buffer row s * capacity() + r, so one
// attention dispatch reads every sequence's keys. It grows by reallocation and copy (capacity
// doubles) up to an optional limit per sequence.
#include <cstdint>
#include <memory>
#include <vector>

#include "gpu/memory.h"

namespace tapdiff::gpu {

class Device;
class Stream;

class KvCache {
 public:
  // kv_dims: per layer, the channels of a key (0: the layer holds no cache); max_rows: positions
  // per sequence, 0 = no limit but the device's.
  KvCache(const Device& device, std::vector<int> kv_dims, std::uint32_t element_bytes, int max_rows);

  // Makes room for `sequences` sequences of rows [0, rows) each; what the cache held moves with
  // it, each sequence's rows into its new segment (copies recorded in the stream; the old buffers
  // live until it completes). UsageError past max_rows.
  void reserve(Stream& stream, int sequences, int rows);
  int capacity() const { return capacity_; }  // rows per sequence
  int base(int sequence) const { return sequence * capacity_; }
  // Rows [first, first + count) of one sequence in a layer's K (value = false) or V (value = true).
  Region rows(int layer, bool value, int sequence, int first, int count) const;
  // The whole buffer of a layer's K or V: every sequence's segment (asserted: a layer that holds one).
  Region all(int layer, bool value) const;

 private:
  const Device* device_;
  std::vector<int> kv_dims_;
  std::uint32_t element_bytes_;
  int max_rows_;
  int capacity_ = 0;
  int sequences_ = 0;
  std::unique_ptr<Arena> arena_;
  std::vector<Region> k_, v_;                    // per layer, [sequences_ * capacity_, kv_dims_[layer]]
  std::vector<std::unique_ptr<Arena>> retired_;  // buffers the cache moved out of
};

}  // namespace tapdiff::gpu
