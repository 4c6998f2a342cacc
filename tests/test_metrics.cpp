#include <gtest/gtest.h>

#include <cmath>

#include "bisect/metrics.h"
#include "bisect/tensor_stats.h"

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
  EXPECT_EQ(m.nonfinite, 1);  // the matching NaNs agree, inf vs 7 does not
  EXPECT_EQ(m.max_abs, 0.0);
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
