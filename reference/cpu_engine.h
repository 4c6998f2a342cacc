#pragma once
// The Eigen CPU reference engine: the numerical truth, in f32 or f64 ("golden") arithmetic, and
// the emulations of f16, bf16 and llama.cpp engines (the noise floor such an engine is held to).
#include <cstdint>
#include <memory>

#include "model/engine.h"
#include "model/precision.h"
#include "model/weights.h"

namespace tapdiff::reference {

struct CpuEngineOptions {
  // f64 computes in doubles (the truth), f32 in floats; every other precision in f32 with the
  // roundings that emulate an engine of it (reference/emulation.h): f16 and bf16 round the weights
  // (once, at load), every op output and every teacher-forced value, what such an engine with f32
  // accumulation can at best compute; llama.cpp rounds where llama.cpp's CPU backend does
  // (reference/llama_cpp_rounding.h). compute_dtype() is the precision's name ("f32" for
  // llama.cpp, whose kernel() names the roundings); tensors read back are f32 holding the rounded
  // values. Mixtures of experts under llama.cpp, f16_acc16 or fp8: UsageError.
  model::Precision precision = model::Precision::f32;
  int threads = 0;  // 0 = all hardware threads
  // The bytes of weight copies (dequantized or widened matrices) held at once: past it the
  // weights are streamed a layer at a time (weight_store.h). 0 = a quarter of physical memory.
  std::uint64_t weight_budget = 0;
};

// The engine borrows the model: the model must outlive it.
std::unique_ptr<model::Engine> make_cpu_engine(const model::Model& model, const CpuEngineOptions& options);

}  // namespace tapdiff::reference
