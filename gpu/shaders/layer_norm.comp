#version 450
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
// layer_norm: out[t] = (x[t] - m) * (1 / sqrt(mean((x[t] - m)^2) + eps)) * w (+ b), m = mean(x[t])
// x [T, dim], w and b [dim] (f32; b read where pc.has_bias). One workgroup per row; the mean, then
// the centred squares, each summed by a strided slice per invocation and a shared-memory tree in
// a fixed order: deterministic. Workgroup size: a power of two.
// (rmsnorm-eps, faults.glsl: the scale as 1 / (sqrt(mean((x[t] - m)^2)) + eps).)
layout(local_size_x_id = 1) in;
#include "push_constants.h"
layout(push_constant) uniform Push { LayerNormPush pc; };
layout(std430, binding = 0) readonly buffer Input { act_t x[]; };
layout(std430, binding = 1) readonly buffer Weight { float w[]; };
layout(std430, binding = 2) readonly buffer Bias { float b[]; };
layout(std430, binding = 3) writeonly buffer Output { act_t y[]; };
#include "common.glsl"
#include "faults.glsl"

shared float partial[gl_WorkGroupSize.x];

// The workgroup's values of v summed, the same on every invocation.
float workgroup_sum(float v) {
  const uint lid = gl_LocalInvocationID.x;
  partial[lid] = v;
  barrier();
  for (uint n = gl_WorkGroupSize.x / 2u; n > 0u; n >>= 1) {
    if (lid < n) partial[lid] += partial[lid + n];
    barrier();
  }
  const float total = partial[0];
  barrier();  // every invocation has read it before partial is written again
  return total;
}

void main() {
  const uint t = group_index();
  if (t >= pc.rows) return;  // uniform over the workgroup
  const uint lid = gl_LocalInvocationID.x;
  const uint base = t * pc.dim;
  float sum = 0.0;
  for (uint c = lid; c < pc.dim; c += gl_WorkGroupSize.x) sum += float(x[base + c]);
  const float mean = workgroup_sum(sum) / float(pc.dim);
  float squares = 0.0;
  for (uint c = lid; c < pc.dim; c += gl_WorkGroupSize.x) {
    const float d = float(x[base + c]) - mean;
    squares += d * d;
  }
  const float variance = workgroup_sum(squares) / float(pc.dim);
  const float scale = planted(FAULT_NORM_EPS_OUTSIDE_SQRT) ? 1.0 / (sqrt(variance) + pc.eps)
                                                           : 1.0 / sqrt(variance + pc.eps);
  for (uint c = lid; c < pc.dim; c += gl_WorkGroupSize.x) {
    const float v = ((float(x[base + c]) - mean) * scale) * w[c];
    y[base + c] = to_act(pc.has_bias != 0u ? v + b[c] : v);
  }
}
