#pragma once
// The Eigen CPU reference engine: the numerical truth, in f32 or f64 ("golden") arithmetic, and
// the emulations of f16, bf16 and llama.cpp engines (the noise floor such an engine is held to).
#include <cstdint>
#include <memory>

#include "model/engine.h"
#include "model/weights.h"

namespace tapdiff::reference {

// What the reference rounds besides its own arithmetic. Both emulations need scalar f32
// (UsageError otherwise).
enum class Emulation {
  none,
  // f32 arithmetic inside each op, with the weights (once, at load), every op output and every
  // teacher-forced value rounded to f16: what an f16 engine with f32 accumulation can at best
  // compute. compute_dtype() is then "f16"; tensors read back are f32 holding f16 values.
  f16,
  // The same with bf16 in place of f16: how PyTorch, MLX and Metal run a bf16 model (f32
  // accumulation, every stored value bf16). compute_dtype() is "bf16".
  bf16,
  // f32 arithmetic with the roundings of llama.cpp's CPU backend without flash attention
  // (reference/llama_cpp_rounding.h): each product's activations converted to the weight's
  // dot-product type, K and V cached as f16, the attention's Q and probabilities as f16.
  // compute_dtype() is "f32"; kernel() names the roundings. Mixtures of experts: UsageError.
  llama_cpp,
};

struct CpuEngineOptions {
  model::Scalar scalar = model::Scalar::f32;
  int threads = 0;  // 0 = all hardware threads
  Emulation emulation = Emulation::none;
  // The bytes of weight copies (dequantized or widened matrices) held at once: past it the
  // weights are streamed a layer at a time (weight_store.h). 0 = a quarter of physical memory.
  std::uint64_t weight_budget = 0;
};

// The engine borrows the model: the model must outlive it.
std::unique_ptr<model::Engine> make_cpu_engine(const model::Model& model, const CpuEngineOptions& options);

}  // namespace tapdiff::reference
