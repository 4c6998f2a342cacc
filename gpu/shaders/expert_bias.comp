#version 450
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
// The experts' biases (gpt-oss's): y[p, c] += bias[e dim + c] for each (token, expert) pair p, of
// expert e = ids[p], in place, one invocation per element. SumPush: rows the pairs, dim the
// product's width, k the experts (an id past them reads the last, never outside the buffer).
layout(local_size_x_id = 1) in;
layout(std430, binding = 0) readonly buffer Ids { act_t expert_ids[]; };
layout(std430, binding = 1) readonly buffer Bias { float bias[]; };  // [experts * dim]
layout(std430, binding = 2) buffer Values { act_t y[]; };
#include "push_constants.h"
layout(push_constant) uniform Push { SumPush pc; };
#include "common.glsl"

void main() {
  const uint i = group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i >= pc.rows * pc.dim) return;
  const uint p = i / pc.dim, c = i - p * pc.dim;
  const uint e = min(uint(float(expert_ids[p])), pc.k - 1u);
  y[i] = to_act(float(y[i]) + bias[e * pc.dim + c]);
}
