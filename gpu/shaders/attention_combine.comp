#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "activations.glsl"
// attention-flash's split-KV merge: each split s of a (row, head) left (m_s, l_s, sums_s) in
// partial[] (attention_flash.comp built with SPLIT); out = sum_s w_s sums_s / sum_s w_s l_s with
// w_s = exp(m_s - max_s m_s), and where pc.sinks exp(sink_h - max_s m_s) added to the denominator
// (sink_h the head's sink logit: gpt-oss; not under sinks-dropped, faults.glsl). A split that saw
// no key of the row has m_s = -inf, so w_s = 0.
// One workgroup per (row, head), its invocations over the head's channels; splits in order:
// deterministic. The weights w_s and the l_s are read once per split into shared memory (not once
// per channel), and each channel's sums are read 8 splits at a time (a burst, then the sums in
// order): the kernel waits on memory, so one round trip per 8 splits instead of one per split.
// (Under softmax-no-max every m_s is 0, and so is the max: the planted numerics carry through.)
layout(local_size_x_id = 1) in;
layout(std430, binding = 0) readonly buffer Partial { float partial[]; };  // [rows, heads, splits] of (m, l, sums[hd])
layout(std430, binding = 1) readonly buffer Sinks { float sinks[]; };      // [heads] where pc.sinks
layout(std430, binding = 2) writeonly buffer Output { act_t y[]; };        // [rows, heads * hd]
#include "push_constants.h"
layout(push_constant) uniform Push { CombinePush pc; };
#include "common.glsl"
#include "faults.glsl"

const uint MAX_SPLITS = 64u;  // Kernels: kMaxSplits
const uint BURST = 8u;       // splits read at once
shared float split_m[MAX_SPLITS];
shared float split_l[MAX_SPLITS];
shared float split_w[MAX_SPLITS];

void main() {
  const uint g = group_index();
  if (g >= pc.rows * pc.heads) return;
  const uint lid = gl_LocalInvocationID.x;
  const uint stride = pc.head_dim + 2u, first = g * pc.splits * stride;
  for (uint s = lid; s < pc.splits; s += gl_WorkGroupSize.x) {
    split_m[s] = partial[first + s * stride];
    split_l[s] = partial[first + s * stride + 1u];
  }
  barrier();
  float m = uintBitsToFloat(0xFF800000u);  // -inf
  for (uint s = 0u; s < pc.splits; ++s) m = max(m, split_m[s]);
  for (uint s = lid; s < pc.splits; s += gl_WorkGroupSize.x) split_w[s] = exp(split_m[s] - m);
  barrier();
  float l = pc.sinks != 0u && !planted(FAULT_ATTENTION_SINKS_DROPPED) ? exp(sinks[g % pc.heads] - m) : 0.0;
  for (uint s = 0u; s < pc.splits; ++s) l += split_w[s] * split_l[s];
  for (uint d = lid; d < pc.head_dim; d += gl_WorkGroupSize.x) {
    float o = 0.0;
    for (uint s0 = 0u; s0 < pc.splits; s0 += BURST) {
      float sums[BURST];
      [[unroll]] for (uint i = 0u; i < BURST; ++i)
        sums[i] = s0 + i < pc.splits ? partial[first + (s0 + i) * stride + 2u + d] : 0.0;
      [[unroll]] for (uint i = 0u; i < BURST; ++i)
        if (s0 + i < pc.splits) o += split_w[s0 + i] * sums[i];
    }
    y[g * pc.head_dim + d] = to_act(o / l);
  }
}
