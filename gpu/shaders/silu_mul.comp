#version 450
#extension GL_GOOGLE_include_directive : require
// silu_mul: out = silu(gate) * up = gate / (1 + exp(-gate)) * up, elementwise over n values.
layout(local_size_x_id = 1) in;
layout(std430, binding = 0) readonly buffer Gate { float gate[]; };
layout(std430, binding = 1) readonly buffer Up { float up[]; };
layout(std430, binding = 2) writeonly buffer Output { float y[]; };
layout(push_constant) uniform Push { uint n; } pc;
#include "common.glsl"

void main() {
  const uint i = group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i < pc.n) {
    const float g = gate[i];
    y[i] = g / (1.0 + exp(-g)) * up[i];
  }
}
