#version 450
#extension GL_GOOGLE_include_directive : require
// copy: dst = src, n 4-byte words (Kernels::copy: the KV cache rows of a pass). A compute
// dispatch, not vkCmdCopyBuffer: between compute dispatches a transfer costs the H100/H200 more
// than the copy itself (docs/benchmarks.md). Words, so one build serves
// f32 and f16 activations.
layout(local_size_x_id = 1) in;
layout(std430, binding = 0) readonly buffer Source { uint src[]; };
layout(std430, binding = 1) writeonly buffer Destination { uint dst[]; };
#include "push_constants.h"
layout(push_constant) uniform Push { CountPush pc; };
#include "common.glsl"

void main() {
  const uint i = group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i < pc.n) dst[i] = src[i];
}
