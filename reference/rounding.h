#pragma once
// Rounding f32 values to narrower floats kept in f32: how the reference emulates an engine that
// stores f16, bf16 or fp8 values (f32 arithmetic inside each op).
#include <cstddef>
#include <span>
#include <type_traits>

#include <Eigen/Core>

namespace tapdiff::reference {

// What an emulated engine's buffers hold. f32: nothing is rounded. The fp8 formats (OCP's E4M3,
// largest finite 448, no inf, and E5M2, largest 57344) hold each row with a scale of its own, as
// engines quantize activations per token and weights per output channel: the row scaled so that
// its largest magnitude is the format's largest finite value, rounded (ties to even, subnormals
// kept), scaled back.
enum class Storage { f32, f16, bf16, fp8_e4m3, fp8_e5m2 };

// "f32", "f16", "bf16", "fp8_e4m3", "fp8_e5m2".
const char* storage_name(Storage storage);

// x = f16_to_f32(f32_to_f16(x)) for every element (model/dtype.h), bit for bit: round to nearest
// even, |x| >= 65520 to inf, |x| < 2^-14 to an f16 subnormal, NaN to the quiet NaN of its sign.
// Branch-free, so the loop vectorizes: it runs over every op output of an f16 run, where a call
// per element to model::f32_to_f16 would cost more than most ops.
void round_to_f16(std::span<float> values);
// x rounded to the nearest bf16 value (the top 16 bits of an f32), ties to even, as PyTorch's and
// MLX's f32 -> bf16 conversion: values past the largest finite bf16 round to inf, NaN to the quiet
// NaN of its sign. Branch-free, as above.
void round_to_bf16(std::span<float> values);
// The values of one row rounded to an fp8 format with the row's own scale (above). A row of zeros
// stays zero; a NaN or inf in the row makes it all NaN (its scale is not finite).
void round_row_to_fp8(Storage format, std::span<float> row);
// The rounding of storage (nothing for f32), the values taken as one row.
void round_to(Storage storage, std::span<float> values);
// The same over a contiguous row-major Eigen matrix, row by row; one of doubles (the f64 truth) is
// never rounded.
template <typename Matrix>
void round_matrix(Storage storage, Matrix& m) {
  if constexpr (std::is_same_v<typename Matrix::Scalar, float>) {
    static_assert(Matrix::IsRowMajor || Matrix::ColsAtCompileTime == 1, "rounded row by row");
    if (storage == Storage::f32 || m.size() == 0) return;
    if (storage == Storage::f16 || storage == Storage::bf16)
      return round_to(storage, std::span<float>(m.data(), static_cast<std::size_t>(m.size())));
    for (Eigen::Index r = 0; r < m.rows(); ++r)
      round_to(storage, std::span<float>(m.data() + r * m.cols(), static_cast<std::size_t>(m.cols())));
  }
}

}  // namespace tapdiff::reference
