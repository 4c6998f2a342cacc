#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_spirv_intrinsics : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_NV_cooperative_matrix : require
#include "activations.glsl"
// attention-coop-64x32: the attention of attention_flash.comp (same bindings, push constants, row
// table, masks and faults; read its header) with the two products on tensor cores, for prefill in
// the f16 pipelines. A workgroup of 4 subgroups of 32 takes BR = 64 (query row, head) pairs that
// read the same K/V head (the heads of a GQA group side by side, attention_rows.glsl), 16 per
// subgroup; each subgroup keeps its 16 rows' q as HD/16 f16 matrices and their sums of p v as
// HD/16 f32 accumulators. For each tile of BC = 32 keys (cache rows k0 .., the first any row of
// the workgroup sees from there on):
//   1. K and V of the tile are staged in shared memory (16-byte chunks of f16; rows no row sees
//      as zeros), from registers that read them while the tile before was multiplied;
//   2. S = q K^T: 16 x 32 f32 scores per subgroup, stored to the subgroup's shared memory;
//   3. two invocations per row, 16 keys each: s * scale, -inf where the row does not see the key;
//      the row max, p = exp(s - m), l = l a + sum p (both halves of a row keep the same m and l);
//   4. O += P V, P as two f16 matrices: hi, p cut to 11 significant bits, and lo = f16(p - hi),
//      so p keeps ~21 bits (f16 alone would keep 11; the other kernels multiply f32 p). lo is at
//      most p 2^-10, an f16 subnormal for p < 2^-4: the shader keeps f16 subnormals
//      (DenormPreserve, below), and p is scaled by e^3 (P_SHIFT; l too, so out is unchanged).
// out = O / l, rounded once to f16.
//
// The softmax runs in base 2 (scores times log2(e), exp2), as exp does inside anyway. The row max
// is lazy (as in FlashAttention-4): m moves only when a tile's max exceeds it by more than 8
// (RESCALE_AT; then a = exp(m - m') rescales that row of O, through shared memory: the
// accumulators' layout is the driver's), so p = exp(s - m + 3) may reach exp(8 + 3) =
// 59874 (f16 holds up to 65504); the first key a row sees sets its m without rescaling (O is still
// 0). out = O / l is the same softmax, with different roundings; op conformance bounds them.
// Every sum runs in a fixed order: deterministic.
//
// Faults as in attention_flash.comp: mask-kv-offset, gqa-head-map and batch-seq-leak change the
// rows and keys (attention_rows.glsl); softmax-no-max keeps m = 0 and no shift (p = exp(s), which
// f16 P holds only up to s = 11: past that the fault's output is inf or nan, louder, not hidden).
//
// Needs (kernels.cpp checks): the cooperative-matrix GEMM's device (subgroups of 32, 16x16x16 f16
// matrices with f32 sums), subgroup arithmetic, shuffle and vote, f16 subnormals kept
// (shaderDenormPreserveFloat16),
// and HD a multiple of 16 up to 128 (specialization constant 3). (Tiles of 32 keys: tiles of 64
// are slower. Reading the next tile ahead, while the tile before is multiplied, makes the
// prefill's attention faster; gpu/README.md.)
#ifndef ACT_F16
#error attention_coop.comp is built for f16 activations only
#endif
layout(local_size_x = 128) in;
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4464], 4459, 16);  // DenormPreserve 16
layout(std430, binding = 0) readonly buffer Query { uvec4 q_chunks[]; };
layout(std430, binding = 1) readonly buffer KeyCache { uvec4 k_chunks[]; };
layout(std430, binding = 2) readonly buffer ValueCache { uvec4 v_chunks[]; };
layout(std430, binding = 3) readonly buffer Rows { uvec4 row_info[]; };  // (base, pos, chunk_first, leak)
layout(std430, binding = 4) writeonly buffer Output { act_t y[]; };
#include "common.glsl"
#include "faults.glsl"
#include "attention_rows.glsl"

#define F16_MATRIX fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define F32_MATRIX fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>

layout(constant_id = 3) const uint HD = 64u;

const uint THREADS = 128u;
const uint SUBGROUPS = 4u;
const uint FRAG = 16u;                   // matrices are FRAG x FRAG; a subgroup's rows
const uint BR = SUBGROUPS * FRAG;        // pairs per workgroup
const uint BC = 32u;                     // keys per tile
const uint HF = HD / FRAG;               // matrices along the head dimension
const uint CHUNK = 8u;                   // f16 values per 16-byte chunk
const uint HD_CHUNKS = HD / CHUNK;
const uint KV_STRIDE = HD_CHUNKS + 1u;   // chunks per staged row: + 16 bytes, so 8 rows hit 8 bank groups
const uint S_STRIDE = BC + 4u;           // floats per score row (16-byte aligned rows)
const uint S_STRIDE4 = S_STRIDE / 4u;
const uint P_STRIDE4 = BC / CHUNK + 1u;  // chunks per row of P
// A subgroup's chunks: its scores (FRAG * S_STRIDE4 = 4 BC + 16), or P hi and lo (4 BC + 32).
const uint SUB_CHUNKS = 2u * FRAG * P_STRIDE4;
// In base 2: scores are kept as s log2(e), so p = exp2(s' - m'); the thresholds likewise.
const float LOG2E = 1.4426950408889634;
const float RESCALE_AT = 8.0 * LOG2E;
const float P_SHIFT = 3.0 * LOG2E;

// K then V of the tile (q of the workgroup's pairs before the first tile).
shared uvec4 kv[2u * BC * KV_STRIDE];
// Per subgroup: its scores (f32), then P hi and lo (f16); a fragment of O on its way out.
shared uvec4 sp[SUBGROUPS * SUB_CHUNKS];
shared float row_scale[BR];  // per row: a while O is rescaled, then l
shared uvec4 visible[BR];    // cache rows each row sees: [x, y) its own, [z, w) leaked (faults)
shared uint row_end[BR];     // each row's end of the last cache row it sees

// Chunk c of cache row `row` of the tile's K/V head, of K or V.
uvec4 kv_chunk(bool values, uint row, uint kv_col, uint c) {
  const uint at = (row * pc.kv_stride + kv_col) / CHUNK + c;
  return values ? v_chunks[at] : k_chunks[at];
}

// The tile's K and V chunks this invocation stages: read ahead into registers while the tile before
// is multiplied, then stored into shared memory (rows at or past key_end as zeros: their p is 0,
// and 0 times stale data could be nan).
const uint TILE_CHUNKS = 2u * BC * HD_CHUNKS / THREADS;
uvec4 staged[TILE_CHUNKS];

void read_tile(uint k0, uint kv_col, uint key_end) {
  [[unroll]] for (uint i = 0u; i < TILE_CHUNKS; ++i) {
    const uint at = gl_LocalInvocationID.x + i * THREADS;
    const uint j = at / HD_CHUNKS, c = at - j * HD_CHUNKS;  // j: 0 .. BC-1 keys, BC .. 2BC-1 values
    const uint row = k0 + j % BC;
    staged[i] = row < key_end ? kv_chunk(j >= BC, row, kv_col, c) : uvec4(0u);
  }
}

void stage_tile() {
  [[unroll]] for (uint i = 0u; i < TILE_CHUNKS; ++i) {
    const uint at = gl_LocalInvocationID.x + i * THREADS;
    const uint j = at / HD_CHUNKS;
    kv[j * KV_STRIDE + at - j * HD_CHUNKS] = staged[i];
  }
}

// The first cache row at or after `from` that any row of the workgroup sees; NONE if none (each
// subgroup reduces the BR = 2 x 32 rows, so every subgroup has the same).
uint next_key(uint from) {
  const uint lane = gl_SubgroupInvocationID;
  return subgroupMin(min(first_seen(visible[lane], from), first_seen(visible[lane + 32u], from)));
}

// O's fragments times the factor of their row (row_scale), through the subgroup's shared memory.
void scale_rows(inout F32_MATRIX o[HF], uint base, uint first_row) {
  [[unroll]] for (uint d = 0u; d < HF; ++d) {
    coopMatStoreNV(o[d], sp, base, FRAG / 4u, false);
    subgroupBarrier();
    for (uint e = gl_SubgroupInvocationID; e < FRAG * FRAG; e += gl_SubgroupSize) {
      const uint at = base + e / 4u;
      sp[at][e % 4u] = floatBitsToUint(uintBitsToFloat(sp[at][e % 4u]) * row_scale[first_row + e / FRAG]);
    }
    subgroupBarrier();
    coopMatLoadNV(o[d], sp, base, FRAG / 4u, false);
    subgroupBarrier();  // loaded before the next fragment overwrites
  }
}

void main() {
  const uint lid = gl_LocalInvocationID.x, sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  uint split;
  if (!take_tile(group_index(), BR, 1u, split)) return;  // uniform over the workgroup
  const uint kv_col = tile_kv_head() * HD;

  // q of the pairs, staged where K and V go, then each subgroup's 16 rows as matrices.
  for (uint i = lid; i < BR * HD_CHUNKS; i += THREADS) {
    const uint r = i / HD_CHUNKS, c = i - r * HD_CHUNKS;
    const uint t = pair_row(r);
    kv[r * KV_STRIDE + c] = t < pc.rows ? q_chunks[(t * pc.q_stride + pair_head(r) * HD) / CHUNK + c] : uvec4(0u);
  }
  if (lid < BR) {
    const uvec4 v = visible_rows(lid, 0u, 1u);
    visible[lid] = v;
    row_end[lid] = max(v.y, v.w);
  }
  barrier();
  F16_MATRIX qm[HF];
  [[unroll]] for (uint d = 0u; d < HF; ++d) coopMatLoadNV(qm[d], kv, sg * FRAG * KV_STRIDE + d * 2u, KV_STRIDE, false);
  // The end of the last cache row any row sees (each subgroup reduces the BR = 2 x 32 rows).
  const uint key_end = subgroupMax(max(row_end[lane], row_end[lane + 32u]));

  F32_MATRIX o[HF];
  [[unroll]] for (uint d = 0u; d < HF; ++d) o[d] = F32_MATRIX(0.0);
  const uint base = sg * SUB_CHUNKS;
  const uint r16 = lane / 2u, half_ = lane % 2u;  // this invocation's row of the subgroup, its half of the keys
  const uint row = sg * FRAG + r16;              // ... and of the workgroup
  const bool no_max = planted(FAULT_ATTENTION_NO_MAX);
  float m = no_max ? 0.0 : NEG_INF, l = 0.0;
  const float shift = no_max ? 0.0 : P_SHIFT;
  const float scale2 = pc.scale * LOG2E;
  uint k0 = next_key(0u);
  if (k0 != NONE) read_tile(k0, kv_col, key_end);
  while (k0 != NONE) {  // uniform: every subgroup reduced the same values
    barrier();          // q or the previous tile is no longer read
    stage_tile();
    barrier();
    const uint k_next = next_key(k0 + BC);
    if (k_next != NONE) read_tile(k_next, kv_col, key_end);  // in flight while this tile is multiplied

    // 2. S = q K^T, stored as f32.
    [[unroll]] for (uint kf = 0u; kf < BC / FRAG; ++kf) {
      F32_MATRIX s = F32_MATRIX(0.0);
      [[unroll]] for (uint d = 0u; d < HF; ++d) {
        F16_MATRIX k;  // K rows are the columns of K^T: column-major
        coopMatLoadNV(k, kv, kf * FRAG * KV_STRIDE + d * 2u, KV_STRIDE, true);
        s = coopMatMulAddNV(qm[d], k, s);
      }
      coopMatStoreNV(s, sp, base + kf * FRAG / 4u, S_STRIDE4, false);
    }
    subgroupBarrier();

    // 3. This invocation's keys of its row: pairs 2 (half_ + 2 j), + 1; s' = s scale log2(e).
    const uvec4 v = visible[row];
    const bool all_seen = k0 >= v.x && k0 + BC <= v.y;  // else each key is checked
    vec2 s[BC / 4u];
    float tile_max = NEG_INF;
    [[unroll]] for (uint j = 0u; j < BC / 4u; ++j) {
      const uint key = 2u * (half_ + 2u * j);
      const uvec4 c = sp[base + r16 * S_STRIDE4 + key / 4u];
      const vec2 raw = uintBitsToFloat(key % 4u == 0u ? c.xy : c.zw);
      s[j] = pc.softcap > 0.0 ? vec2(soft_cap(raw.x * pc.scale, pc.softcap), soft_cap(raw.y * pc.scale, pc.softcap)) * LOG2E
                              : raw * scale2;
      if (!all_seen) {
        if (!sees(v, k0 + key)) s[j].x = NEG_INF;
        if (!sees(v, k0 + key + 1u)) s[j].y = NEG_INF;
      }
      tile_max = max(tile_max, max(s[j].x, s[j].y));
    }
    tile_max = max(tile_max, subgroupShuffleXor(tile_max, 1u));
    subgroupBarrier();  // every score is read before P (or a rescaled O) overwrites them
    float a = 1.0;
    if (!no_max && tile_max > m + RESCALE_AT) {  // also the first key the row sees (m = -inf)
      a = m == NEG_INF ? 0.0 : exp2(m - tile_max);
      m = tile_max;
    }
    if (subgroupAny(a != 1.0 && l != 0.0)) {  // some row's O holds sums at the old scale
      if (half_ == 0u) row_scale[row] = a;
      subgroupBarrier();
      scale_rows(o, base, sg * FRAG);
    }
    float sum = 0.0;
    const float offset = m == NEG_INF ? NEG_INF : shift - m;  // p = 0 while the row has seen no key
    [[unroll]] for (uint j = 0u; j < BC / 4u; ++j) {
      const vec2 p = exp2(s[j] + offset);  // exp2(-inf) = 0 for unseen keys
      sum += p.x + p.y;
      // hi: p with its 13 low mantissa bits cut, an f16 value (integer operations, which no
      // compiler folds: f32(f16(p)) may be taken for p); lo = p - hi, exact.
      const vec2 hi = uintBitsToFloat(floatBitsToUint(p) & 0xFFFFE000u);
      const f16vec2 lo = f16vec2(p - hi);
      const uint key = 2u * (half_ + 2u * j);
      sp[base + r16 * P_STRIDE4 + key / CHUNK][(key % CHUNK) / 2u] = packFloat2x16(f16vec2(hi));
      sp[base + (FRAG + r16) * P_STRIDE4 + key / CHUNK][(key % CHUNK) / 2u] = packFloat2x16(lo);
    }
    l = l * a + sum + subgroupShuffleXor(sum, 1u);
    subgroupBarrier();

    // 4. O += P V (V rows are the rows of B: row-major).
    [[unroll]] for (uint kf = 0u; kf < BC / FRAG; ++kf) {
      F16_MATRIX hi, lo;
      coopMatLoadNV(hi, sp, base + kf * 2u, P_STRIDE4, false);
      coopMatLoadNV(lo, sp, base + FRAG * P_STRIDE4 + kf * 2u, P_STRIDE4, false);
      [[unroll]] for (uint d = 0u; d < HF; ++d) {
        F16_MATRIX vm;
        coopMatLoadNV(vm, kv, (BC + kf * FRAG) * KV_STRIDE + d * 2u, KV_STRIDE, false);
        o[d] = coopMatMulAddNV(hi, vm, o[d]);
        o[d] = coopMatMulAddNV(lo, vm, o[d]);
      }
    }
    subgroupBarrier();  // P is read before the next tile's scores overwrite it
    k0 = k_next;
  }

  // out = O / l, a fragment at a time through the subgroup's shared memory.
  if (half_ == 0u) row_scale[row] = l;
  subgroupBarrier();
  [[unroll]] for (uint d = 0u; d < HF; ++d) {
    coopMatStoreNV(o[d], sp, base, FRAG / 4u, false);
    subgroupBarrier();
    for (uint e = lane; e < FRAG * FRAG; e += gl_SubgroupSize) {
      const uint r = sg * FRAG + e / FRAG, t = pair_row(r);
      const float value = uintBitsToFloat(sp[base + e / 4u][e % 4u]) / row_scale[r];
      if (t < pc.rows) y[t * pc.q_stride + pair_head(r) * HD + d * FRAG + e % FRAG] = to_act(value);
    }
    subgroupBarrier();
  }
}
