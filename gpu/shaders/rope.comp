#version 450
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
// rope: rotates each head's channel pairs of row t by the angle of pair i at position
// first_pos + t:   out[a] = x[a] cos - x[b] sin,  out[b] = x[a] sin + x[b] cos
// with (a, b) = (2i, 2i + 1) (interleaved) or (f + i, f + i + r/2) (rotate_half) for the r =
// rotary_dim channels of a head from f = rotary_first; the others pass (their table entries are
// (1, 0): the f/2 first and those past the rotated ones).   x, out [T, heads * d]
// cos and sin come from a table [T, d/2] of (cos, sin) pairs that the host computes in double
// (model/rope.h's frequencies and attention factor) and rounds to f32, exactly as the reference
// does: the GPU never evaluates a transcendental, so it matches the reference to f32 rounding of 4
// products.
// One invocation per 4 pairs of a head where head_dim is a multiple of 8 (read and written 4 or 8
// values at a time, faster than a pair at a time: docs/benchmarks.md), else one per pair
// (Kernels::rope).
layout(local_size_x_id = 1) in;
layout(std430, binding = 0) readonly buffer Input { act_t x[]; };
layout(std430, binding = 1) readonly buffer Table { vec2 cos_sin[]; };
layout(std430, binding = 2) writeonly buffer Output { act_t y[]; };
layout(std430, binding = 0) readonly buffer InputQuads { act4 x_quads[]; };
layout(std430, binding = 1) readonly buffer TableQuads { vec4 cos_sin_pairs[]; };
#include "push_constants.h"
layout(push_constant) uniform Push { RopePush pc; };
#include "common.glsl"

// Stores 4 values at y[at], at a multiple of 4: f16 as one 8-byte word pair (the values rounded by
// round_f16 before packHalf2x16: exact), f32 as a vec4.
#ifdef ACT_F16
layout(std430, binding = 2) writeonly buffer OutputQuads { uvec2 y_quads[]; };
void store4(uint at, vec4 v) {
  y_quads[at / 4u] = uvec2(packHalf2x16(vec2(round_f16(v.x), round_f16(v.y))),
                           packHalf2x16(vec2(round_f16(v.z), round_f16(v.w))));
}
#else
layout(std430, binding = 2) writeonly buffer OutputQuads { vec4 y_quads[]; };
void store4(uint at, vec4 v) { y_quads[at / 4u] = to_act4(v); }
#endif

// Pair i of a head: (a, b) = (2i, 2i + 1), or with rotate-half the f/2 passing pairs before the
// rotated ones two by two, the rotated (f + j, f + j + r/2), then the passing channels past them
// two by two, from the head's first value.
void rotate_pair(uint base, uint t, uint i, uint half_dim) {
  const uint rotary_half = pc.rotary_dim / 2u, lead = pc.rotary_first / 2u;
  uint a = base + 2u * i, b = a + 1u;
  if (pc.rotate_half != 0u && i >= lead && i < lead + rotary_half) a = base + i + lead, b = a + rotary_half;
  if (pc.rotate_half != 0u && i >= lead + rotary_half)
    a = base + pc.rotary_first + pc.rotary_dim + 2u * (i - lead - rotary_half), b = a + 1u;
  const vec2 cs = cos_sin[t * half_dim + i];
  const float x0 = float(x[a]), x1 = float(x[b]);
  y[a] = to_act(x0 * cs.x - x1 * cs.y);
  y[b] = to_act(x0 * cs.y + x1 * cs.x);
}

// Pairs i .. i + 3 of a head, i a multiple of 4, half_dim a multiple of 4, every channel rotating.
void rotate_quad(uint base, uint t, uint i, uint half_dim) {
  const vec4 c01 = cos_sin_pairs[(t * half_dim + i) / 2u], c23 = cos_sin_pairs[(t * half_dim + i) / 2u + 1u];
  const vec4 c = vec4(c01.x, c01.z, c23.x, c23.z), s = vec4(c01.y, c01.w, c23.y, c23.w);
  vec4 x0, x1;
  if (pc.rotate_half != 0u) {
    x0 = vec4(x_quads[(base + i) / 4u]);
    x1 = vec4(x_quads[(base + i + half_dim) / 4u]);
  } else {  // 8 values: pairs interleaved
    const vec4 lo = vec4(x_quads[(base + 2u * i) / 4u]), hi = vec4(x_quads[(base + 2u * i) / 4u + 1u]);
    x0 = vec4(lo.x, lo.z, hi.x, hi.z);
    x1 = vec4(lo.y, lo.w, hi.y, hi.w);
  }
  const vec4 r0 = x0 * c - x1 * s, r1 = x0 * s + x1 * c;
  if (pc.rotate_half != 0u) {
    store4(base + i, r0);
    store4(base + i + half_dim, r1);
  } else {
    store4(base + 2u * i, vec4(r0.x, r1.x, r0.y, r1.y));
    store4(base + 2u * i + 4u, vec4(r0.z, r1.z, r0.w, r1.w));
  }
}

void main() {
  const uint half_dim = pc.head_dim / 2u;
  const uint per = pc.head_dim % 8u == 0u && pc.rotary_dim == pc.head_dim ? 4u : 1u;  // pairs per invocation
  const uint slots_per_row = pc.width / 2u / per;
  const uint p = group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (p >= pc.rows * slots_per_row) return;
  const uint t = p / slots_per_row, q = (p - t * slots_per_row) * per;
  const uint head = q / half_dim, i = q - head * half_dim;
  const uint base = t * pc.width + head * pc.head_dim;
  if (per == 4u)
    rotate_quad(base, t, i, half_dim);
  else
    rotate_pair(base, t, i, half_dim);
}
