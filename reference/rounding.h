#pragma once
// Rounding f32 values to narrower floats kept in f32: how the reference emulates an engine that
// stores f16 or bf16 (its weights and op outputs rounded, f32 arithmetic inside each op).
#include <cstddef>
#include <span>
#include <type_traits>

namespace tapdiff::reference {

// What an emulated engine's buffers hold. f32: nothing is rounded.
enum class Storage { f32, f16, bf16 };

// x = f16_to_f32(f32_to_f16(x)) for every element (model/dtype.h), bit for bit: round to nearest
// even, |x| >= 65520 to inf, |x| < 2^-14 to an f16 subnormal, NaN to the quiet NaN of its sign.
// Branch-free, so the loop vectorizes: it runs over every op output of an f16 run, where a call
// per element to model::f32_to_f16 would cost more than most ops.
void round_to_f16(std::span<float> values);
// x rounded to the nearest bf16 value (the top 16 bits of an f32), ties to even, as PyTorch's and
// MLX's f32 -> bf16 conversion: values past the largest finite bf16 round to inf, NaN to the quiet
// NaN of its sign. Branch-free, as above.
void round_to_bf16(std::span<float> values);
// The rounding of storage (nothing for f32).
void round_to(Storage storage, std::span<float> values);
// The same over a contiguous Eigen matrix; one of doubles (the f64 truth) is never rounded.
template <typename Matrix>
void round_matrix(Storage storage, Matrix& m) {
  if constexpr (std::is_same_v<typename Matrix::Scalar, float>)
    round_to(storage, std::span<float>(m.data(), static_cast<std::size_t>(m.size())));
}

}  // namespace tapdiff::reference
