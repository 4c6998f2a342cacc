#version 450
#extension GL_GOOGLE_include_directive : require
// layer_norm-ggml: LayerNorm as ggml-cpu computes it, under llama.cpp's precision (--dtype
// llama.cpp; reference/llama_cpp_rounding.h layer_norm_as_llama_cpp): the values summed in double,
// mean = f32(sum) / dim in f32; each value less the mean in f32, its square rounded to f32, the
// squares summed in double, variance = f32(squares / dim), scale = 1 / sqrtf(variance + eps), then
// ((x - mean) * scale) * w (+ b). Divisions and the square root are computed in double and rounded
// once (f32's correctly rounded results, which Vulkan does not promise in f32); the sums run in a
// shared-memory tree, whose order differs from the reference's loop by double roundings only.
//   x [T, dim] f32, w and b [dim] f32 (b read where pc.has_bias) -> out [T, dim] f32. One
//   workgroup per row (a power of two).
layout(local_size_x_id = 1) in;
layout(std430, binding = 0) readonly buffer Input { float x[]; };
layout(std430, binding = 1) readonly buffer Weight { float w[]; };
layout(std430, binding = 2) readonly buffer Bias { float b[]; };
layout(std430, binding = 3) writeonly buffer Output { float y[]; };
#include "push_constants.h"
layout(push_constant) uniform Push { LayerNormPush pc; };
#include "common.glsl"

shared double partial[gl_WorkGroupSize.x];

// The workgroup's values of v summed, the same on every invocation.
double workgroup_sum(double v) {
  const uint lid = gl_LocalInvocationID.x;
  partial[lid] = v;
  barrier();
  for (uint n = gl_WorkGroupSize.x / 2u; n > 0u; n >>= 1) {
    if (lid < n) partial[lid] += partial[lid + n];
    barrier();
  }
  const double total = partial[0];
  barrier();  // every invocation has read it before partial is written again
  return total;
}

void main() {
  const uint t = group_index();
  if (t >= pc.rows) return;  // uniform over the workgroup
  const uint lid = gl_LocalInvocationID.x, base = t * pc.dim;
  double sum = 0.0lf;
  for (uint c = lid; c < pc.dim; c += gl_WorkGroupSize.x) sum += double(x[base + c]);
  const float mean = float(double(float(workgroup_sum(sum))) / double(pc.dim));
  double squares = 0.0lf;
  for (uint c = lid; c < pc.dim; c += gl_WorkGroupSize.x) {
    precise float v = x[base + c] - mean;
    precise float square = v * v;
    squares += double(square);
  }
  const float variance = float(workgroup_sum(squares) / double(pc.dim));
  precise float shifted = variance + pc.eps;
  const float root = float(sqrt(double(shifted)));
  const float scale = float(1.0lf / double(root));
  for (uint c = lid; c < pc.dim; c += gl_WorkGroupSize.x) {
    precise float v = x[base + c] - mean;
    precise float normed = (v * scale) * w[c];
    y[base + c] = pc.has_bias != 0u ? normed + b[c] : normed;
  }
}
