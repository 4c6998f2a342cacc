#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "model/dtype.h"

namespace tapdiff::model {
namespace {

std::uint16_t half_bits(float f) { return f32_to_f16(f); }

// An independent f32 -> f16 reference through double arithmetic (round to nearest even).
std::uint16_t reference_f16(float f) {
  const std::uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(f));
  if (std::isnan(f)) return sign | 0x7E00;
  if (a < std::ldexp(1.0, -14))
    return static_cast<std::uint16_t>(sign | static_cast<int>(std::nearbyint(std::ldexp(a, 24))));
  int e = 0;
  std::frexp(a, &e);                                 // a = m * 2^e, m in [0.5, 1)
  e -= 1;                                            // a = m' * 2^e, m' in [1, 2)
  double m = std::nearbyint(std::ldexp(a, 10 - e));  // in [1024, 2048]
  if (m == 2048.0) m = 1024.0, ++e;
  if (e > 15) return sign | 0x7C00;
  return static_cast<std::uint16_t>(sign | ((e + 15) << 10) | (static_cast<int>(m) - 1024));
}

std::vector<float> random_row(std::int64_t n, std::uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> row(static_cast<std::size_t>(n));
  for (float& x : row) x = dist(rng);
  return row;
}

std::vector<float> round_trip(DType t, const std::vector<float>& row) {
  const auto n = static_cast<std::int64_t>(row.size());
  std::vector<std::byte> bytes(row_bytes(t, n));
  quantize_row(t, row.data(), bytes.data(), n);
  std::vector<float> out(row.size());
  dequantize_row(t, bytes.data(), out.data(), n);
  return out;
}

TEST(Dtype, NamesSizesAndRowBytes) {
  EXPECT_EQ(all_dtypes().size(), 16u);
  for (DType t : all_dtypes()) EXPECT_EQ(dtype_from_name(dtype_name(t)), t);
  EXPECT_FALSE(dtype_from_name("q8_k").has_value());
  EXPECT_EQ(dtype_names(),
            "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_xs, mxfp4");
  EXPECT_FALSE(is_quantized(DType::bf16));
  EXPECT_TRUE(is_quantized(DType::iq4_nl));
  // ggml's block sizes (ggml.c type_traits): elements and bytes.
  const std::map<DType, std::pair<int, std::size_t>> ggml{
      {DType::q4_1, {32, 20}},   {DType::q5_0, {32, 22}},     {DType::q5_1, {32, 24}},   {DType::iq4_nl, {32, 18}},
      {DType::q2_k, {256, 84}},  {DType::q3_k, {256, 110}},   {DType::q4_k, {256, 144}}, {DType::q5_k, {256, 176}},
      {DType::q6_k, {256, 210}}, {DType::iq4_xs, {256, 136}}, {DType::mxfp4, {32, 17}}};
  for (const auto& [t, size] : ggml) {
    EXPECT_EQ(block_size(t), size.first) << dtype_name(t);
    EXPECT_EQ(block_bytes(t), size.second) << dtype_name(t);
  }
  EXPECT_EQ(row_bytes(DType::q4_k, 512), 288u);
  EXPECT_EQ(block_size(DType::f16), 1);
  EXPECT_EQ(block_size(DType::q4_0), 32);
  EXPECT_EQ(block_bytes(DType::q8_0), 34u);
  EXPECT_EQ(block_bytes(DType::q4_0), 18u);
  EXPECT_EQ(row_bytes(DType::f32, 10), 40u);
  EXPECT_EQ(row_bytes(DType::bf16, 10), 20u);
  EXPECT_EQ(row_bytes(DType::q8_0, 64), 68u);
  EXPECT_EQ(row_bytes(DType::q4_0, 64), 36u);
}

TEST(Dtype, F16KnownValuesAndEdgeCases) {
  EXPECT_EQ(half_bits(1.0f), 0x3C00);
  EXPECT_EQ(half_bits(-2.0f), 0xC000);
  EXPECT_EQ(half_bits(0.0f), 0x0000);
  EXPECT_EQ(half_bits(-0.0f), 0x8000);
  EXPECT_EQ(half_bits(65504.0f), 0x7BFF);    // largest finite
  EXPECT_EQ(half_bits(65519.996f), 0x7BFF);  // below the midpoint to inf
  EXPECT_EQ(half_bits(65520.0f), 0x7C00);    // the midpoint rounds to even: inf
  EXPECT_EQ(half_bits(1e10f), 0x7C00);
  EXPECT_EQ(half_bits(-INFINITY), 0xFC00);
  EXPECT_EQ(half_bits(std::ldexp(1.0f, -14)), 0x0400);             // smallest normal
  EXPECT_EQ(half_bits(std::ldexp(1.0f, -24)), 0x0001);             // smallest subnormal
  EXPECT_EQ(half_bits(std::ldexp(1.0f, -25)), 0x0000);             // tie between 0 and 1 ulp: even (0)
  EXPECT_EQ(half_bits(std::ldexp(3.0f, -25)), 0x0002);             // tie between 1 and 2 ulp: even (2)
  EXPECT_EQ(half_bits(std::ldexp(1023.0f, -24)), 0x03FF);          // largest subnormal
  EXPECT_EQ(half_bits(1.0f + std::ldexp(1.0f, -11)), 0x3C00);      // tie: mantissa 0 is even
  EXPECT_EQ(half_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie: mantissa 1 rounds up
  EXPECT_EQ(half_bits(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);  // above the tie
  const std::uint16_t nan = half_bits(NAN);
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x03FF, 0);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_to_f32(0x83FF), -std::ldexp(1023.0f, -24));
  EXPECT_EQ(f16_to_f32(0x7BFF), 65504.0f);
  EXPECT_EQ(f16_to_f32(0xFC00), -INFINITY);
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7E00)));
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7C01)));
  EXPECT_TRUE(std::signbit(f16_to_f32(0x8000)));
}

TEST(Dtype, EveryF16RoundTripsExactly) {
  for (std::uint32_t h = 0; h <= 0xFFFF; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    const float f = f16_to_f32(bits);
    if ((bits & 0x7C00) == 0x7C00 && (bits & 0x03FF) != 0) {
      EXPECT_TRUE(std::isnan(f)) << h;
      continue;
    }
    ASSERT_EQ(f32_to_f16(f), bits) << "half 0x" << std::hex << h << " -> " << f;
  }
}

TEST(Dtype, F16MatchesAReferenceOnRandomFloats) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::uint32_t> bits;
  int checked = 0;
  for (int i = 0; i < 400000; ++i) {
    // Exponents concentrated around the f16 range, with random mantissas (ties included by chance
    // and by construction every 16th value).
    std::uint32_t u = bits(rng);
    u = (u & 0x807FFFFFu) | ((100u + (u >> 23) % 50u) << 23);
    if (i % 16 == 0) u = (u & ~0x1FFFu) | 0x1000u;  // exactly halfway between two normals
    const float f = std::bit_cast<float>(u);
    ASSERT_EQ(f32_to_f16(f), reference_f16(f)) << "f = " << f << " bits 0x" << std::hex << u;
    ++checked;
  }
  EXPECT_EQ(checked, 400000);
}

TEST(Dtype, Bf16RoundsToNearestEven) {
  auto bf = [](std::uint32_t u) { return f32_to_bf16(std::bit_cast<float>(u)); };
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(bf(0x3F808000u), 0x3F80);  // tie, even stays
  EXPECT_EQ(bf(0x3F818000u), 0x3F82);  // tie, odd rounds up
  EXPECT_EQ(bf(0x3F808001u), 0x3F81);  // above the tie
  EXPECT_EQ(bf(0x3F807FFFu), 0x3F80);
  EXPECT_EQ(bf(0x7F7FFFFFu), 0x7F80);  // FLT_MAX rounds to inf
  EXPECT_EQ(f32_to_bf16(-INFINITY), 0xFF80);
  EXPECT_EQ(bf(0x00000001u), 0x0000);         // subnormal rounds to zero
  const std::uint16_t nan = bf(0x7F800001u);  // a NaN whose payload would truncate to inf
  EXPECT_TRUE(std::isnan(bf16_to_f32(nan)));
  EXPECT_EQ(bf16_to_f32(0x3F80), 1.0f);
  EXPECT_EQ(bf16_to_f32(0xC040), -3.0f);
}

TEST(Dtype, F16AndBf16RowsMatchTheScalarConversions) {
  const auto row = random_row(100, 1, 3.0f);
  const auto h = round_trip(DType::f16, row);
  const auto b = round_trip(DType::bf16, row);
  const auto f = round_trip(DType::f32, row);
  for (std::size_t i = 0; i < row.size(); ++i) {
    EXPECT_EQ(h[i], f16_to_f32(f32_to_f16(row[i])));
    EXPECT_EQ(b[i], bf16_to_f32(f32_to_bf16(row[i])));
    EXPECT_EQ(f[i], row[i]);
    EXPECT_LE(std::fabs(h[i] - row[i]), std::fabs(row[i]) * 0x1p-11f + 0x1p-25f);
    EXPECT_LE(std::fabs(b[i] - row[i]), std::fabs(row[i]) * 0x1p-8f);
  }
}

TEST(Dtype, Q8_0BlockLayout) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[static_cast<std::size_t>(j)] = static_cast<float>(j - 16);
  x[5] = -127.0f;  // amax 127 -> d = 1
  std::vector<std::byte> q(34);
  quantize_row(DType::q8_0, x.data(), q.data(), 32);
  EXPECT_EQ(std::to_integer<int>(q[0]), 0x00);  // d = f16 1.0 = 0x3C00, little-endian
  EXPECT_EQ(std::to_integer<int>(q[1]), 0x3C);
  for (int j = 0; j < 32; ++j)
    EXPECT_EQ(static_cast<std::int8_t>(q[static_cast<std::size_t>(2 + j)]),
              static_cast<int>(x[static_cast<std::size_t>(j)]));
}

TEST(Dtype, Q8_0RoundsHalvesAwayFromZeroAsRoundf) {
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;  // d = 1
  x[1] = 2.5f;
  x[2] = -2.5f;
  x[3] = std::nextafter(2.5f, 0.0f);
  x[4] = -0.5f;
  const auto back = round_trip(DType::q8_0, x);
  EXPECT_EQ(back[1], 3.0f);
  EXPECT_EQ(back[2], -3.0f);
  EXPECT_EQ(back[3], 2.0f);
  EXPECT_EQ(back[4], -1.0f);
  EXPECT_EQ(back[0], 127.0f);
}

TEST(Dtype, Q4_0BlockLayout) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[static_cast<std::size_t>(j)] = static_cast<float>(j % 16 - 8);
  // max |x| = 8 at x[0] = -8 -> d = -8 / -8 = 1, nibble = x + 8.
  std::vector<std::byte> q(18);
  quantize_row(DType::q4_0, x.data(), q.data(), 32);
  EXPECT_EQ(std::to_integer<int>(q[0]), 0x00);
  EXPECT_EQ(std::to_integer<int>(q[1]), 0x3C);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(std::to_integer<int>(q[static_cast<std::size_t>(2 + j)]), j | (j << 4));
  std::vector<float> back(32);
  dequantize_row(DType::q4_0, q.data(), back.data(), 32);
  EXPECT_EQ(back, x);
}

TEST(Dtype, Q4_0UsesTheSignedMaximumAsLlamaCpp) {
  // The largest |x| is positive: d = 4 / -8 = -0.5, so x = 4 maps to nibble 0 (exactly) and
  // x = -4 would need nibble 16: it clamps to 15 (value -3.5), llama.cpp's known asymmetry.
  std::vector<float> x(32, 0.0f);
  x[0] = 4.0f;
  x[1] = -4.0f;
  x[2] = 1.0f;
  const auto back = round_trip(DType::q4_0, x);
  EXPECT_EQ(back[0], 4.0f);
  EXPECT_EQ(back[1], -3.5f);
  EXPECT_EQ(back[2], 1.0f);
  EXPECT_EQ(back[3], 0.0f);
}

// |x - x'| <= d/2 from rounding, plus |q| * |d| * 2^-11 from storing d as f16.
TEST(Dtype, Q8_0ErrorIsWithinHalfAStep) {
  const auto row = random_row(32 * 64, 2, 2.0f);
  const auto back = round_trip(DType::q8_0, row);
  for (std::size_t b = 0; b < row.size() / 32; ++b) {
    float amax = 0.0f;
    for (std::size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(row[b * 32 + j]));
    const float d = amax / 127.0f;
    for (std::size_t j = 0; j < 32; ++j) {
      const std::size_t i = b * 32 + j;
      ASSERT_LE(std::fabs(back[i] - row[i]), d * (0.5f + 127.0f * 0x1p-11f) + 1e-7f) << "element " << i;
    }
  }
}

// |x - x'| <= |d| (one step: the clamp at nibble 15), |d| / 2 for all but the clamped side,
// plus 8 |d| 2^-11 from storing d as f16.
TEST(Dtype, Q4_0ErrorIsWithinOneStep) {
  const auto row = random_row(32 * 64, 3, 0.5f);
  const auto back = round_trip(DType::q4_0, row);
  int beyond_half_step = 0;
  for (std::size_t b = 0; b < row.size() / 32; ++b) {
    float amax = 0.0f;
    for (std::size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(row[b * 32 + j]));
    const float d = amax / 8.0f;
    for (std::size_t j = 0; j < 32; ++j) {
      const std::size_t i = b * 32 + j;
      const float err = std::fabs(back[i] - row[i]);
      ASSERT_LE(err, d * (1.0f + 8.0f * 0x1p-11f) + 1e-7f) << "element " << i;
      if (err > d * (0.5f + 8.0f * 0x1p-11f) + 1e-7f) ++beyond_half_step;
    }
  }
  EXPECT_LE(beyond_half_step, 64);  // only values near -max of each block can clamp
}

TEST(Dtype, ZeroBlocksStayZero) {
  const std::vector<float> zeros(512, 0.0f);
  for (DType t : all_dtypes()) EXPECT_EQ(round_trip(t, zeros), zeros) << dtype_name(t);
}

// The round-trip error of each block format, for normal rows: per element against the largest
// |x| of its block (steps are 2 amax / 2^bits, halved by rounding to nearest, widened by the clamp
// at the top of the signed formats and by the sub-block scales' own rounding in the
// super-blocks), and as the NMSE of the whole row (measured: q4_1 6.2e-3, q5_1 1.4e-3, iq4_nl
// 6.4e-3, q2_k 0.11, q3_k 0.024, q4_k 6.3e-3, q5_k 1.5e-3, q6_k 3.5e-4, iq4_xs 6.4e-3; mxfp4, whose
// top value 12 d lies in (0.75, 1.5] amax and whose widest step is 4 d, within 0.25 amax).
TEST(Dtype, BlockFormatsRoundTripWithinTheirSteps) {
  struct Bound {
    float per_element;  // of the block's amax
    double nmse;
  };
  const std::map<DType, Bound> bounds{
      {DType::q4_1, {0.07f, 8e-3}},   {DType::q5_0, {0.07f, 2.5e-3}}, {DType::q5_1, {0.035f, 2e-3}},
      {DType::iq4_nl, {0.12f, 8e-3}}, {DType::q2_k, {0.35f, 0.14}},   {DType::q3_k, {0.22f, 0.03}},
      {DType::q4_k, {0.07f, 8e-3}},   {DType::q5_k, {0.035f, 2e-3}},  {DType::q6_k, {0.026f, 5e-4}},
      {DType::iq4_xs, {0.11f, 8e-3}}, {DType::mxfp4, {0.25f, 0.03}}};
  const auto row = random_row(256 * 64, 4, 1.5f);
  for (const auto& [t, bound] : bounds) {
    const auto back = round_trip(t, row);
    const std::size_t block = static_cast<std::size_t>(block_size(t));
    double sum_sq = 0, err_sq = 0;
    for (std::size_t b = 0; b < row.size() / block; ++b) {
      float amax = 0.0f;
      for (std::size_t j = 0; j < block; ++j) amax = std::max(amax, std::fabs(row[b * block + j]));
      for (std::size_t j = 0; j < block; ++j) {
        const std::size_t i = b * block + j;
        ASSERT_LE(std::fabs(back[i] - row[i]), bound.per_element * amax) << dtype_name(t) << " element " << i;
        sum_sq += static_cast<double>(row[i]) * row[i];
        err_sq += static_cast<double>(back[i] - row[i]) * (back[i] - row[i]);
      }
    }
    EXPECT_LT(err_sq / sum_sq, bound.nmse) << dtype_name(t);
  }
}

// Hand-built blocks decode as ggml's layout says, element by element.
TEST(Dtype, Mxfp4ReadsItsE8M0ScaleAndNibblesWhereGgmlPutsThem) {
  std::vector<std::byte> b(17);
  for (std::size_t j = 0; j < 16; ++j) b[1 + j] = static_cast<std::byte>(j | ((15 - j) << 4));
  const std::array<float, 16> values{0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
  for (const auto& [e, d] :
       {std::pair{129, 2.0f}, std::pair{128, 1.0f}, std::pair{1, 0x1p-127f}, std::pair{0, 0x1p-128f}}) {
    b[0] = static_cast<std::byte>(e);
    std::vector<float> out(32);
    dequantize_row(DType::mxfp4, b.data(), out.data(), 32);
    for (std::size_t j = 0; j < 16; ++j) {
      EXPECT_EQ(out[j], d * values[j]) << "e " << e << " element " << j;
      EXPECT_EQ(out[16 + j], d * values[15 - j]) << "e " << e << " element " << 16 + j;
    }
  }
}

TEST(Dtype, Q4_KReadsScalesMinsAndNibblesWhereGgmlPutsThem) {
  std::vector<std::byte> b(144, std::byte{0});
  auto put_f16 = [&](std::size_t at, float v) {
    const std::uint16_t h = f32_to_f16(v);
    std::memcpy(b.data() + at, &h, 2);
  };
  put_f16(0, 0.5f);   // d
  put_f16(2, 0.25f);  // dmin
  // Sub-block 1: scale 3, min 2 (low 6 bits of bytes 1 and 5); sub-block 6: scale 17 = 1 | 1 << 4
  // (byte 10 low nibble, byte 2 bits 6-7), min 33 = 1 | 2 << 4 (byte 10 high nibble, byte 6 bits 6-7).
  b[4 + 1] = std::byte{3}, b[4 + 5] = std::byte{2};
  b[4 + 2] = std::byte{1 << 6}, b[4 + 6] = std::byte{2 << 6}, b[4 + 10] = std::byte{0x11};
  // Element 32 + 5 (sub-block 1): high nibble of byte 5; element 192 + 7 (sub-block 6): low nibble of byte 96 + 7.
  b[16 + 5] = std::byte{0x90};
  b[16 + 96 + 7] = std::byte{0x0C};
  std::vector<float> x(256);
  dequantize_row(DType::q4_k, b.data(), x.data(), 256);
  EXPECT_EQ(x[37], 0.5f * 3 * 9 - 0.25f * 2);
  EXPECT_EQ(x[199], 0.5f * 17 * 12 - 0.25f * 33);
  EXPECT_EQ(x[5], 0.0f);  // sub-block 0: scale and min 0
}

TEST(Dtype, Q6_KReadsSignedScalesAndSixBitQuants) {
  std::vector<std::byte> b(210, std::byte{0});
  const std::uint16_t d = f32_to_f16(0.125f);
  std::memcpy(b.data() + 208, &d, 2);
  b[192 + 13] = std::byte{0xFD};  // scale of elements 208 .. 223: -3
  // Element 128 + 64 + 16 + 3 = 211: half 1, quarter 2 (high nibble of ql[64 + 19]), high pair of
  // qh[32 + 19] at bits 4-5. q = 0x5 | 2 << 4 = 37, minus 32 = 5.
  b[64 + 19] = std::byte{0x50};
  b[128 + 32 + 19] = std::byte{2 << 4};
  std::vector<float> x(256);
  dequantize_row(DType::q6_k, b.data(), x.data(), 256);
  EXPECT_EQ(x[211], 0.125f * -3 * 5);
  EXPECT_EQ(x[210], 0.125f * -3 * -32);  // a zero quant byte is q = -32
}

}  // namespace
}  // namespace tapdiff::model
