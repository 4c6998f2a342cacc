#version 450
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
// head_columns: each head's channels gathered from two sources, the rest zero (latent attention:
// kv_a_proj's latent and key parts apart, the heads' keys as their no-RoPE channels then the
// shared RoPE part, values and queries widened to the attention's head width, its output narrowed
// to the values'). out [rows, heads * width]; channel c of head h in row t is
//   A[t * a_stride + a_first + h * a_head + c]          for c < a_cols,
//   B[t * b_stride + b_first + c - a_cols]              for a_cols <= c < a_cols + b_cols,
//   0                                                   past them.
// One invocation per output value; a copy, so exact in every activation type.
layout(local_size_x_id = 1) in;
layout(std430, binding = 0) readonly buffer SourceA { act_t a[]; };
layout(std430, binding = 1) readonly buffer SourceB { act_t b[]; };
layout(std430, binding = 2) writeonly buffer Output { act_t out_values[]; };
#include "push_constants.h"
layout(push_constant) uniform Push { ColumnsPush pc; };
#include "common.glsl"

void main() {
  const uint i = group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  const uint row_width = pc.heads * pc.width;
  if (i >= pc.rows * row_width) return;
  const uint t = i / row_width, h = (i - t * row_width) / pc.width, c = i - t * row_width - h * pc.width;
  if (c < pc.a_cols)
    out_values[i] = a[t * pc.a_stride + pc.a_first + h * pc.a_head + c];
  else if (c < pc.a_cols + pc.b_cols)
    out_values[i] = b[t * pc.b_stride + pc.b_first + c - pc.a_cols];
  else
    out_values[i] = to_act(0.0);
}
