#include "bisect/compare/tensor_stats.h"

#include <cmath>
#include <span>

namespace tapdiff::bisect {
namespace {

template <typename T>
void accumulate(std::span<const T> values, std::int64_t cols, std::int64_t first_row, std::int64_t& finite,
                std::int64_t& nan, std::int64_t& inf, double& sum, double& sum_sq, double& max_abs,
                std::int64_t& max_row, std::int64_t& max_col) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double x = static_cast<double>(values[i]);
    if (std::isnan(x)) {
      ++nan;
    } else if (std::isinf(x)) {
      ++inf;
    } else {
      ++finite, sum += x, sum_sq += x * x;
      if (std::abs(x) > max_abs || max_row < 0) {
        max_abs = std::abs(x);
        max_row = first_row + static_cast<std::int64_t>(i) / cols;
        max_col = static_cast<std::int64_t>(i) % cols;
      }
    }
  }
}

}  // namespace

void TensorStats::add(const model::HostTensor& block, std::int64_t first_row) {
  if (block.size() == 0) return;
  if (block.scalar() == model::Scalar::f32)
    accumulate(block.f32(), block.cols(), first_row, finite_, nan_, inf_, sum_, sum_sq_, max_abs_, max_row_, max_col_);
  else
    accumulate(block.f64(), block.cols(), first_row, finite_, nan_, inf_, sum_, sum_sq_, max_abs_, max_row_, max_col_);
}

double TensorStats::rms() const { return finite_ > 0 ? std::sqrt(sum_sq_ / static_cast<double>(finite_)) : 0.0; }
double TensorStats::mean() const { return finite_ > 0 ? sum_ / static_cast<double>(finite_) : 0.0; }

}  // namespace tapdiff::bisect
