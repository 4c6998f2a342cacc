#include "reference/indexer_kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

namespace tapdiff::reference {
namespace {

// Row t's positions [0, first_pos + t] best first (on equal scores the earlier first), the first
// min(top_k + 1, count) of them.
template <typename S>
std::vector<Eigen::Index> best_positions(const Mat<S>& scores, Eigen::Index t, int first_pos, int top_k) {
  std::vector<Eigen::Index> order(static_cast<std::size_t>(first_pos + t + 1));
  std::iota(order.begin(), order.end(), Eigen::Index{0});
  const auto n = static_cast<std::ptrdiff_t>(std::min<std::size_t>(order.size(), static_cast<std::size_t>(top_k) + 1));
  std::partial_sort(order.begin(), order.begin() + n, order.end(), [&](Eigen::Index a, Eigen::Index b) {
    const S x = scores(t, a), y = scores(t, b);
    return x > y || (x == y && a < b);
  });
  order.resize(static_cast<std::size_t>(n));
  return order;
}

}  // namespace

template <typename S>
Mat<S> index_scores(const Mat<S>& q, const Mat<S>& keys, const Mat<S>& w, int first_pos,
                    const model::SparseIndexer& indexer) {
  const Eigen::Index T = q.rows(), P = first_pos + T, D = indexer.head_dim;
  const auto key_scale = static_cast<S>(1 / std::sqrt(static_cast<double>(D)));
  const auto head_scale = static_cast<S>(1 / std::sqrt(static_cast<double>(indexer.heads)));
  const auto k = keys.topRows(P);
  Mat<S> total = Mat<S>::Zero(T, P);
  for (int h = 0; h < indexer.heads; ++h) {
    const Mat<S> s = ((q.middleCols(static_cast<Eigen::Index>(h) * D, D) * k.transpose()) * key_scale).cwiseMax(S(0));
    total += (w.col(h) * head_scale).asDiagonal() * s;
  }
  for (Eigen::Index t = 0; t < T; ++t)
    total.row(t).tail(P - first_pos - t - 1).setConstant(-std::numeric_limits<S>::infinity());
  return total;
}

template <typename S>
void kept_positions(const Mat<S>& scores, int first_pos, int top_k, Mat<S>& out) {
  out.setConstant(scores.rows(), top_k, S(-1));
  for (Eigen::Index t = 0; t < scores.rows(); ++t) {
    std::vector<Eigen::Index> best = best_positions(scores, t, first_pos, top_k);
    best.resize(std::min<std::size_t>(best.size(), static_cast<std::size_t>(top_k)));
    std::sort(best.begin(), best.end());
    for (std::size_t j = 0; j < best.size(); ++j) out(t, static_cast<Eigen::Index>(j)) = static_cast<S>(best[j]);
  }
}

template <typename S>
void kept_scores(const Mat<S>& scores, int first_pos, int top_k, Mat<S>& out) {
  out.setZero(scores.rows(), top_k + 1);
  for (Eigen::Index t = 0; t < scores.rows(); ++t) {
    const std::vector<Eigen::Index> best = best_positions(scores, t, first_pos, top_k);
    for (std::size_t j = 0; j < best.size(); ++j) out(t, static_cast<Eigen::Index>(j)) = scores(t, best[j]);
  }
}

#define TAPDIFF_INSTANTIATE(S)                                                                                    \
  template Mat<S> index_scores<S>(const Mat<S>&, const Mat<S>&, const Mat<S>&, int, const model::SparseIndexer&); \
  template void kept_positions<S>(const Mat<S>&, int, int, Mat<S>&);                                              \
  template void kept_scores<S>(const Mat<S>&, int, int, Mat<S>&);
TAPDIFF_INSTANTIATE(float)
TAPDIFF_INSTANTIATE(double)
#undef TAPDIFF_INSTANTIATE

}  // namespace tapdiff::reference
