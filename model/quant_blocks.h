#pragma once
// The block formats of quantized GGUF tensors, as ggml stores them (all little-endian, d/m/dmin
// f16). Dequantization is exactly ggml's: each value is the f32 expression ggml evaluates. Its
// products (an f16 scale, 11 significant bits, times integer sub-scales and quants, at most 12
// bits together) are exact in f32, and at most one sum (minus dmin * m, plus m) rounds, so every
// order of evaluation and every fused multiply-add gives the same bits: on the CPU, in the Vulkan
// kernels and in numpy.
// Quantization is round-to-nearest: as llama.cpp's reference for the 32-element formats with
// one scale (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1); a plain max-based scale per sub-block, without
// llama.cpp's search for the best scale, for IQ4_NL, IQ4_XS and the K-quants.
//
// 32-element blocks:
//   Q8_0   (34 B): d, 32 x int8 q;                       x = d * q
//   Q4_0   (18 B): d, 16 B nibbles;                       x = d * (nibble - 8)
//   Q4_1   (20 B): d, m, 16 B nibbles;                    x = d * nibble + m
//   Q5_0   (22 B): d, 4 B high bits, 16 B nibbles;        x = d * (q5 - 16)
//   Q5_1   (24 B): d, m, 4 B high bits, 16 B nibbles;     x = d * q5 + m
//   IQ4_NL (18 B): d, 16 B nibbles;                       x = d * kIq4Values[nibble]
//   MXFP4  (17 B): e (E8M0), 16 B nibbles;                x = 2^(e - 128) * kMxfp4Values[nibble] (E2M1 doubled;
//                  2^(e - 128) exact in f32 for every e, subnormal below e = 2)
// (nibble byte j holds element j low and element j + 16 high; bit j of the high-bit word is
// element j's fifth bit).
// 256-element super-blocks:
//   Q2_K   (84 B): 16 B scales (4-bit sc | 4-bit m << 4), 64 B 2-bit q, d, dmin; per 16: x = d*sc * q - dmin*m
//   Q3_K  (110 B): 32 B high-bit mask, 64 B 2-bit q, 12 B 6-bit scales, d; per 16: x = d*(sc - 32) * q3
//   Q4_K  (144 B): d, dmin, 12 B 6-bit scales and mins, 128 B nibbles; per 32: x = d*sc * q - dmin*m
//   Q5_K  (176 B): d, dmin, 12 B scales and mins, 32 B high bits, 128 B nibbles; per 32: as Q4_K
//   Q6_K  (210 B): 128 B low nibbles, 64 B 2-bit highs, 16 x int8 scales, d; per 16: x = d*sc * (q6 - 32)
//   IQ4_XS (136 B): d, 16-bit high scale bits, 4 B low scale nibbles, 128 B nibbles;
//                   per 32: x = d*(sc - 32) * kIq4Values[nibble]
// where, within a super-block, element e's quant sits as ggml's dequantize_row_* reads it (the
// functions below say where).
#include <array>
#include <cstddef>
#include <cstdint>

namespace tapdiff::model::blocks {

inline constexpr std::array<std::int8_t, 16> kIq4Values{-127, -104, -83, -65, -49, -35, -22, -10,
                                                        1,    13,   25,  38,  53,  69,  89,  113};

// E2M1's values doubled (so integers), as ggml's kvalues_mxfp4: nibble 8 is -0.
inline constexpr std::array<std::int8_t, 16> kMxfp4Values{0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// Each takes n elements of one row, a multiple of the block.
void dequantize_q8_0(const std::byte* src, float* dst, std::int64_t n);
void quantize_q8_0(const float* src, std::byte* dst, std::int64_t n);
void dequantize_q4_0(const std::byte* src, float* dst, std::int64_t n);
void quantize_q4_0(const float* src, std::byte* dst, std::int64_t n);
void dequantize_mxfp4(const std::byte* src, float* dst, std::int64_t n);
void quantize_mxfp4(const float* src, std::byte* dst, std::int64_t n);
void dequantize_q4_1(const std::byte* src, float* dst, std::int64_t n);
void quantize_q4_1(const float* src, std::byte* dst, std::int64_t n);
void dequantize_q5_0(const std::byte* src, float* dst, std::int64_t n);
void quantize_q5_0(const float* src, std::byte* dst, std::int64_t n);
void dequantize_q5_1(const std::byte* src, float* dst, std::int64_t n);
void quantize_q5_1(const float* src, std::byte* dst, std::int64_t n);
void dequantize_iq4_nl(const std::byte* src, float* dst, std::int64_t n);
void quantize_iq4_nl(const float* src, std::byte* dst, std::int64_t n);
void dequantize_q2_k(const std::byte* src, float* dst, std::int64_t n);
void quantize_q2_k(const float* src, std::byte* dst, std::int64_t n);
void dequantize_q3_k(const std::byte* src, float* dst, std::int64_t n);
void quantize_q3_k(const float* src, std::byte* dst, std::int64_t n);
void dequantize_q4_k(const std::byte* src, float* dst, std::int64_t n);
void quantize_q4_k(const float* src, std::byte* dst, std::int64_t n);
void dequantize_q5_k(const std::byte* src, float* dst, std::int64_t n);
void quantize_q5_k(const float* src, std::byte* dst, std::int64_t n);
void dequantize_q6_k(const std::byte* src, float* dst, std::int64_t n);
void quantize_q6_k(const float* src, std::byte* dst, std::int64_t n);
void dequantize_iq4_xs(const std::byte* src, float* dst, std::int64_t n);
void quantize_iq4_xs(const float* src, std::byte* dst, std::int64_t n);

// Round half to even (as ggml's nearest_int) of |v| < 2^22; NaN -> 0.
int nearest_int(float v);

// The index of the value of kIq4Values nearest to v (ties to the lower).
int nearest_iq4(float v);

}  // namespace tapdiff::model::blocks
