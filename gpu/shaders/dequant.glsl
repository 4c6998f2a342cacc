// Weights as stored in the model file (model/dtype.h, model/quant_blocks.h), read as raw 32-bit
// words from the array `w_words` that the including shader declares, unpacked exactly as
// model::dequantize_row does: f32, bf16 by bit moves, f16 by exact widening (subnormals
// included), and every block format with ggml's f32 expression. Its products (an f16 scale
// times integer sub-scales and quants) are exact in f32 and at most one sum rounds, so the values
// match the reference bit for bit whatever order or fusion the compiler picks. In the f16
// pipelines (ACT_F16) weights are f16 values: the host stores f32 and bf16 matrices as f16, and
// the block formats' values are rounded to f16 here, as the reference's f16 emulation rounds its
// dequantized weights. In the bf16 pipelines (ACT_BF16) likewise bf16 values: the host stores f32
// and f16 matrices as bf16, and the block formats' values are rounded to bf16 here.

const uint DTYPE_F32 = 0u;  // the order of model::DType
const uint DTYPE_F16 = 1u;
const uint DTYPE_BF16 = 2u;
const uint DTYPE_Q8_0 = 3u;
const uint DTYPE_Q4_0 = 4u;
const uint DTYPE_Q4_1 = 5u;
const uint DTYPE_Q5_0 = 6u;
const uint DTYPE_Q5_1 = 7u;
const uint DTYPE_IQ4_NL = 8u;
const uint DTYPE_Q2_K = 9u;
const uint DTYPE_Q3_K = 10u;
const uint DTYPE_Q4_K = 11u;
const uint DTYPE_Q5_K = 12u;
const uint DTYPE_Q6_K = 13u;
const uint DTYPE_IQ4_XS = 14u;
const uint DTYPE_MXFP4 = 15u;
layout(constant_id = 0) const uint DTYPE = 0u;

uint w_u8(uint byte_offset) { return (w_words[byte_offset >> 2] >> ((byte_offset & 3u) << 3)) & 0xFFu; }

// byte_offset must be even (f16 scales and 16-bit elements always are).
uint w_u16(uint byte_offset) { return (w_words[byte_offset >> 2] >> ((byte_offset & 2u) << 3)) & 0xFFFFu; }

// IEEE half bits -> float, exact for every value (no reliance on the driver's unpackHalf2x16).
float half_bits_to_float(uint h) {
  const uint sign = (h & 0x8000u) << 16;
  const uint e = (h >> 10) & 0x1Fu;
  const uint m = h & 0x3FFu;
  if (e == 0u) {  // zero or subnormal: m * 2^-24, exact in f32
    const float v = float(m) * 5.9604644775390625e-8;
    return sign != 0u ? -v : v;
  }
  if (e == 31u) return uintBitsToFloat(sign | 0x7F800000u | (m << 13));  // inf, nan
  return uintBitsToFloat(sign | ((e + 112u) << 23) | (m << 13));
}

const int MXFP4_VALUES[16] = int[16](0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12);  // E2M1 doubled
// 2^(e - 128) by its bits (ggml's E8M0 half scale): subnormal below e = 2.
float mxfp4_scale(uint e) { return uintBitsToFloat(e < 2u ? 0x00200000u << e : (e - 1u) << 23); }
const int IQ4_VALUES[16] = int[16](-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);

float w_f16(uint byte_offset) { return half_bits_to_float(w_u16(byte_offset)); }

// Element j's 4-bit value in the 16 nibble bytes at q: byte j low, byte j - 16 high.
uint nibble_at(uint q, uint j) {
  const uint byte = w_u8(q + (j & 15u));
  return j < 16u ? (byte & 15u) : (byte >> 4);
}

// Element j's 5-bit value of a Q5_0 / Q5_1 block whose 32 high bits are at h, nibbles after them.
uint five_bits_at(uint h, uint j) { return nibble_at(h + 4u, j) | (((w_u8(h + (j >> 3)) >> (j & 7u)) & 1u) << 4); }

// The 6-bit scale (x) and min (y) of sub-block j of the 12 Q4_K / Q5_K scale bytes at q.
uvec2 scale_min_k4(uint q, uint j) {
  if (j < 4u) return uvec2(w_u8(q + j) & 63u, w_u8(q + j + 4u) & 63u);
  return uvec2((w_u8(q + j + 4u) & 15u) | ((w_u8(q + j - 4u) >> 6) << 4),
               (w_u8(q + j + 4u) >> 4) | ((w_u8(q + j) >> 6) << 4));
}

// The 2-bit field of element e (of 256) in the 64 bytes of Q2_K / Q3_K quants at q.
uint two_bits_at(uint q, uint e) { return (w_u8(q + 32u * (e >> 7) + (e & 31u)) >> (2u * ((e & 127u) >> 5))) & 3u; }

// Element e of the 256-element super-block at b, by format (model/quant_blocks.h).
float q2_k_at(uint b, uint e) {
  const uint sc = w_u8(b + (e >> 4));
  const float dl = w_f16(b + 80u) * float(sc & 15u), ml = w_f16(b + 82u) * float(sc >> 4);
  return dl * float(two_bits_at(b + 16u, e)) - ml;
}

float q3_k_at(uint b, uint e) {
  const uint k = e >> 4, s = b + 96u;
  const uint low = k < 8u ? (w_u8(s + k) & 15u) : (w_u8(s + k - 8u) >> 4);
  const uint scale = low | (((w_u8(s + 8u + (k & 3u)) >> (2u * (k >> 2))) & 3u) << 4);
  const bool high = ((w_u8(b + (e & 31u)) >> (e >> 5)) & 1u) != 0u;
  const float dl = w_f16(b + 108u) * float(int(scale) - 32);
  return dl * float(int(two_bits_at(b + 32u, e)) - (high ? 0 : 4));
}

float q4_k_at(uint b, uint e) {
  const uint j = e >> 5;
  const uvec2 sm = scale_min_k4(b + 4u, j);
  const uint byte = w_u8(b + 16u + 32u * (e >> 6) + (e & 31u));
  const float dl = w_f16(b) * float(sm.x), ml = w_f16(b + 2u) * float(sm.y);
  return dl * float((j & 1u) == 0u ? (byte & 15u) : (byte >> 4)) - ml;
}

float q5_k_at(uint b, uint e) {
  const uint j = e >> 5;
  const uvec2 sm = scale_min_k4(b + 4u, j);
  const uint byte = w_u8(b + 48u + 32u * (e >> 6) + (e & 31u));
  const uint q = ((j & 1u) == 0u ? (byte & 15u) : (byte >> 4)) + 16u * ((w_u8(b + 16u + (e & 31u)) >> j) & 1u);
  const float dl = w_f16(b) * float(sm.x), ml = w_f16(b + 2u) * float(sm.y);
  return dl * float(q) - ml;
}

float q6_k_at(uint b, uint e) {
  const uint n = e >> 7, g = (e & 127u) >> 5, l = e & 31u;
  const uint low_byte = w_u8(b + 64u * n + l + 32u * (g & 1u));
  const uint low = g < 2u ? (low_byte & 15u) : (low_byte >> 4);
  const uint high = (w_u8(b + 128u + 32u * n + l) >> (2u * g)) & 3u;
  const int sc = int(w_u8(b + 192u + (e >> 4)) << 24) >> 24;  // sign-extend the int8
  const float dl = w_f16(b + 208u) * float(sc);
  return dl * float(int(low | (high << 4)) - 32);
}

float iq4_xs_at(uint b, uint e) {
  const uint ib = e >> 5;
  const uint ls = ((w_u8(b + 4u + (ib >> 1)) >> (4u * (ib & 1u))) & 15u) | (((w_u16(b + 2u) >> (2u * ib)) & 3u) << 4);
  const float dl = w_f16(b) * float(int(ls) - 32);
  return dl * float(IQ4_VALUES[nibble_at(b + 8u + 16u * ib, e & 31u)]);
}

// Element k of the weight row that starts at byte `row` of w_words, as stored (stored_weight_at)
// and as the kernels use it (weight_at).
float stored_weight_at(uint row, uint k) {
  if (DTYPE == DTYPE_F32) return uintBitsToFloat(w_words[(row >> 2) + k]);
  if (DTYPE == DTYPE_F16) return w_f16(row + 2u * k);
  if (DTYPE == DTYPE_BF16) return uintBitsToFloat(w_u16(row + 2u * k) << 16);
  const uint j = k & 31u, e = k & 255u;
  if (DTYPE == DTYPE_Q8_0) {
    const uint block = row + (k >> 5) * 34u;
    const int q = int(w_u8(block + 2u + j) << 24) >> 24;  // sign-extend the int8
    return w_f16(block) * float(q);
  }
  if (DTYPE == DTYPE_Q4_0) {
    const uint block = row + (k >> 5) * 18u;
    return w_f16(block) * float(int(nibble_at(block + 2u, j)) - 8);
  }
  if (DTYPE == DTYPE_Q4_1) {
    const uint block = row + (k >> 5) * 20u;
    return w_f16(block) * float(nibble_at(block + 4u, j)) + w_f16(block + 2u);
  }
  if (DTYPE == DTYPE_Q5_0) {
    const uint block = row + (k >> 5) * 22u;
    return w_f16(block) * float(int(five_bits_at(block + 2u, j)) - 16);
  }
  if (DTYPE == DTYPE_Q5_1) {
    const uint block = row + (k >> 5) * 24u;
    return w_f16(block) * float(five_bits_at(block + 4u, j)) + w_f16(block + 2u);
  }
  if (DTYPE == DTYPE_IQ4_NL) {
    const uint block = row + (k >> 5) * 18u;
    return w_f16(block) * float(IQ4_VALUES[nibble_at(block + 2u, j)]);
  }
  if (DTYPE == DTYPE_MXFP4) {
    const uint block = row + (k >> 5) * 17u;
    return mxfp4_scale(w_u8(block)) * float(MXFP4_VALUES[nibble_at(block + 1u, j)]);
  }
  if (DTYPE == DTYPE_Q2_K) return q2_k_at(row + (k >> 8) * 84u, e);
  if (DTYPE == DTYPE_Q3_K) return q3_k_at(row + (k >> 8) * 110u, e);
  if (DTYPE == DTYPE_Q4_K) return q4_k_at(row + (k >> 8) * 144u, e);
  if (DTYPE == DTYPE_Q5_K) return q5_k_at(row + (k >> 8) * 176u, e);
  if (DTYPE == DTYPE_Q6_K) return q6_k_at(row + (k >> 8) * 210u, e);
  return iq4_xs_at(row + (k >> 8) * 136u, e);  // IQ4_XS
}

float weight_at(uint row, uint k) {
#ifdef ACT_F16
  if (DTYPE >= DTYPE_Q8_0) return round_f16(stored_weight_at(row, k));
#elif defined(ACT_BF16)
  if (DTYPE >= DTYPE_Q8_0) return round_bf16(stored_weight_at(row, k));
#endif
  return stored_weight_at(row, k);
}
