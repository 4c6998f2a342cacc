#version 450
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
// scale_softcap: x = x * scale, then cap * tanh(x / cap) where cap > 0, then clamped to [-clip,
// clip] where clip > 0, in place over n values (the logits of Granite: 1 / logits_scaling; of
// Gemma 2: the final soft-cap; OLMo's q, k and v: clip_qkv).
layout(local_size_x_id = 1) in;
layout(std430, binding = 0) buffer X { act_t x[]; };
#include "push_constants.h"
layout(push_constant) uniform Push { ScaleSoftcapPush pc; };
#include "common.glsl"

void main() {
  const uint i = group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i >= pc.n) return;
  const float v = soft_cap(float(x[i]) * pc.scale, pc.cap);
  x[i] = to_act(pc.clip > 0.0 ? clamp(v, -pc.clip, pc.clip) : v);
}
