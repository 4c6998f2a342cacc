#include "reference/rounding.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

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

// An fp8 format: its stored significand bits (the implicit one included), its smallest normal
// exponent and its largest finite value.
struct Fp8Format {
  int significand_bits;
  int min_exponent;
  float largest;
};

Fp8Format fp8_format(Storage format) {
  if (format == Storage::fp8_e4m3) return {4, -6, 448.0f};
  return {3, -14, 57344.0f};
}

// |x| <= largest, rounded to the format: the nearest multiple of its quantum (2^(e - bits + 1),
// e the exponent of x, at least the smallest normal one), ties to even.
float round_fp8_value(float x, const Fp8Format& f) {
  if (x == 0.0f) return x;
  int e = 0;
  std::frexp(x, &e);  // |x| = m 2^e, m in [0.5, 1): x's leading bit is 2^(e - 1)
  const int quantum = std::max(e - 1, f.min_exponent) - (f.significand_bits - 1);
  const float r = std::ldexp(std::nearbyint(std::ldexp(x, -quantum)), quantum);
  return std::clamp(r, -f.largest, f.largest);
}

}  // namespace

void round_row_to_fp8(Storage format, std::span<float> row) {
  const Fp8Format f = fp8_format(format);
  float amax = 0.0f;
  for (const float v : row) amax = std::max(amax, std::fabs(v));
  if (amax == 0.0f) return;
  if (!std::isfinite(amax) || std::any_of(row.begin(), row.end(), [](float v) { return std::isnan(v); })) {
    std::fill(row.begin(), row.end(), std::numeric_limits<float>::quiet_NaN());
    return;
  }
  const float scale = amax / f.largest;
  for (float& v : row) v = round_fp8_value(v / scale, f) * scale;
}

void round_to_bf16(std::span<float> values) {
  float* v = values.data();
  const std::size_t n = values.size();
  for (std::size_t i = 0; i < n; ++i) v[i] = round_one_bf16(v[i]);
}

const char* storage_name(Storage storage) {
  switch (storage) {
    case Storage::f32: return "f32";
    case Storage::f16: return "f16";
    case Storage::bf16: return "bf16";
    case Storage::fp8_e4m3: return "fp8_e4m3";
    case Storage::fp8_e5m2: return "fp8_e5m2";
  }
  return "?";
}

void round_to(Storage storage, std::span<float> values) {
  switch (storage) {
    case Storage::f32: return;
    case Storage::f16: return round_to_f16(values);
    case Storage::bf16: return round_to_bf16(values);
    case Storage::fp8_e4m3:
    case Storage::fp8_e5m2: return round_row_to_fp8(storage, values);
  }
}

void round_to_f16(std::span<float> values) {
  float* v = values.data();
  const std::size_t n = values.size();
  for (std::size_t i = 0; i < n; ++i) v[i] = round_one(v[i]);
}

}  // namespace tapdiff::reference
