#version 450
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
// DeepSeek-V3.2's sparse attention indexer (model/config.h SparseIndexer): which cached positions
// each query keeps. One workgroup per row t of a pass (rows[t] = (base, pos, ...), as the
// attention's row table: the row's sequence's cache rows start at `base`):
//   s_p = sum_h (w[t,h] * pc.head_scale) * max((q[t,h] . k[base + p]) * pc.key_scale, 0), p in [0, pos]
// into the row's scratch, then the k = min(top_k, pos + 1) best: their threshold, the k-th largest
// score, found bit by bit over the scores' ordered bits (each bit a count over the row), and the
// positions kept in one ordered pass (those above it, then the earliest of those equal to it):
//   index_ids (default): out [rows, top_k] the kept positions ascending, then -1;
//   index_scores (SCORES): out [rows, top_k + 1] the kept scores descending (a bitonic sort in
//   shared memory), then the best score not kept; 0 where the row has no more (reference/indexer_kernels.h).
// (indexer-relu-dropped, faults.glsl: each head's q.k enters its weighted sum without the ReLU.)
layout(local_size_x_id = 1) in;
layout(std430, binding = 0) readonly buffer Query { act_t q[]; };
layout(std430, binding = 1) readonly buffer Keys { act_t keys[]; };
layout(std430, binding = 2) readonly buffer HeadWeights { act_t w[]; };
layout(std430, binding = 3) readonly buffer Rows { uvec4 row_info[]; };
layout(std430, binding = 4) coherent buffer Scratch { float scratch[]; };
layout(std430, binding = 5) writeonly buffer Output { act_t out_values[]; };
#include "push_constants.h"
layout(push_constant) uniform Push { IndexPush pc; };
#include "common.glsl"
#include "faults.glsl"

const uint MAX_KEPT = 2048u;  // Kernels::index_topk refuses a larger top_k
shared uint counts[gl_WorkGroupSize.x];
#ifdef SCORES
shared float kept[MAX_KEPT];
shared float best_out[gl_WorkGroupSize.x];
#endif

// The score's bits as an unsigned integer of the same order.
uint ordered(float x) {
  const uint b = floatBitsToUint(x);
  return (b & 0x80000000u) != 0u ? ~b : b | 0x80000000u;
}

uint sum_counts() {
  const uint lid = gl_LocalInvocationID.x;
  for (uint n = gl_WorkGroupSize.x / 2u; n > 0u; n >>= 1) {
    if (lid < n) counts[lid] += counts[lid + n];
    barrier();
  }
  const uint total = counts[0];
  barrier();
  return total;
}

// counts[] becomes its inclusive prefix sums.
void scan_counts() {
  const uint lid = gl_LocalInvocationID.x;
  for (uint n = 1u; n < gl_WorkGroupSize.x; n <<= 1) {
    const uint add = lid >= n ? counts[lid - n] : 0u;
    barrier();
    counts[lid] += add;
    barrier();
  }
}

void main() {
  const uint t = group_index();
  if (t >= pc.rows) return;  // uniform over the workgroup
  const uint WG = gl_WorkGroupSize.x, lid = gl_LocalInvocationID.x;
  const uint base = row_info[t].x, n = row_info[t].y + 1u;
  const uint k = min(pc.top_k, n), row = t * pc.scratch_stride;
  const uint q_row = t * pc.heads * pc.head_dim;
  for (uint p = lid; p < n; p += WG) {
    const uint key = (base + p) * pc.head_dim;
    float s = 0.0;
    for (uint h = 0u; h < pc.heads; ++h) {
      float dot = 0.0;
      for (uint d = 0u; d < pc.head_dim; ++d) dot += float(q[q_row + h * pc.head_dim + d]) * float(keys[key + d]);
      const float head = dot * pc.key_scale;
      s += (float(w[t * pc.heads + h]) * pc.head_scale) * (planted(FAULT_INDEXER_RELU_DROPPED) ? head : max(head, 0.0));
    }
    scratch[row + p] = s;
  }
  memoryBarrierBuffer();
  barrier();

  uint threshold = 0u;  // the largest value x with at least k scores' bits >= x: the k-th largest
  for (int bit = 31; bit >= 0; --bit) {
    const uint candidate = threshold | (1u << uint(bit));
    uint c = 0u;
    for (uint p = lid; p < n; p += WG) c += ordered(scratch[row + p]) >= candidate ? 1u : 0u;
    counts[lid] = c;
    barrier();
    if (sum_counts() >= k) threshold = candidate;
  }
  uint c = 0u;
  for (uint p = lid; p < n; p += WG) c += ordered(scratch[row + p]) > threshold ? 1u : 0u;
  counts[lid] = c;
  barrier();
  const uint ties_kept = k - sum_counts();

  uint kept_before = 0u, ties_before = 0u;
#ifdef SCORES
  float best = uintBitsToFloat(0xFF800000u);  // -inf
#endif
  for (uint p0 = 0u; p0 < n; p0 += WG) {
    const uint p = p0 + lid;
    const float s = p < n ? scratch[row + p] : 0.0;
    const bool tie = p < n && ordered(s) == threshold;
    counts[lid] = tie ? 1u : 0u;
    barrier();
    scan_counts();
    const bool keep = p < n && (ordered(s) > threshold || (tie && ties_before + counts[lid] - 1u < ties_kept));
    const uint ties_here = counts[WG - 1u];
    barrier();
    counts[lid] = keep ? 1u : 0u;
    barrier();
    scan_counts();
    const uint slot = kept_before + counts[lid] - 1u;
#ifdef SCORES
    if (keep) kept[slot] = s;
    if (p < n && !keep) best = max(best, s);
#else
    if (keep) out_values[t * pc.top_k + slot] = to_act(float(p));
#endif
    kept_before += counts[WG - 1u];
    ties_before += ties_here;
    barrier();
  }
#ifdef SCORES
  best_out[lid] = best;
  uint size = 1u;
  while (size < k) size <<= 1;
  for (uint i = k + lid; i < size; i += WG) kept[i] = uintBitsToFloat(0xFF800000u);
  barrier();
  for (uint n2 = WG / 2u; n2 > 0u; n2 >>= 1) {
    if (lid < n2) best_out[lid] = max(best_out[lid], best_out[lid + n2]);
    barrier();
  }
  for (uint block = 2u; block <= size; block <<= 1)
    for (uint stride = block / 2u; stride > 0u; stride >>= 1) {
      for (uint i = lid; i < size; i += WG) {
        const uint j = i ^ stride;
        if (j > i && (kept[i] < kept[j]) == ((i & block) == 0u)) {
          const float x = kept[i];
          kept[i] = kept[j];
          kept[j] = x;
        }
      }
      barrier();
    }
  const uint width = pc.top_k + 1u;
  for (uint j = lid; j < width; j += WG)
    out_values[t * width + j] = to_act(j < k ? kept[j] : (j == k && n > pc.top_k ? best_out[0] : 0.0));
#else
  for (uint j = k + lid; j < pc.top_k; j += WG) out_values[t * pc.top_k + j] = to_act(-1.0);
#endif
}
