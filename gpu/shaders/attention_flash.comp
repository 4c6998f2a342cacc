#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "activations.glsl"
// attention-flash: the attention of attention.comp (same bindings, push constants, row table,
// masks and faults; read its header) computed flash-style: one pass over the keys in tiles with
// an online softmax, so every score is computed once and a tile of K or V, read from memory once,
// serves BR query rows.
//
// A workgroup of 128 invocations takes BR = 32 (query row, head) pairs that read the same K/V head:
// the heads of a GQA group side by side (pair i of the tile is query row i / group, head i % group
// of the group), so a decode step fills `group` of the 32 with real work where one head per tile
// filled 1, and each K/V tile serves every head that reads it. With gqa-head-map planted, whose
// heads do not share K/V in groups, a tile takes one head (pair i = row i). Each pair's q is staged
// in shared memory; then for each tile of BC keys (cache rows k0 .. k0 + BC - 1):
//   1. K of the tile is staged; each invocation computes 4 keys x BR*BC/512 rows of scores
//      s = (q . k) * scale, -inf where the row does not see the key (mask, window, other
//      sequence of a ragged batch);
//   2. one invocation per row: m' = max(m, max_j s_j), a = exp(m - m'), p_j = exp(s_j - m'),
//      l = l a + sum_j p_j (meanwhile V of the tile is staged where K was);
//   3. each invocation rescales its 4 rows x up to 8 channels of sums by a, adds sum_j p_j v_j.
// out = sums / (l + exp(sink_h - m)) where pc.sinks (gpt-oss; sink_h the head's sink logit), else
// sums / l. The next tile starts at the first cache row after this one that any row of the
// workgroup sees, so the keys of other sequences in a batch are skipped, not scanned.
// Every sum runs in a fixed order: deterministic. Tiles do not depend on the chunking, so the
// result differs from attention-two-pass only in the order of f32 roundings (op conformance).
//
// Split-KV (built with SPLIT, for decode steps and short chunks, whose few rows would leave most
// of the GPU idle): workgroup (tile, K/V head or head, split s) sees only positions [lo + s S, lo + (s+1) S) of
// each row's own range [lo, pos] (S = split_keys; the leaked rows of batch-seq-leak in split 0), and
// instead of out it writes its (m, l, sums) per row to partial[] for attention_combine.comp (which
// adds the sinks).
//
// Faults (faults.glsl) as in attention.comp: sinks-dropped, mask-kv-offset, gqa-head-map,
// softmax-no-max (m stays 0: p_j = exp(s_j), a = 1), batch-seq-leak (the leaked cache rows are
// visible too).
//
// Specialization constants 3 and 4 (Kernels::attention): HD, the head dimension (a multiple of 4,
// at most 128), and BC, the keys per tile (32, or 16 where 32 does not fit in shared memory).
layout(local_size_x = 128) in;
layout(std430, binding = 0) readonly buffer Query { act_t q[]; };
layout(std430, binding = 1) readonly buffer KeyCache { act_t kc[]; };
layout(std430, binding = 2) readonly buffer ValueCache { act_t vc[]; };
layout(std430, binding = 3) readonly buffer Rows { uvec4 row_info[]; };  // (base, pos, chunk_first, leak)
#ifdef SPLIT
// [rows, heads, splits] of (m, l, sums[HD]): the split's running max, its sum of p, its sum of p v.
layout(std430, binding = 4) writeonly buffer Partial { float partial[]; };
#else
layout(std430, binding = 4) readonly buffer Sinks { float sinks[]; };  // [heads] where pc.sinks
layout(std430, binding = 5) writeonly buffer Output { act_t y[]; };
#endif
#include "common.glsl"
#include "faults.glsl"
#include "attention_rows.glsl"

layout(constant_id = 3) const uint HD = 64u;
layout(constant_id = 4) const uint BC = 32u;

const uint THREADS = 128u;
const uint BR = 32u;                       // query rows per workgroup
const uint HD4 = HD / 4u;                  // vec4 columns of a staged row
const uint STRIDE4 = HD4 + 1u;             // staged row stride in vec4s: padded against bank conflicts
const uint KEY_LANES = BC / 4u;            // scores: invocation (rl, kl) takes keys kl + k KEY_LANES ...
const uint ROW_LANES = THREADS / KEY_LANES;
const uint SCORE_ROWS = BR / ROW_LANES;    // ... of rows rl + r ROW_LANES (2 with BC 32, 1 with BC 16)
const uint COL_LANES = 16u;                // sums: invocation (orl, cl) takes vec4 columns cl + 16 c ...
const uint OUT_ROW_LANES = THREADS / COL_LANES;
const uint OUT_ROWS = BR / OUT_ROW_LANES;  // ... of rows orl + r 8 (4 rows)
const uint OUT_COLS = (HD4 + COL_LANES - 1u) / COL_LANES;  // 1 or 2 vec4 columns
const uint P_STRIDE = BC + 1u;

shared vec4 qs[BR * STRIDE4];
shared vec4 kvs[BC * STRIDE4];  // K of the tile, then V
shared float ps[BR * P_STRIDE];  // scores, then probabilities
shared float alpha[BR];          // each row's rescale factor for this tile, then its final l
shared uvec4 visible[BR];        // cache rows each row sees: [x, y) its own, [z, w) leaked (faults)
shared uint next_from[BR];       // each row's first visible cache row at or after the next tile
shared uint row_end[BR];         // each row's end of the last cache row it sees

// Stages rows k0 .. k0 + BC - 1 of a cache (rows past the last one any row sees as zeros).
void stage_keys(bool values, uint k0, uint kv_col, uint key_end) {
  for (uint i = gl_LocalInvocationID.x; i < BC * HD4; i += THREADS) {
    const uint j = i / HD4, c = i - j * HD4;
    const uint at = (k0 + j) * pc.kv_stride + kv_col + 4u * c;
    vec4 v = vec4(0.0);
    if (k0 + j < key_end)
      v = values ? vec4(float(vc[at]), float(vc[at + 1u]), float(vc[at + 2u]), float(vc[at + 3u]))
                 : vec4(float(kc[at]), float(kc[at + 1u]), float(kc[at + 2u]), float(kc[at + 3u]));
    kvs[j * STRIDE4 + c] = v;
  }
}

void main() {
  const uint lid = gl_LocalInvocationID.x;
#ifdef SPLIT
  const uint splits = pc.splits;
#else
  const uint splits = 1u;
#endif
  uint split;
  if (!take_tile(group_index(), BR, splits, split)) return;  // uniform over the workgroup
  const uint kv_col = tile_kv_head() * HD;

  for (uint i = lid; i < BR * HD4; i += THREADS) {
    const uint r = i / HD4, c = i - r * HD4;
    const uint t = pair_row(r), h = pair_head(r);
    const uint at = t * pc.q_stride + h * HD + 4u * c;
    qs[r * STRIDE4 + c] =
        t < pc.rows ? vec4(float(q[at]), float(q[at + 1u]), float(q[at + 2u]), float(q[at + 3u])) : vec4(0.0);
  }
  barrier();
  // One invocation per row: its visible cache rows (none past the last row of the pass).
  float m = planted(FAULT_ATTENTION_NO_MAX) ? 0.0 : NEG_INF, l = 0.0;
  if (lid < BR) {
    const uvec4 v = visible_rows(lid, split, splits);
    visible[lid] = v;
    next_from[lid] = first_seen(v, 0u);
    row_end[lid] = max(v.y, v.w);
  }
  barrier();
  uint key_end = 0u;  // the end of the last cache row any row sees
  for (uint r = 0u; r < BR; ++r) key_end = max(key_end, row_end[r]);

  vec4 sums[OUT_ROWS][OUT_COLS];
  [[unroll]] for (uint r = 0u; r < OUT_ROWS; ++r) [[unroll]] for (uint c = 0u; c < OUT_COLS; ++c) sums[r][c] = vec4(0.0);
  const uint kl = lid % KEY_LANES, rl = lid / KEY_LANES;
  const uint cl = lid % COL_LANES, orl = lid / COL_LANES;
  // Tile rows 0 .. live-1 are rows of the pass (a decode step fills `pack` of the BR): an
  // invocation whose first row is past them (its others are further on) skips the products.
  const uint live = min(BR, pc.rows * pack - p0);
  for (;;) {
    barrier();  // next_from is complete; the previous tile's V is no longer read
    uint k0 = NONE;
    for (uint r = 0u; r < BR; ++r) k0 = min(k0, next_from[r]);
    if (k0 == NONE) break;  // uniform: every invocation read the same values
    stage_keys(false, k0, kv_col, key_end);
    barrier();

    // 1. Scores of this invocation's rows and keys.
    float s[SCORE_ROWS][4];
    [[unroll]] for (uint r = 0u; r < SCORE_ROWS; ++r) [[unroll]] for (uint k = 0u; k < 4u; ++k) s[r][k] = 0.0;
    if (rl < live) {  // else every row of this invocation is past the pass (masked below)
      [[unroll]] for (uint c = 0u; c < HD4; ++c) {
        vec4 qv[SCORE_ROWS];
        [[unroll]] for (uint r = 0u; r < SCORE_ROWS; ++r) qv[r] = qs[(rl + r * ROW_LANES) * STRIDE4 + c];
        [[unroll]] for (uint k = 0u; k < 4u; ++k) {
          const vec4 kv = kvs[(kl + k * KEY_LANES) * STRIDE4 + c];
          [[unroll]] for (uint r = 0u; r < SCORE_ROWS; ++r) s[r][k] += dot(qv[r], kv);
        }
      }
    }
    [[unroll]] for (uint r = 0u; r < SCORE_ROWS; ++r) {
      const uint row = rl + r * ROW_LANES;
      const uvec4 v = visible[row];
      [[unroll]] for (uint k = 0u; k < 4u; ++k) {
        const uint key = kl + k * KEY_LANES;
        ps[row * P_STRIDE + key] = sees(v, k0 + key) ? soft_cap(s[r][k] * pc.scale, pc.softcap) : NEG_INF;
      }
    }
    barrier();

    // 2. The online softmax, one invocation per row; everyone stages V over K.
    if (lid < BR) {
      float tile_max = NEG_INF;
      for (uint j = 0u; j < BC; ++j) tile_max = max(tile_max, ps[lid * P_STRIDE + j]);
      const float m_new = planted(FAULT_ATTENTION_NO_MAX) ? 0.0 : max(m, tile_max);
      float a = 1.0, sum = 0.0;
      if (m_new != NEG_INF) {  // else the row has seen no key yet: p_j = 0 (below), a = 1
        a = exp(m - m_new);
        for (uint j = 0u; j < BC; ++j) {
          const float p = exp(ps[lid * P_STRIDE + j] - m_new);  // exp(-inf) = 0 for unseen keys
          ps[lid * P_STRIDE + j] = p;
          sum += p;
        }
      } else {
        for (uint j = 0u; j < BC; ++j) ps[lid * P_STRIDE + j] = 0.0;
      }
      l = l * a + sum;
      m = m_new;
      alpha[lid] = a;
      next_from[lid] = first_seen(visible[lid], k0 + BC);
    }
    stage_keys(true, k0, kv_col, key_end);
    barrier();

    // 3. sums = sums a + P V over this invocation's rows and columns.
    [[unroll]] for (uint r = 0u; r < OUT_ROWS; ++r) {
      const float a = alpha[orl + r * OUT_ROW_LANES];
      [[unroll]] for (uint c = 0u; c < OUT_COLS; ++c) sums[r][c] *= a;
    }
    for (uint j = 0u; j < (orl < live ? BC : 0u); ++j) {  // none for rows all past the pass
      float p[OUT_ROWS];
      [[unroll]] for (uint r = 0u; r < OUT_ROWS; ++r) p[r] = ps[(orl + r * OUT_ROW_LANES) * P_STRIDE + j];
      [[unroll]] for (uint c = 0u; c < OUT_COLS; ++c) {
        const uint col = cl + c * COL_LANES;
        if (col >= HD4) break;
        const vec4 v = kvs[j * STRIDE4 + col];
        [[unroll]] for (uint r = 0u; r < OUT_ROWS; ++r) sums[r][c] += p[r] * v;
      }
    }
  }

#ifdef SPLIT
  if (lid < BR && pair_row(lid) < pc.rows) {
    const uint t = pair_row(lid), h = pair_head(lid);
    const uint at = ((t * pc.heads + h) * splits + split) * (HD + 2u);
    partial[at] = m, partial[at + 1u] = l;
  }
  if (lid < BR) alpha[lid] = l;
#else
  const bool sunk = pc.sinks != 0u && !planted(FAULT_ATTENTION_SINKS_DROPPED);
  if (lid < BR) alpha[lid] = l + (sunk && pair_row(lid) < pc.rows ? exp(sinks[pair_head(lid)] - m) : 0.0);
#endif
  barrier();
  [[unroll]] for (uint r = 0u; r < OUT_ROWS; ++r) {
    const uint row = orl + r * OUT_ROW_LANES;
    const uint t = pair_row(row), h = pair_head(row);
    if (t >= pc.rows) continue;
    [[unroll]] for (uint c = 0u; c < OUT_COLS; ++c) {
      const uint col = cl + c * COL_LANES;
      if (col >= HD4) break;
#ifdef SPLIT
      const vec4 o = sums[r][c];
      const uint at = ((t * pc.heads + h) * splits + split) * (HD + 2u) + 2u + 4u * col;
      partial[at] = o.x, partial[at + 1u] = o.y, partial[at + 2u] = o.z, partial[at + 3u] = o.w;
#else
      const vec4 o = sums[r][c] / alpha[row];
      const uint at = t * pc.q_stride + h * HD + 4u * col;
      y[at] = to_act(o.x), y[at + 1u] = to_act(o.y), y[at + 2u] = to_act(o.z), y[at + 3u] = to_act(o.w);
#endif
    }
  }
}
