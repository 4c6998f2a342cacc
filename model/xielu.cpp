#include "model/xielu.h"

#include <cmath>

#include "model/learned_scalar.h"

namespace tapdiff::model {
namespace {

double softplus(double x) { return x > 20 ? x : std::log1p(std::exp(x)); }

}  // namespace

Xielu xielu_of(const Model& model, int layer) {
  const double beta = learned_scalar(model, WeightKind::xielu_beta, layer);
  return {softplus(learned_scalar(model, WeightKind::xielu_alpha_p, layer)),
          beta + softplus(learned_scalar(model, WeightKind::xielu_alpha_n, layer)), beta,
          learned_scalar(model, WeightKind::xielu_eps, layer)};
}

}  // namespace tapdiff::model
