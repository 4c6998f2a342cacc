#version 450
#extension GL_GOOGLE_include_directive : require
// q8_1_correction: what a Q4_1 or Q5_1 product computes more under llama.cpp's precision. ggml
// takes each weight block's minimum m times the sum its Q8_1 input block stores, rounded to f16,
// not the sum of the rounded values (reference/llama_cpp_rounding.h q8_1_sum_correction):
//   out[t, n] += sum over blocks b of excess[t, b] * m[n, b]
// excess [rows, blocks] (round_dot.comp), w the Q4_1 or Q5_1 matrix [n, blocks * 32] as stored,
// out [rows, n] f32. One invocation per output.
layout(local_size_x_id = 1) in;
layout(std430, binding = 0) readonly buffer Excess { float excess[]; };
layout(std430, binding = 1) readonly buffer Weights { uint w_words[]; };
layout(std430, binding = 2) buffer Output { float y[]; };
#include "push_constants.h"
layout(push_constant) uniform Push { Q81CorrectionPush pc; };
#include "common.glsl"
#include "dequant.glsl"

void main() {
  const uint i = group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i >= pc.rows * pc.n) return;
  const uint t = i / pc.n, col = i - t * pc.n;
  float sum = 0.0;
  for (uint b = 0u; b < pc.blocks; ++b)
    sum += excess[t * pc.blocks + b] * w_f16(col * pc.row_bytes + b * pc.block_bytes + 2u);
  y[i] += sum;
}
