#pragma once
// The ops of the forward pass as plain functions over Eigen matrices, one per op, in the order of
// the math. T = rows of the chunk, P = rows in the KV cache after this chunk (first_pos + T).
#include <cstdint>
#include <span>

#include "model/config.h"
#include "model/xielu.h"
#include "reference/eigen_types.h"

namespace tapdiff::reference {

// out[t] = table[tokens[t]] * scale              table [vocab, dim] -> out [T, dim]
template <typename S>
void embed(const ConstMatMap<S>& table, std::span<const std::int32_t> tokens, double scale, Mat<S>& out);

// Gemma 4's per-layer input of one layer (model/config.h LayerInputs), P channels:
//   out[t] = (rms_norm(e[t] W^T * projection_scale) * (offset + norm_w) + table[tokens[t], first_col .. + P) *
//            table_scale) * out_scale
// embedding e [T, dim], the layer's projection rows W [P, dim], table [rows, n_layers * P] -> out [T, P]
template <typename S>
void layer_input(const Mat<S>& embedding, std::span<const std::int32_t> tokens, const ConstMatMap<S>& table,
                 int first_col, const ConstMatMap<S>& projection, const Eigen::Map<const Vec<S>>& norm_w, double eps,
                 double offset, const model::LayerInputScales& scales, Mat<S>& out);

// out[t] += positions[first + t]                 positions [n, dim]: a learned position embedding's
// rows from `first` (model::learned_position_row's)
template <typename S>
void add_positions(const ConstMatMap<S>& positions, std::int64_t first, Mat<S>& out);

// out[t] = x[t] / sqrt(mean(x[t]^2) + eps) * (offset + w)   x [T, n], w [n] -> out [T, n]
template <typename S>
void rms_norm(const Mat<S>& x, const Eigen::Map<const Vec<S>>& w, double eps, double offset, Mat<S>& out);

// out[t] = (x[t] - m) / sqrt(mean((x[t] - m)^2) + eps) * (offset + w) (+ bias where not null),
// m = mean(x[t])                                 x [T, n], w [n] -> out [T, n]
template <typename S>
void layer_norm(const Mat<S>& x, const Eigen::Map<const Vec<S>>& w, const S* bias, double eps, double offset,
                Mat<S>& out);

// The block's norm (model::NormKind): rms_norm, or layer_norm with its bias.
template <typename S>
void norm(const Mat<S>& x, model::NormKind kind, const Eigen::Map<const Vec<S>>& w, const S* bias, double eps,
          double offset, Mat<S>& out);

// The norm of each group of w.size() channels of a row on its own, all with the same w: a row of
// heads normed per head (w [head_dim]: Qwen3's q/k norms), or as a whole (w [width]: OLMo 2's).
// x [T, heads * head_dim] -> out, same shape.
template <typename S>
void norm_groups(const Mat<S>& x, model::NormKind kind, const Eigen::Map<const Vec<S>>& w, double eps, double offset,
                 Mat<S>& out);

// out = x W^T (+ bias [out] where not null)      x [T, in], W [out, in] -> out [T, out]
// Threads split the output columns when T is small (decode), Eigen's GEMM is used otherwise.
template <typename S>
void matmul(const Mat<S>& x, const ConstMatMap<S>& w, const S* bias, Mat<S>& out);

// matmul with f16 sums: each run of `depth` of a row's products summed in f32, then added to the
// output's f16 sum and rounded to f16 (depth 16: a tensor-core GEMM with f16 accumulators; 1: a
// kernel adding each product into an f16 sum), the sums clamped to the largest finite f16; the
// bias added last, in f32.
void matmul_f16_sums(const Mat<float>& x, const ConstMatMap<float>& w, const float* bias, int depth, Mat<float>& out);

// Rotates rotary_dim channels of each head of row t, from its channel first_channel on (0: the
// leading ones; latent attention's q: the trailing ones): pair i turns by angle
// (first_pos + t) * f.inv_freq[i], its cos and sin times f.attention_factor (model/rope.h).
// x [T, heads * head_dim] -> out, same shape. Angles are computed in double for both scalars.
template <typename S>
void rope(const Mat<S>& x, int head_dim, int first_pos, const model::RopeFrequencies& f, model::RopeStyle style,
          Mat<S>& out, int first_channel = 0);

// Causal grouped-query attention of the chunk's queries over the whole cache:
// q [T, heads * hd] (after RoPE), k_cache [>= P, kv_heads * hd], v_cache [>= P, kv_heads * v_dim]
// -> out [T, heads * v_dim].
// Query head h reads KV head h / (heads / kv_heads); row t (position first_pos + t) sees cache rows
// j in [span.first(first_pos + t), first_pos + t] (a sliding window's, a chunk's). Scores are q.k * scale,
// then softcap * tanh(score / softcap) where softcap > 0. Where extras.sinks is not null, head h's
// softmax has one more logit in its denominator, sinks[h], with no value (gpt-oss); where extras.kept
// is, row t sees only the positions in kept's row t (idx_ids: -1 holds none). Rounded as `rounding` says (S =
// float only): f16_operands rounds q and the softmax probabilities to f16 values for their products, as llama.cpp
// converts them to multiply its f16 KV cache; f16_value_sums adds each probability times V into an f16 sum.
struct AttentionRounding {
  bool f16_operands = false;
  bool f16_value_sums = false;
};
template <typename S>
struct AttentionExtras {
  const S* sinks = nullptr;      // [n_heads]
  const Mat<S>* kept = nullptr;  // [T, any]: positions
};
template <typename S>
void attention(const Mat<S>& q, const Mat<S>& k_cache, const Mat<S>& v_cache, int first_pos, int n_heads,
               int n_kv_heads, int head_dim, int v_dim, model::KeySpan span, double scale, double softcap,
               const AttentionExtras<S>& extras, AttentionRounding rounding, Mat<S>& out);

// out = act(x) (model/block.h's activations)    [T, ffn]: a plain FFN's ffn_act; xielu with the
// layer's scalars
template <typename S>
void activation(const Mat<S>& x, model::Activation act, Mat<S>& out, const model::Xielu& xielu = {});

// out = act(gate) * up    [T, ffn]: a gated FFN's ffn_act, act the block's activation; the clamped
// SwiGLU (swiglu_oai) with the block's alpha and limit
template <typename S>
void gated_activation(const Mat<S>& gate, const Mat<S>& up, const model::Block& block, Mat<S>& out);

// x = x * scale, then cap * tanh(x / cap) where cap > 0 (the logits of Granite and Gemma 2), in place.
template <typename S>
void scale_softcap(Mat<S>& x, double scale, double cap);

}  // namespace tapdiff::reference
