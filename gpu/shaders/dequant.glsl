// Weights as stored in the model file (model/dtype.h), read as raw 32-bit words from the array
// `w_words` that the including shader declares, unpacked exactly as model::dequantize_row does:
//   f32, bf16: bit moves;  f16: exact widening (subnormals included);
//   Q8_0 block (34 bytes): f16 d, 32 x int8 q;        x = d * q
//   Q4_0 block (18 bytes): f16 d, 16 bytes of nibbles; x = d * (nibble - 8), byte j holds element
//                          j (low nibble) and j + 16 (high nibble)
// Each product d * q is one correctly rounded f32 multiply, as on the CPU, so the values match
// the reference bit for bit. In the f16 pipelines (ACT_F16) weights are f16 values: the host
// stores f32 and bf16 matrices as f16, and the products d * q are rounded to f16 here, as the
// reference's f16 emulation rounds its dequantized weights.

const uint DTYPE_F32 = 0u;
const uint DTYPE_F16 = 1u;
const uint DTYPE_BF16 = 2u;
const uint DTYPE_Q8_0 = 3u;
const uint DTYPE_Q4_0 = 4u;
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

// Element k of the weight row that starts at byte `row` of w_words, as stored (stored_weight_at)
// and as the kernels use it (weight_at).
float stored_weight_at(uint row, uint k) {
  if (DTYPE == DTYPE_F32) return uintBitsToFloat(w_words[(row >> 2) + k]);
  if (DTYPE == DTYPE_F16) return half_bits_to_float(w_u16(row + 2u * k));
  if (DTYPE == DTYPE_BF16) return uintBitsToFloat(w_u16(row + 2u * k) << 16);
  const uint j = k & 31u;
  if (DTYPE == DTYPE_Q8_0) {
    const uint block = row + (k >> 5) * 34u;
    const int q = int(w_u8(block + 2u + j) << 24) >> 24;  // sign-extend the int8
    return half_bits_to_float(w_u16(block)) * float(q);
  }
  const uint block = row + (k >> 5) * 18u;  // Q4_0
  const uint byte = w_u8(block + 2u + (j & 15u));
  const uint nibble = j < 16u ? (byte & 15u) : (byte >> 4);
  return half_bits_to_float(w_u16(block)) * float(int(nibble) - 8);
}

float weight_at(uint row, uint k) {
#ifdef ACT_F16
  if (DTYPE == DTYPE_Q8_0 || DTYPE == DTYPE_Q4_0) return round_f16(stored_weight_at(row, k));
#endif
  return stored_weight_at(row, k);
}
