#version 450
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
// rms_norm: out[t] = x[t] * (1 / sqrt(mean(x[t]^2) + eps)) * w      x [T, dim], w [dim] (f32)
// One workgroup per row; each invocation sums the squares of a strided slice of the row, then a
// shared-memory tree in a fixed order: deterministic. Workgroup size: a power of two. Rows of a
// multiple of 4 values are read 4 at a time (a decode step's one workgroup waits on each read in
// turn: 4x fewer of them); f16 rows of a multiple of 8, 8 at a time, read and written as 16-byte
// uvec4s (the values rounded by round_f16 before packHalf2x16: exact).
// (rmsnorm-eps, faults.glsl: out[t] = x[t] / (sqrt(mean(x[t]^2)) + eps) * w.)
//
// With ADD_FIRST (add+rms_norm: a residual add and the norm of its sum in one dispatch): x = a +
// residual_scale * b,
// rounded as add.comp rounds it, stored to `sum` by the pass that sums the squares; the pass that
// scales reads back what its own invocation stored. The same values and the same order of every
// sum as add then rms_norm: the same bits, one dispatch, barrier and read of the row fewer.
layout(local_size_x_id = 1) in;
#include "push_constants.h"
layout(push_constant) uniform Push { NormPush pc; };
#ifdef ADD_FIRST
// Bindings: 0 a, 1 b, 2 w, 3 sum (a + b), 4 out.
#define W_BINDING 2
#define OUT_BINDING 4
layout(std430, binding = 0) readonly buffer A { act_t a[]; };
layout(std430, binding = 1) readonly buffer B { act_t b[]; };
layout(std430, binding = 0) readonly buffer AQuads { act4 a_quads[]; };
layout(std430, binding = 1) readonly buffer BQuads { act4 b_quads[]; };
layout(std430, binding = 0) readonly buffer AOctets { uvec4 a_octets[]; };
layout(std430, binding = 1) readonly buffer BOctets { uvec4 b_octets[]; };
layout(std430, binding = 3) buffer Sum { act_t x[]; };
layout(std430, binding = 3) buffer SumQuads { act4 x_quads[]; };
layout(std430, binding = 3) buffer SumOctets { uvec4 x_octets[]; };
float combine(float p, float q) { return p + pc.residual_scale * q; }
#include "combine_pair.glsl"
#else
// Bindings: 0 x, 1 w, 2 out.
#define W_BINDING 1
#define OUT_BINDING 2
layout(std430, binding = 0) readonly buffer Input { act_t x[]; };
layout(std430, binding = 0) readonly buffer InputQuads { act4 x_quads[]; };
layout(std430, binding = 0) readonly buffer InputOctets { uvec4 x_octets[]; };
#endif
layout(std430, binding = W_BINDING) readonly buffer Weight { float w[]; };
layout(std430, binding = W_BINDING) readonly buffer WeightQuads { vec4 w_quads[]; };
layout(std430, binding = OUT_BINDING) writeonly buffer Output { act_t y[]; };
layout(std430, binding = OUT_BINDING) writeonly buffer OutputOctets { uvec4 y_octets[]; };
#include "common.glsl"
#include "faults.glsl"

shared float partial[gl_WorkGroupSize.x];

// x's values at element, quad and octet i as the pass that sums the squares reads them: where the
// add comes first, computed and stored to `sum` (each through the declaration the pass that
// scales reads it back through).
float first_value(uint i) {
#ifdef ADD_FIRST
  x[i] = to_act(combine(float(a[i]), float(b[i])));
#endif
  return float(x[i]);
}
vec4 first_quad(uint i) {
#ifdef ADD_FIRST
  const vec4 v = vec4(a_quads[i]) + pc.residual_scale * vec4(b_quads[i]);
#ifdef ACT_F16
  const vec4 r = vec4(round_f16(v.x), round_f16(v.y), round_f16(v.z), round_f16(v.w));
  x_quads[i] = f16vec4(r);
  return r;
#else
  const vec4 r = to_act4(v);
  x_quads[i] = r;
  return r;
#endif
#else
  return vec4(x_quads[i]);
#endif
}
uvec4 first_octet(uint i) {
#if defined(ADD_FIRST) && defined(ACT_F16)
  const uvec4 o = combine_octet(a_octets[i], b_octets[i]);
  x_octets[i] = o;
  return o;
#else
  return x_octets[i];
#endif
}

vec4 low_half(uvec4 o) { return vec4(unpackHalf2x16(o.x), unpackHalf2x16(o.y)); }
vec4 high_half(uvec4 o) { return vec4(unpackHalf2x16(o.z), unpackHalf2x16(o.w)); }

void main() {
  const uint t = group_index();
  if (t >= pc.rows) return;  // uniform over the workgroup
  const uint lid = gl_LocalInvocationID.x;
  const uint base = t * pc.dim;
#ifdef ACT_F16
  const bool octets = pc.dim % 8u == 0u;
#else
  const bool octets = false;
#endif
  const bool quads = !octets && pc.dim % 4u == 0u;
  float sum = 0.0;
  if (octets) {
    for (uint c = lid; c < pc.dim / 8u; c += gl_WorkGroupSize.x) {
      const uvec4 o = first_octet(base / 8u + c);
      const vec4 lo = low_half(o), hi = high_half(o);
      sum += dot(lo, lo) + dot(hi, hi);
    }
  } else if (quads) {
    for (uint c = lid; c < pc.dim / 4u; c += gl_WorkGroupSize.x) {
      const vec4 v = first_quad(base / 4u + c);
      sum += dot(v, v);
    }
  } else {
    for (uint c = lid; c < pc.dim; c += gl_WorkGroupSize.x) {
      const float v = first_value(base + c);
      sum += v * v;
    }
  }
  partial[lid] = sum;
  barrier();
  for (uint n = gl_WorkGroupSize.x / 2u; n > 0u; n >>= 1) {
    if (lid < n) partial[lid] += partial[lid + n];
    barrier();
  }
  const float scale = planted(FAULT_NORM_EPS_OUTSIDE_SQRT) ? 1.0 / (sqrt(partial[0] / float(pc.dim)) + pc.eps)
                                                           : 1.0 / sqrt(partial[0] / float(pc.dim) + pc.eps);
  if (octets) {
    for (uint c = lid; c < pc.dim / 8u; c += gl_WorkGroupSize.x) {
      const uvec4 o = x_octets[base / 8u + c];
      const vec4 lo = (low_half(o) * scale) * w_quads[2u * c];
      const vec4 hi = (high_half(o) * scale) * w_quads[2u * c + 1u];
      y_octets[base / 8u + c] = uvec4(packHalf2x16(vec2(round_f16(lo.x), round_f16(lo.y))),
                                      packHalf2x16(vec2(round_f16(lo.z), round_f16(lo.w))),
                                      packHalf2x16(vec2(round_f16(hi.x), round_f16(hi.y))),
                                      packHalf2x16(vec2(round_f16(hi.z), round_f16(hi.w))));
    }
  } else if (quads) {
    for (uint c = lid; c < pc.dim / 4u; c += gl_WorkGroupSize.x) {
      const vec4 v = (vec4(x_quads[base / 4u + c]) * scale) * w_quads[c];
      const uint at = base + 4u * c;
      y[at] = to_act(v.x), y[at + 1u] = to_act(v.y), y[at + 2u] = to_act(v.z), y[at + 3u] = to_act(v.w);
    }
  } else {
    for (uint c = lid; c < pc.dim; c += gl_WorkGroupSize.x) y[base + c] = to_act((float(x[base + c]) * scale) * w[c]);
  }
}
