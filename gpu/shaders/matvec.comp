#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "activations.glsl"
// Y[T, N] = X[T, K] W[N, K]^T (+ bias[N]) for T == 1 (decode), where a GEMM tile would idle.
//
// matvec-subgroup (SUBGROUP defined): SPLIT (constant 4) subgroups per output element, ROWS
// (constant 3) consecutive outputs of one row t per workgroup (groups ordered n fastest). f32, f16
// and bf16 weights with K a multiple of 8 are read 16 bytes per invocation (an invocation takes 8
// consecutive k, the subgroup's invocations consecutive groups of 8, the SPLIT subgroups of an
// output every SPLIT-th pass of the subgroup over K), BURST passes at a time, whose reads are all
// issued before the first of their products (the sum's order unchanged); other storage one
// element per invocation. (BURST is 4: faster than one pass at a time, and 8 is no faster;
// docs/benchmarks.md.)
// The invocations' partial sums are added with subgroupAdd, then the SPLIT subgroups' sums in order
// through shared memory. More subgroups per output keep more reads in flight where N alone gives
// too few (the k and v projections); SPLIT = 1 has no shared memory and no barrier. In the f16
// pipelines f16 weights are widened by the hardware, as activations are (exact: every f16 value is
// an f32 value).
// matvec-shared (otherwise): one workgroup per output element, each invocation summing
// k = lid, lid + WG, ..., then a shared-memory tree (WG a power of two).
// Both orders are fixed: deterministic. (gemm-f16-accum, faults.glsl: every partial sum rounded
// to f16, the reductions' included.)
// EXPERTS (moe_out's products, Kernels::expert_matmul): each of the T rows is a (token, expert)
// pair t whose expert e = ids[t] picks rows [e N, (e + 1) N) of the stacked weights; its input is
// X row t / pc.per_token where pc.shared_input (the token's row, read by each of its experts), else
// X row t. No bias. (expert-index, faults.glsl: expert e + 1's rows, mod pc.experts.)
#ifdef SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
layout(local_size_x_id = 1) in;
layout(std430, binding = 0) readonly buffer Weights { uint w_words[]; };
layout(std430, binding = 1) readonly buffer Input { act_t x[]; };
#ifdef EXPERTS
layout(std430, binding = 2) readonly buffer Ids { act_t expert_ids[]; };
#else
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
#endif
layout(std430, binding = 3) writeonly buffer Output { act_t y[]; };
#include "push_constants.h"
layout(push_constant) uniform Push { MatmulPush pc; };
#include "common.glsl"
#include "dequant.glsl"
#include "faults.glsl"

#ifdef EXPERTS
float finish(float sum, uint n) { return sum; }
// Byte offset of output n's weight row for row (pair) t, and the element offset of t's input row.
uint weight_row(uint t, uint n) {
  // an id past the experts (moe_topk never makes one) reads the last expert, never outside the buffer
  const uint e = min(uint(float(expert_ids[t])), pc.experts - 1u);
  return ((planted(FAULT_EXPERT_NEXT) ? (e + 1u) % pc.experts : e) * pc.n + n) * pc.row_bytes;
}
uint input_row(uint t) { return (pc.shared_input != 0u ? t / pc.per_token : t) * pc.k; }
#else
float finish(float sum, uint n) { return pc.has_bias != 0u ? sum + bias[n] : sum; }
uint weight_row(uint t, uint n) { return n * pc.row_bytes; }
uint input_row(uint t) { return t * pc.k; }
#endif

#ifdef SUBGROUP
layout(constant_id = 3) const uint ROWS = 4u;
layout(constant_id = 4) const uint SPLIT = 1u;
const uint BURST = 4u;  // passes over K whose reads are issued together
// The same buffers seen 16 bytes at a time (x: 4 values of act_t, 8 or 16 bytes).
layout(std430, binding = 0) readonly buffer WeightQuads { uvec4 w_quads[]; };
#ifdef ACT_F16
layout(std430, binding = 0) readonly buffer WeightHalves { f16vec4 w_halves[]; };
layout(std430, binding = 1) readonly buffer InputQuads { f16vec4 x_quads[]; };
#else
layout(std430, binding = 1) readonly buffer InputQuads { vec4 x_quads[]; };
#endif

// The 8 weights k = 8c .. 8c + 7 of the row that starts at byte `row` (16-byte aligned).
void weights8(uint row, uint c, out vec4 lo, out vec4 hi) {
  if (DTYPE == DTYPE_F32) {
    const uint q = (row >> 4) + 2u * c;
    lo = uintBitsToFloat(w_quads[q]);
    hi = uintBitsToFloat(w_quads[q + 1u]);
    return;
  }
#ifdef ACT_F16
  if (DTYPE == DTYPE_F16) {
    const uint h = (row >> 3) + 2u * c;
    lo = vec4(w_halves[h]);
    hi = vec4(w_halves[h + 1u]);
    return;
  }
#endif
  const uvec4 w = w_quads[(row >> 4) + c];
  if (DTYPE == DTYPE_F16) {
    lo = vec4(half_bits_to_float(w.x & 0xFFFFu), half_bits_to_float(w.x >> 16), half_bits_to_float(w.y & 0xFFFFu),
              half_bits_to_float(w.y >> 16));
    hi = vec4(half_bits_to_float(w.z & 0xFFFFu), half_bits_to_float(w.z >> 16), half_bits_to_float(w.w & 0xFFFFu),
              half_bits_to_float(w.w >> 16));
    return;
  }
  lo = uintBitsToFloat(uvec4(w.x << 16, w.x & 0xFFFF0000u, w.y << 16, w.y & 0xFFFF0000u));  // bf16
  hi = uintBitsToFloat(uvec4(w.z << 16, w.z & 0xFFFF0000u, w.w << 16, w.w & 0xFFFF0000u));
}

// Per (output, split part) of the workgroup: the part's sum, for SPLIT > 1.
shared float part_sums[ROWS * SPLIT];

float dot4(float sum, vec4 a, vec4 b) {
  sum = accumulate(sum, a.x * b.x);
  sum = accumulate(sum, a.y * b.y);
  sum = accumulate(sum, a.z * b.z);
  return accumulate(sum, a.w * b.w);
}

// sum + X[t, 8c .. 8c + 7] . (lo, hi), x of row t starting at xb.
float dot8(float sum, uint xb, uint c, vec4 lo, vec4 hi) {
  const uint xq = xb / 4u + 2u * c;
  return dot4(dot4(sum, vec4(x_quads[xq]), lo), vec4(x_quads[xq + 1u]), hi);
}

void main() {
  const uint blocks = (pc.n + ROWS - 1u) / ROWS;
  const uint g = group_index();
  if (g >= pc.rows * blocks) return;  // uniform over the workgroup
  const uint t = g / blocks, first = (g - t * blocks) * ROWS;
  const uint lane = gl_SubgroupInvocationID, lanes = gl_SubgroupSize;
  const bool quads = (DTYPE == DTYPE_F32 || DTYPE == DTYPE_F16 || DTYPE == DTYPE_BF16) && pc.k % 8u == 0u;
  // slot = output r of the workgroup x SPLIT + part p: a subgroup each
  for (uint slot = gl_SubgroupID; slot < ROWS * SPLIT; slot += gl_NumSubgroups) {
    const uint r = slot / SPLIT, p = slot % SPLIT, n = first + r;
    if (n >= pc.n) break;  // uniform over the subgroup
    const uint row = weight_row(t, n), xb = input_row(t);
    float sum = 0.0;
    if (quads) {
      const uint chunks = pc.k / 8u, step = lanes * SPLIT;
      uint c = lane + p * lanes;
      for (; c + (BURST - 1u) * step < chunks; c += BURST * step) {
        vec4 lo[BURST], hi[BURST];
        [[unroll]] for (uint b = 0u; b < BURST; ++b) weights8(row, c + b * step, lo[b], hi[b]);
        [[unroll]] for (uint b = 0u; b < BURST; ++b) sum = dot8(sum, xb, c + b * step, lo[b], hi[b]);
      }
      for (; c < chunks; c += step) {
        vec4 lo, hi;
        weights8(row, c, lo, hi);
        sum = dot8(sum, xb, c, lo, hi);
      }
    } else {
      for (uint k = lane + p * lanes; k < pc.k; k += lanes * SPLIT)
        sum = accumulate(sum, float(x[xb + k]) * weight_at(row, k));
    }
    sum = accumulator(subgroupAdd(sum));
    if (SPLIT == 1u) {
      if (subgroupElect()) y[t * pc.n + n] = to_act(finish(sum, n));
    } else if (subgroupElect()) {
      part_sums[slot] = sum;
    }
  }
  if (SPLIT > 1u) {
    barrier();
    const uint r = gl_LocalInvocationIndex, n = first + r;
    if (r < ROWS && n < pc.n) {
      float sum = part_sums[r * SPLIT];
      for (uint p = 1u; p < SPLIT; ++p) sum = accumulate(sum, part_sums[r * SPLIT + p]);
      y[t * pc.n + n] = to_act(finish(sum, n));
    }
  }
}

#else
shared float partial[gl_WorkGroupSize.x];

void main() {
  const uint g = group_index();
  if (g >= pc.rows * pc.n) return;  // uniform over the workgroup
  const uint t = g / pc.n, n = g - t * pc.n;
  const uint lid = gl_LocalInvocationID.x;
  const uint row = weight_row(t, n), xb = input_row(t);
  float sum = 0.0;
  for (uint k = lid; k < pc.k; k += gl_WorkGroupSize.x) sum = accumulate(sum, float(x[xb + k]) * weight_at(row, k));
  partial[lid] = sum;
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1) {
    if (lid < s) partial[lid] = accumulate(partial[lid], partial[lid + s]);
    barrier();
  }
  if (lid == 0u) y[g] = to_act(finish(partial[0], n));
}
#endif
