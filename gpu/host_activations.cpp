#include "gpu/host_activations.h"

#include <cstring>

#include "model/dtype.h"

namespace tapdiff::gpu {

model::HostTensor activations_to_host(const std::byte* data, std::int64_t rows, std::int64_t cols, Activations a) {
  model::HostTensor t(model::Scalar::f32, rows, cols);
  const std::span<float> out = t.f32();
  if (a == Activations::f32) {
    std::memcpy(out.data(), data, out.size_bytes());
    return t;
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::uint16_t h = 0;
    std::memcpy(&h, data + 2 * i, 2);
    out[i] = model::f16_to_f32(h);
  }
  return t;
}

std::vector<std::byte> activations_to_device(const model::HostTensor& value, Activations a) {
  const model::HostTensor f32 = value.to(model::Scalar::f32);
  const std::span<const float> in = f32.f32();
  std::vector<std::byte> bytes(in.size() * activation_bytes(a));
  if (a == Activations::f32) {
    std::memcpy(bytes.data(), in.data(), in.size_bytes());
    return bytes;
  }
  for (std::size_t i = 0; i < in.size(); ++i) {
    const std::uint16_t h = model::f32_to_f16(in[i]);
    std::memcpy(bytes.data() + 2 * i, &h, 2);
  }
  return bytes;
}

}  // namespace tapdiff::gpu
