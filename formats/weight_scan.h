#pragma once
// Legal but suspect weights: NaN and infinity in a model's tensors.
#include <cstdint>
#include <string>
#include <vector>

#include "model/weights.h"

namespace tapdiff::formats {

struct NonFiniteWeights {
  std::string tensor;  // its name in the file
  std::uint64_t nan = 0, inf = 0, values = 0;
};

// Every tensor of the model holding a NaN or an infinity (after dequantization), in name order.
// Reads every weight once, tensors in parallel.
std::vector<NonFiniteWeights> find_non_finite_weights(const model::Model& model);

}  // namespace tapdiff::formats
