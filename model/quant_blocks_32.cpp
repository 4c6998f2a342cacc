// The 32-element block formats (model/quant_blocks.h).
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>

#include "model/half_float.h"
#include "model/quant_blocks.h"

namespace tapdiff::model::blocks {
namespace {

constexpr int kBlock = 32;
constexpr int kHalf = kBlock / 2;

// Copies a block's 16 nibble bytes out (a char pointer could alias dst, which stops vectorizing).
std::array<std::uint8_t, kHalf> nibble_bytes(const std::byte* p) {
  std::array<std::uint8_t, kHalf> q;
  std::memcpy(q.data(), p, q.size());
  return q;
}

// Element j's 4-bit value (low nibble of byte j, or high nibble of byte j - 16).
inline int nibble(const std::array<std::uint8_t, kHalf>& q, int j) {
  const std::uint8_t b = q[static_cast<std::size_t>(j % kHalf)];
  return j < kHalf ? (b & 0x0F) : (b >> 4);
}

std::uint32_t load_u32(const std::byte* p) {
  std::uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Writes 32 values in [0, 15] as nibbles (j low, j + 16 high).
void store_nibbles(const std::array<int, kBlock>& q, std::byte* dst) {
  for (int j = 0; j < kHalf; ++j)
    dst[j] = static_cast<std::byte>(q[static_cast<std::size_t>(j)] | (q[static_cast<std::size_t>(j + kHalf)] << 4));
}

// Writes 32 values in [0, 31]: their fifth bits as a 32-bit word, then their low nibbles.
void store_5bit(const std::array<int, kBlock>& q, std::byte* dst) {
  std::uint32_t high = 0;
  std::array<int, kBlock> low;
  for (int j = 0; j < kBlock; ++j) {
    high |= static_cast<std::uint32_t>((q[static_cast<std::size_t>(j)] >> 4) & 1) << j;
    low[static_cast<std::size_t>(j)] = q[static_cast<std::size_t>(j)] & 0x0F;
  }
  std::memcpy(dst, &high, sizeof high);
  store_nibbles(low, dst + 4);
}

// The value of largest |x| in a block (the first of equals), as llama.cpp's reference picks it.
float signed_max(const float* x) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < kBlock; ++j)
    if (amax < std::fabs(x[j])) amax = std::fabs(x[j]), max = x[j];
  return max;
}

// trunc(v) clamped to [0, limit] (NaN -> 0), as llama.cpp's MIN(limit, (int8_t)v) for v >= 0.
int truncate_to(float v, int limit) {
  if (!(v > 0.0f)) return 0;
  return v >= static_cast<float>(limit) ? limit : static_cast<int>(v);
}

// roundf(v) (halves away from zero) for |v| <= 127, without a libm call; NaN -> 0.
std::int8_t round_q8(float v) {
  if (!(std::fabs(v) <= 127.5f)) return 0;
  const int t = static_cast<int>(v);
  const float frac = v - static_cast<float>(t);  // exact
  return static_cast<std::int8_t>(t + (frac >= 0.5f) - (frac <= -0.5f));
}

float inverse(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }

}  // namespace

int nearest_int(float v) {
  if (!(std::fabs(v) < 0x1p22f)) return 0;
  return static_cast<int>(std::nearbyint(v));
}

int nearest_iq4(float v) {
  if (v <= kIq4Values.front()) return 0;
  if (v >= kIq4Values.back()) return static_cast<int>(kIq4Values.size()) - 1;
  int i = 0;
  while (v > kIq4Values[static_cast<std::size_t>(i + 1)]) ++i;  // kIq4Values[i] < v <= kIq4Values[i + 1]
  const float below = v - kIq4Values[static_cast<std::size_t>(i)];
  const float above = kIq4Values[static_cast<std::size_t>(i + 1)] - v;
  return above < below ? i + 1 : i;
}

// x = d * q.
void dequantize_q8_0(const std::byte* src, float* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kBlock; ++b, src += 34, dst += kBlock) {
    const float d = load_f16(src);
    const auto* q = reinterpret_cast<const std::int8_t*>(src + 2);
    for (int j = 0; j < kBlock; ++j) dst[j] = d * static_cast<float>(q[j]);
  }
}

// llama.cpp's quantize_row_q8_0_ref: d = amax / 127, q = roundf(x * (1 / d)).
void quantize_q8_0(const float* src, std::byte* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kBlock; ++b, src += kBlock, dst += 34) {
    float amax = 0.0f;
    for (int j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(src[j]));
    const float d = amax / 127.0f;
    const float id = inverse(d);
    store_f16(dst, d);
    std::array<std::int8_t, kBlock> q;
    for (int j = 0; j < kBlock; ++j) q[static_cast<std::size_t>(j)] = round_q8(src[j] * id);
    std::memcpy(dst + 2, q.data(), q.size());
  }
}

// x = d * (nibble - 8).
void dequantize_q4_0(const std::byte* src, float* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kBlock; ++b, src += 18, dst += kBlock) {
    const float d = load_f16(src);
    const auto q = nibble_bytes(src + 2);
    for (int j = 0; j < kBlock; ++j) dst[j] = d * static_cast<float>(nibble(q, j) - 8);
  }
}

// llama.cpp's quantize_row_q4_0_ref: d = max / -8 (max: the value of largest |x|),
// q = min(15, trunc(x / d + 8.5)).
void quantize_q4_0(const float* src, std::byte* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kBlock; ++b, src += kBlock, dst += 18) {
    const float d = signed_max(src) / -8.0f;
    const float id = inverse(d);
    store_f16(dst, d);
    std::array<int, kBlock> q;
    for (int j = 0; j < kBlock; ++j) q[static_cast<std::size_t>(j)] = truncate_to(src[j] * id + 8.5f, 15);
    store_nibbles(q, dst + 2);
  }
}

// x = d * nibble + m.
void dequantize_q4_1(const std::byte* src, float* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kBlock; ++b, src += 20, dst += kBlock) {
    const float d = load_f16(src), m = load_f16(src + 2);
    const auto q = nibble_bytes(src + 4);
    for (int j = 0; j < kBlock; ++j) dst[j] = d * static_cast<float>(nibble(q, j)) + m;
  }
}

// llama.cpp's quantize_row_q4_1_ref: d = (max - min) / 15, m = min,
// q = min(15, trunc((x - min) / d + 0.5)).
void quantize_q4_1(const float* src, std::byte* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kBlock; ++b, src += kBlock, dst += 20) {
    const auto [lo, hi] = std::minmax_element(src, src + kBlock);
    const float min = *lo, d = (*hi - min) / 15.0f;
    const float id = inverse(d);
    store_f16(dst, d);
    store_f16(dst + 2, min);
    std::array<int, kBlock> q;
    for (int j = 0; j < kBlock; ++j) q[static_cast<std::size_t>(j)] = truncate_to((src[j] - min) * id + 0.5f, 15);
    store_nibbles(q, dst + 4);
  }
}

namespace {

// The 5-bit values of a Q5_0 / Q5_1 block whose high-bit word is at p (nibbles after it).
std::array<int, kBlock> five_bit_values(const std::byte* p) {
  const std::uint32_t high = load_u32(p);
  const auto q = nibble_bytes(p + 4);
  std::array<int, kBlock> v;
  for (int j = 0; j < kBlock; ++j)
    v[static_cast<std::size_t>(j)] = nibble(q, j) | static_cast<int>(((high >> j) & 1u) << 4);
  return v;
}

}  // namespace

// x = d * (q5 - 16).
void dequantize_q5_0(const std::byte* src, float* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kBlock; ++b, src += 22, dst += kBlock) {
    const float d = load_f16(src);
    const auto q = five_bit_values(src + 2);
    for (int j = 0; j < kBlock; ++j) dst[j] = d * static_cast<float>(q[static_cast<std::size_t>(j)] - 16);
  }
}

// llama.cpp's quantize_row_q5_0_ref: d = max / -16, q = min(31, trunc(x / d + 16.5)).
void quantize_q5_0(const float* src, std::byte* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kBlock; ++b, src += kBlock, dst += 22) {
    const float d = signed_max(src) / -16.0f;
    const float id = inverse(d);
    store_f16(dst, d);
    std::array<int, kBlock> q;
    for (int j = 0; j < kBlock; ++j) q[static_cast<std::size_t>(j)] = truncate_to(src[j] * id + 16.5f, 31);
    store_5bit(q, dst + 2);
  }
}

// x = d * q5 + m.
void dequantize_q5_1(const std::byte* src, float* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kBlock; ++b, src += 24, dst += kBlock) {
    const float d = load_f16(src), m = load_f16(src + 2);
    const auto q = five_bit_values(src + 4);
    for (int j = 0; j < kBlock; ++j) dst[j] = d * static_cast<float>(q[static_cast<std::size_t>(j)]) + m;
  }
}

// llama.cpp's quantize_row_q5_1_ref: d = (max - min) / 31, m = min, q = trunc((x - min) / d + 0.5).
void quantize_q5_1(const float* src, std::byte* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kBlock; ++b, src += kBlock, dst += 24) {
    const auto [lo, hi] = std::minmax_element(src, src + kBlock);
    const float min = *lo, d = (*hi - min) / 31.0f;
    const float id = inverse(d);
    store_f16(dst, d);
    store_f16(dst + 2, min);
    std::array<int, kBlock> q;
    for (int j = 0; j < kBlock; ++j) q[static_cast<std::size_t>(j)] = truncate_to((src[j] - min) * id + 0.5f, 31);
    store_5bit(q, dst + 4);
  }
}

// x = d * kIq4Values[nibble].
void dequantize_iq4_nl(const std::byte* src, float* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kBlock; ++b, src += 18, dst += kBlock) {
    const float d = load_f16(src);
    const auto q = nibble_bytes(src + 2);
    for (int j = 0; j < kBlock; ++j)
      dst[j] = d * static_cast<float>(kIq4Values[static_cast<std::size_t>(nibble(q, j))]);
  }
}

// d = max / -127 (the value of largest |x| maps to kIq4Values' first, -127); each x to the
// nearest value of d * kIq4Values.
void quantize_iq4_nl(const float* src, std::byte* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kBlock; ++b, src += kBlock, dst += 18) {
    const float d = signed_max(src) / static_cast<float>(kIq4Values.front());
    const float id = inverse(d);
    store_f16(dst, d);
    std::array<int, kBlock> q;
    for (int j = 0; j < kBlock; ++j) q[static_cast<std::size_t>(j)] = nearest_iq4(src[j] * id);
    store_nibbles(q, dst + 2);
  }
}

// 2^(e - 128) (ggml's E8M0 "half" scale), by its bits: e < 2 gives f32 subnormals.
float mxfp4_scale(std::uint8_t e) {
  return std::bit_cast<float>(e < 2 ? 0x00200000u << e : static_cast<std::uint32_t>(e - 1) << 23);
}

// x = 2^(e - 128) * kMxfp4Values[nibble].
void dequantize_mxfp4(const std::byte* src, float* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kBlock; ++b, src += 17, dst += kBlock) {
    const float d = mxfp4_scale(static_cast<std::uint8_t>(src[0]));
    const auto q = nibble_bytes(src + 1);
    for (int j = 0; j < kBlock; ++j)
      dst[j] = d * static_cast<float>(kMxfp4Values[static_cast<std::size_t>(nibble(q, j))]);
  }
}

// llama.cpp's quantize_row_mxfp4_ref: e = floor(log2(max |x|)) - 2 + 127 (0 for a block of zeros),
// each x to the first of the values nearest it.
void quantize_mxfp4(const float* src, std::byte* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kBlock; ++b, src += kBlock, dst += 17) {
    float amax = 0.0f;
    for (int j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(src[j]));
    const auto e = static_cast<std::uint8_t>(amax > 0.0f ? std::floor(std::log2(amax)) - 2.0f + 127.0f : 0.0f);
    const float d = mxfp4_scale(e);
    dst[0] = static_cast<std::byte>(e);
    std::array<int, kBlock> q;
    for (int j = 0; j < kBlock; ++j) {
      int best = 0;
      float best_error = std::fabs(static_cast<float>(kMxfp4Values[0]) * d - src[j]);
      for (int i = 1; i < 16; ++i)
        if (const float error = std::fabs(static_cast<float>(kMxfp4Values[static_cast<std::size_t>(i)]) * d - src[j]);
            error < best_error)
          best = i, best_error = error;
      q[static_cast<std::size_t>(j)] = best;
    }
    store_nibbles(q, dst + 1);
  }
}

}  // namespace tapdiff::model::blocks
