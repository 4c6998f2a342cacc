#version 450
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
// moe_out's last step: out[t, c] = sum over j of weights[t, j] * y[t k + j, c], j in order (the
// experts' outputs of row t ascending by id, as the reference adds them), one invocation per
// element. SIGMOID_GATE (k = 1): the shared expert's gate, out[t, c] = sigmoid(weights[t]) * y[t, c]
// (shared-gate-dropped, faults.glsl: the gate left out, out = y). UNWEIGHTED: every weight 1 (the
// weights scaled the experts' inputs: expert_input.comp), the Weights binding unread.
layout(local_size_x_id = 1) in;
layout(std430, binding = 0) readonly buffer Experts { act_t y[]; };
layout(std430, binding = 1) readonly buffer Weights { act_t weights[]; };
layout(std430, binding = 2) writeonly buffer Output { act_t out_values[]; };
#include "push_constants.h"
layout(push_constant) uniform Push { SumPush pc; };
#include "common.glsl"
#include "faults.glsl"

float weight(uint at) {
#if defined(SIGMOID_GATE)
  return planted(FAULT_SHARED_GATE_DROPPED) ? 1.0 : 1.0 / (1.0 + exp(-float(weights[at])));
#elif defined(UNWEIGHTED)
  return 1.0;
#else
  return float(weights[at]);
#endif
}

void main() {
  const uint i = group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i >= pc.rows * pc.dim) return;
  const uint t = i / pc.dim, c = i - t * pc.dim;
  float sum = 0.0;
  for (uint j = 0u; j < pc.k; ++j) sum += weight(t * pc.k + j) * float(y[(t * pc.k + j) * pc.dim + c]);
  out_values[i] = to_act(sum);
}
