// The 256-element super-block formats (model/quant_blocks.h): the K-quants and IQ4_XS.
// Dequantization follows ggml's dequantize_row_* loop for loop; quantization computes each
// element's quant, then packs it where that loop reads it.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <tuple>

#include "model/half_float.h"
#include "model/quant_blocks.h"

namespace tapdiff::model::blocks {
namespace {

constexpr int kSuper = 256;
using Quants = std::array<int, kSuper>;

std::uint8_t u8(const std::byte* p, int i) { return std::to_integer<std::uint8_t>(p[i]); }
void or_bits(std::byte* p, int i, int bits) { p[i] |= static_cast<std::byte>(bits); }

// The 6-bit scale and min of sub-block j (of 8) in a Q4_K / Q5_K block's 12 scale bytes.
std::pair<int, int> scale_min_k4(int j, const std::byte* q) {
  if (j < 4) return {u8(q, j) & 63, u8(q, j + 4) & 63};
  return {(u8(q, j + 4) & 0x0F) | ((u8(q, j - 4) >> 6) << 4), (u8(q, j + 4) >> 4) | ((u8(q, j) >> 6) << 4)};
}

// Sub-block j's d * scale and dmin * min of the Q4_K / Q5_K block at b (scales at b + 4).
std::pair<float, float> sub_block_scale(const std::byte* b, int j, float d, float min) {
  const auto [sc, m] = scale_min_k4(j, b + 4);
  return {d * static_cast<float>(sc), min * static_cast<float>(m)};
}

void pack_scale_min_k4(const std::array<int, 8>& sc, const std::array<int, 8>& m, std::byte* q) {
  std::memset(q, 0, 12);
  for (std::size_t j = 0; j < 4; ++j) {
    or_bits(q, static_cast<int>(j), (sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    or_bits(q, static_cast<int>(j + 4), (m[j] & 63) | ((m[j + 4] >> 4) << 6));
    or_bits(q, static_cast<int>(j + 8), (sc[j + 4] & 0x0F) | ((m[j + 4] & 0x0F) << 4));
  }
}

// The 16 6-bit scales of a Q3_K block: low nibbles in bytes 0-7 (k < 8 low, else high), high
// 2-bit pairs in bytes 8-11 (byte 8 + k % 4, bits 2 * (k / 4)).
int q3_scale(const std::byte* s, int k) {
  const int low = k < 8 ? (u8(s, k) & 0x0F) : (u8(s, k - 8) >> 4);
  const int high = (u8(s, 8 + k % 4) >> (2 * (k / 4))) & 3;
  return low | (high << 4);
}

void pack_q3_scales(const std::array<int, 16>& u, std::byte* s) {
  std::memset(s, 0, 12);
  for (int k = 0; k < 16; ++k) {
    const int v = u[static_cast<std::size_t>(k)];
    or_bits(s, k % 8, (v & 0x0F) << (k < 8 ? 0 : 4));
    or_bits(s, 8 + k % 4, ((v >> 4) & 3) << (2 * (k / 4)));
  }
}

// The scales of the sub-blocks of `width` elements that put each one's value of largest |x| on
// `lowest` (a negative quant), as a block of signed quants wants them.
template <int kSubs>
std::array<float, kSubs> signed_scales(const float* x, float lowest) {
  std::array<float, kSubs> scales{};
  constexpr int width = kSuper / kSubs;
  for (int s = 0; s < kSubs; ++s) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < width; ++j)
      if (amax < std::fabs(x[s * width + j])) amax = std::fabs(x[s * width + j]), max = x[s * width + j];
    scales[static_cast<std::size_t>(s)] = max / lowest;
  }
  return scales;
}

// A super-block scale d and integer sub-scales l in [-half, half - 1] with scale ~ d * l, the
// scale of largest |.| mapping to -half (llama.cpp's iscale = -half / max_scale).
template <std::size_t kSubs>
std::pair<float, std::array<int, kSubs>> signed_sub_scales(const std::array<float, kSubs>& scales, int half) {
  float amax = 0.0f, max = 0.0f;
  for (float s : scales)
    if (amax < std::fabs(s)) amax = std::fabs(s), max = s;
  std::array<int, kSubs> l{};
  if (amax == 0.0f) return {0.0f, l};
  const float iscale = static_cast<float>(-half) / max;
  for (std::size_t s = 0; s < kSubs; ++s) l[s] = std::clamp(nearest_int(iscale * scales[s]), -half, half - 1);
  return {1.0f / iscale, l};
}

// Unsigned sub-scales in [0, top] of non-negative values, d = max / top.
template <std::size_t kSubs>
std::pair<float, std::array<int, kSubs>> unsigned_sub_scales(const std::array<float, kSubs>& values, int top) {
  const float max = *std::max_element(values.begin(), values.end());
  std::array<int, kSubs> l{};
  if (max == 0.0f) return {0.0f, l};
  const float d = max / static_cast<float>(top);
  for (std::size_t s = 0; s < kSubs; ++s) l[s] = std::clamp(nearest_int(values[s] / d), 0, top);
  return {d, l};
}

// Sub-blocks quantized as x = d*sc * q - dmin*m with q in [0, top]: the scales (range / top) and
// mins (-min(0, min x)) of each, then their integer sub-scales in [0, scale_top].
template <int kSubs>
struct AffineBlock {
  float d = 0, dmin = 0;
  std::array<int, kSubs> sc{}, m{};
  Quants q{};
};

template <int kSubs>
AffineBlock<kSubs> quantize_affine(const float* x, int top, int scale_top) {
  constexpr int width = kSuper / kSubs;
  std::array<float, kSubs> scales{}, mins{};
  for (int s = 0; s < kSubs; ++s) {
    const auto [lo, hi] = std::minmax_element(x + s * width, x + (s + 1) * width);
    const float mn = std::min(*lo, 0.0f);
    scales[static_cast<std::size_t>(s)] = (*hi - mn) / static_cast<float>(top);
    mins[static_cast<std::size_t>(s)] = -mn;
  }
  AffineBlock<kSubs> b;
  std::tie(b.d, b.sc) = unsigned_sub_scales(scales, scale_top);
  std::tie(b.dmin, b.m) = unsigned_sub_scales(mins, scale_top);
  b.d = widen_f16(narrow_f16(b.d));  // requantize against the stored scales
  b.dmin = widen_f16(narrow_f16(b.dmin));
  for (int s = 0; s < kSubs; ++s) {
    const float dl = b.d * static_cast<float>(b.sc[static_cast<std::size_t>(s)]);
    const float ml = b.dmin * static_cast<float>(b.m[static_cast<std::size_t>(s)]);
    for (int j = 0; j < width; ++j) {
      const int e = s * width + j;
      b.q[static_cast<std::size_t>(e)] = dl > 0.0f ? std::clamp(nearest_int((x[e] + ml) / dl), 0, top) : 0;
    }
  }
  return b;
}

// A Q4_K / Q5_K super-block of quants in [0, top]: the block of `bytes` zeroed, its d, dmin and
// 6-bit scales and mins written; the quants are the caller's to pack.
AffineBlock<8> quantize_k4_header(const float* x, int top, std::byte* dst, std::size_t bytes) {
  const auto blk = quantize_affine<8>(x, top, 63);
  std::memset(dst, 0, bytes);
  store_f16(dst, blk.d);
  store_f16(dst + 2, blk.dmin);
  pack_scale_min_k4(blk.sc, blk.m, dst + 4);
  return blk;
}

// Signed quants q = nearest(x / (d * l)) in [lo, hi] per sub-block, d as stored in f16.
template <std::size_t kSubs>
Quants quantize_signed(const float* x, float d, const std::array<int, kSubs>& l, int lo, int hi) {
  constexpr int width = kSuper / static_cast<int>(kSubs);
  Quants q{};
  for (int e = 0; e < kSuper; ++e) {
    const float dl = d * static_cast<float>(l[static_cast<std::size_t>(e / width)]);
    q[static_cast<std::size_t>(e)] = dl != 0.0f ? std::clamp(nearest_int(x[e] / dl), lo, hi) : 0;
  }
  return q;
}

}  // namespace

// Per 16 elements k: x = d * (sc_k & 15) * q - dmin * (sc_k >> 4), with q the 2-bit field of
// qs[32 * (e / 128) + e % 32] at bits 2 * ((e % 128) / 32).
void dequantize_q2_k(const std::byte* src, float* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kSuper; ++b, src += 84) {
    const std::byte* scales = src;
    const std::byte* q = src + 16;
    const float d = load_f16(src + 80), min = load_f16(src + 82);
    int is = 0;
    for (int half = 0; half < 2; ++half, q += 32) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int part = 0; part < 2; ++part) {
          const int sc = u8(scales, is++);
          const float dl = d * static_cast<float>(sc & 0x0F), ml = min * static_cast<float>(sc >> 4);
          for (int l = 0; l < 16; ++l) *dst++ = dl * static_cast<float>((u8(q, l + 16 * part) >> shift) & 3) - ml;
        }
      }
    }
  }
}

void quantize_q2_k(const float* src, std::byte* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kSuper; ++b, src += kSuper, dst += 84) {
    const auto blk = quantize_affine<16>(src, 3, 15);
    std::memset(dst, 0, 84);
    for (std::size_t s = 0; s < 16; ++s) or_bits(dst, static_cast<int>(s), blk.sc[s] | (blk.m[s] << 4));
    for (int e = 0; e < kSuper; ++e)
      or_bits(dst + 16, 32 * (e / 128) + e % 32, blk.q[static_cast<std::size_t>(e)] << (2 * ((e % 128) / 32)));
    store_f16(dst + 80, blk.d);
    store_f16(dst + 82, blk.dmin);
  }
}

// Per 16 elements k: x = d * (scale_k - 32) * (q2 - (high bit ? 0 : 4)), q2 as Q2_K's, the high
// bit in hmask[e % 32] at bit e / 32.
void dequantize_q3_k(const std::byte* src, float* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kSuper; ++b, src += 110) {
    const std::byte* hmask = src;
    const std::byte* q = src + 32;
    const float d = load_f16(src + 108);
    int is = 0, m = 1;
    for (int half = 0; half < 2; ++half, q += 32) {
      for (int shift = 0; shift < 8; shift += 2, m <<= 1) {
        for (int part = 0; part < 2; ++part) {
          const float dl = d * static_cast<float>(q3_scale(src + 96, is++) - 32);
          for (int l = 0; l < 16; ++l) {
            const int i = l + 16 * part;
            const int v = ((u8(q, i) >> shift) & 3) - ((u8(hmask, i) & m) ? 0 : 4);
            *dst++ = dl * static_cast<float>(v);
          }
        }
      }
    }
  }
}

void quantize_q3_k(const float* src, std::byte* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kSuper; ++b, src += kSuper, dst += 110) {
    const auto [d, l] = signed_sub_scales(signed_scales<16>(src, -4.0f), 32);
    const Quants q = quantize_signed(src, widen_f16(narrow_f16(d)), l, -4, 3);
    std::memset(dst, 0, 110);
    for (int e = 0; e < kSuper; ++e) {
      const int u = q[static_cast<std::size_t>(e)] + 4;
      or_bits(dst + 32, 32 * (e / 128) + e % 32, (u & 3) << (2 * ((e % 128) / 32)));
      or_bits(dst, e % 32, (u >> 2) << (e / 32));
    }
    std::array<int, 16> u{};
    for (std::size_t k = 0; k < 16; ++k) u[k] = l[k] + 32;
    pack_q3_scales(u, dst + 96);
    store_f16(dst + 108, d);
  }
}

// Per 32 elements j: x = d * sc_j * nibble - dmin * m_j, nibbles of qs[32 * (e / 64) + e % 32],
// low for even j.
void dequantize_q4_k(const std::byte* src, float* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kSuper; ++b, src += 144) {
    const float d = load_f16(src), min = load_f16(src + 2);
    const std::byte* q = src + 16;
    for (int is = 0; is < 8; is += 2, q += 32) {
      const auto [d1, dm1] = sub_block_scale(src, is, d, min);
      const auto [d2, dm2] = sub_block_scale(src, is + 1, d, min);
      for (int l = 0; l < 32; ++l) *dst++ = d1 * static_cast<float>(u8(q, l) & 0x0F) - dm1;
      for (int l = 0; l < 32; ++l) *dst++ = d2 * static_cast<float>(u8(q, l) >> 4) - dm2;
    }
  }
}

void quantize_q4_k(const float* src, std::byte* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kSuper; ++b, src += kSuper, dst += 144) {
    const auto blk = quantize_k4_header(src, 15, dst, 144);
    for (int e = 0; e < kSuper; ++e)
      or_bits(dst + 16, 32 * (e / 64) + e % 32, blk.q[static_cast<std::size_t>(e)] << ((e / 32) % 2 * 4));
  }
}

// As Q4_K with a fifth bit: qh[e % 32] at bit e / 32.
void dequantize_q5_k(const std::byte* src, float* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kSuper; ++b, src += 176) {
    const float d = load_f16(src), min = load_f16(src + 2);
    const std::byte* qh = src + 16;
    const std::byte* q = src + 48;
    int u1 = 1, u2 = 2;
    for (int is = 0; is < 8; is += 2, q += 32, u1 <<= 2, u2 <<= 2) {
      const auto [d1, dm1] = sub_block_scale(src, is, d, min);
      const auto [d2, dm2] = sub_block_scale(src, is + 1, d, min);
      for (int l = 0; l < 32; ++l)
        *dst++ = d1 * static_cast<float>((u8(q, l) & 0x0F) + ((u8(qh, l) & u1) ? 16 : 0)) - dm1;
      for (int l = 0; l < 32; ++l)
        *dst++ = d2 * static_cast<float>((u8(q, l) >> 4) + ((u8(qh, l) & u2) ? 16 : 0)) - dm2;
    }
  }
}

void quantize_q5_k(const float* src, std::byte* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kSuper; ++b, src += kSuper, dst += 176) {
    const auto blk = quantize_k4_header(src, 31, dst, 176);
    for (int e = 0; e < kSuper; ++e) {
      const int v = blk.q[static_cast<std::size_t>(e)];
      or_bits(dst + 48, 32 * (e / 64) + e % 32, (v & 0x0F) << ((e / 32) % 2 * 4));
      or_bits(dst + 16, e % 32, (v >> 4) << (e / 32));
    }
  }
}

// Per 16 elements k: x = d * sc_k * (q6 - 32); for e = 128 n + 32 g + l, the low nibble of
// ql[64 n + l + 32 (g % 2)] (low for g < 2), the high pair of qh[32 n + l] at bits 2 g.
void dequantize_q6_k(const std::byte* src, float* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kSuper; ++b, src += 210) {
    const float d = load_f16(src + 208);
    const std::byte* ql = src;
    const std::byte* qh = src + 128;
    const auto* sc = reinterpret_cast<const std::int8_t*>(src + 192);
    for (int half = 0; half < 2; ++half, dst += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((u8(ql, l) & 0x0F) | (((u8(qh, l) >> 0) & 3) << 4)) - 32;
        const int q2 = ((u8(ql, l + 32) & 0x0F) | (((u8(qh, l) >> 2) & 3) << 4)) - 32;
        const int q3 = ((u8(ql, l) >> 4) | (((u8(qh, l) >> 4) & 3) << 4)) - 32;
        const int q4 = ((u8(ql, l + 32) >> 4) | (((u8(qh, l) >> 6) & 3) << 4)) - 32;
        dst[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
        dst[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        dst[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        dst[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
  }
}

void quantize_q6_k(const float* src, std::byte* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kSuper; ++b, src += kSuper, dst += 210) {
    const auto [d, l] = signed_sub_scales(signed_scales<16>(src, -32.0f), 128);
    const Quants q = quantize_signed(src, widen_f16(narrow_f16(d)), l, -32, 31);
    std::memset(dst, 0, 210);
    for (int e = 0; e < kSuper; ++e) {
      const int u = q[static_cast<std::size_t>(e)] + 32, half = e / 128, g = (e % 128) / 32, i = e % 32;
      or_bits(dst, 64 * half + i + 32 * (g % 2), (u & 0x0F) << (g < 2 ? 0 : 4));
      or_bits(dst + 128, 32 * half + i, (u >> 4) << (2 * g));
    }
    for (std::size_t k = 0; k < 16; ++k) dst[192 + k] = static_cast<std::byte>(static_cast<std::int8_t>(l[k]));
    store_f16(dst + 208, d);
  }
}

// Per 32 elements ib: x = d * (ls_ib - 32) * kIq4Values[nibble], ls_ib = the nibble ib % 2 of
// scales_l[ib / 2] | the 2 bits 2 ib of scales_h << 4; nibbles as IQ4_NL's in qs[16 ib ..].
void dequantize_iq4_xs(const std::byte* src, float* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kSuper; ++b, src += 136) {
    const float d = load_f16(src);
    const std::uint16_t scales_h = load_u16(src + 2);
    const std::byte* qs = src + 8;
    for (int ib = 0; ib < 8; ++ib, qs += 16, dst += 32) {
      const int ls = ((u8(src + 4, ib / 2) >> (4 * (ib % 2))) & 0x0F) | (((scales_h >> (2 * ib)) & 3) << 4);
      const float dl = d * static_cast<float>(ls - 32);
      for (int j = 0; j < 16; ++j) {
        dst[j] = dl * static_cast<float>(kIq4Values[static_cast<std::size_t>(u8(qs, j) & 0x0F)]);
        dst[j + 16] = dl * static_cast<float>(kIq4Values[static_cast<std::size_t>(u8(qs, j) >> 4)]);
      }
    }
  }
}

void quantize_iq4_xs(const float* src, std::byte* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n / kSuper; ++b, src += kSuper, dst += 136) {
    const auto [d, l] = signed_sub_scales(signed_scales<8>(src, static_cast<float>(kIq4Values.front())), 32);
    const float stored = widen_f16(narrow_f16(d));
    std::memset(dst, 0, 136);
    store_f16(dst, d);
    std::uint16_t scales_h = 0;
    for (int ib = 0; ib < 8; ++ib) {
      const int ls = l[static_cast<std::size_t>(ib)] + 32;
      or_bits(dst + 4, ib / 2, (ls & 0x0F) << (4 * (ib % 2)));
      scales_h = static_cast<std::uint16_t>(scales_h | ((ls >> 4) << (2 * ib)));
      const float dl = stored * static_cast<float>(l[static_cast<std::size_t>(ib)]);
      const float id = dl != 0.0f ? 1.0f / dl : 0.0f;
      for (int j = 0; j < 32; ++j)
        or_bits(dst + 8, 16 * ib + j % 16, nearest_iq4(src[32 * ib + j] * id) << (j < 16 ? 0 : 4));
    }
    store_u16(dst + 2, scales_h);
  }
}

}  // namespace tapdiff::model::blocks
