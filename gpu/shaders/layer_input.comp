#version 450
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
// A layer's per-layer input (Gemma 4): out[t, c] = (x[t, c] + table[tokens[t], first_col + c] *
// table_scale) * sum_scale, the table dequantized, x the normed projection of the embedding
// (model/config.h LayerInputs). One invocation per output element; x may be out. Token ids are
// checked on the host.
layout(local_size_x_id = 1) in;
layout(std430, binding = 0) readonly buffer Weights { uint w_words[]; };
layout(std430, binding = 1) readonly buffer Tokens { int tokens[]; };
layout(std430, binding = 2) readonly buffer Input { act_t x[]; };
layout(std430, binding = 3) writeonly buffer Output { act_t y[]; };
#include "push_constants.h"
layout(push_constant) uniform Push { LayerInputPush pc; };
#include "common.glsl"
#include "dequant.glsl"

void main() {
  const uint i = group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i >= pc.rows * pc.dim) return;
  const uint t = i / pc.dim;
  const float entry = weight_at(uint(tokens[t]) * pc.row_bytes, pc.first_col + i - t * pc.dim);
  y[i] = to_act((float(x[i]) + entry * pc.table_scale) * pc.sum_scale);
}
