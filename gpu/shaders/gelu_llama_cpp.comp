#version 450
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
// gelu_llama_cpp: out = gelu(gate) * up (or gelu(gate) alone: pc.gated 0) as ggml-cpu computes GELU (model::llama_cpp_gelu_mul), for
// llama.cpp's precision: exactly 0 at and below -10, gate * up at and above 10 (and for NaN), else
// the table's value at gate rounded to f16, times up. table [65536]: llama.cpp's f16 GELU table
// widened to f32, indexed by f16 bits. One invocation per value; f32 activations.
layout(local_size_x_id = 1) in;
layout(std430, binding = 0) readonly buffer Gate { float gate[]; };
layout(std430, binding = 1) readonly buffer Up { float up[]; };
layout(std430, binding = 2) readonly buffer Table { float table[]; };
layout(std430, binding = 3) writeonly buffer Output { float y[]; };
#include "push_constants.h"
layout(push_constant) uniform Push { GeluTablePush pc; };
#include "common.glsl"

// The bits of a finite f16 value held in f32, in integer operations: no driver's conversion rounds
// or flushes it.
uint f16_bits(float h) {
  const uint u = floatBitsToUint(h), sign = (u >> 16) & 0x8000u, a = u & 0x7FFFFFFFu;
  if (a < 0x38800000u) return sign | uint(uintBitsToFloat(a) * 16777216.0);  // subnormal or zero: a multiple of 2^-24
  return sign | ((a - 0x38000000u) >> 13);                                    // rebias the exponent from 127 to 15
}

void main() {
  const uint i = group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i >= pc.n) return;
  const float g = gate[i];
  if (g <= -10.0)
    y[i] = 0.0;
  else
    y[i] = (g >= 10.0 || isnan(g) ? g : table[f16_bits(round_f16(g))]) * (pc.gated != 0u ? up[i] : 1.0);
}
