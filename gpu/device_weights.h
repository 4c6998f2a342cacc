#pragma once
// The model's weights on the device, uploaded once. Matrices keep their stored bytes (F32, F16,
// BF16, Q8_0, Q4_0: the kernels dequantize); 1-D tensors (norm weights, biases) are widened to f32
// on the host, an exact conversion, so the kernels that read them need no dequantization.
// With f16 weights (--dtype f16) every weight is an f16 value: F32 and BF16 matrices are stored as
// F16 (rounded to nearest even on the host, a block of rows at a time, the rows in parallel,
// straight into the upload's staging memory), 1-D tensors are rounded to f16 values (kept in f32),
// F16 matrices stay, and Q8_0/Q4_0 stay quantized (the f16 kernels round what they dequantize).
// With bf16 weights (--dtype bf16) likewise bf16: F32 and F16 matrices stored as BF16, 1-D tensors
// rounded to bf16 values, BF16 matrices and block formats as they are.
// A norm weight w is stored as norm_offset + w (model/block.h; f32 arithmetic, after the f16
// rounding), so that the norm kernel scales by what it reads.
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <utility>

#include "gpu/memory.h"
#include "gpu/shaders.h"
#include "model/weights.h"

namespace tapdiff::gpu {

class Device;
class Stream;

struct DeviceWeight {
  std::string name;  // the tensor's name in the file
  Region region;
  model::DType dtype = model::DType::f32;  // as stored on the device
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::uint32_t row_bytes = 0;  // bytes of one row as stored on the device
};

class DeviceWeights {
 public:
  // Uploads every tensor of the model through the stream (flushing as staging fills).
  // activations: the engine's; f16 and bf16 engines hold weights of that type (above).
  DeviceWeights(const Device& device, Stream& stream, const model::Model& model, Activations activations);

  const DeviceWeight& get(model::WeightKind kind, int layer = -1) const;
  const DeviceWeight* find(model::WeightKind kind, int layer = -1) const;
  std::uint64_t bytes() const { return stored_; }  // of the tensors as stored on the device

 private:
  void upload(Stream& stream, model::WeightKind kind, int layer, const model::WeightTensor& tensor);
  // Stages `size` bytes for dst, written by fill; flushes the stream once staging holds enough.
  void stage(Stream& stream, std::uint64_t size, const Region& dst,
             const std::function<void(std::span<std::byte>)>& fill);
  // A matrix converted to w.dtype (F16 or BF16, rounded to nearest even) into w.region.
  void upload_converted(Stream& stream, const model::WeightTensor& t, const DeviceWeight& w);

  Activations activations_;
  double norm_offset_;
  Arena arena_;
  std::map<std::pair<model::WeightKind, int>, DeviceWeight> weights_;
  std::uint64_t staged_ = 0;  // bytes staged since the last flush
  std::uint64_t stored_ = 0;
};

}  // namespace tapdiff::gpu
