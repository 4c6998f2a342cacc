#version 450
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
// round_dot: a product's input as llama.cpp's CPU backend converts it to the weight type's
// dot-product type (model/llama_cpp_precision.h), quantized and read back as the product reads it;
// bit for bit what the reference's emulation computes (reference/llama_cpp_rounding.cpp):
//   f16, bf16   each value to the nearest, ties to even
//   q8_0, q8_1  blocks of 32: d = f16(amax / 127), each value roundEven(x * (127 / amax)) * d; q8_1
//               also writes per block the excess of the sum its block stores over the values' sum,
//               f16(amax / 127 * sum(q)) - d * sum(q), which q8_1_correction.comp weighs by the
//               weight blocks' minimums
//   q8_k        blocks of 256: m the value of largest magnitude (the first of equal ones),
//               iscale = -127 / m, each value min(127, roundEven(iscale * x)) * (1 / iscale)
// x, out [units * block] f32 (the llama.cpp precision's activations are f32), excess [units]
// (q8_1 only). One invocation per block (per value for f16 and bf16). Each division is computed in
// double and rounded once, which gives f32's correctly rounded quotient (Vulkan allows an f32
// division 2.5 ulp; ggml's is exact, and one ulp can move a value across a rounding boundary).
layout(local_size_x_id = 1) in;
layout(std430, binding = 0) readonly buffer Input { float x[]; };
layout(std430, binding = 1) writeonly buffer Output { float y[]; };
layout(std430, binding = 2) writeonly buffer Excess { float excess[]; };
#include "push_constants.h"
layout(push_constant) uniform Push { RoundDotPush pc; };
#include "common.glsl"

const uint DOT_F16 = 1u, DOT_BF16 = 2u, DOT_Q8_0 = 3u, DOT_Q8_1 = 4u, DOT_Q8_K = 5u;  // model::DotType's order

float quotient(float a, float b) { return float(double(a) / double(b)); }

void round_block_32(uint unit) {
  const uint base = unit * 32u;
  float amax = 0.0;
  for (uint j = 0u; j < 32u; ++j) amax = max(amax, abs(x[base + j]));
  const float d = round_f16(quotient(amax, 127.0));
  const float id = amax != 0.0 ? quotient(127.0, amax) : 0.0;
  float sum = 0.0;  // of 32 integers of magnitude 127 or less: exact
  for (uint j = 0u; j < 32u; ++j) {
    const float q = roundEven(x[base + j] * id);
    y[base + j] = q * d;
    sum += q;
  }
  if (pc.type == DOT_Q8_1) {
    precise float stored = round_f16(quotient(amax, 127.0) * sum);
    precise float held = d * sum;
    excess[unit] = stored - held;
  }
}

void round_block_256(uint unit) {
  const uint base = unit * 256u;
  float m = 0.0, amax = 0.0;
  for (uint j = 0u; j < 256u; ++j) {
    const float v = x[base + j];
    if (abs(v) > amax) amax = abs(v), m = v;
  }
  if (amax == 0.0) {
    for (uint j = 0u; j < 256u; ++j) y[base + j] = 0.0;
    return;
  }
  const float iscale = quotient(-127.0, m);
  const float d = quotient(1.0, iscale);
  for (uint j = 0u; j < 256u; ++j) y[base + j] = min(127.0, roundEven(iscale * x[base + j])) * d;
}

void main() {
  const uint unit = group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (unit >= pc.units) return;
  if (pc.type == DOT_F16) y[unit] = round_f16(x[unit]);
  else if (pc.type == DOT_BF16) y[unit] = round_bf16(x[unit]);
  else if (pc.type == DOT_Q8_K) round_block_256(unit);
  else round_block_32(unit);
}
