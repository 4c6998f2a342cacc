#include "reference/kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <span>
#include <type_traits>

#include "model/errors.h"
#include "reference/rounding.h"

namespace tapdiff::reference {
namespace {

// Below this many multiply-adds a parallel region costs more than it saves.
constexpr double kParallelWork = 1 << 18;

template <typename S>
void round_f16_values(Mat<S>& m) {
  if constexpr (std::is_same_v<S, float>)
    round_to_f16(std::span<float>(m.data(), static_cast<std::size_t>(m.size())));
  else
    TAPDIFF_ASSERT(false, "f16 operands are rounded in f32 arithmetic only");
}

}  // namespace

template <typename S>
void layer_input(const Mat<S>& embedding, std::span<const std::int32_t> tokens, const ConstMatMap<S>& table,
                 int first_col, const ConstMatMap<S>& projection, const Eigen::Map<const Vec<S>>& norm_w, double eps,
                 double offset, const model::LayerInputScales& scales, Mat<S>& out) {
  Mat<S> projected;
  matmul<S>(embedding, projection, nullptr, projected);
  projected *= static_cast<S>(scales.projection);
  rms_norm<S>(projected, norm_w, eps, offset, out);
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    if (tokens[t] < 0 || tokens[t] >= table.rows())
      throw UsageError(
          fmt::format("token id {} is outside the per-layer inputs' table of {} tokens", tokens[t], table.rows()));
    out.row(static_cast<Eigen::Index>(t)) +=
        table.row(tokens[t]).segment(first_col, out.cols()) * static_cast<S>(scales.table);
  }
  out *= static_cast<S>(scales.sum);
}

template <typename S>
void embed(const ConstMatMap<S>& table, std::span<const std::int32_t> tokens, double scale, Mat<S>& out) {
  out.resize(static_cast<Eigen::Index>(tokens.size()), table.cols());
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    if (tokens[t] < 0 || tokens[t] >= table.rows())
      throw UsageError(
          fmt::format("token id {} is outside the model's vocabulary of {} tokens", tokens[t], table.rows()));
    out.row(static_cast<Eigen::Index>(t)) = table.row(tokens[t]);
  }
  if (scale != 1.0) out *= static_cast<S>(scale);
}

template <typename S>
void add_positions(const ConstMatMap<S>& positions, std::int64_t first, Mat<S>& out) {
  out += positions.middleRows(first, out.rows());
}

template <typename S>
void rms_norm(const Mat<S>& x, const Eigen::Map<const Vec<S>>& w, double eps, double offset, Mat<S>& out) {
  out.resize(x.rows(), x.cols());
  const Vec<S> gain = w.array() + static_cast<S>(offset);
  for (Eigen::Index t = 0; t < x.rows(); ++t) {
    const S mean_square = x.row(t).squaredNorm() / static_cast<S>(x.cols());
    const S scale = S(1) / std::sqrt(mean_square + static_cast<S>(eps));
    out.row(t) = (x.row(t) * scale).cwiseProduct(gain);
  }
}

template <typename S>
void layer_norm(const Mat<S>& x, const Eigen::Map<const Vec<S>>& w, const S* bias, double eps, double offset,
                Mat<S>& out) {
  out.resize(x.rows(), x.cols());
  const Vec<S> gain = w.array() + static_cast<S>(offset);
  const auto n = static_cast<S>(x.cols());
  for (Eigen::Index t = 0; t < x.rows(); ++t) {
    const Vec<S> centered = x.row(t).array() - x.row(t).sum() / n;
    const S scale = S(1) / std::sqrt(centered.squaredNorm() / n + static_cast<S>(eps));
    out.row(t) = (centered * scale).cwiseProduct(gain);
  }
  if (bias != nullptr) out.rowwise() += Eigen::Map<const Vec<S>>(bias, out.cols());
}

template <typename S>
void norm(const Mat<S>& x, model::NormKind kind, const Eigen::Map<const Vec<S>>& w, const S* bias, double eps,
          double offset, Mat<S>& out) {
  if (kind == model::NormKind::layer) return layer_norm<S>(x, w, bias, eps, offset, out);
  rms_norm<S>(x, w, eps, offset, out);
}

template <typename S>
void norm_groups(const Mat<S>& x, model::NormKind kind, const Eigen::Map<const Vec<S>>& w, double eps, double offset,
                 Mat<S>& out) {
  const Eigen::Index groups = x.cols() / w.size();
  Mat<S> normed;
  norm<S>(Eigen::Map<const Mat<S>>(x.data(), x.rows() * groups, w.size()), kind, w, nullptr, eps, offset, normed);
  out = Eigen::Map<const Mat<S>>(normed.data(), x.rows(), x.cols());
}

template <typename S>
void matmul(const Mat<S>& x, const ConstMatMap<S>& w, const S* bias, Mat<S>& out) {
  out.resize(x.rows(), w.rows());
  // The weight rows are split into blocks of a fixed size across the OpenMP threads, each block a
  // serial Eigen product: every output is computed the same way whatever the thread count, and
  // Eigen's own parallel GEMM, which can give wrong rows (GCC 12 at -O1, two threads), is
  // never used (use_threads keeps Eigen to one thread).
  constexpr Eigen::Index kSmallT = 4;
  const Eigen::Index block = x.rows() <= kSmallT ? 64 : 256;
  const Eigen::Index blocks = (w.rows() + block - 1) / block;
  const bool parallel = static_cast<double>(w.size()) * static_cast<double>(x.rows()) > kParallelWork;
#pragma omp parallel for schedule(static) if (parallel)
  for (Eigen::Index b = 0; b < blocks; ++b) {
    const Eigen::Index first = b * block;
    const Eigen::Index n = std::min(block, w.rows() - first);
    out.middleCols(first, n).noalias() = x * w.middleRows(first, n).transpose();
  }
  if (bias != nullptr) out.rowwise() += Eigen::Map<const Vec<S>>(bias, out.cols());
}

void matmul_f16_sums(const Mat<float>& x, const ConstMatMap<float>& w, const float* bias, int depth, Mat<float>& out) {
  constexpr Eigen::Index kBlock = 64;
  constexpr float kLargestF16 = 65504.0f;
  out.setZero(x.rows(), w.rows());
  const Eigen::Index blocks = (w.rows() + kBlock - 1) / kBlock;
  const bool parallel = static_cast<double>(w.size()) * static_cast<double>(x.rows()) > kParallelWork;
#pragma omp parallel for schedule(static) if (parallel)
  for (Eigen::Index b = 0; b < blocks; ++b) {
    const Eigen::Index first = b * kBlock;
    const Eigen::Index n = std::min(kBlock, w.rows() - first);
    Mat<float> sum = Mat<float>::Zero(x.rows(), n);
    for (Eigen::Index k = 0; k < x.cols(); k += depth) {
      const Eigen::Index run = std::min<Eigen::Index>(depth, x.cols() - k);
      sum.noalias() += x.middleCols(k, run) * w.block(first, k, n, run).transpose();
      round_to_f16(std::span<float>(sum.data(), static_cast<std::size_t>(sum.size())));
    }
    out.middleCols(first, n) = sum.cwiseMax(-kLargestF16).cwiseMin(kLargestF16);
  }
  if (bias != nullptr) out.rowwise() += Eigen::Map<const Vec<float>>(bias, out.cols());
}

template <typename S>
void rope(const Mat<S>& x, int head_dim, int first_pos, const model::RopeFrequencies& f, model::RopeStyle style,
          Mat<S>& out, int first_channel) {
  out = x;
  const auto half = static_cast<int>(f.inv_freq.size());  // rotated pairs: rotary_dim / 2
  const Eigen::Index heads = x.cols() / head_dim;
  std::vector<double> cos_sin(2 * static_cast<std::size_t>(half));
  for (Eigen::Index t = 0; t < x.rows(); ++t) {
    model::rope_cos_sin(f, first_pos + t, cos_sin);
    for (Eigen::Index h = 0; h < heads; ++h) {
      S* row = out.row(t).data() + h * head_dim + first_channel;
      for (int i = 0; i < half; ++i) {
        const auto [a, b] = model::rope_pair(style, i, half);
        const auto c = static_cast<S>(cos_sin[2 * static_cast<std::size_t>(i)]);
        const auto s = static_cast<S>(cos_sin[2 * static_cast<std::size_t>(i) + 1]);
        const S x0 = row[a], x1 = row[b];
        row[a] = x0 * c - x1 * s;
        row[b] = x0 * s + x1 * c;
      }
    }
  }
}

template <typename S>
void scale_softcap(Mat<S>& x, double scale, double cap) {
  if (scale != 1.0) x *= static_cast<S>(scale);
  if (cap > 0) x = ((x.array() / static_cast<S>(cap)).tanh() * static_cast<S>(cap)).matrix();
}

// A row's live scores (positions lo, ...) at -inf where `kept` does not hold their position.
template <typename S, typename Row, typename Live>
void keep_only(const Row& kept, Eigen::Index lo, Live&& live) {
  std::vector<bool> seen(static_cast<std::size_t>(live.size()), false);
  for (Eigen::Index j = 0; j < kept.size(); ++j) {
    const Eigen::Index p = static_cast<Eigen::Index>(kept(j)) - lo;
    if (kept(j) >= 0 && p >= 0 && p < live.size()) seen[static_cast<std::size_t>(p)] = true;
  }
  for (Eigen::Index p = 0; p < live.size(); ++p)
    if (!seen[static_cast<std::size_t>(p)]) live(p) = -std::numeric_limits<S>::infinity();
}

template <typename S>
void attention(const Mat<S>& q, const Mat<S>& k_cache, const Mat<S>& v_cache, int first_pos, int n_heads,
               int n_kv_heads, int head_dim, int v_dim, model::KeySpan span, double score_scale, double softcap,
               const AttentionExtras<S>& extras, AttentionRounding rounding, Mat<S>& out) {
  const Eigen::Index T = q.rows();
  const Eigen::Index P = first_pos + T;
  const int group = n_heads / n_kv_heads;
  const auto scale = static_cast<S>(score_scale);
  out.resize(T, static_cast<Eigen::Index>(n_heads) * v_dim);
  const bool parallel = static_cast<double>(T) * static_cast<double>(P) * n_heads * head_dim > kParallelWork;
#pragma omp parallel for schedule(dynamic) if (parallel)
  for (int h = 0; h < n_heads; ++h) {
    const Eigen::Index qc = static_cast<Eigen::Index>(h) * head_dim;
    const Eigen::Index kc = static_cast<Eigen::Index>(h / group) * head_dim;
    Mat<S> q_head = q.middleCols(qc, head_dim);
    if (rounding.f16_operands) round_f16_values(q_head);
    Mat<S> scores = (q_head * k_cache.block(0, kc, P, head_dim).transpose()) * scale;  // [T, P]
    if (softcap > 0) scale_softcap<S>(scores, 1.0, softcap);
    for (Eigen::Index t = 0; t < T; ++t) {
      const Eigen::Index pos = first_pos + t;
      const auto lo = static_cast<Eigen::Index>(span.first(pos));
      auto row = scores.row(t);
      row.head(lo).setConstant(S(0));
      row.tail(P - pos - 1).setConstant(S(0));
      auto live = row.segment(lo, pos - lo + 1);
      if (extras.kept != nullptr) keep_only<S>(extras.kept->row(t), lo, live);
      // A sink is one more logit in the max and the denominator.
      const S* sinks = extras.sinks;
      const S top = sinks != nullptr ? std::max(live.maxCoeff(), sinks[h]) : live.maxCoeff();
      live = (live.array() - top).exp().matrix();
      live /= live.sum() + (sinks != nullptr ? std::exp(sinks[h] - top) : S(0));
    }
    if (rounding.f16_operands) round_f16_values(scores);
    const Eigen::Index oc = static_cast<Eigen::Index>(h) * v_dim, vc = static_cast<Eigen::Index>(h / group) * v_dim;
    if constexpr (std::is_same_v<S, float>) {
      if (rounding.f16_value_sums) {
        const Mat<float> v_t = v_cache.block(0, vc, P, v_dim).transpose();
        Mat<float> head;
        matmul_f16_sums(scores, ConstMatMap<float>(v_t.data(), v_dim, P), nullptr, 1, head);
        out.middleCols(oc, v_dim) = head;
        continue;
      }
    }
    out.middleCols(oc, v_dim).noalias() = scores * v_cache.block(0, vc, P, v_dim);
  }
}

template <typename S>
void activation(const Mat<S>& x, model::Activation act, Mat<S>& out, const model::Xielu& xielu) {
  const auto g = x.array();
  switch (act) {
    case model::Activation::silu: out = (g / (S(1) + (-g).exp())).matrix(); return;
    case model::Activation::gelu: {
      const S inv_sqrt2 = static_cast<S>(1.0 / std::sqrt(2.0));
      out = (g * S(0.5) * (S(1) + (g * inv_sqrt2).unaryExpr([](S v) { return std::erf(v); }))).matrix();
      return;
    }
    case model::Activation::gelu_tanh: {
      const S k = static_cast<S>(std::sqrt(2.0 / 3.14159265358979323846));
      out = (g * S(0.5) * (S(1) + (k * (g + S(0.044715) * g.cube())).tanh())).matrix();
      return;
    }
    case model::Activation::relu: out = g.max(S(0)).matrix(); return;
    case model::Activation::relu2: out = g.max(S(0)).square().matrix(); return;
    case model::Activation::swiglu_oai:
      throw UsageError("the clamped SwiGLU (swiglu_oai) is a gated activation: it has no plain form");
    case model::Activation::xielu: {
      const auto ap = static_cast<S>(xielu.alpha_p), an = static_cast<S>(xielu.alpha_n);
      const auto beta = static_cast<S>(xielu.beta), eps = static_cast<S>(xielu.eps);
      out = g.unaryExpr([=](S v) {
               return v > 0 ? ap * v * v + beta * v : (std::expm1(std::min(v, eps)) - v) * an + beta * v;
             }).matrix();
      return;
    }
  }
}

template <typename S>
void gated_activation(const Mat<S>& gate, const Mat<S>& up, const model::Block& block, Mat<S>& out) {
  if (block.activation == model::Activation::swiglu_oai) {
    const auto alpha = static_cast<S>(block.swiglu.alpha), limit = static_cast<S>(block.swiglu.limit);
    const auto g = gate.array().min(limit);
    out = (g / (S(1) + (-alpha * g).exp()) * (up.array().max(-limit).min(limit) + S(1))).matrix();
    return;
  }
  activation<S>(gate, block.activation, out);
  out.array() *= up.array();
}

#define TAPDIFF_INSTANTIATE(S)                                                                                     \
  template void embed<S>(const ConstMatMap<S>&, std::span<const std::int32_t>, double, Mat<S>&);                   \
  template void add_positions<S>(const ConstMatMap<S>&, std::int64_t, Mat<S>&);                                    \
  template void layer_input<S>(const Mat<S>&, std::span<const std::int32_t>, const ConstMatMap<S>&, int,           \
                               const ConstMatMap<S>&, const Eigen::Map<const Vec<S>>&, double, double,             \
                               const model::LayerInputScales&, Mat<S>&);                                           \
  template void rms_norm<S>(const Mat<S>&, const Eigen::Map<const Vec<S>>&, double, double, Mat<S>&);              \
  template void layer_norm<S>(const Mat<S>&, const Eigen::Map<const Vec<S>>&, const S*, double, double, Mat<S>&);  \
  template void norm<S>(const Mat<S>&, model::NormKind, const Eigen::Map<const Vec<S>>&, const S*, double, double, \
                        Mat<S>&);                                                                                  \
  template void norm_groups<S>(const Mat<S>&, model::NormKind, const Eigen::Map<const Vec<S>>&, double, double,    \
                               Mat<S>&);                                                                           \
  template void matmul<S>(const Mat<S>&, const ConstMatMap<S>&, const S*, Mat<S>&);                                \
  template void rope<S>(const Mat<S>&, int, int, const model::RopeFrequencies&, model::RopeStyle, Mat<S>&, int);   \
  template void attention<S>(const Mat<S>&, const Mat<S>&, const Mat<S>&, int, int, int, int, int, model::KeySpan, \
                             double, double, const AttentionExtras<S>&, AttentionRounding, Mat<S>&);               \
  template void activation<S>(const Mat<S>&, model::Activation, Mat<S>&, const model::Xielu&);                     \
  template void gated_activation<S>(const Mat<S>&, const Mat<S>&, const model::Block&, Mat<S>&);                   \
  template void scale_softcap<S>(Mat<S>&, double, double);
TAPDIFF_INSTANTIATE(float)
TAPDIFF_INSTANTIATE(double)
#undef TAPDIFF_INSTANTIATE

}  // namespace tapdiff::reference
