#pragma once
// Activations between the host and the device's layout: HostTensor f32 <-> the bytes an
// activation buffer holds (f32, or f16 under --dtype f16; shaders.h Activations).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "gpu/shaders.h"
#include "model/host_tensor.h"

namespace tapdiff::gpu {

// [rows, cols] f32 from `rows * cols` elements as the device stores them (f16 widened exactly).
model::HostTensor activations_to_host(const std::byte* data, std::int64_t rows, std::int64_t cols, Activations a);
// The same into `out`, reusing its memory (HostTensor::reshape).
void activations_to_host(const std::byte* data, std::int64_t rows, std::int64_t cols, Activations a,
                         model::HostTensor& out);

// The bytes of `value` as the device stores them (f16: rounded to nearest even, past 65504 to inf).
std::vector<std::byte> activations_to_device(const model::HostTensor& value, Activations a);

}  // namespace tapdiff::gpu
