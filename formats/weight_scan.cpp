#include "formats/weight_scan.h"

#include <algorithm>
#include <cmath>

namespace tapdiff::formats {

using namespace model;

namespace {

NonFiniteWeights scan(const WeightTensor& t) {
  NonFiniteWeights found{t.name, 0, 0, static_cast<std::uint64_t>(t.rows * t.cols)};
  std::vector<float> row(static_cast<std::size_t>(t.cols));
  for (std::int64_t r = 0; r < t.rows; ++r) {
    dequantize_row(t.dtype, t.row(r), row.data(), t.cols);
    for (const float v : row) {
      found.nan += std::isnan(v) ? 1 : 0;
      found.inf += std::isinf(v) ? 1 : 0;
    }
  }
  return found;
}

}  // namespace

std::vector<NonFiniteWeights> find_non_finite_weights(const Model& model) {
  std::vector<const WeightTensor*> tensors;
  for (const auto& [key, tensor] : model.tensors()) tensors.push_back(&tensor);
  std::vector<NonFiniteWeights> scanned(tensors.size());
#pragma omp parallel for schedule(dynamic)
  for (std::size_t i = 0; i < tensors.size(); ++i) scanned[i] = scan(*tensors[i]);
  std::vector<NonFiniteWeights> found;
  for (auto& s : scanned)
    if (s.nan + s.inf > 0) found.push_back(std::move(s));
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.tensor < b.tensor; });
  return found;
}

}  // namespace tapdiff::formats
