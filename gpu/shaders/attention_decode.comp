#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "activations.glsl"
// attention-decode: split-KV attention for decode steps (one query row per sequence), built for
// latency: no shared-memory tiles of K or V, no invocation working alone. Same bindings, push
// constants, row table, masks and faults as attention_flash.comp with SPLIT, and the same output:
// each split's (m, l, sums) per (row, head) in partial[] for attention_combine.comp.
//
// A workgroup of 32 invocations takes one (query row, K/V head, split): the PACK heads that read
// that K/V head (the GQA group; 1 with gqa-head-map) over the split's positions, 32 keys at a time.
//   1. Invocation i takes key k0 + i: reads its K row and computes the PACK scores
//      s = (q . k) * scale (-inf where the row does not see the key), q broadcast from shared memory.
//   2. Per head, the tile's max and sum of p over the 32 invocations are subgroup reductions (then
//      across subgroups where a subgroup is narrower than 32): m' = max(m, max s), a = exp(m - m'),
//      p = exp(s - m'), l = l a + sum p. m and l are the same in every invocation.
//   3. Invocation (c, g) holds channels 4c .. 4c+3 of every head's sums and takes keys j = g, g + G,
//      ... of the tile (G = 32 / (HD / 4) key groups where the head is narrow): sums = sums a + p v,
//      each V row read whole by the invocations of a key group.
// After the last tile the key groups' sums are added in order. Every order is fixed: deterministic.
// The kernel waits on memory, not arithmetic: each read is issued in a burst with the others of its
// step (a loop of literal bound, unrolled), so a tile costs one round trip for K and one for V (read
// before the reductions, which hide part of it) instead of one per vector.
//
// Faults (faults.glsl) as in attention.comp: mask-kv-offset, gqa-head-map, softmax-no-max (m stays
// 0: p = exp(s), a = 1), batch-seq-leak (the leaked rows, in split 0).
//
// Specialization constants 3 and 4 (Kernels::attention): HD, the head dimension (a multiple of 4,
// at most 128), and PACK, the heads per workgroup.
layout(local_size_x = 32) in;
// q and the K and V caches, 4 values at a time: heads of HD values, HD a multiple of 4, so every
// head starts on a vector.
layout(std430, binding = 0) readonly buffer QueryQuads { act4 q_quads[]; };
layout(std430, binding = 1) readonly buffer KeyQuads { act4 k_quads[]; };
layout(std430, binding = 2) readonly buffer ValueQuads { act4 v_quads[]; };
layout(std430, binding = 3) readonly buffer Rows { uvec4 row_info[]; };  // (base, pos, chunk_first, leak)
// [rows, heads, splits] of (m, l, sums[HD]): the split's running max, its sum of p, its sum of p v.
layout(std430, binding = 4) writeonly buffer Partial { float partial[]; };
#include "common.glsl"
#include "faults.glsl"
#include "attention_rows.glsl"

layout(constant_id = 3) const uint HD = 64u;
layout(constant_id = 4) const uint PACK = 1u;

const uint LANES = 32u;               // invocations, and keys per tile
const uint HD4 = HD / 4u;             // vec4 channels of a head (at most 32 = LANES)
const uint KEY_GROUPS = LANES / HD4;  // G: invocations (c, g) with g < G hold sums
const uint MAX_PACK = 16u;            // Kernels: kDecodeMaxPack (the q burst's bound)

shared vec4 qs[PACK * HD4];                 // the heads' q
shared float ps[PACK * LANES];              // the tile's p per head and key
shared vec4 group_sums[KEY_GROUPS * PACK * HD4];  // each key group's sums, added after the last tile
shared float subgroup_values[LANES];        // the reductions' per-subgroup results

// Over the workgroup's 32 invocations, the same value in each: the max (take_max) or the sum.
float workgroup_reduce(float x, bool take_max) {
  x = take_max ? subgroupMax(x) : subgroupAdd(x);
  if (gl_NumSubgroups == 1u) return x;  // uniform
  barrier();                            // the previous reduction's values are read
  if (subgroupElect()) subgroup_values[gl_SubgroupID] = x;
  barrier();
  x = subgroup_values[0];
  for (uint i = 1u; i < gl_NumSubgroups; ++i) x = take_max ? max(x, subgroup_values[i]) : x + subgroup_values[i];
  return x;
}

void main() {
  const uint lid = gl_LocalInvocationID.x;
  const uint splits = pc.splits;
  pack = PACK;
  const uint units = pc.heads / pack;
  const uint g = group_index();
  if (g >= pc.rows * units * splits) return;  // uniform over the workgroup
  const uint split = g % splits;
  unit = g / splits % units;
  const uint t = g / splits / units;
  p0 = t * pack;  // pair i < PACK: row t, head unit * PACK + i
  const uint kv_col = tile_kv_head() * HD;

  [[unroll]] for (uint u = 0u; u < MAX_PACK; ++u) {  // PACK * HD4 <= MAX_PACK * LANES vectors
    const uint i = lid + u * LANES, h = i / HD4;
    if (h < PACK) qs[i] = vec4(q_quads[(t * pc.q_stride + pair_head(h) * HD) / 4u + i - h * HD4]);
  }
  const uvec4 visible = visible_rows(0u, split, splits);
  barrier();

  const float m_start = planted(FAULT_ATTENTION_NO_MAX) ? 0.0 : NEG_INF;
  float m[PACK], l[PACK];
  vec4 sums[PACK];
  [[unroll]] for (uint h = 0u; h < PACK; ++h) m[h] = m_start, l[h] = 0.0, sums[h] = vec4(0.0);
  const uint c = lid % HD4, key_group = lid / HD4;
  const bool holds_sums = key_group < KEY_GROUPS;
  const uint kv_stride4 = pc.kv_stride / 4u, kv_col4 = kv_col / 4u;

  for (uint k0 = first_seen(visible, 0u); k0 != NONE; k0 = first_seen(visible, k0 + LANES)) {
    // 1. This invocation's key: its K row (one burst of reads), its PACK scores.
    const uint key = k0 + lid;
    const bool seen = sees(visible, key);
    vec4 k[LANES];
    [[unroll]] for (uint cc = 0u; cc < LANES; ++cc)
      k[cc] = seen && cc < HD4 ? vec4(k_quads[key * kv_stride4 + kv_col4 + cc]) : vec4(0.0);
    float s[PACK];
    [[unroll]] for (uint h = 0u; h < PACK; ++h) {
      s[h] = 0.0;
      [[unroll]] for (uint cc = 0u; cc < LANES; ++cc)
        if (cc < HD4) s[h] += dot(qs[h * HD4 + cc], k[cc]);
    }
    // This invocation's V vectors of the tile (step 3), read now: the reductions hide part of the wait.
    vec4 v[LANES];  // of keys key_group + i G
    [[unroll]] for (uint i = 0u; i < LANES; ++i) {
      const uint j = key_group + i * KEY_GROUPS;
      v[i] = holds_sums && j < LANES && sees(visible, k0 + j)  // else p = 0, and the row may lie past the cache
                 ? vec4(v_quads[(k0 + j) * kv_stride4 + kv_col4 + c])
                 : vec4(0.0);
    }
    // 2. Per head: the online softmax over the tile.
    [[unroll]] for (uint h = 0u; h < PACK; ++h) {
      const float score = seen ? soft_cap(s[h] * pc.scale, pc.softcap) : NEG_INF;
      const float tile_max = workgroup_reduce(score, true);
      const float m_new = planted(FAULT_ATTENTION_NO_MAX) ? 0.0 : max(m[h], tile_max);
      float a = 1.0, p = 0.0;  // while the row has seen no key: p = 0, a = 1
      if (m_new != NEG_INF) {
        a = exp(m[h] - m_new);
        p = exp(score - m_new);  // exp(-inf) = 0 for unseen keys
      }
      l[h] = l[h] * a + workgroup_reduce(p, false);
      m[h] = m_new;
      ps[h * LANES + lid] = p;
      sums[h] *= a;
    }
    barrier();
    // 3. sums += p v over this invocation's keys of the tile (unseen keys: p = 0, v = 0).
    [[unroll]] for (uint i = 0u; i < LANES; ++i) {
      const uint j = key_group + i * KEY_GROUPS;
      if (holds_sums && j < LANES)
        [[unroll]] for (uint h = 0u; h < PACK; ++h) sums[h] += ps[h * LANES + j] * v[i];
    }
    barrier();  // ps is read before the next tile writes it
  }

  if (KEY_GROUPS > 1u) {
    if (holds_sums)
      [[unroll]] for (uint h = 0u; h < PACK; ++h) group_sums[(key_group * PACK + h) * HD4 + c] = sums[h];
    barrier();
    if (key_group == 0u)
      for (uint kg = 1u; kg < KEY_GROUPS; ++kg)
        [[unroll]] for (uint h = 0u; h < PACK; ++h) sums[h] += group_sums[(kg * PACK + h) * HD4 + c];
  }
  [[unroll]] for (uint h = 0u; h < PACK; ++h) {
    const uint at = ((t * pc.heads + pair_head(h)) * splits + split) * (HD + 2u);
    if (lid == 0u) partial[at] = m[h], partial[at + 1u] = l[h];
    if (key_group == 0u) {
      const uint o = at + 2u + 4u * c;
      partial[o] = sums[h].x, partial[o + 1u] = sums[h].y, partial[o + 2u] = sums[h].z, partial[o + 3u] = sums[h].w;
    }
  }
}
