#include "model/xielu.h"

#include <cmath>

namespace tapdiff::model {
namespace {

double value(const Model& model, WeightKind kind, int layer) {
  const WeightTensor& t = model.weight(kind, layer);
  float v = 0;
  dequantize_row(t.dtype, t.row(0), &v, 1);
  return v;
}

double softplus(double x) { return x > 20 ? x : std::log1p(std::exp(x)); }

}  // namespace

Xielu xielu_of(const Model& model, int layer) {
  const double beta = value(model, WeightKind::xielu_beta, layer);
  return {softplus(value(model, WeightKind::xielu_alpha_p, layer)),
          beta + softplus(value(model, WeightKind::xielu_alpha_n, layer)), beta,
          value(model, WeightKind::xielu_eps, layer)};
}

}  // namespace tapdiff::model
