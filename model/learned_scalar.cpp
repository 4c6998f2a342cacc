#include "model/learned_scalar.h"

namespace tapdiff::model {

double learned_scalar(const Model& model, WeightKind kind, int layer) {
  const WeightTensor& t = model.weight(kind, layer);
  float v = 0;
  dequantize_row(t.dtype, t.row(0), &v, 1);
  return v;
}

}  // namespace tapdiff::model
