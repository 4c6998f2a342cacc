#pragma once
// What the choice of kernel variants reads of a device (gpu/kernel_choice.h): its limits and
// features, the activations' type, and why each cooperative-matrix kernel cannot run on it in
// that mode ("" where it can), which Device learns from the driver. Plain data, so that the choice
// is a pure function of it: tests/test_kernel_choice.cpp checks it on the profiles of devices a
// test machine does not have (lavapipe, an H100, an H200).
#include <span>
#include <string>

#include "gpu/device_info.h"
#include "gpu/shaders.h"

namespace tapdiff::gpu {

class Device;

struct DeviceProfile {
  DeviceInfo info;
  Activations activations = Activations::f32;
  std::string cooperative_matrix_missing;        // VK_NV_cooperative_matrix's GEMM shapes
  std::string cooperative_matrix2_missing;       // VK_NV_cooperative_matrix2 for matmul-coop2's tile ...
  std::string cooperative_matrix2_wide_missing;  // ... its wide tile ...
  std::string attention_coop2_missing;           // ... and attention-coop2 at the model's head_dims
};

// An open device's profile for a model of these head_dims (each layer's).
DeviceProfile device_profile(const Device& device, Activations activations, std::span<const int> head_dims);

}  // namespace tapdiff::gpu
