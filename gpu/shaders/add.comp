#version 450
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
// residual add: out = a + b, elementwise over n values.
layout(local_size_x_id = 1) in;
layout(std430, binding = 0) readonly buffer A { act_t a[]; };
layout(std430, binding = 1) readonly buffer B { act_t b[]; };
layout(std430, binding = 2) writeonly buffer Output { act_t y[]; };
layout(push_constant) uniform Push { uint n; } pc;
#include "common.glsl"

void main() {
  const uint i = group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i < pc.n) y[i] = to_act(float(a[i]) + float(b[i]));
}
