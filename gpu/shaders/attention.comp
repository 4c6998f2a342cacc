#version 450
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
// attention-two-pass: causal grouped-query attention of a pass's queries over the KV cache.
//   q [T, heads * d] (after RoPE), k, v [cache rows, kv_heads * d], rows [T] -> out [T, heads * d]
// The T rows may belong to several sequences (a ragged batch): rows[t] = (base, pos, chunk_first)
// says that row t is at position pos of a sequence whose cache rows start at row `base` of k and
// v, in a chunk that starts at position chunk_first. One workgroup per (row t, head h); query
// head h reads KV head h / group. Row t sees its sequence's positions j in [lo, pos],
// lo = max(0, pos - window + 1) when window > 0, else 0 (the mask is offset by the position:
// earlier chunks are all visible), at cache rows base + j.
//   s_j = (q . k_j) * scale;  p_j = exp(s_j - m);  out = sum_j p_j v_j / (sum_j p_j + exp(sink_h - m))
// with m = max_j s_j (and the sink), sink_h the head's sink logit where pc.sinks (gpt-oss), else
// none (its term 0). Where pc.kept > 0 (DeepSeek-V3.2's sparse attention) row t sees only the
// positions of its row of Kept (idx_ids: ascending, -1 after them), in their order.
// Pass 1 finds the max over the scores, pass 2 recomputes each score in the same way and sums
// p_j and p_j v_j over tiles of WG keys. Every sum has a fixed order: deterministic.
// head_dim <= 4 * WG (and <= 256).
// Faults (faults.glsl): sinks-dropped leaves the sink out; mask-kv-offset sees keys
// [max(lo, chunk_first), pos] only; gqa-head-map reads KV head h % kv_heads; softmax-no-max takes
// p_j = exp(s_j); batch-seq-leak also sees, before its own keys, the last (w & 7) cache rows before
// row (w >> 3): the end of the previous sequence in the pass, which the row table's fourth field
// gives (0 for a pass's first sequence).
// With LLAMA_CPP (attention-two-pass+llama.cpp-f16-kv, --dtype llama.cpp): the products as
// llama.cpp's CPU backend computes them without flash attention (model/llama_cpp_precision.h): q,
// times pc.q_scale where llama.cpp's graph scales it first (Gemma, Phi-3), is rounded to f16 for
// its product with the (f16-valued) keys, and each probability p_j / sum_j p_j
// is rounded to f16 before its product with the values, so the sum of p_j comes first (a pass of
// its own).
layout(local_size_x_id = 1) in;
layout(std430, binding = 0) readonly buffer Query { act_t q[]; };
layout(std430, binding = 1) readonly buffer KeyCache { act_t kc[]; };
layout(std430, binding = 2) readonly buffer ValueCache { act_t vc[]; };
layout(std430, binding = 3) readonly buffer Rows { uvec4 row_info[]; };  // (base, pos, chunk_first, leak)
layout(std430, binding = 4) readonly buffer Sinks { float sinks[]; };  // [heads] where pc.sinks
layout(std430, binding = 5) readonly buffer Kept { act_t kept[]; };    // [rows, pc.kept] where pc.kept > 0
layout(std430, binding = 6) writeonly buffer Output { act_t y[]; };
#include "push_constants.h"
layout(push_constant) uniform Push { AttentionPush pc; };
#include "common.glsl"
#include "faults.glsl"
#include "key_span.glsl"

const uint MAX_HEAD_DIM = 256u;
const uint CHANNELS = 4u;  // head channels per invocation at most
shared float qs[MAX_HEAD_DIM];
shared float ps[gl_WorkGroupSize.x];
shared float red[gl_WorkGroupSize.x];

// The keys of this workgroup's row, in order: `leaked` rows ending at cache row leak_end (only
// under batch-seq-leak), then the row's own positions [lo, pos] at cache rows base + j (or those
// of its row of Kept, from kept_row on).
uint base_row, first_key, leaked, leak_end, kept_row;
uint key_row(uint i) {
  if (pc.kept > 0u) return base_row + uint(float(kept[kept_row + i]));
  return i < leaked ? leak_end - leaked + i : base_row + first_key + (i - leaked);
}

float score(uint key_base) {
  float s = 0.0;
  for (uint d = 0u; d < pc.head_dim; ++d) s += qs[d] * float(kc[key_base + d]);
  return soft_cap(s * pc.scale, pc.softcap);
}

// Tree reduction of red[] (max or sum); the result is left in red[0].
void reduce(bool take_max) {
  const uint lid = gl_LocalInvocationID.x;
  for (uint n = gl_WorkGroupSize.x / 2u; n > 0u; n >>= 1) {
    if (lid < n) red[lid] = take_max ? max(red[lid], red[lid + n]) : red[lid] + red[lid + n];
    barrier();
  }
}

void main() {
  const uint g = group_index();
  if (g >= pc.rows * pc.heads) return;  // uniform over the workgroup
  const uint WG = gl_WorkGroupSize.x, lid = gl_LocalInvocationID.x;
  const uint t = g / pc.heads, h = g - t * pc.heads;
  const uint kv_head = planted(FAULT_ATTENTION_HEAD_MODULO) ? h % (pc.heads / pc.group) : h / pc.group;
  const uint kv_col = kv_head * pc.head_dim;
  const uvec4 info = row_info[t];
  const uint pos = info.y;
  const uint causal_lo = span_start(pos);
  base_row = info.x;
  first_key = planted(FAULT_ATTENTION_CHUNK_MASK) ? max(causal_lo, info.z) : causal_lo;
  leaked = planted(FAULT_ATTENTION_BATCH_LEAK) ? info.w & 7u : 0u;
  leak_end = info.w >> 3;
  kept_row = t * pc.kept;
  uint keys = leaked + pos + 1u - first_key;
  if (pc.kept > 0u) {
    keys = 0u;
    while (keys < pc.kept && float(kept[kept_row + keys]) >= 0.0) ++keys;
  }
  const uint out_base = t * pc.q_stride + h * pc.head_dim;
#ifdef LLAMA_CPP
  for (uint d = lid; d < pc.head_dim; d += WG) qs[d] = round_f16(float(q[out_base + d]) * pc.q_scale);
#else
  for (uint d = lid; d < pc.head_dim; d += WG) qs[d] = float(q[out_base + d]);
#endif
  barrier();

  float m = uintBitsToFloat(0xFF800000u);  // -inf
  for (uint i = lid; i < keys; i += WG) m = max(m, score(key_row(i) * pc.kv_stride + kv_col));
  red[lid] = m;
  barrier();
  reduce(true);
  const bool sunk = pc.sinks != 0u && !planted(FAULT_ATTENTION_SINKS_DROPPED);
  const float sink = sunk ? sinks[h] : uintBitsToFloat(0xFF800000u);
  const float m_all = planted(FAULT_ATTENTION_NO_MAX) ? 0.0 : max(red[0], sink);
  const float sink_p = sunk ? exp(sink - m_all) : 0.0;
  barrier();

  float l = 0.0;
#ifdef LLAMA_CPP
  for (uint i = lid; i < keys; i += WG) l += exp(score(key_row(i) * pc.kv_stride + kv_col) - m_all);
  red[lid] = l;
  barrier();
  reduce(false);
  const float l_sum = red[0] + sink_p;
  barrier();
#endif
  float acc[CHANNELS] = float[CHANNELS](0.0, 0.0, 0.0, 0.0);
  for (uint i0 = 0u; i0 < keys; i0 += WG) {
    const uint i = i0 + lid;
#ifdef LLAMA_CPP
    const float p = i < keys ? round_f16(exp(score(key_row(i) * pc.kv_stride + kv_col) - m_all) / l_sum) : 0.0;
#else
    const float p = i < keys ? exp(score(key_row(i) * pc.kv_stride + kv_col) - m_all) : 0.0;
#endif
    ps[lid] = p;
    l += p;
    barrier();
    const uint n = min(WG, keys - i0);
    for (uint c = 0u; c < CHANNELS; ++c) {
      const uint d = lid + c * WG;
      if (d >= pc.head_dim) break;
      for (uint jj = 0u; jj < n; ++jj) acc[c] += ps[jj] * float(vc[key_row(i0 + jj) * pc.kv_stride + kv_col + d]);
    }
    barrier();
  }
#ifdef LLAMA_CPP
  const float l_all = 1.0;  // the probabilities were normalised before their products
#else
  red[lid] = l;
  barrier();
  reduce(false);
  const float l_all = red[0] + sink_p;
#endif
  for (uint c = 0u; c < CHANNELS; ++c) {
    const uint d = lid + c * WG;
    if (d < pc.head_dim) y[out_base + d] = to_act(acc[c] / l_all);
  }
}
