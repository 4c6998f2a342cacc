#pragma once
// xIELU (Apertus's activation), with its four learned scalars per layer as the checkpoint stores
// them (alpha_p and alpha_n before softplus, beta, eps):
//   x > 0:  softplus(alpha_p) x^2 + beta x
//   else:   (beta + softplus(alpha_n)) (expm1(min(x, eps)) - x) + beta x
#include "model/weights.h"

namespace tapdiff::model {

// The scalars as the formula takes them: alpha_p = softplus(stored alpha_p), alpha_n = beta +
// softplus(stored alpha_n).
struct Xielu {
  double alpha_p = 0;
  double alpha_n = 0;
  double beta = 0;
  double eps = 0;
};

// A layer's, from its tensors (xielu_alpha_p, ...; softplus as torch's, linear past 20).
Xielu xielu_of(const Model& model, int layer);

}  // namespace tapdiff::model
