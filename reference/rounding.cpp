#include "reference/rounding.h"

#include <bit>
#include <cstdint>

namespace tapdiff::reference {
namespace {

constexpr std::uint32_t kSign = 0x80000000u;
constexpr std::uint32_t kInf = 0x7F800000u;
constexpr std::uint32_t kQuietNan = 0x7FC00000u;
constexpr std::uint32_t kMaxF16 = 0x477FE000u;    // 65504, the largest finite f16
constexpr std::uint32_t kMinNormal = 113u << 23;  // 2^-14, the smallest normal f16

inline float round_one(float x) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t sign = u & kSign;
  const std::uint32_t a = u ^ sign;  // |x|
  // Normal f16: keep 10 of the 23 mantissa bits, ties to even; a carry moves into the exponent.
  const std::uint32_t normal = (a + 0xFFFu + ((a >> 13) & 1u)) & ~0x1FFFu;
  // Subnormal f16: multiples of 2^-24. The ulp of 0.5 + |x| is 2^-24, so the FPU's own rounding of
  // the sum is the rounding wanted.
  const std::uint32_t subnormal = std::bit_cast<std::uint32_t>((std::bit_cast<float>(a) + 0.5f) - 0.5f);
  // Selections by mask rather than ?: so that GCC if-converts them and the loop vectorizes.
  const auto mask = [](bool c) { return 0u - static_cast<std::uint32_t>(c); };
  const std::uint32_t is_subnormal = mask(a < kMinNormal), is_inf = mask(normal > kMaxF16), is_nan = mask(a > kInf);
  std::uint32_t r = (subnormal & is_subnormal) | (normal & ~is_subnormal);
  r = (kInf & is_inf) | (r & ~is_inf);
  r = (kQuietNan & is_nan) | (r & ~is_nan);
  return std::bit_cast<float>(r | sign);
}

// Keeps the top 16 bits, ties to even; a carry moves into the exponent (and from the largest
// finite value into inf). A NaN keeps its sign and becomes quiet.
inline float round_one_bf16(float x) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t sign = u & kSign;
  const std::uint32_t a = u ^ sign;
  const std::uint32_t rounded = (a + 0x7FFFu + ((a >> 16) & 1u)) & 0xFFFF0000u;
  const std::uint32_t is_nan = 0u - static_cast<std::uint32_t>(a > kInf);
  return std::bit_cast<float>(((kQuietNan & is_nan) | (rounded & ~is_nan)) | sign);
}

}  // namespace

void round_to_bf16(std::span<float> values) {
  float* v = values.data();
  const std::size_t n = values.size();
  for (std::size_t i = 0; i < n; ++i) v[i] = round_one_bf16(v[i]);
}

void round_to(Storage storage, std::span<float> values) {
  switch (storage) {
    case Storage::f32: return;
    case Storage::f16: return round_to_f16(values);
    case Storage::bf16: return round_to_bf16(values);
  }
}

void round_to_f16(std::span<float> values) {
  float* v = values.data();
  const std::size_t n = values.size();
  for (std::size_t i = 0; i < n; ++i) v[i] = round_one(v[i]);
}

}  // namespace tapdiff::reference
