#pragma once
// The mixture-of-experts ops (model/config.h Experts) as plain functions over Eigen matrices, as
// reference/kernels.h has the dense ones. Expert ids travel as exact small integers of S.
#include "model/block.h"
#include "model/config.h"
#include "reference/eigen_types.h"
#include "reference/rounding.h"

namespace tapdiff::reference {

// The choice scores [T, experts]: each row's sigmoids, or its softmax over every expert, as
// `score` says, + bias (per expert; null: none).
template <typename S>
void expert_scores(const Mat<S>& logits, model::RouterScore score, const S* bias, Mat<S>& scores);

// ids [T, k]: per row the k experts of the largest scores (router logits, or a sigmoid router's
// choice scores), ascending by id; of equal scores the lower id first. With groups > 1, only
// among the experts of the top_groups groups (of equal size, in id order) whose group_best largest
// scores sum highest, ties to the lower group.                       scores [T, experts]
template <typename S>
void top_experts(const Mat<S>& scores, int k, int groups, int top_groups, int group_best, Mat<S>& ids);

// weights [T, k]: each row's expert scores taken at ids (softmax over every expert's logit, or
// each one's sigmoid, as experts.score says); divided by their sum where experts.normalize, then
// times experts.scale, and each times its expert's entry of expert_scales where given
// (experts.expert_scales: Gemma 4's per_expert_scale). UsageError for an id that is no expert.
template <typename S>
void expert_weights(const Mat<S>& logits, const Mat<S>& ids, const model::Experts& experts, Mat<S>& weights,
                    const S* expert_scales = nullptr);

// The experts' FFN weights of one layer: stacked [experts * ffn_dim, dim] (gate, up) and
// [experts * dim, ffn_dim] (down); their biases stacked [experts * ffn_dim] and [experts * dim],
// or null where the experts have none.
template <typename S>
struct ExpertMatrices {
  ConstMatMap<S> gate, up, down;
  int ffn_dim = 0;
  const S* gate_bias = nullptr;
  const S* up_bias = nullptr;
  const S* down_bias = nullptr;
};

// out[t] = sum over j of weights[t, j] * down_e(act(gate_e x[t]) * up_e x[t]) with e = ids[t, j]
// (each product plus expert e's bias where the experts have them, added to the stored product), act
// the block's gated activation, added in the order of j (ascending expert id, as transformers adds
// them); where weights_scale_input, the sum of down_e(...) of the input weights[t, j] * x[t]
// (stored, then unweighted: Llama 4). Each expert's rows run
// as one product. With a storage other than f32 every intermediate (gate, up, activation, down,
// weighted sum) is rounded to it, as an f16 or bf16 engine stores them. UsageError for an id that is no expert.
template <typename S>
void mixture(const Mat<S>& x, const Mat<S>& ids, const Mat<S>& weights, const ExpertMatrices<S>& experts,
             const model::Block& block, bool weights_scale_input, Storage storage, Mat<S>& out);

// The shared expert of one layer: gate and up [ffn, dim], down [dim, ffn]; gate_inp [1, dim], or
// null, the weights of the sigmoid gate that scales its output per row (Qwen2-MoE's).
template <typename S>
struct SharedExpert {
  ConstMatMap<S> gate, up, down;
  const ConstMatMap<S>* gate_inp = nullptr;
};

// out[t] = down(act(gate x[t]) * up x[t]), times sigmoid(gate_inp . x[t]) where the expert has a
// gate; intermediates rounded to `storage` as mixture() rounds them.
template <typename S>
void shared_expert(const Mat<S>& x, const SharedExpert<S>& expert, const model::Block& block, Storage storage,
                   Mat<S>& out);

}  // namespace tapdiff::reference
