#include "model/dtype.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>

#include "model/errors.h"

namespace tapdiff::model {
namespace {

constexpr int kBlock = 32;                        // elements per Q8_0 / Q4_0 block
constexpr std::size_t kQ8Bytes = 2 + kBlock;      // f16 d + 32 x int8
constexpr std::size_t kQ4Bytes = 2 + kBlock / 2;  // f16 d + 16 bytes of nibbles

std::uint16_t load_u16(const std::byte* p) {
  std::uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

void store_u16(std::byte* p, std::uint16_t v) { std::memcpy(p, &v, sizeof v); }

// f16 -> f32, exact and branch-free so that row loops vectorize (as in the FP16 library):
// normals, inf and nan by rescaling the exponent, subnormals by subtracting a magic bias.
inline float widen_f16(std::uint16_t h) {
  const std::uint32_t w = static_cast<std::uint32_t>(h) << 16;
  const std::uint32_t sign = w & 0x80000000u;
  const std::uint32_t two_w = w + w;
  const float normalized = std::bit_cast<float>((two_w >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
  const float denormalized = std::bit_cast<float>((two_w >> 17) | (126u << 23)) - 0.5f;
  const std::uint32_t subnormal_mask = 0u - static_cast<std::uint32_t>(two_w < (1u << 27));
  const std::uint32_t bits = (std::bit_cast<std::uint32_t>(denormalized) & subnormal_mask) |
                             (std::bit_cast<std::uint32_t>(normalized) & ~subnormal_mask);
  return std::bit_cast<float>(sign | bits);
}

void dequantize_f16(const std::byte* src, float* dst, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) dst[i] = widen_f16(load_u16(src + 2 * i));
}

void dequantize_bf16(const std::byte* src, float* dst, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(load_u16(src + 2 * i));
}

// x[j] = d * q[j] for each block of 32.
void dequantize_q8_0(const std::byte* src, float* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kBlock; ++b, src += kQ8Bytes, dst += kBlock) {
    const float d = widen_f16(load_u16(src));
    const auto* q = reinterpret_cast<const std::int8_t*>(src + 2);
    for (int j = 0; j < kBlock; ++j) dst[j] = d * static_cast<float>(q[j]);
  }
}

// x[j] = d * (lo(q[j]) - 8), x[j + 16] = d * (hi(q[j]) - 8). The quants are copied out first so
// that the loops vectorize (a char pointer could alias dst).
void dequantize_q4_0(const std::byte* src, float* dst, std::int64_t n) {
  constexpr int kHalf = kBlock / 2;
  for (std::int64_t b = 0; b < n / kBlock; ++b, src += kQ4Bytes, dst += kBlock) {
    const float d = widen_f16(load_u16(src));
    std::array<std::uint8_t, kHalf> q;
    std::memcpy(q.data(), src + 2, q.size());
    for (int j = 0; j < kHalf; ++j) dst[j] = d * static_cast<float>((q[static_cast<std::size_t>(j)] & 0x0F) - 8);
    for (int j = 0; j < kHalf; ++j) dst[j + kHalf] = d * static_cast<float>((q[static_cast<std::size_t>(j)] >> 4) - 8);
  }
}

// roundf(v) (halves away from zero) for |v| <= 127, without a libm call; NaN -> 0.
std::int8_t round_q8(float v) {
  if (!(std::fabs(v) <= 127.5f)) return 0;
  const int t = static_cast<int>(v);
  const float frac = v - static_cast<float>(t);  // exact
  return static_cast<std::int8_t>(t + (frac >= 0.5f) - (frac <= -0.5f));
}

// llama.cpp's quantize_row_q8_0_ref: d = amax / 127, q = roundf(x * (1 / d)).
void quantize_q8_0(const float* src, std::byte* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kBlock; ++b, src += kBlock, dst += kQ8Bytes) {
    float amax = 0.0f;
    for (int j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(src[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_u16(dst, f32_to_f16(d));
    std::array<std::int8_t, kBlock> q;
    for (int j = 0; j < kBlock; ++j) q[static_cast<std::size_t>(j)] = round_q8(src[j] * id);
    std::memcpy(dst + 2, q.data(), q.size());
  }
}

// The nibble of x * id + 8 truncated to [0, 15] (NaN -> 0), as llama.cpp's MIN(15, (int8_t)(v + 8.5f)).
std::uint8_t q4_nibble(float x_times_id) {
  const float v = x_times_id + 8.5f;
  if (!(v > 0.0f)) return 0;
  return v >= 15.0f ? std::uint8_t{15} : static_cast<std::uint8_t>(v);
}

// llama.cpp's quantize_row_q4_0_ref: max = the value of largest |x|, d = max / -8,
// q = min(15, trunc(x / d + 8.5)); byte j = q[j] | q[j + 16] << 4.
void quantize_q4_0(const float* src, std::byte* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kBlock; ++b, src += kBlock, dst += kQ4Bytes) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kBlock; ++j) {
      if (amax < std::fabs(src[j])) amax = std::fabs(src[j]), max = src[j];
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_u16(dst, f32_to_f16(d));
    auto* q = reinterpret_cast<std::uint8_t*>(dst + 2);
    for (int j = 0; j < kBlock / 2; ++j)
      q[j] = static_cast<std::uint8_t>(q4_nibble(src[j] * id) | (q4_nibble(src[j + kBlock / 2] * id) << 4));
  }
}

}  // namespace

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::q8_0: return "q8_0";
    case DType::q4_0: return "q4_0";
  }
  return "?";
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::q8_0, DType::q4_0})
    if (dtype_name(t) == name) return t;
  return std::nullopt;
}

int block_size(DType t) { return t == DType::q8_0 || t == DType::q4_0 ? kBlock : 1; }

std::size_t block_bytes(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::q8_0: return kQ8Bytes;
    case DType::q4_0: return kQ4Bytes;
  }
  return 0;
}

std::size_t row_bytes(DType t, std::int64_t n) {
  TAPDIFF_ASSERT(n >= 0 && n % block_size(t) == 0, "a row of {} elements of {} (blocks of {})", n, dtype_name(t),
                 block_size(t));
  return static_cast<std::size_t>(n / block_size(t)) * block_bytes(t);
}

float f16_to_f32(std::uint16_t h) { return widen_f16(h); }

namespace {

// Round to nearest even; |f| >= 65520 -> inf; NaN -> quiet NaN of the same sign.
std::uint16_t narrow_f16(float f) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = u & 0x80000000u;
  u ^= sign;
  std::uint32_t out;
  if (u >= (143u << 23)) {  // |f| >= 2^16, inf or nan
    out = u > 0x7F800000u ? 0x7E00u : 0x7C00u;
  } else if (u < (113u << 23)) {  // |f| < 2^-14: f16 subnormal or zero; the FPU rounds the sum
    const float magic = std::bit_cast<float>(((127u - 15u) + (23u - 10u) + 1u) << 23);
    out = std::bit_cast<std::uint32_t>(std::bit_cast<float>(u) + magic) - std::bit_cast<std::uint32_t>(magic);
  } else {  // normal: rebias the exponent, round the 13 dropped bits to even (may carry into inf)
    const std::uint32_t mant_odd = (u >> 13) & 1u;
    u += (static_cast<std::uint32_t>(15 - 127) << 23) + 0xFFFu + mant_odd;
    out = u >> 13;
  }
  return static_cast<std::uint16_t>(out | (sign >> 16));
}

}  // namespace

std::uint16_t f32_to_f16(float f) { return narrow_f16(f); }

void f32_to_f16(std::span<const float> in, std::uint16_t* out) {
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = narrow_f16(in[i]);
}

float bf16_to_f32(std::uint16_t h) { return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16); }

// Round to nearest even; NaN stays NaN (quiet bit set so the payload cannot round to inf).
std::uint16_t f32_to_bf16(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
  return static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

void dequantize_row(DType t, const std::byte* src, float* dst, std::int64_t n) {
  TAPDIFF_ASSERT(n % block_size(t) == 0, "dequantize {} elements of {}", n, dtype_name(t));
  switch (t) {
    case DType::f32: std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float)); return;
    case DType::f16: dequantize_f16(src, dst, n); return;
    case DType::bf16: dequantize_bf16(src, dst, n); return;
    case DType::q8_0: dequantize_q8_0(src, dst, n); return;
    case DType::q4_0: dequantize_q4_0(src, dst, n); return;
  }
}

void quantize_row(DType t, const float* src, std::byte* dst, std::int64_t n) {
  TAPDIFF_ASSERT(n % block_size(t) == 0, "quantize {} elements to {}", n, dtype_name(t));
  switch (t) {
    case DType::f32: std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float)); return;
    case DType::f16:
      for (std::int64_t i = 0; i < n; ++i) store_u16(dst + 2 * i, f32_to_f16(src[i]));
      return;
    case DType::bf16:
      for (std::int64_t i = 0; i < n; ++i) store_u16(dst + 2 * i, f32_to_bf16(src[i]));
      return;
    case DType::q8_0: quantize_q8_0(src, dst, n); return;
    case DType::q4_0: quantize_q4_0(src, dst, n); return;
  }
}

}  // namespace tapdiff::model
