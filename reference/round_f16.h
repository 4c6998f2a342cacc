#pragma once
// Rounding f32 values to f16 values kept in f32: how the reference emulates an f16 engine (f16
// weights and op outputs, f32 arithmetic inside each op).
#include <span>

namespace tapdiff::reference {

// x = f16_to_f32(f32_to_f16(x)) for every element (model/dtype.h), bit for bit: round to nearest
// even, |x| >= 65520 to inf, |x| < 2^-14 to an f16 subnormal, NaN to the quiet NaN of its sign.
// Branch-free, so the loop vectorizes: it runs over every op output of an f16 run, where a call
// per element to model::f32_to_f16 would cost more than most ops.
void round_to_f16(std::span<float> values);

}  // namespace tapdiff::reference
