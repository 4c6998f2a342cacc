#version 450
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
// silu_mul: out = silu(gate) * up = gate / (1 + exp(-gate)) * up, elementwise over n values
// (elementwise.glsl: a = gate, b = up).
// (silu-approx, faults.glsl: out = gate * clamp(0.5 + gate/4, 0, 1) * up, the hard sigmoid.)
layout(local_size_x_id = 1) in;
layout(push_constant) uniform Push { uint n; } pc;
#include "common.glsl"
#include "faults.glsl"

float combine(float g, float u) {
  return planted(FAULT_SILU_HARD_SIGMOID) ? g * clamp(0.5 + 0.25 * g, 0.0, 1.0) * u : g / (1.0 + exp(-g)) * u;
}

#include "elementwise.glsl"
