#include "gpu/host_activations.h"

#include <cstring>

#include "model/dtype.h"

namespace tapdiff::gpu {

model::HostTensor activations_to_host(const std::byte* data, std::int64_t rows, std::int64_t cols, Activations a) {
  model::HostTensor t;
  activations_to_host(data, rows, cols, a, t);
  return t;
}

void activations_to_host(const std::byte* data, std::int64_t rows, std::int64_t cols, Activations a,
                         model::HostTensor& out) {
  out.reshape(model::Scalar::f32, rows, cols);
  const std::span<float> values = out.f32();
  if (values.empty()) return;  // data may be null then, and memcpy's arguments never may
  if (a != Activations::f16)
    std::memcpy(values.data(), data, values.size_bytes());
  else
    model::dequantize_row(model::DType::f16, data, values.data(), out.size());  // the vectorized widening
}

std::vector<std::byte> activations_to_device(const model::HostTensor& value, Activations a) {
  const model::HostTensor f32 = value.to(model::Scalar::f32);
  const std::span<const float> in = f32.f32();
  std::vector<std::byte> bytes(in.size() * activation_bytes(a));
  if (a == Activations::f32) {
    std::memcpy(bytes.data(), in.data(), in.size_bytes());
    return bytes;
  }
  if (a == Activations::bf16) {  // a bf16 engine's buffers hold bf16 values only
    auto* out = reinterpret_cast<float*>(bytes.data());
    for (std::size_t i = 0; i < in.size(); ++i) out[i] = model::bf16_to_f32(model::f32_to_bf16(in[i]));
    return bytes;
  }
  std::vector<std::uint16_t> halves(in.size());
  model::f32_to_f16(in, halves.data());
  std::memcpy(bytes.data(), halves.data(), bytes.size());
  return bytes;
}

}  // namespace tapdiff::gpu
