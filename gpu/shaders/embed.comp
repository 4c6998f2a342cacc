#version 450
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
// embed: out[t, c] = table[tokens[t], c] * scale, dequantized.   tokens [T] -> out [T, dim]
// One invocation per output element. Token ids are checked on the host.
layout(local_size_x_id = 1) in;
layout(std430, binding = 0) readonly buffer Weights { uint w_words[]; };
layout(std430, binding = 1) readonly buffer Tokens { int tokens[]; };
layout(std430, binding = 2) writeonly buffer Output { act_t y[]; };
#include "push_constants.h"
layout(push_constant) uniform Push { EmbedPush pc; };
#include "common.glsl"
#include "dequant.glsl"

void main() {
  const uint i = group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i >= pc.rows * pc.dim) return;
  const uint t = i / pc.dim;
  y[i] = to_act(weight_at(uint(tokens[t]) * pc.row_bytes, i - t * pc.dim) * pc.scale);
}
