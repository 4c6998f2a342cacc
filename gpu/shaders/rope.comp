#version 450
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
// rope: rotates each head's channel pairs of row t by the angle of pair i at position
// first_pos + t:   out[a] = x[a] cos - x[b] sin,  out[b] = x[a] sin + x[b] cos
// with (a, b) = (2i, 2i + 1) (interleaved) or (i, i + d/2) (rotate_half).   x, out [T, heads * d]
// cos and sin come from a table [T, d/2] of (cos, sin) pairs that the host computes in double
// from angle = pos * base^(-2i/d) and rounds to f32, exactly as the reference does: the GPU never
// evaluates a transcendental, so it matches the reference to f32 rounding of 4 products.
// One invocation per pair.
layout(local_size_x_id = 1) in;
layout(std430, binding = 0) readonly buffer Input { act_t x[]; };
layout(std430, binding = 1) readonly buffer Table { vec2 cos_sin[]; };
layout(std430, binding = 2) writeonly buffer Output { act_t y[]; };
layout(push_constant) uniform Push {
  uint rows;
  uint width;        // heads * head_dim
  uint head_dim;
  uint rotate_half;  // 0: interleaved pairs, 1: rotate-half pairs
} pc;
#include "common.glsl"

void main() {
  const uint half_dim = pc.head_dim / 2u;
  const uint pairs_per_row = pc.width / 2u;
  const uint p = group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (p >= pc.rows * pairs_per_row) return;
  const uint t = p / pairs_per_row, q = p - t * pairs_per_row;
  const uint head = q / half_dim, i = q - head * half_dim;
  const uint base = t * pc.width + head * pc.head_dim;
  const uint a = base + (pc.rotate_half != 0u ? i : 2u * i);
  const uint b = base + (pc.rotate_half != 0u ? i + half_dim : 2u * i + 1u);
  const vec2 cs = cos_sin[t * half_dim + i];
  const float x0 = float(x[a]), x1 = float(x[b]);
  y[a] = to_act(x0 * cs.x - x1 * cs.y);
  y[b] = to_act(x0 * cs.y + x1 * cs.x);
}
