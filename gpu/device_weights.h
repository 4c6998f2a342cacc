#pragma once
// The model's weights on the device, uploaded once. Matrices keep their stored bytes (F32, F16,
// BF16, Q8_0, Q4_0: the kernels dequantize); 1-D tensors (norm weights, biases) are widened to f32
// on the host, an exact conversion, so the kernels that read them need no dequantization.
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "gpu/memory.h"
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
  DeviceWeights(const Device& device, Stream& stream, const model::Model& model);

  const DeviceWeight& get(model::WeightKind kind, int layer = -1) const;
  const DeviceWeight* find(model::WeightKind kind, int layer = -1) const;
  std::uint64_t bytes() const { return arena_.reserved_bytes(); }

 private:
  void upload(Stream& stream, model::WeightKind kind, int layer, const model::WeightTensor& tensor);

  Arena arena_;
  std::map<std::pair<model::WeightKind, int>, DeviceWeight> weights_;
  std::uint64_t staged_ = 0;  // bytes staged since the last flush
};

}  // namespace tapdiff::gpu
