#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_NV_cooperative_matrix : require
#include "activations.glsl"
// matmul-coop-128x128: Y[T, N] = X[T, K] W[N, K]^T (+ bias[N]) on tensor cores (f16 pipelines only).
// Where the device offers VK_NV_cooperative_matrix2, matmul-coop2 (gpu/matmul_coop2.h: faster,
// the same bits) takes the products of f16 weights; this kernel runs the others.
// A workgroup of 8 subgroups of 32 computes a 128 x 128 tile of Y (rows m0.., columns n0..); the
// subgroups form a 2 x 4 grid, each owning 64 x 32 of the tile as 4 x 2 cooperative matrices of
// 16 x 16 f32 sums. K advances in slices of 32 (16 in the k16 build): the X rows and W rows of a
// slice are staged in shared memory as 16-byte chunks of f16 (W dequantized on the way, the f16
// values weight_at computes), then each subgroup multiplies 16 x 16 x 16 f16 fragments into its
// sums. Slices are double-buffered: while one is multiplied, the next is read from memory into
// registers and then stored into the other buffer, one barrier per slice. Tiles inside Y read
// their slices as straight-line loads, without bounds checks. Workgroups next in line (grid x)
// take the row tiles of one column tile, so they share its W tile in the cache.
//
// Tiles are 128 x 128 of 8 subgroups with slices of 32, staged as double-buffered 16-byte chunks
// and read straight-line inside Y: the fastest of the layouts measured (gpu/README.md,
// docs/benchmarks.md). Fragments loaded straight from memory, producer subgroups that stage while
// 8 others multiply, 16 subgroups and smaller tiles give the same bits more slowly. After any
// change, check "Local Memory Size" in tapdiff_bench_coop's statistics: for small changes of
// structure the driver may keep the sums in local memory, several times slower.
//
// Numerics are those of the f16 mode: f16 inputs (their products are exact in f32), f32 sums, the
// bias added after the sum, and each output rounded once with round_f16 (to_act). Only the order
// of the f32 additions inside the tensor cores differs from the other kernels: fixed, so runs are
// deterministic. (gemm-f16-accum, faults.glsl: the sums are f16 cooperative matrices instead, the
// accumulator rounded to f16 by every multiply-add.)
//
// Needs (gpu/device.cpp and kernels.cpp check them before choosing this kernel): subgroups of
// 32, so that 256 invocations make 8 of them; 40 KiB of shared memory (24 KiB with slices of 16);
// and a device that lists 16x16x16 subgroup matrices of f16 A/B with f32 C/D and with f16 C/D
// (VK_NV_cooperative_matrix).
#ifndef ACT_F16
#error matmul_coop.comp is built for f16 activations only (f32 mode keeps matmul_tiled)
#endif
// The tile: COOP_SM x COOP_SN subgroups, each COOP_FM x COOP_FN fragments of 16 x 16; K slices of
// COOP_BK; staged rows padded by COOP_PAD halves (gpu/kernels.cpp mirrors these). A second build
// takes slices of 16 (COOP_BK=16, matmul-coop-128x128-k16), run when --kernels forces it.
#ifndef COOP_SM
#define COOP_SM 2
#define COOP_SN 4
#define COOP_FM 4
#define COOP_FN 2
#define COOP_PAD 8
#endif
#ifndef COOP_BK
#define COOP_BK 32
#endif
// The probe build (COOP_PROBE, bench/coop_ceiling.cpp; never run by the engine): specialization
// constant 3 takes parts of the slice loop away, each level those of the levels below too, so that
// the time each part costs can be told apart without a profiler. The products are then garbage;
// only their time counts. 0: the kernel itself.
#ifdef COOP_PROBE
layout(constant_id = 3) const uint PROBE = 0u;
#else
const uint PROBE = 0u;
#endif
const uint PROBE_NO_GLOBAL_READS = 1u;    // slices made up in registers instead of read from memory
const uint PROBE_NO_SHARED_STORES = 2u;   // nor stored to shared memory: each slice's tiles as first stored
const uint PROBE_NO_BARRIER = 3u;         // nor a barrier per slice
const uint PROBE_NO_FRAGMENT_LOADS = 4u;  // nor fragments loaded per slice: the products alone
layout(local_size_x = 32 * COOP_SM * COOP_SN) in;
// Bindings 0 and 1 are each declared twice: scalars for any shape, 16-byte chunks for the fast path.
layout(std430, binding = 0) readonly buffer Weights { uint w_words[]; };
layout(std430, binding = 0) readonly buffer WeightChunks { uvec4 w_chunks[]; };
layout(std430, binding = 1) readonly buffer Input { float16_t x[]; };
layout(std430, binding = 1) readonly buffer InputChunks { uvec4 x_chunks[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) writeonly buffer Output { act_t y[]; };
#include "push_constants.h"
layout(push_constant) uniform Push { MatmulPush pc; };
#include "common.glsl"
#include "dequant.glsl"
#include "faults.glsl"

#define F16_MATRIX fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define F32_MATRIX fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>

const uint FRAG = 16u;                      // cooperative matrices are FRAG x FRAG
const uint SUBGROUPS_M = COOP_SM, SUBGROUPS_N = COOP_SN;
const uint FM = COOP_FM, FN = COOP_FN;      // fragments per subgroup along T and N
const uint BM = SUBGROUPS_M * FM * FRAG;    // rows of Y per workgroup
const uint BN = SUBGROUPS_N * FN * FRAG;    // columns
const uint BK = COOP_BK;
const uint THREADS = 32u * SUBGROUPS_M * SUBGROUPS_N;
const uint CHUNK = 8u;                      // f16 values per 16-byte chunk
const uint CHUNKS_PER_ROW = BK / CHUNK;
const uint CHUNKS = (BM + BN) * CHUNKS_PER_ROW / THREADS;  // staged per invocation
// Halves per staged row, a whole number of 16-byte chunks.
const uint STRIDE = BK + COOP_PAD;
const uint STRIDE_CHUNKS = STRIDE / CHUNK;

const uint SLICE_CHUNKS = (BM + BN) * STRIDE_CHUNKS;
const uint SLICES = 2u;  // the next slice is stored into one while the other is multiplied
const uint OUT_CHUNKS = FRAG * FRAG / 4u;  // one 16 x 16 fragment of f32 sums, 4 per chunk

// A K slice: rows 0 .. BM-1 hold X[m0 + r, k0 ..], rows BM .. BM+BN-1 hold W[n0 + c, k0 ..], as
// 16-byte chunks of 8 halves (stored and loaded whole). After the last slice, each subgroup's
// fragments of sums pass through chunks OUT_CHUNKS * gl_SubgroupID .. on their way to Y.
shared uvec4 tiles[max(SLICES * SLICE_CHUNKS, SUBGROUPS_M * SUBGROUPS_N * OUT_CHUNKS)];

uint m0, n0;
// Where the workgroup's tile lies inside Y, K is a whole number of slices and W is stored as f16
// in rows of whole 16-byte chunks, its slices are read as straight-line loads without a bounds
// check (read_slice), from these chunk indices plus k0 / CHUNK: the invocation's chunks of slice 0.
bool inside;
uint first_chunk[CHUNKS];
// Passes i < X_PASSES of read_slice read X rows, the rest W rows (as whole passes: THREADS
// invocations read ROWS_PER_PASS rows of a slice per pass).
const uint ROWS_PER_PASS = THREADS / CHUNKS_PER_ROW;
const uint X_PASSES = BM % ROWS_PER_PASS == 0u ? BM / ROWS_PER_PASS : 0u;  // 0: no straight-line reads
F32_MATRIX acc[FM][FN];      // the sums of the clean kernel
F16_MATRIX acc_f16[FM][FN];  // the sums of gemm-f16-accum (compiled away in the clean kernel)
uvec4 staged[CHUNKS];        // the next slice, read ahead
F16_MATRIX held_a[BK / FRAG][FM], held_b[BK / FRAG][FN];  // PROBE_NO_FRAGMENT_LOADS: loaded once

// The f16 bit pattern of v, which must be an f16 value (as weight_at's are): exact, subnormals
// included, with no f32 -> f16 conversion whose rounding or flushing a driver chooses.
uint f16_bits(float v) {
  const uint u = floatBitsToUint(v);
  const uint sign = (u >> 16) & 0x8000u;
  const float a = abs(v);
  if (a < 6.103515625e-05) return sign | uint(a * 16777216.0);  // zero or subnormal: m * 2^-24
  const uint e = (u >> 23) & 0xFFu;
  if (e == 0xFFu) return sign | 0x7C00u | ((u >> 13) & 0x3FFu);  // inf, nan
  return sign | ((e - 112u) << 10) | ((u >> 13) & 0x3FFu);
}

uint x_bits(uint t, uint k) { return k < pc.k ? packFloat2x16(f16vec2(x[t * pc.k + k], float16_t(0.0))) : 0u; }

uint w_bits(uint n, uint k) {
  if (k >= pc.k) return 0u;
  const uint row = n * pc.row_bytes;
  return DTYPE == DTYPE_F16 ? w_u16(row + 2u * k) : f16_bits(weight_at(row, k));
}

// X[t, k .. k+7] as 8 f16 bit patterns, 2 per word; zeros past the edges. Rows of a multiple of 8
// values are read as whole 16-byte chunks.
uvec4 x_chunk(uint t, uint k) {
  if (t >= pc.rows || k >= pc.k) return uvec4(0u);
  if (pc.k % CHUNK == 0u) return x_chunks[(t * pc.k + k) / CHUNK];
  uvec4 c;
  [[unroll]] for (uint i = 0u; i < 4u; ++i) c[i] = x_bits(t, k + 2u * i) | (x_bits(t, k + 2u * i + 1u) << 16);
  return c;
}

// W[n, k .. k+7] likewise, dequantized (the same values as weight_at's).
uvec4 w_chunk(uint n, uint k) {
  if (n >= pc.n || k >= pc.k) return uvec4(0u);
  if (DTYPE == DTYPE_F16 && pc.row_bytes % 16u == 0u) return w_chunks[(n * pc.row_bytes + 2u * k) / 16u];
  uvec4 c;
  [[unroll]] for (uint i = 0u; i < 4u; ++i) c[i] = w_bits(n, k + 2u * i) | (w_bits(n, k + 2u * i + 1u) << 16);
  return c;
}

// Chunk i of this invocation's share of a slice: its staged row (X rows 0 .. BM-1, then W rows)
// and its offset along K inside the slice.
uvec2 slice_chunk(uint i) {
  const uint c = gl_LocalInvocationIndex + i * THREADS;
  return uvec2(c / CHUNKS_PER_ROW, (c % CHUNKS_PER_ROW) * CHUNK);
}

// Reads this invocation's chunks of the slice at k0 into `staged`.
void read_slice(uint k0) {
  if (inside && PROBE < PROBE_NO_GLOBAL_READS) {
    [[unroll]] for (uint i = 0u; i < CHUNKS; ++i)
      staged[i] = i < X_PASSES ? x_chunks[first_chunk[i] + k0 / CHUNK] : w_chunks[first_chunk[i] + k0 / CHUNK];
    return;
  }
  [[unroll]] for (uint i = 0u; i < CHUNKS; ++i) {
    if (PROBE >= PROBE_NO_GLOBAL_READS) {  // small f16 values that change with the slice
      staged[i] = uvec4(0x1C001C00u + ((k0 / BK) & 1u));
      continue;
    }
    const uvec2 rk = slice_chunk(i);
    const uint r = rk.x, k = k0 + rk.y;
    staged[i] = r < BM ? x_chunk(m0 + r, k) : w_chunk(n0 + r - BM, k);
  }
}

void stage_slice(uint at) {
  [[unroll]] for (uint i = 0u; i < CHUNKS; ++i) {
    const uvec2 rk = slice_chunk(i);
    tiles[at + rk.x * STRIDE_CHUNKS + rk.y / CHUNK] = staged[i];
  }
}

void multiply_add(uint i, uint j, F16_MATRIX a, F16_MATRIX b) {
  if (planted(FAULT_GEMM_F16_ACCUMULATE))
    acc_f16[i][j] = coopMatMulAddNV(a, b, acc_f16[i][j]);
  else
    acc[i][j] = coopMatMulAddNV(a, b, acc[i][j]);
}

// Fragment i of the subgroup's A (X rows, row-major) and fragment j of its B (W^T: W rows are B's
// columns, so column-major), at K offset kk of the slice staged at `at`.
void load_a(out F16_MATRIX a, uint at, uint sm, uint i, uint kk) {
  coopMatLoadNV(a, tiles, at + (sm * FM + i) * FRAG * STRIDE_CHUNKS + kk / CHUNK, STRIDE_CHUNKS, false);
}
void load_b(out F16_MATRIX b, uint at, uint sn, uint j, uint kk) {
  coopMatLoadNV(b, tiles, at + (BM + (sn * FN + j) * FRAG) * STRIDE_CHUNKS + kk / CHUNK, STRIDE_CHUNKS, true);
}

// The staged slice times the subgroup's fragments.
void multiply_slice(uint at, uint sm, uint sn) {
  [[unroll]] for (uint kk = 0u; kk < BK; kk += FRAG) {
    F16_MATRIX a[FM], b[FN];
    [[unroll]] for (uint i = 0u; i < FM; ++i)
      if (PROBE >= PROBE_NO_FRAGMENT_LOADS)
        a[i] = held_a[kk / FRAG][i];
      else
        load_a(a[i], at, sm, i, kk);
    [[unroll]] for (uint j = 0u; j < FN; ++j)
      if (PROBE >= PROBE_NO_FRAGMENT_LOADS)
        b[j] = held_b[kk / FRAG][j];
      else
        load_b(b[j], at, sn, j, kk);
    [[unroll]] for (uint i = 0u; i < FM; ++i)
      [[unroll]] for (uint j = 0u; j < FN; ++j) multiply_add(i, j, a[i], b[j]);
  }
}

// Y[t0 .., n0 ..] of one fragment of sums: + bias, rounded once, inside the edges only.
void store_fragment(F32_MATRIX sums, uint t0, uint c0) {
  const uint base = gl_SubgroupID * OUT_CHUNKS;
  coopMatStoreNV(sums, tiles, base, FRAG / 4u, false);
  subgroupBarrier();
  for (uint e = gl_SubgroupInvocationID; e < FRAG * FRAG; e += gl_SubgroupSize) {
    const uint t = t0 + e / FRAG, n = c0 + e % FRAG;
    const float s = uintBitsToFloat(tiles[base + e / 4u][e % 4u]);
    if (t < pc.rows && n < pc.n) y[t * pc.n + n] = to_act(pc.has_bias != 0u ? s + bias[n] : s);
  }
  subgroupBarrier();  // read before the next fragment overwrites
}

void main() {
  m0 = gl_WorkGroupID.x * BM;  // workgroups next in line share their W tile
  n0 = gl_WorkGroupID.y * BN;
  inside = X_PASSES > 0u && m0 + BM <= pc.rows && n0 + BN <= pc.n && pc.k % BK == 0u && DTYPE == DTYPE_F16 &&
           pc.row_bytes % 16u == 0u;
  [[unroll]] for (uint i = 0u; i < CHUNKS; ++i) {
    const uvec2 rk = slice_chunk(i);
    const uint r = rk.x, k = rk.y;
    first_chunk[i] = i < X_PASSES ? ((m0 + r) * pc.k + k) / CHUNK : ((n0 + r - BM) * pc.row_bytes + 2u * k) / 16u;
  }
  const uint sm = gl_SubgroupID / SUBGROUPS_N, sn = gl_SubgroupID % SUBGROUPS_N;
  [[unroll]] for (uint i = 0u; i < FM; ++i)
    [[unroll]] for (uint j = 0u; j < FN; ++j) {
      if (planted(FAULT_GEMM_F16_ACCUMULATE))
        acc_f16[i][j] = F16_MATRIX(0.0);
      else
        acc[i][j] = F32_MATRIX(0.0);
    }

  read_slice(0u);
  stage_slice(0u);
  if (PROBE >= PROBE_NO_SHARED_STORES) stage_slice(SLICE_CHUNKS);
  barrier();
  if (PROBE >= PROBE_NO_FRAGMENT_LOADS)
    [[unroll]] for (uint kk = 0u; kk < BK; kk += FRAG) {
      [[unroll]] for (uint i = 0u; i < FM; ++i) load_a(held_a[kk / FRAG][i], 0u, sm, i, kk);
      [[unroll]] for (uint j = 0u; j < FN; ++j) load_b(held_b[kk / FRAG][j], 0u, sn, j, kk);
    }
  uint at = 0u;
  for (uint k0 = 0u; k0 < pc.k; k0 += BK) {
    const bool more = k0 + BK < pc.k;
    if (more) read_slice(k0 + BK);
    multiply_slice(at, sm, sn);
    at = SLICE_CHUNKS - at;
    // The other buffer was last read in the slice before, which every subgroup has finished.
    if (more && PROBE < PROBE_NO_SHARED_STORES) stage_slice(at);
    if (PROBE < PROBE_NO_BARRIER) barrier();
  }
  if (PROBE >= PROBE_NO_BARRIER) barrier();  // the tiles are read before store_fragment reuses them

  [[unroll]] for (uint i = 0u; i < FM; ++i)
    [[unroll]] for (uint j = 0u; j < FN; ++j) {
      const F32_MATRIX sums = planted(FAULT_GEMM_F16_ACCUMULATE) ? F32_MATRIX(acc_f16[i][j]) : acc[i][j];
      store_fragment(sums, m0 + (sm * FM + i) * FRAG, n0 + (sn * FN + j) * FRAG);
    }
}
