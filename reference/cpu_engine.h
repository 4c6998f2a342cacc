#pragma once
// The Eigen CPU reference engine: the numerical truth, in f32 or f64 ("golden") arithmetic, and
// the emulation of an f16 engine (the noise floor an f16 engine is held to).
#include <cstdint>
#include <memory>

#include "model/engine.h"
#include "model/weights.h"

namespace tapdiff::reference {

struct CpuEngineOptions {
  model::Scalar scalar = model::Scalar::f32;
  int threads = 0;  // 0 = all hardware threads
  // f32 arithmetic inside each op, with the weights (once, at load), every op output and every
  // teacher-forced value rounded to f16: what an f16 engine with f32 accumulation can at best
  // compute. compute_dtype() is then "f16"; tensors read back are f32 holding f16 values.
  // Needs scalar f32 (UsageError otherwise).
  bool f16 = false;
  // The bytes of weight copies (dequantized or widened matrices) held at once: past it the
  // weights are streamed a layer at a time (weight_store.h). 0 = a quarter of physical memory.
  std::uint64_t weight_budget = 0;
};

// The engine borrows the model: the model must outlive it.
std::unique_ptr<model::Engine> make_cpu_engine(const model::Model& model, const CpuEngineOptions& options);

}  // namespace tapdiff::reference
