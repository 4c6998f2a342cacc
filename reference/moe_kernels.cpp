#include "reference/moe_kernels.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>
#include <vector>

#include <fmt/core.h>

#include "model/errors.h"
#include "reference/kernels.h"
#include "reference/rounding.h"

namespace tapdiff::reference {
namespace {

// ids[t, j] as an expert index, or UsageError.
template <typename S>
Eigen::Index expert_at(const Mat<S>& ids, Eigen::Index t, Eigen::Index j, Eigen::Index experts) {
  const S v = ids(t, j);
  if (!(v >= 0 && v < static_cast<S>(experts)) || v != std::floor(v))
    throw UsageError(fmt::format("moe_ids row {} column {}: expected an expert id in [0, {}), found {}", t, j, experts,
                                 static_cast<double>(v)));
  return static_cast<Eigen::Index>(v);
}

// PhiMoE's sparsemixer at inference (model::Experts::sparsemixer): of the two chosen experts, the
// one of the larger logit (of equal ones the lower id) weighs the softmax at it over the experts
// within 2 eps of it, (top - s) / max(|s|, top) <= 2 eps; the other the same relative to its own
// logit, the first left out.
template <typename S>
void sparsemixer_weights(const Mat<S>& logits, const Mat<S>& ids, S eps, Mat<S>& weights) {
  const Eigen::Index experts = logits.cols();
  for (Eigen::Index t = 0; t < logits.rows(); ++t) {
    const Eigen::Index a = expert_at(ids, t, 0, experts), b = expert_at(ids, t, 1, experts);
    const bool a_first = logits(t, a) >= logits(t, b);  // ids ascend: a < b, so a wins a tie
    const Eigen::Index first = a_first ? a : b;
    const auto weight = [&](Eigen::Index chosen, Eigen::Index left_out) {
      const S top = logits(t, chosen);
      S total = 0;
      for (Eigen::Index e = 0; e < experts; ++e) {
        const S s = logits(t, e);
        if (e != left_out && !((top - s) / std::max(std::abs(s), top) > 2 * eps)) total += std::exp(s - top);
      }
      return S{1} / total;
    };
    weights(t, a_first ? 0 : 1) = weight(first, -1);
    weights(t, a_first ? 1 : 0) = weight(a_first ? b : a, first);
  }
}

}  // namespace

template <typename S>
void expert_scores(const Mat<S>& logits, model::RouterScore score, const S* bias, Mat<S>& scores) {
  scores.resize(logits.rows(), logits.cols());
  for (Eigen::Index t = 0; t < logits.rows(); ++t) {
    const S top = logits.row(t).maxCoeff();
    const S total = score == model::RouterScore::softmax ? (logits.row(t).array() - top).exp().sum() : S{1};
    for (Eigen::Index e = 0; e < logits.cols(); ++e) {
      const S s = score == model::RouterScore::softmax ? std::exp(logits(t, e) - top) / total
                                                       : S{1} / (S{1} + std::exp(-logits(t, e)));
      scores(t, e) = s + (bias != nullptr ? bias[e] : S{0});
    }
  }
}

template <typename S>
void top_experts(const Mat<S>& scores, int k, int groups, int top_groups, int group_best, Mat<S>& ids) {
  ids.resize(scores.rows(), k);
  const Eigen::Index experts = scores.cols(), per_group = experts / groups;
  std::vector<Eigen::Index> order(static_cast<std::size_t>(experts));
  std::vector<Eigen::Index> group_order(static_cast<std::size_t>(groups));
  std::vector<S> group_score(static_cast<std::size_t>(groups)), in_group(static_cast<std::size_t>(per_group));
  std::vector<bool> allowed(static_cast<std::size_t>(experts));
  for (Eigen::Index t = 0; t < scores.rows(); ++t) {
    const auto larger = [&](Eigen::Index a, Eigen::Index b) {
      return scores(t, a) > scores(t, b) || (scores(t, a) == scores(t, b) && a < b);
    };
    std::fill(allowed.begin(), allowed.end(), groups == 1);
    if (groups > 1) {
      for (int g = 0; g < groups; ++g) {  // the sum of the group's group_best largest scores
        for (Eigen::Index e = 0; e < per_group; ++e)
          in_group[static_cast<std::size_t>(e)] = scores(t, g * per_group + e);
        std::partial_sort(in_group.begin(), in_group.begin() + group_best, in_group.end(), std::greater<>());
        group_score[static_cast<std::size_t>(g)] =
            std::accumulate(in_group.begin(), in_group.begin() + group_best, S{0});
      }
      std::iota(group_order.begin(), group_order.end(), Eigen::Index{0});
      std::partial_sort(group_order.begin(), group_order.begin() + top_groups, group_order.end(),
                        [&](Eigen::Index a, Eigen::Index b) {
                          const auto sa = group_score[static_cast<std::size_t>(a)];
                          const auto sb = group_score[static_cast<std::size_t>(b)];
                          return sa > sb || (sa == sb && a < b);
                        });
      for (int i = 0; i < top_groups; ++i) {
        const Eigen::Index g = group_order[static_cast<std::size_t>(i)];
        std::fill_n(allowed.begin() + g * per_group, per_group, true);
      }
    }
    order.clear();
    for (Eigen::Index e = 0; e < experts; ++e)
      if (allowed[static_cast<std::size_t>(e)]) order.push_back(e);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), larger);
    std::sort(order.begin(), order.begin() + k);
    for (int j = 0; j < k; ++j) ids(t, j) = static_cast<S>(order[static_cast<std::size_t>(j)]);
    order.resize(static_cast<std::size_t>(experts));
  }
}

template <typename S>
void expert_weights(const Mat<S>& logits, const Mat<S>& ids, const model::Experts& experts, Mat<S>& weights,
                    const S* expert_scales) {
  weights.resize(ids.rows(), ids.cols());
  if (experts.sparsemixer) return sparsemixer_weights(logits, ids, static_cast<S>(experts.mixer_eps), weights);
  const bool sigmoid = experts.score == model::RouterScore::sigmoid;
  for (Eigen::Index t = 0; t < logits.rows(); ++t) {
    const S top = logits.row(t).maxCoeff();
    const S total = sigmoid ? S{1} : (logits.row(t).array() - top).exp().sum();
    for (Eigen::Index j = 0; j < ids.cols(); ++j) {
      const S logit = logits(t, expert_at(ids, t, j, logits.cols()));
      weights(t, j) = sigmoid ? S{1} / (S{1} + std::exp(-logit)) : std::exp(logit - top) / total;
    }
    if (experts.normalize) weights.row(t) /= weights.row(t).sum();
    if (experts.scale != 1.0) weights.row(t) *= static_cast<S>(experts.scale);
    if (expert_scales != nullptr)
      for (Eigen::Index j = 0; j < ids.cols(); ++j) weights(t, j) *= expert_scales[expert_at(ids, t, j, logits.cols())];
  }
}

template <typename S>
void mixture(const Mat<S>& x, const Mat<S>& ids, const Mat<S>& weights, const ExpertMatrices<S>& experts,
             const model::Block& block, bool weights_scale_input, Storage storage, Mat<S>& out) {
  const Eigen::Index dim = x.cols(), ffn = experts.ffn_dim, count = experts.gate.rows() / ffn;
  // The (row, slot) pairs of each expert, rows ascending.
  std::vector<std::vector<std::pair<Eigen::Index, Eigen::Index>>> users(static_cast<std::size_t>(count));
  for (Eigen::Index t = 0; t < ids.rows(); ++t)
    for (Eigen::Index j = 0; j < ids.cols(); ++j)
      users[static_cast<std::size_t>(expert_at(ids, t, j, count))].emplace_back(t, j);
  out = Mat<S>::Zero(x.rows(), dim);
  Mat<S> rows, gate, up, hidden, y;
  for (Eigen::Index e = 0; e < count; ++e) {
    const auto& used = users[static_cast<std::size_t>(e)];
    if (used.empty()) continue;
    rows.resize(std::ssize(used), dim);
    for (std::size_t i = 0; i < used.size(); ++i) {
      const auto [t, j] = used[i];
      rows.row(static_cast<Eigen::Index>(i)) = weights_scale_input ? (weights(t, j) * x.row(t)).eval() : x.row(t);
    }
    if (weights_scale_input) round_matrix(storage, rows);
    const ConstMatMap<S> g(experts.gate.data() + e * ffn * dim, ffn, dim);
    const ConstMatMap<S> u(experts.up.data() + e * ffn * dim, ffn, dim);
    const ConstMatMap<S> d(experts.down.data() + e * dim * ffn, dim, ffn);
    // A product, stored; then its bias (of expert e, from `first`) added and stored again, as
    // transformers adds gpt-oss's experts' biases to their products.
    const auto product = [&](const Mat<S>& in, const ConstMatMap<S>& w, const S* bias, Eigen::Index first,
                             Mat<S>& result) {
      matmul<S>(in, w, nullptr, result);
      round_matrix(storage, result);
      if (bias == nullptr) return;
      result.rowwise() += Eigen::Map<const Eigen::Matrix<S, 1, Eigen::Dynamic>>(bias + first, result.cols());
      round_matrix(storage, result);
    };
    product(rows, g, experts.gate_bias, e * ffn, gate);
    product(rows, u, experts.up_bias, e * ffn, up);
    gated_activation<S>(gate, up, block, hidden);
    round_matrix(storage, hidden);
    product(hidden, d, experts.down_bias, e * dim, y);
    for (std::size_t i = 0; i < used.size(); ++i) {
      const auto [t, j] = used[i];
      out.row(t) += (weights_scale_input ? S{1} : weights(t, j)) * y.row(static_cast<Eigen::Index>(i));
    }
  }
}

template <typename S>
void shared_expert(const Mat<S>& x, const SharedExpert<S>& expert, const model::Block& block, Storage storage,
                   Mat<S>& out) {
  Mat<S> gate, up, hidden;
  matmul<S>(x, expert.gate, nullptr, gate);
  matmul<S>(x, expert.up, nullptr, up);
  round_matrix(storage, gate);
  round_matrix(storage, up);
  gated_activation<S>(gate, up, block, hidden);
  round_matrix(storage, hidden);
  matmul<S>(hidden, expert.down, nullptr, out);
  if (expert.gate_inp == nullptr) return;
  round_matrix(storage, out);
  Mat<S> logit;
  matmul<S>(x, *expert.gate_inp, nullptr, logit);
  for (Eigen::Index t = 0; t < out.rows(); ++t) out.row(t) *= S{1} / (S{1} + std::exp(-logit(t, 0)));
}

#define TAPDIFF_INSTANTIATE(S)                                                                                         \
  template void expert_scores<S>(const Mat<S>&, model::RouterScore, const S*, Mat<S>&);                                \
  template void top_experts<S>(const Mat<S>&, int, int, int, int, Mat<S>&);                                            \
  template void expert_weights<S>(const Mat<S>&, const Mat<S>&, const model::Experts&, Mat<S>&, const S*);             \
  template void mixture<S>(const Mat<S>&, const Mat<S>&, const Mat<S>&, const ExpertMatrices<S>&, const model::Block&, \
                           bool, Storage, Mat<S>&);                                                                    \
  template void shared_expert<S>(const Mat<S>&, const SharedExpert<S>&, const model::Block&, Storage, Mat<S>&);
TAPDIFF_INSTANTIATE(float)
TAPDIFF_INSTANTIATE(double)
#undef TAPDIFF_INSTANTIATE

}  // namespace tapdiff::reference
