#version 450
#extension GL_GOOGLE_include_directive : require
// rms_norm-ggml: RMSNorm as ggml-cpu computes it, under llama.cpp's precision (--dtype llama.cpp;
// reference/llama_cpp_rounding.h rms_norm_as_llama_cpp): each square rounded to f32 and summed in
// double, mean = f32(sum / dim), scale = 1 / sqrtf(mean + eps), then (x * scale) * w. The square
// root and the division are computed in double and rounded once, which gives f32's correctly
// rounded results (Vulkan allows f32 ones a few ulp); the sum runs in a shared-memory tree, whose
// order differs from ggml's loop by double roundings only, far below the f32 mean's. So the norm's
// output is ggml's to the last bit, and the products that round it to 8 bits round the same values.
//   x [T, dim] f32, w [dim] f32 -> out [T, dim] f32. One workgroup per row (a power of two).
layout(local_size_x_id = 1) in;
layout(std430, binding = 0) readonly buffer Input { float x[]; };
layout(std430, binding = 1) readonly buffer Weight { float w[]; };
layout(std430, binding = 2) writeonly buffer Output { float y[]; };
#include "push_constants.h"
layout(push_constant) uniform Push { NormPush pc; };
#include "common.glsl"

shared double partial[gl_WorkGroupSize.x];

void main() {
  const uint t = group_index();
  if (t >= pc.rows) return;  // uniform over the workgroup
  const uint lid = gl_LocalInvocationID.x, base = t * pc.dim;
  double sum = 0.0lf;
  for (uint c = lid; c < pc.dim; c += gl_WorkGroupSize.x) {
    precise float square = x[base + c] * x[base + c];
    sum += double(square);
  }
  partial[lid] = sum;
  barrier();
  for (uint n = gl_WorkGroupSize.x / 2u; n > 0u; n >>= 1) {
    if (lid < n) partial[lid] += partial[lid + n];
    barrier();
  }
  const float mean = float(partial[0] / double(pc.dim));
  precise float shifted = mean + pc.eps;
  const float root = float(sqrt(double(shifted)));
  const float scale = float(1.0lf / double(root));
  for (uint c = lid; c < pc.dim; c += gl_WorkGroupSize.x) y[base + c] = (x[base + c] * scale) * w[c];
}
