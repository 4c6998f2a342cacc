#pragma once
// The ops of the forward pass as plain functions over Eigen matrices, one per op, in the order of
// the math. T = rows of the chunk, P = rows in the KV cache after this chunk (first_pos + T).
#include <cstdint>
#include <span>

#include "model/config.h"
#include "reference/eigen_types.h"

namespace tapdiff::reference {

// out[t] = table[tokens[t]]                       table [vocab, dim] -> out [T, dim]
template <typename S>
void embed(const ConstMatMap<S>& table, std::span<const std::int32_t> tokens, Mat<S>& out);

// out[t] = x[t] / sqrt(mean(x[t]^2) + eps) * w   x [T, dim], w [dim] -> out [T, dim]
template <typename S>
void rms_norm(const Mat<S>& x, const Eigen::Map<const Vec<S>>& w, double eps, Mat<S>& out);

// rms_norm of each head's head_dim channels on its own, all heads with the same w [head_dim] (the
// q/k norms of Qwen3). x [T, heads * head_dim] -> out, same shape.
template <typename S>
void rms_norm_per_head(const Mat<S>& x, const Eigen::Map<const Vec<S>>& w, double eps, int head_dim, Mat<S>& out);

// out = x W^T (+ bias)                           x [T, in], W [out, in] -> out [T, out]
// Threads split the output columns when T is small (decode), Eigen's GEMM is used otherwise.
template <typename S>
void matmul(const Mat<S>& x, const ConstMatMap<S>& w, const Vec<S>* bias, Mat<S>& out);

// Rotates the first rotary_dim channels of each head of row t: pair i turns by angle
// (first_pos + t) * f.inv_freq[i], its cos and sin times f.attention_factor (model/rope.h).
// x [T, heads * head_dim] -> out, same shape. Angles are computed in double for both scalars.
template <typename S>
void rope(const Mat<S>& x, int head_dim, int first_pos, const model::RopeFrequencies& f, model::RopeStyle style,
          Mat<S>& out);

// Causal grouped-query attention of the chunk's queries over the whole cache:
// q [T, heads * hd] (after RoPE), k_cache / v_cache [>= P, kv_heads * hd] -> out [T, heads * hd].
// Query head h reads KV head h / (heads / kv_heads); row t (position first_pos + t) sees cache rows
// j <= first_pos + t, and j > first_pos + t - window when window > 0.
template <typename S>
void attention(const Mat<S>& q, const Mat<S>& k_cache, const Mat<S>& v_cache, int first_pos, int n_heads,
               int n_kv_heads, int head_dim, int window, Mat<S>& out);

// out = silu(gate) * up, silu(x) = x / (1 + exp(-x))    [T, ffn]
template <typename S>
void silu_mul(const Mat<S>& gate, const Mat<S>& up, Mat<S>& out);

}  // namespace tapdiff::reference
