// How activations are stored: `act_t`, the element type of every activation buffer (op inputs and
// outputs, the KV cache). f32 by default; with ACT_F16 defined (the --dtype f16 pipelines) f16,
// which needs storageBuffer16BitAccess only: every value is widened to f32 as it is loaded and
// all arithmetic stays f32 (f32 accumulation), so no shaderFloat16 is needed. With ACT_BF16 (the
// --dtype bf16 pipelines) bf16 values held in f32 words: every stored value is rounded to bf16,
// arithmetic is f32, as on a device without bf16 arithmetic.
// Included first, before the buffer declarations that use act_t.
// `act4`: 4 of them, for buffers read 4 values at a time (widened to vec4 as they are loaded).
#ifdef ACT_F16
#extension GL_EXT_shader_16bit_storage : require
#define act_t float16_t
#define act4 f16vec4
#else
#define act_t float
#define act4 vec4
#endif

// x rounded to the nearest f16 value, ties to even, kept in f32: what the reference's f16
// emulation computes (reference/round_f16.h), bit for bit. Past 65504 to inf, below 2^-14 to a
// multiple of 2^-24 (f16 subnormals), NaN unchanged. Done in integer and exact float operations,
// so it does not depend on how a driver rounds f32 -> f16 conversions.
float round_f16(float x) {
  const uint u = floatBitsToUint(x);
  const uint sign = u & 0x80000000u;
  const uint a = u ^ sign;
  if (a > 0x7F800000u) return x;  // NaN
  if (a < 0x38800000u)            // |x| < 2^-14: scaling by 2^24 is exact, roundEven rounds
    return uintBitsToFloat(sign | floatBitsToUint(roundEven(uintBitsToFloat(a) * 16777216.0) * 5.9604644775390625e-8));
  const uint r = (a + 0xFFFu + ((a >> 13) & 1u)) & ~0x1FFFu;  // keep 10 mantissa bits, ties to even
  return uintBitsToFloat(sign | (r > 0x477FE000u ? 0x7F800000u : r));
}

// x rounded to the nearest bf16 value (the top 16 bits of an f32), ties to even, kept in f32: what
// the reference's bf16 emulation computes (reference/rounding.h), bit for bit. Past the largest
// bf16 to inf; NaN becomes the quiet NaN of its sign.
float round_bf16(float x) {
  const uint u = floatBitsToUint(x);
  const uint sign = u & 0x80000000u;
  const uint a = u ^ sign;
  if (a > 0x7F800000u) return uintBitsToFloat(sign | 0x7FC00000u);  // NaN
  return uintBitsToFloat(sign | ((a + 0x7FFFu + ((a >> 16) & 1u)) & 0xFFFF0000u));
}

// The value an op stores: rounded to f16 in the f16 pipelines (then the conversion is exact), to
// bf16 in the bf16 ones. A macro, not a function: a function returning float16_t would need the
// Float16 capability (shaderFloat16), a conversion inside the store needs only 16-bit storage.
// to_act4: four values stored as a vec4 (the f32 and bf16 pipelines' vector stores).
#ifdef ACT_F16
#define to_act(v) float16_t(round_f16(v))
#elif defined(ACT_BF16)
#define to_act(v) round_bf16(v)
#define to_act4(v) vec4(round_bf16((v).x), round_bf16((v).y), round_bf16((v).z), round_bf16((v).w))
#else
#define to_act(v) (v)
#define to_act4(v) (v)
#endif
