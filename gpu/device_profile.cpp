#include "gpu/device_profile.h"

#include "gpu/device.h"

namespace tapdiff::gpu {

DeviceProfile device_profile(const Device& device, Activations activations, std::span<const int> head_dims) {
  DeviceProfile p;
  p.info = device.info();
  p.activations = activations;
  p.cooperative_matrix_missing = device.cooperative_matrix_missing();
  p.cooperative_matrix2_missing = device.cooperative_matrix2_missing();
  p.cooperative_matrix2_wide_missing = device.cooperative_matrix2_wide_missing();
  for (int head_dim : head_dims)
    if (p.attention_coop2_missing.empty())
      p.attention_coop2_missing = device.attention_coop2_missing(static_cast<std::uint32_t>(head_dim));
  return p;
}

}  // namespace tapdiff::gpu
