#pragma once
// A learned scalar of a model: the first value of a tensor (xIELU's alpha_p, Gemma 4's
// layer_scalar), dequantized, as f64.
#include "model/weights.h"

namespace tapdiff::model {

// FormatError where the model has no such tensor (Model::weight).
double learned_scalar(const Model& model, WeightKind kind, int layer);

}  // namespace tapdiff::model
