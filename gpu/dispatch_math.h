#pragma once
// Small conversions every file that records kernels uses: push-constant values and grid sizes.
#include <cstdint>

#include "model/dtype.h"

namespace tapdiff::gpu {

inline std::uint32_t u32(std::int64_t v) { return static_cast<std::uint32_t>(v); }
inline std::uint32_t dtype_code(model::DType t) { return static_cast<std::uint32_t>(t); }  // dequant.glsl DTYPE_*
inline std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

}  // namespace tapdiff::gpu
