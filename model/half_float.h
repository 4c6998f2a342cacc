#pragma once
// IEEE half precision <-> f32, exact and branch-free so that row loops vectorize (as in the FP16
// library). Shared by the dtype conversions and the block formats of model/quant_blocks.h.
#include <bit>
#include <cstdint>
#include <cstring>

namespace tapdiff::model {

// f16 -> f32: normals, inf and nan by rescaling the exponent, subnormals by subtracting a bias.
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

// f32 -> f16, round to nearest even; |f| >= 65520 -> inf; NaN -> quiet NaN of the same sign.
inline std::uint16_t narrow_f16(float f) {
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

inline std::uint16_t load_u16(const std::byte* p) {
  std::uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline void store_u16(std::byte* p, std::uint16_t v) { std::memcpy(p, &v, sizeof v); }

inline float load_f16(const std::byte* p) { return widen_f16(load_u16(p)); }
inline void store_f16(std::byte* p, float f) { store_u16(p, narrow_f16(f)); }

}  // namespace tapdiff::model
