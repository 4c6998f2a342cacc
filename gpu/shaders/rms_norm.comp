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
layout(local_size_x_id = 1) in;
layout(std430, binding = 0) readonly buffer Input { act_t x[]; };
layout(std430, binding = 1) readonly buffer Weight { float w[]; };
layout(std430, binding = 2) writeonly buffer Output { act_t y[]; };
layout(std430, binding = 0) readonly buffer InputQuads { act4 x_quads[]; };
layout(std430, binding = 1) readonly buffer WeightQuads { vec4 w_quads[]; };
layout(std430, binding = 0) readonly buffer InputOctets { uvec4 x_octets[]; };
layout(std430, binding = 2) writeonly buffer OutputOctets { uvec4 y_octets[]; };
layout(push_constant) uniform Push {
  uint rows;
  uint dim;
  float eps;
} pc;
#include "common.glsl"
#include "faults.glsl"

shared float partial[gl_WorkGroupSize.x];

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
      const uvec4 o = x_octets[base / 8u + c];
      const vec4 lo = vec4(unpackHalf2x16(o.x), unpackHalf2x16(o.y));
      const vec4 hi = vec4(unpackHalf2x16(o.z), unpackHalf2x16(o.w));
      sum += dot(lo, lo) + dot(hi, hi);
    }
  } else if (quads) {
    for (uint c = lid; c < pc.dim / 4u; c += gl_WorkGroupSize.x) {
      const vec4 v = vec4(x_quads[base / 4u + c]);
      sum += dot(v, v);
    }
  } else {
    for (uint c = lid; c < pc.dim; c += gl_WorkGroupSize.x) {
      const float v = float(x[base + c]);
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
      const vec4 lo = (vec4(unpackHalf2x16(o.x), unpackHalf2x16(o.y)) * scale) * w_quads[2u * c];
      const vec4 hi = (vec4(unpackHalf2x16(o.z), unpackHalf2x16(o.w)) * scale) * w_quads[2u * c + 1u];
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
