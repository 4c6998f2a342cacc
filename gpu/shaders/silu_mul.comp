#version 450
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
// silu_mul: out = silu(gate) * up = gate / (1 + exp(-gate)) * up, elementwise over n values.
// (silu-approx, faults.glsl: out = gate * clamp(0.5 + gate/4, 0, 1) * up, the hard sigmoid.)
layout(local_size_x_id = 1) in;
layout(std430, binding = 0) readonly buffer Gate { act_t gate[]; };
layout(std430, binding = 1) readonly buffer Up { act_t up[]; };
layout(std430, binding = 2) writeonly buffer Output { act_t y[]; };
layout(push_constant) uniform Push { uint n; } pc;
#include "common.glsl"
#include "faults.glsl"

void main() {
  const uint i = group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i < pc.n) {
    const float g = float(gate[i]), u = float(up[i]);
    y[i] = to_act(planted(FAULT_SILU_HARD_SIGMOID) ? g * clamp(0.5 + 0.25 * g, 0.0, 1.0) * u : g / (1.0 + exp(-g)) * u);
  }
}
