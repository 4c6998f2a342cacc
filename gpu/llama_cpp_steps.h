#pragma once
// The Vulkan engine in llama.cpp's precision (--dtype llama.cpp, f32 activations): what it
// computes otherwise than the f32 math, as llama.cpp's CPU backend does. A product's input is
// rounded to its weight type's dot-product type first (and a Q4_1 or Q5_1 product given what its
// input blocks' stored sums add), K and V enter the cache as f16 values, and GELU comes from
// llama.cpp's f16 table (formats/llama_cpp_precision.h).
#include <memory>

#include "gpu/device.h"
#include "gpu/device_weights.h"
#include "gpu/kernels.h"
#include "gpu/memory.h"
#include "gpu/stream.h"
#include "model/block.h"
#include "model/host_tensor.h"

namespace tapdiff::gpu {

class LlamaCppSteps {
 public:
  // Uploads llama.cpp's GELU table where the block computes GELU by it.
  LlamaCppSteps(const Device& device, Stream& stream, Kernels& kernels, const model::Block& block);

  // Room for passes of `capacity` rows whose products' inputs are at most `widest` values, in
  // arena (the old room released with it).
  void allocate(Arena& arena, int capacity, int widest);

  // out = x W^T (+ bias) over `rows` rows, x as llama.cpp converts it for W's type.
  Kernel product(const Region& x, const DeviceWeight& w, const DeviceWeight* bias, const Region& out, int rows,
                 std::uint32_t faults);
  // K or V rows [rows, width] into their cache rows, as f16 values.
  void cache(const Region& rows, const Region& cache, int count, int width);
  // Values written into the KV cache from the host, as it holds them.
  static model::HostTensor cached_values(const model::HostTensor& rows);

  // llama.cpp's GELU table, widened to f32 [65536]; null where the block does not use it.
  const Region* gelu_table() const { return gelu_arena_ ? &gelu_table_ : nullptr; }

 private:
  Stream& stream_;
  Kernels& kernels_;
  Region rounded_, excess_;  // a product's rounded input [capacity, widest], its Q8_1 blocks' excess sums
  std::unique_ptr<Arena> gelu_arena_;
  Region gelu_table_;
};

}  // namespace tapdiff::gpu
