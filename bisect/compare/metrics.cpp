#include "bisect/compare/metrics.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <type_traits>

#include "model/errors.h"

namespace tapdiff::bisect {

namespace {

template <typename T>
std::span<const T> values(const model::HostTensor& t) {
  if constexpr (std::is_same_v<T, float>)
    return t.f32();
  else
    return t.f64();
}

}  // namespace

template <typename TA, typename TB>
void MetricsAccumulator::add_rows(const model::HostTensor& a, const model::HostTensor& b, std::int64_t first_row,
                                  std::size_t begin, std::size_t end) {
  const std::span<const TA> va = values<TA>(a);
  const std::span<const TB> vb = values<TB>(b);
  const auto cols = static_cast<std::size_t>(a.cols());
  for (std::size_t r = begin; r < end; ++r) {
    const auto row = first_row + static_cast<std::int64_t>(r);
    const TA* ra = va.data() + r * cols;
    const TB* rb = vb.data() + r * cols;
    if (!add_finite_row(ra, rb, cols, row)) add_row(ra, rb, cols, row);  // a NaN or Inf: the careful pass
  }
}

// The pass for rows where every value is finite, in the order of add_row, so the sums are the
// same: no finiteness test per element, and a division only where an element may hold the
// largest relative error (d / floor > max_rel_ implies d > max_rel_ floor (1 - 2^-50), whatever
// the roundings of the products). false, and nothing added, when the row holds a NaN or Inf.
template <typename TA, typename TB>
bool MetricsAccumulator::add_finite_row(const TA* ra, const TB* rb, std::size_t cols, std::int64_t row) {
  double row_sq = 0;
  for (std::size_t c = 0; c < cols; ++c) {
    const double x = static_cast<double>(ra[c]);
    row_sq += x * x;
  }
  if (!std::isfinite(row_sq)) return false;
  const double row_rms = cols > 0 ? std::sqrt(row_sq / static_cast<double>(cols)) : 0.0;
  constexpr double kSlack = 1.0 - 0x1p-50;
  // The members in locals (registers), the same additions in the same order.
  double err = sum_sq_err_, sq_a = sum_sq_a_, sq_b = sum_sq_b_, dot = dot_, max_rel = max_rel_, max_abs = max_abs_;
  const bool had_worst = worst_row_ >= 0;
  std::int64_t worst = had_worst ? 0 : -1;  // -1: no worst yet, so column 0 takes it; else this row's
  double diffs = 0;                         // NaN or Inf after the loop when b holds one (a's are in row_sq)
  for (std::size_t c = 0; c < cols; ++c) {
    const double x = static_cast<double>(ra[c]), y = static_cast<double>(rb[c]);
    const double d = std::abs(x - y);
    err += d * d, sq_a += x * x, sq_b += y * y, dot += x * y;
    diffs += d;
    const double floor = std::max(std::abs(x), row_rms);
    if (floor > 0 && d > max_rel * floor * kSlack) max_rel = std::max(max_rel, d / floor);
    if (d > max_abs || worst < 0) max_abs = d, worst = static_cast<std::int64_t>(c);
  }
  if (!std::isfinite(diffs)) return false;
  sum_sq_err_ = err, sum_sq_a_ = sq_a, sum_sq_b_ = sq_b, dot_ = dot, max_rel_ = max_rel;
  if (had_worst ? max_abs > max_abs_ : worst >= 0) {  // an element of this row is the new worst
    const auto c = static_cast<std::size_t>(worst);
    max_abs_ = max_abs, worst_row_ = row, worst_col_ = worst;
    worst_a_ = static_cast<double>(ra[c]), worst_b_ = static_cast<double>(rb[c]);
  }
  count_ += static_cast<std::int64_t>(cols);
  return true;
}

// Any row: values that are NaN or Inf in either tensor are counted apart (nonfinite_ when the two
// disagree), the others summed.
template <typename TA, typename TB>
void MetricsAccumulator::add_row(const TA* ra, const TB* rb, std::size_t cols, std::int64_t row) {
  double row_sq = 0;
  for (std::size_t c = 0; c < cols; ++c) {
    const double x = static_cast<double>(ra[c]);
    if (std::isfinite(x)) row_sq += x * x;
  }
  const double row_rms = cols > 0 ? std::sqrt(row_sq / static_cast<double>(cols)) : 0.0;
  for (std::size_t c = 0; c < cols; ++c) {
    const double x = static_cast<double>(ra[c]), y = static_cast<double>(rb[c]);
    if (!std::isfinite(x) || !std::isfinite(y)) {
      // The same NaN/Inf in both is alike but no number was compared; anything else is a mismatch.
      const bool same = (std::isnan(x) && std::isnan(y)) || (std::isinf(x) && x == y);
      ++(same ? nonfinite_both_ : nonfinite_);
      continue;
    }
    const double d = std::abs(x - y);
    ++count_, sum_sq_err_ += d * d, sum_sq_a_ += x * x, sum_sq_b_ += y * y, dot_ += x * y;
    const double floor = std::max(std::abs(x), row_rms);
    if (floor > 0) max_rel_ = std::max(max_rel_, d / floor);
    if (d > max_abs_ || worst_row_ < 0) {
      max_abs_ = d, worst_row_ = row;
      worst_col_ = static_cast<std::int64_t>(c), worst_a_ = x, worst_b_ = y;
    }
  }
}

void MetricsAccumulator::add(const model::HostTensor& a, const model::HostTensor& b, std::int64_t first_row) {
  add(a, b, first_row, 0, a.rows());
}

void MetricsAccumulator::add(const model::HostTensor& a, const model::HostTensor& b, std::int64_t first_row,
                             std::int64_t begin, std::int64_t end) {
  TAPDIFF_ASSERT(a.rows() == b.rows() && a.cols() == b.cols(), "shapes [{}, {}] and [{}, {}]", a.rows(), a.cols(),
                 b.rows(), b.cols());
  TAPDIFF_ASSERT(0 <= begin && begin <= end && end <= a.rows(), "rows [{}, {}) of {}", begin, end, a.rows());
  using model::Scalar;
  const auto r0 = static_cast<std::size_t>(begin), r1 = static_cast<std::size_t>(end);
  if (a.scalar() == Scalar::f32 && b.scalar() == Scalar::f32) return add_rows<float, float>(a, b, first_row, r0, r1);
  if (a.scalar() == Scalar::f32) return add_rows<float, double>(a, b, first_row, r0, r1);
  if (b.scalar() == Scalar::f32) return add_rows<double, float>(a, b, first_row, r0, r1);
  add_rows<double, double>(a, b, first_row, r0, r1);
}

void MetricsAccumulator::merge(const MetricsAccumulator& o) {
  count_ += o.count_, nonfinite_ += o.nonfinite_, nonfinite_both_ += o.nonfinite_both_;
  sum_sq_err_ += o.sum_sq_err_, sum_sq_a_ += o.sum_sq_a_, sum_sq_b_ += o.sum_sq_b_, dot_ += o.dot_;
  max_rel_ = std::max(max_rel_, o.max_rel_);
  if (o.worst_row_ >= 0 && (o.max_abs_ > max_abs_ || worst_row_ < 0)) {  // the first largest, as add() keeps
    max_abs_ = o.max_abs_, worst_row_ = o.worst_row_, worst_col_ = o.worst_col_;
    worst_a_ = o.worst_a_, worst_b_ = o.worst_b_;
  }
}

Metrics MetricsAccumulator::result() const {
  Metrics m;
  m.count = count_, m.nonfinite = nonfinite_, m.nonfinite_both = nonfinite_both_, m.max_abs = max_abs_,
  m.max_rel = max_rel_;
  m.rms_err = count_ > 0 ? std::sqrt(sum_sq_err_ / static_cast<double>(count_)) : 0.0;
  m.rms_a = count_ > 0 ? std::sqrt(sum_sq_a_ / static_cast<double>(count_)) : 0.0;
  m.nmse = sum_sq_a_ > 0 ? sum_sq_err_ / sum_sq_a_ : (sum_sq_err_ > 0 ? INFINITY : 0.0);
  const double norms = std::sqrt(sum_sq_a_) * std::sqrt(sum_sq_b_);
  m.cosine = norms > 0 ? dot_ / norms : (sum_sq_err_ == 0 ? 1.0 : 0.0);
  m.worst_row = worst_row_, m.worst_col = worst_col_, m.worst_a = worst_a_, m.worst_b = worst_b_;
  return m;
}

Metrics compare(const model::HostTensor& a, const model::HostTensor& b) {
  MetricsAccumulator acc;
  acc.add(a, b, 0);
  return acc.result();
}

}  // namespace tapdiff::bisect
