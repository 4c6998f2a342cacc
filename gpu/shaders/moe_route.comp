#version 450
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
// The router's choice per row of logits [rows, experts], one invocation per row:
//   moe_topk (default): ids [rows, k], the k experts of the largest scores (logits, or the choice
//   scores of moe_scores) ascending by id; of equal scores the lower id first; with pc.groups >
//   1 only among the experts of the pc.top_groups groups whose largest score (pc.group_best 1:
//   DeepSeek-V2's group_limited_greedy) or two largest scores summed (2) are highest
//   (reference/moe_kernels.h top_experts).
//   moe_weights (WEIGHTS): weights [rows, k], the softmax over every expert of the row (or each
//   expert's sigmoid where pc.sigmoid) taken at the given ids, divided by their sum where
//   pc.normalize, times pc.scale; where pc.sparsemixer (two experts, PhiMoE), the first's (of the
//   larger logit, of equal ones the lower id) the softmax at it over the experts whose logit lies
//   within 2 pc.mixer_eps of it ((top - s) / max(|s|, top)), the second's the same relative to its
//   own logit without the first (reference/moe_kernels.cpp sparsemixer_weights); each then times
//   its expert's learned scale where pc.has_scales (Gemma 4's per_expert_scale).
//   moe_scores (SCORES): scores [rows, experts] = each logit's sigmoid (pc.sigmoid), or the row's
//   softmax, + the selection bias.
// An id outside [0, experts) (a teacher-forced value) gives a NaN weight.
// (topk-off-by-one, faults.glsl: the experts ranked 2 to k+1; group-limit-ignored: every expert
// eligible; router-softmax-axis: each expert's softmax over the rows instead (the sparsemixer's
// too); weights-unnormalised:
// no renormalisation; selection-bias-sign: the bias subtracted.)
layout(local_size_x_id = 1) in;
layout(std430, binding = 0) readonly buffer Logits { act_t logits[]; };
#if defined(WEIGHTS)
layout(std430, binding = 1) readonly buffer Ids { act_t ids[]; };
layout(std430, binding = 2) readonly buffer Scales { float scales[]; };
layout(std430, binding = 3) writeonly buffer Weights { act_t weights[]; };
#elif defined(SCORES)
layout(std430, binding = 1) readonly buffer Bias { float bias[]; };
layout(std430, binding = 2) writeonly buffer Scores { act_t scores[]; };
#else
layout(std430, binding = 1) writeonly buffer Ids { act_t ids[]; };
#endif
#include "push_constants.h"
layout(push_constant) uniform Push { RoutePush pc; };
#include "common.glsl"
#include "faults.glsl"

const uint MAX_K = 64u;        // Kernels::moe_topk refuses more experts per token
const uint MAX_GROUPS = 64u;   // and more expert groups

float sigmoid(float x) { return 1.0 / (1.0 + exp(-x)); }

#if defined(WEIGHTS)
// The sparsemixer's weight of expert `chosen`: 1 / the sum of exp(s - its logit) over the experts
// within 2 eps of it, `left_out` apart.
float mixer_weight(uint row, uint chosen, uint left_out) {
  const float top = float(logits[row + chosen]);
  float total = 0.0;
  for (uint e = 0u; e < pc.experts; ++e) {
    const float s = float(logits[row + e]);
    if (e != left_out && !((top - s) / max(abs(s), top) > 2.0 * pc.mixer_eps)) total += exp(s - top);
  }
  return 1.0 / total;
}
#endif

void main() {
  const uint t = group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (t >= pc.rows) return;
  const uint row = t * pc.experts;
#if defined(SCORES)
  const float sign = planted(FAULT_SELECTION_BIAS_SIGN) ? -1.0 : 1.0;
  float top = float(logits[row]), total = 0.0;
  if (pc.sigmoid == 0u) {
    for (uint e = 1u; e < pc.experts; ++e) top = max(top, float(logits[row + e]));
    for (uint e = 0u; e < pc.experts; ++e) total += exp(float(logits[row + e]) - top);
  }
  for (uint e = 0u; e < pc.experts; ++e) {
    const float x = float(logits[row + e]);
    const float s = pc.sigmoid != 0u ? sigmoid(x) : exp(x - top) / total;
    scores[row + e] = to_act(s + (pc.has_bias != 0u ? sign * bias[e] : 0.0));
  }
#elif defined(WEIGHTS)
  if (pc.sparsemixer != 0u && !planted(FAULT_ROUTER_TOKEN_SOFTMAX)) {
    const float a = float(ids[t * 2u]), b = float(ids[t * 2u + 1u]);
    const float n = float(pc.experts);
    if (!(a >= 0.0 && a < n && b >= 0.0 && b < n && a == floor(a) && b == floor(b))) {
      weights[t * 2u] = to_act(uintBitsToFloat(0x7FC00000u));
      weights[t * 2u + 1u] = to_act(uintBitsToFloat(0x7FC00000u));
      return;
    }
    const bool a_first = float(logits[row + uint(a)]) >= float(logits[row + uint(b)]);
    const uint first = a_first ? uint(a) : uint(b), second = a_first ? uint(b) : uint(a);
    weights[t * 2u + (a_first ? 0u : 1u)] = to_act(mixer_weight(row, first, pc.experts));
    weights[t * 2u + (a_first ? 1u : 0u)] = to_act(mixer_weight(row, second, first));
    return;
  }
  float top = float(logits[row]);
  for (uint e = 1u; e < pc.experts; ++e) top = max(top, float(logits[row + e]));
  float total = 0.0;
  for (uint e = 0u; e < pc.experts; ++e) total += exp(float(logits[row + e]) - top);
  float chosen[MAX_K];
  float sum = 0.0;
  for (uint j = 0u; j < pc.k; ++j) {
    const float id = float(ids[t * pc.k + j]);
    const bool valid = id >= 0.0 && id < float(pc.experts) && id == floor(id);
    if (!valid) {
      chosen[j] = uintBitsToFloat(0x7FC00000u);
    } else if (planted(FAULT_ROUTER_TOKEN_SOFTMAX)) {  // expert id's softmax over the rows
      const uint e = uint(id);
      float column_top = float(logits[e]);
      for (uint u = 1u; u < pc.rows; ++u) column_top = max(column_top, float(logits[u * pc.experts + e]));
      float column_total = 0.0;
      for (uint u = 0u; u < pc.rows; ++u) column_total += exp(float(logits[u * pc.experts + e]) - column_top);
      chosen[j] = exp(float(logits[row + e]) - column_top) / column_total;
    } else if (pc.sigmoid != 0u) {
      chosen[j] = sigmoid(float(logits[row + uint(id)]));
    } else {
      chosen[j] = exp(float(logits[row + uint(id)]) - top) / total;
    }
    sum += chosen[j];
  }
  const bool normalize = pc.normalize != 0u && !planted(FAULT_ROUTER_UNNORMALISED);
  for (uint j = 0u; j < pc.k; ++j) {
    const float w = (normalize ? chosen[j] / sum : chosen[j]) * pc.scale;
    weights[t * pc.k + j] = to_act(pc.has_scales != 0u && !isnan(w) ? w * scales[uint(float(ids[t * pc.k + j]))] : w);
  }
#else
  // With groups: the eligible groups, the pc.top_groups of the highest group scores (ties: the lower group).
  const uint per_group = pc.experts / pc.groups;
  const bool grouped = pc.groups > 1u && !planted(FAULT_GROUP_LIMIT_IGNORED);
  bool eligible[MAX_GROUPS];
  for (uint g = 0u; g < pc.groups; ++g) eligible[g] = !grouped;
  if (grouped) {
    float group_score[MAX_GROUPS];
    for (uint g = 0u; g < pc.groups; ++g) {
      float first = -1.0 / 0.0, second = -1.0 / 0.0;
      for (uint e = g * per_group; e < (g + 1u) * per_group; ++e) {
        const float v = float(logits[row + e]);
        if (v > first) {
          second = first;
          first = v;
        } else if (v > second) {
          second = v;
        }
      }
      group_score[g] = pc.group_best == 1u ? first : first + second;
    }
    for (uint i = 0u; i < pc.top_groups; ++i) {
      uint best = pc.groups;
      for (uint g = 0u; g < pc.groups; ++g)
        if (!eligible[g] && (best == pc.groups || group_score[g] > group_score[best])) best = g;
      eligible[best] = true;
    }
  }
  // The j-th pick: the largest logit below the previous pick's in the order (logit desc, id asc).
  const uint skip = planted(FAULT_TOPK_SKIPS_BEST) ? 1u : 0u;
  uint picked[MAX_K + 1u];
  float last = 0.0;
  uint last_id = 0u;
  for (uint j = 0u; j < pc.k + skip; ++j) {
    uint best = pc.experts;
    float best_value = 0.0;
    for (uint e = 0u; e < pc.experts; ++e) {
      if (!eligible[e / per_group]) continue;
      const float v = float(logits[row + e]);
      const bool after_last = j == 0u || v < last || (v == last && e > last_id);
      if (after_last && (best == pc.experts || v > best_value)) best = e, best_value = v;
    }
    picked[j] = best;
    last = best_value, last_id = best;
  }
  for (uint j = 0u; j < pc.k; ++j) picked[j] = picked[j + skip];
  // ascending by id (k is small: insertion sort)
  for (uint j = 1u; j < pc.k; ++j)
    for (uint i = j; i > 0u && picked[i - 1u] > picked[i]; --i) {
      const uint swap = picked[i];
      picked[i] = picked[i - 1u];
      picked[i - 1u] = swap;
    }
  for (uint j = 0u; j < pc.k; ++j) ids[t * pc.k + j] = act_t(float(picked[j]));
#endif
}
