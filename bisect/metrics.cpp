#include "bisect/metrics.h"

#include <algorithm>
#include <cmath>

#include "model/errors.h"

namespace tapdiff::bisect {

void MetricsAccumulator::add(const model::HostTensor& a, const model::HostTensor& b, std::int64_t first_row) {
  TAPDIFF_ASSERT(a.rows() == b.rows() && a.cols() == b.cols(), "shapes [{}, {}] and [{}, {}]", a.rows(), a.cols(),
                 b.rows(), b.cols());
  for (std::int64_t r = 0; r < a.rows(); ++r) {
    double row_sq = 0;
    for (std::int64_t c = 0; c < a.cols(); ++c) {
      const double x = a.at(r, c);
      if (std::isfinite(x)) row_sq += x * x;
    }
    const double row_rms = a.cols() > 0 ? std::sqrt(row_sq / static_cast<double>(a.cols())) : 0.0;
    for (std::int64_t c = 0; c < a.cols(); ++c) {
      const double x = a.at(r, c), y = b.at(r, c);
      if (!std::isfinite(x) || !std::isfinite(y)) {
        // The same NaN/Inf pattern in both is agreement; anything else is a mismatch.
        const bool same = (std::isnan(x) && std::isnan(y)) || (std::isinf(x) && x == y);
        if (!same) ++nonfinite_;
        continue;
      }
      const double d = std::abs(x - y);
      ++count_, sum_sq_err_ += d * d, sum_sq_a_ += x * x, sum_sq_b_ += y * y, dot_ += x * y;
      const double floor = std::max(std::abs(x), row_rms);
      if (floor > 0) max_rel_ = std::max(max_rel_, d / floor);
      if (d > max_abs_ || worst_row_ < 0) {
        max_abs_ = d, worst_row_ = first_row + r, worst_col_ = c, worst_a_ = x, worst_b_ = y;
      }
    }
  }
}

Metrics MetricsAccumulator::result() const {
  Metrics m;
  m.count = count_, m.nonfinite = nonfinite_, m.max_abs = max_abs_, m.max_rel = max_rel_;
  m.rms_err = count_ > 0 ? std::sqrt(sum_sq_err_ / static_cast<double>(count_)) : 0.0;
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
