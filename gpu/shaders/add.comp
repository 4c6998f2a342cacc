#version 450
#extension GL_GOOGLE_include_directive : require
// residual add: out = a + b, elementwise over n values.
layout(local_size_x_id = 1) in;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer Output { float y[]; };
layout(push_constant) uniform Push { uint n; } pc;
#include "common.glsl"

void main() {
  const uint i = group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i < pc.n) y[i] = a[i] + b[i];
}
