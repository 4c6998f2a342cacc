#include <gtest/gtest.h>

#include <cmath>

#include "bisect/compare/metrics.h"
#include "bisect/compare/tensor_stats.h"
#include "bisect/compare/tolerances.h"

namespace tapdiff::bisect {
namespace {

model::HostTensor tensor(std::int64_t rows, std::int64_t cols, std::initializer_list<float> values) {
  model::HostTensor t(model::Scalar::f32, rows, cols);
  std::copy(values.begin(), values.end(), t.f32().begin());
  return t;
}

TEST(Metrics, IdenticalTensorsHaveZeroErrorAndCosineOne) {
  const auto a = tensor(2, 3, {1, -2, 3, 4, 5, -6});
  const Metrics m = compare(a, a);
  EXPECT_EQ(m.count, 6);
  EXPECT_EQ(m.max_abs, 0.0);
  EXPECT_EQ(m.nmse, 0.0);
  EXPECT_DOUBLE_EQ(m.cosine, 1.0);
}

TEST(Metrics, OneChangedElementIsLocatedAndMeasured) {
  const auto a = tensor(2, 3, {1, -2, 3, 4, 5, -6});
  const auto b = tensor(2, 3, {1, -2, 3, 4, 5.5f, -6});
  const Metrics m = compare(a, b);
  EXPECT_EQ(m.worst_row, 1);
  EXPECT_EQ(m.worst_col, 1);
  EXPECT_DOUBLE_EQ(m.max_abs, 0.5);
  EXPECT_DOUBLE_EQ(m.worst_a, 5.0);
  EXPECT_DOUBLE_EQ(m.worst_b, 5.5);
  EXPECT_DOUBLE_EQ(m.nmse, 0.25 / 91.0);
  EXPECT_DOUBLE_EQ(m.max_rel, 0.5 / std::sqrt(77.0 / 3));  // the row rms (5.07) exceeds |a| = 5
  EXPECT_DOUBLE_EQ(m.rms_err, std::sqrt(0.25 / 6));
}

TEST(Metrics, RelativeErrorNearZeroUsesTheRowRmsFloor) {
  const auto a = tensor(1, 4, {0, 3, 4, 0});  // row rms = sqrt(25 / 4) = 2.5
  const auto b = tensor(1, 4, {0.25f, 3, 4, 0});
  EXPECT_DOUBLE_EQ(compare(a, b).max_rel, 0.25 / 2.5);
}

TEST(Metrics, NonFiniteValuesAreCountedNotCompared) {
  const auto a = tensor(1, 4, {1, NAN, INFINITY, 2});
  const auto b = tensor(1, 4, {1, NAN, 7, 2});
  const Metrics m = compare(a, b);
  EXPECT_EQ(m.count, 2);
  EXPECT_EQ(m.nonfinite, 1);       // inf vs 7 disagrees
  EXPECT_EQ(m.nonfinite_both, 1);  // the matching NaNs are alike, but no number was compared
  EXPECT_EQ(m.max_abs, 0.0);
  // Either fails the bounds, saying which (NaN at the same places in both passed in silence before).
  const std::vector<bisect::Violation> v =
      bisect::check(bisect::Bound{}, compare(tensor(1, 2, {NAN, 1}), tensor(1, 2, {NAN, 1})));
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].text(), "1 element NaN/Inf in both runs alike, not compared");
}

TEST(Metrics, BlocksAccumulateToTheWholeTensorResult) {
  const auto a = tensor(3, 2, {1, 2, 3, 4, 5, 6});
  const auto b = tensor(3, 2, {1, 2.5f, 3, 4, 5, 5});
  MetricsAccumulator acc;
  acc.add(a.slice_rows(0, 1), b.slice_rows(0, 1), 0);
  acc.add(a.slice_rows(1, 2), b.slice_rows(1, 2), 1);
  const Metrics blocks = acc.result(), whole = compare(a, b);
  EXPECT_EQ(blocks.worst_row, 2);
  EXPECT_DOUBLE_EQ(blocks.nmse, whole.nmse);
  EXPECT_DOUBLE_EQ(blocks.max_rel, whole.max_rel);
}

// Rows with a NaN or Inf take the careful pass, the others the fast one; both must give, bit for
// bit, the sums of the plain definition taken in row-major order, the first largest |a - b| and
// the largest |a - b| / max(|a|, row rms).
TEST(Metrics, FastAndCarefulRowsGiveThePlainDefinitionExactly) {
  const std::int64_t rows = 5, cols = 37;
  model::HostTensor a(model::Scalar::f32, rows, cols), b(model::Scalar::f32, rows, cols);
  std::uint32_t state = 12345;
  auto next = [&state] {
    return static_cast<float>((state = state * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
  };
  for (std::int64_t i = 0; i < rows * cols; ++i) {
    const float x = 4 * next();
    a.f32()[static_cast<std::size_t>(i)] = x;
    b.f32()[static_cast<std::size_t>(i)] = x + 0.01f * next();
  }
  b.f32()[2 * cols + 5] = NAN;       // row 2: a mismatch, counted apart
  a.f32()[3 * cols + 9] = INFINITY;  // row 3: an agreement, skipped
  b.f32()[3 * cols + 9] = INFINITY;
  const Metrics m = compare(a, b);

  std::int64_t count = 0, worst = -1;
  double err = 0, sa = 0, sb = 0, dot = 0, max_abs = 0, max_rel = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    double row_sq = 0;
    for (std::int64_t c = 0; c < cols; ++c)
      if (std::isfinite(a.at(r, c))) row_sq += a.at(r, c) * a.at(r, c);
    const double rms = std::sqrt(row_sq / static_cast<double>(cols));
    for (std::int64_t c = 0; c < cols; ++c) {
      const double x = a.at(r, c), y = b.at(r, c), d = std::abs(x - y);
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      ++count, err += d * d, sa += x * x, sb += y * y, dot += x * y;
      max_rel = std::max(max_rel, d / std::max(std::abs(x), rms));
      if (worst < 0 || d > max_abs) max_abs = d, worst = r * cols + c;
    }
  }
  EXPECT_EQ(m.count, count);
  EXPECT_EQ(m.nonfinite, 1);
  EXPECT_EQ(m.nmse, err / sa);
  EXPECT_EQ(m.cosine, dot / (std::sqrt(sa) * std::sqrt(sb)));
  EXPECT_EQ(m.max_abs, max_abs);
  EXPECT_EQ(m.max_rel, max_rel);
  EXPECT_EQ(m.worst_row * cols + m.worst_col, worst);
}

TEST(TensorStats, RmsMaxAndNonFiniteCounts) {
  TensorStats s;
  s.add(tensor(2, 2, {3, -4, NAN, INFINITY}), 0);
  s.add(tensor(1, 2, {0, -5}), 2);
  EXPECT_EQ(s.finite(), 4);
  EXPECT_EQ(s.nan(), 1);
  EXPECT_EQ(s.inf(), 1);
  EXPECT_DOUBLE_EQ(s.rms(), std::sqrt((9.0 + 16 + 0 + 25) / 4));
  EXPECT_DOUBLE_EQ(s.max_abs(), 5.0);
  EXPECT_EQ(s.max_row(), 2);
  EXPECT_EQ(s.max_col(), 1);
}

}  // namespace
}  // namespace tapdiff::bisect
