#version 450
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
// matmul-tiled-64x64: Y[T, N] = X[T, K] W[N, K]^T (+ bias[N])     W stored as DTYPE
// A workgroup of 256 computes a 64 x 64 tile of Y (rows m0.., columns n0..), each invocation a
// 4 x 4 block of it. K advances in slices of 16: the X and W tiles of the slice are staged in
// shared memory (W dequantized on the way), then every invocation accumulates over the slice.
// Each output is one f32 sum over k in increasing order: deterministic. (gemm-f16-accum, faults.glsl:
// every partial sum rounded to f16.)
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Weights { uint w_words[]; };
layout(std430, binding = 1) readonly buffer Input { act_t x[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) writeonly buffer Output { act_t y[]; };
layout(push_constant) uniform Push {
  uint rows;       // T
  uint k;          // K
  uint n;          // N
  uint row_bytes;  // bytes of one W row as stored
  uint has_bias;
} pc;
#include "common.glsl"
#include "dequant.glsl"
#include "faults.glsl"

const uint BM = 64u, BN = 64u, BK = 16u, TM = 4u, TN = 4u, THREADS = 256u;
shared float xs[BK][BM];  // xs[kk][r] = X[m0 + r, k0 + kk]
shared float ws[BK][BN];  // ws[kk][c] = W[n0 + c, k0 + kk]

void main() {
  const uint lid = gl_LocalInvocationID.x;
  const uint tx = lid % (BN / TN), ty = lid / (BN / TN);
  const uint n0 = gl_WorkGroupID.x * BN, m0 = gl_WorkGroupID.y * BM;
  float acc[TM][TN];
  for (uint i = 0u; i < TM; ++i)
    for (uint j = 0u; j < TN; ++j) acc[i][j] = 0.0;

  for (uint k0 = 0u; k0 < pc.k; k0 += BK) {
    for (uint e = lid; e < BM * BK; e += THREADS) {
      const uint r = e / BK, kk = e % BK, t = m0 + r, k = k0 + kk;
      xs[kk][r] = (t < pc.rows && k < pc.k) ? float(x[t * pc.k + k]) : 0.0;
    }
    for (uint e = lid; e < BN * BK; e += THREADS) {
      const uint c = e / BK, kk = e % BK, n = n0 + c, k = k0 + kk;
      ws[kk][c] = (n < pc.n && k < pc.k) ? weight_at(n * pc.row_bytes, k) : 0.0;
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
      if (t < pc.rows && n < pc.n) y[t * pc.n + n] = to_act(pc.has_bias != 0u ? acc[i][j] + bias[n] : acc[i][j]);
    }
  }
}
