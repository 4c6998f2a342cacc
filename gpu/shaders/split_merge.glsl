// The merge of split-KV attention's partials (attention_combine.comp, attention_decode.comp): each
// split s of a (row, head) left (m_s, l_s, sums_s[head_dim]) in partial[] (declared by the
// kernel, `stride` floats per split); out = sum_s w_s sums_s / sum_s w_s l_s with
// w_s = exp(m_s - max_s m_s). A split that saw no key of the row has m_s = -inf, so w_s = 0.
// Splits in order: deterministic. The weights and the l_s are read once per split into shared
// memory (not once per channel), and a channel's sums 8 splits at a time (a burst, then the sums
// in order): merging waits on memory, so one round trip per 8 splits instead of one per split.
// (Under softmax-no-max every m_s is 0, and so is the max: the planted numerics carry through.)
const uint MAX_SPLITS = 64u;  // Kernels: kMaxSplits
const uint MERGE_BURST = 8u;  // splits read at once
shared float split_w[MAX_SPLITS];
shared float split_l[MAX_SPLITS];

// Sets split_w and split_l for the (row, head) whose partials start at `first`; returns
// sum_s w_s l_s. Called by every invocation of the workgroup (it holds barriers).
float merge_weights(uint first, uint stride, uint splits) {
  barrier();  // a previous merge's weights are read
  for (uint s = gl_LocalInvocationIndex; s < splits; s += gl_WorkGroupSize.x) {
    split_w[s] = partial[first + s * stride];  // m_s for now
    split_l[s] = partial[first + s * stride + 1u];
  }
  barrier();
  float m = uintBitsToFloat(0xFF800000u);  // -inf
  for (uint s = 0u; s < splits; ++s) m = max(m, split_w[s]);
  barrier();  // every invocation has the max before the m_s are overwritten
  for (uint s = gl_LocalInvocationIndex; s < splits; s += gl_WorkGroupSize.x) split_w[s] = exp(split_w[s] - m);
  barrier();
  float l = 0.0;
  for (uint s = 0u; s < splits; ++s) l += split_w[s] * split_l[s];
  return l;
}

// sum_s w_s sums_s[d] of the (row, head) of the last merge_weights.
float merged_sums(uint first, uint stride, uint splits, uint d) {
  float o = 0.0;
  for (uint s0 = 0u; s0 < splits; s0 += MERGE_BURST) {
    float sums[MERGE_BURST];
    [[unroll]] for (uint i = 0u; i < MERGE_BURST; ++i)
      sums[i] = s0 + i < splits ? partial[first + (s0 + i) * stride + 2u + d] : 0.0;
    [[unroll]] for (uint i = 0u; i < MERGE_BURST; ++i)
      if (s0 + i < splits) o += split_w[s0 + i] * sums[i];
  }
  return o;
}
