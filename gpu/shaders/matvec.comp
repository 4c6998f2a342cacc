#version 450
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
// matvec-subgroup / matvec-shared: Y[T, N] = X[T, K] W[N, K]^T (+ bias[N]), one workgroup per
// output element (t, n) (groups ordered n fastest), for T == 1 (decode) where a tile would idle.
// Each invocation sums x[t, k] * W[n, k] over k = lid, lid + WG, ...; the partial sums are then
// reduced with subgroupAdd and a sequential sum over the subgroups (SUBGROUP defined), or with a
// shared-memory tree (otherwise; WG a power of two). Both orders are fixed: deterministic.
// (gemm-f16-accum, faults.glsl: every partial sum rounded to f16, the reductions' included.)
#ifdef SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
layout(local_size_x_id = 1) in;
layout(std430, binding = 0) readonly buffer Weights { uint w_words[]; };
layout(std430, binding = 1) readonly buffer Input { act_t x[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) writeonly buffer Output { act_t y[]; };
layout(push_constant) uniform Push {
  uint rows;
  uint k;
  uint n;
  uint row_bytes;
  uint has_bias;
} pc;
#include "common.glsl"
#include "dequant.glsl"
#include "faults.glsl"

shared float partial[gl_WorkGroupSize.x];

void main() {
  const uint g = group_index();
  if (g >= pc.rows * pc.n) return;  // uniform over the workgroup
  const uint t = g / pc.n, n = g - t * pc.n;
  const uint lid = gl_LocalInvocationID.x;
  const uint row = n * pc.row_bytes, xb = t * pc.k;
  float sum = 0.0;
  for (uint k = lid; k < pc.k; k += gl_WorkGroupSize.x) sum = accumulate(sum, float(x[xb + k]) * weight_at(row, k));
#ifdef SUBGROUP
  sum = accumulator(subgroupAdd(sum));
  if (subgroupElect()) partial[gl_SubgroupID] = sum;
  barrier();
  if (lid == 0u) {
    float total = 0.0;
    for (uint s = 0u; s < gl_NumSubgroups; ++s) total = accumulate(total, partial[s]);
    y[g] = to_act(pc.has_bias != 0u ? total + bias[n] : total);
  }
#else
  partial[lid] = sum;
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1) {
    if (lid < s) partial[lid] = accumulate(partial[lid], partial[lid + s]);
    barrier();
  }
  if (lid == 0u) y[g] = to_act(pc.has_bias != 0u ? partial[0] + bias[n] : partial[0]);
#endif
}
