#pragma once
// The Eigen CPU reference engine: the numerical truth, in f32 or f64 ("golden") arithmetic.
#include <memory>

#include "model/engine.h"
#include "model/weights.h"

namespace tapdiff::reference {

struct CpuEngineOptions {
  model::Scalar scalar = model::Scalar::f32;
  int threads = 0;  // 0 = all hardware threads
};

// The engine borrows the model: the model must outlive it.
std::unique_ptr<model::Engine> make_cpu_engine(const model::Model& model, const CpuEngineOptions& options);

}  // namespace tapdiff::reference
