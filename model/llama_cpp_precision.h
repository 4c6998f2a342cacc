#pragma once
// llama.cpp's precision (--dtype llama.cpp), what both engines' emulations of it share: before
// each matrix product ggml-cpu converts the activations to the weight type's dot-product type (its
// vec_dot_type): F16 for F16 weights, BF16 for BF16, Q8_0 blocks for Q8_0, Q4_0, Q5_0 and IQ4_NL,
// Q8_1 blocks for Q4_1 and Q5_1, Q8_K super-blocks for the K-quants and IQ4_XS; the product then
// runs on the converted values with f32 sums. Without flash attention, K and V are cached as f16
// and the attention's Q and probabilities are converted to f16 for their products with them. How
// each engine rounds: reference/llama_cpp_rounding.h, gpu/shaders/round_dot.comp.
#include "model/dtype.h"

namespace tapdiff::model {

class Model;

enum class DotType { f32, f16, bf16, q8_0, q8_1, q8_k };

// ggml-cpu's vec_dot_type of a weight stored as `weights`.
DotType dot_type(DType weights);
const char* dot_type_name(DotType t);  // "f32", "q8_k", ...

// UsageError naming the file where the emulation is not held to llama.cpp: a mixture of experts
// (llama.cpp's per-expert products are not emulated), or a block other than Llama's (biases
// allowed: both add them after the product in f32), whose graph llama.cpp may round elsewhere in
// (Gemma 2 scales Q before converting it, say).
void require_llama_cpp_precision(const Model& m);

}  // namespace tapdiff::model
