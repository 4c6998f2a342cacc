#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "activations.glsl"
// attention-flash's split-KV merge (split_merge.glsl) of the partials attention_flash.comp built
// with SPLIT left: one workgroup per (row, head), its invocations over the head's channels.
layout(local_size_x_id = 1) in;
layout(std430, binding = 0) readonly buffer Partial { float partial[]; };  // [rows, heads, splits] of (m, l, sums[hd])
layout(std430, binding = 1) writeonly buffer Output { act_t y[]; };        // [rows, heads * hd]
layout(push_constant) uniform Push {
  uint rows;
  uint heads;
  uint head_dim;
  uint splits;
} pc;
#include "common.glsl"
#include "split_merge.glsl"

void main() {
  const uint g = group_index();
  if (g >= pc.rows * pc.heads) return;
  const uint stride = pc.head_dim + 2u, first = g * pc.splits * stride;
  const float l = merge_weights(first, stride, pc.splits);
  for (uint d = gl_LocalInvocationID.x; d < pc.head_dim; d += gl_WorkGroupSize.x)
    y[g * pc.head_dim + d] = to_act(merged_sums(first, stride, pc.splits, d) / l);
}
