#version 450
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
// matmul-tiled-64x64: Y[T, N] = X[T, K] W[N, K]^T (+ bias[N])     W stored as DTYPE
// A workgroup of 256 computes a 64 x 64 tile of Y (rows m0.., columns n0..), each invocation a
// 4 x 4 block of it. K advances in slices of 16: the X and W tiles of the slice are staged in
// shared memory (W dequantized on the way), then every invocation accumulates over the slice.
// Each output is one f32 sum over k in increasing order: deterministic. (gemm-f16-accum, faults.glsl:
// every partial sum rounded to f16.)
// EXPERTS (moe_out's grouped products, Kernels::expert_matmul with a plan from moe_plan.comp): the
// T rows are (token, expert) pairs; workgroup y is a tile of the plan, up to 64 pairs of one
// expert e, whose X rows (the token's row t / per_token where shared_input, else the pair's) are
// gathered and multiplied by rows [e N, (e + 1) N) of the stacked weights; each output goes to its
// pair's row. No bias. (expert-index, faults.glsl: expert e + 1's rows, mod experts.)
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Weights { uint w_words[]; };
layout(std430, binding = 1) readonly buffer Input { act_t x[]; };
#ifdef EXPERTS
layout(std430, binding = 2) readonly buffer Tiles { uint tiles[]; };
layout(std430, binding = 3) readonly buffer Sorted { uint sorted_pairs[]; };
layout(std430, binding = 4) writeonly buffer Output { act_t y[]; };
#else
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) writeonly buffer Output { act_t y[]; };
#endif
#include "push_constants.h"
layout(push_constant) uniform Push { MatmulPush pc; };
#include "common.glsl"
#include "dequant.glsl"
#include "faults.glsl"

#ifdef EXPERTS
// The tile's pairs: rows m0 + r of the tile are sorted_pairs[first + r], r < count; none past the plan.
uint tile_count() { return gl_WorkGroupID.y < tiles[0] ? tiles[3u + 3u * gl_WorkGroupID.y] : 0u; }
uint tile_pair(uint r) { return sorted_pairs[tiles[2u + 3u * gl_WorkGroupID.y] + r]; }
uint weight_base() {
  const uint e = tiles[1u + 3u * gl_WorkGroupID.y];
  return (planted(FAULT_EXPERT_NEXT) ? (e + 1u) % pc.experts : e) * pc.n;
}
uint input_row(uint pair) { return pc.shared_input != 0u ? pair / pc.per_token : pair; }
#endif

const uint BM = 64u, BN = 64u, BK = 16u, TM = 4u, TN = 4u, THREADS = 256u;
shared float xs[BK][BM];  // xs[kk][r] = X[m0 + r, k0 + kk]
shared float ws[BK][BN];  // ws[kk][c] = W[n0 + c, k0 + kk]

void main() {
  const uint lid = gl_LocalInvocationID.x;
  const uint tx = lid % (BN / TN), ty = lid / (BN / TN);
#ifdef EXPERTS
  const uint n0 = gl_WorkGroupID.x * BN, m0 = 0u, count = tile_count(), w0 = weight_base();
  if (count == 0u) return;  // past the plan's tiles: uniform over the workgroup
#else
  const uint n0 = gl_WorkGroupID.x * BN, m0 = gl_WorkGroupID.y * BM, count = pc.rows, w0 = 0u;
#endif
  float acc[TM][TN];
  for (uint i = 0u; i < TM; ++i)
    for (uint j = 0u; j < TN; ++j) acc[i][j] = 0.0;

  for (uint k0 = 0u; k0 < pc.k; k0 += BK) {
    for (uint e = lid; e < BM * BK; e += THREADS) {
      const uint r = e / BK, kk = e % BK, t = m0 + r, k = k0 + kk;
#ifdef EXPERTS
      xs[kk][r] = (t < count && k < pc.k) ? float(x[input_row(tile_pair(t)) * pc.k + k]) : 0.0;
#else
      xs[kk][r] = (t < count && k < pc.k) ? float(x[t * pc.k + k]) : 0.0;
#endif
    }
    for (uint e = lid; e < BN * BK; e += THREADS) {
      const uint c = e / BK, kk = e % BK, n = n0 + c, k = k0 + kk;
      ws[kk][c] = (n < pc.n && k < pc.k) ? weight_at((w0 + n) * pc.row_bytes, k) : 0.0;
    }
    barrier();
    for (uint kk = 0u; kk < BK; ++kk) {
      float a[TM], b[TN];
      for (uint i = 0u; i < TM; ++i) a[i] = xs[kk][ty * TM + i];
      for (uint j = 0u; j < TN; ++j) b[j] = ws[kk][tx * TN + j];
      for (uint i = 0u; i < TM; ++i)
        for (uint j = 0u; j < TN; ++j) acc[i][j] = accumulate(acc[i][j], a[i] * b[j]);
    }
    barrier();
  }
  for (uint i = 0u; i < TM; ++i) {
    const uint t = m0 + ty * TM + i;
    for (uint j = 0u; j < TN; ++j) {
      const uint n = n0 + tx * TN + j;
#ifdef EXPERTS
      if (t < count && n < pc.n) y[tile_pair(t) * pc.n + n] = to_act(acc[i][j]);
#else
      if (t < count && n < pc.n) y[t * pc.n + n] = to_act(pc.has_bias != 0u ? acc[i][j] + bias[n] : acc[i][j]);
#endif
    }
  }
}
