#version 450
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
// Llama 4's experts' inputs (model::Experts::weights_scale_input): each (token, expert) pair p reads
// its token's row times its weight, out[p, c] = weights[p] * x[p / k, c], one invocation per
// element. SumPush: rows the pairs, dim the row's width, k the experts per token.
layout(local_size_x_id = 1) in;
layout(std430, binding = 0) readonly buffer Input { act_t x[]; };
layout(std430, binding = 1) readonly buffer Weights { act_t weights[]; };
layout(std430, binding = 2) writeonly buffer Output { act_t out_values[]; };
#include "push_constants.h"
layout(push_constant) uniform Push { SumPush pc; };
#include "common.glsl"

void main() {
  const uint i = group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i >= pc.rows * pc.dim) return;
  const uint p = i / pc.dim, c = i - p * pc.dim;
  out_values[i] = to_act(float(weights[p]) * float(x[(p / pc.k) * pc.dim + c]));
}
