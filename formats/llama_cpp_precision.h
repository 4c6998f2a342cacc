#pragma once
// llama.cpp's precision (--dtype llama.cpp), what both engines' emulations of it share: before
// each matrix product ggml-cpu converts the activations to the weight type's dot-product type (its
// vec_dot_type): F16 for F16 weights, BF16 for BF16, Q8_0 blocks for Q8_0, Q4_0, Q5_0 and IQ4_NL,
// Q8_1 blocks for Q4_1 and Q5_1, Q8_K super-blocks for the K-quants and IQ4_XS; the product then
// runs on the converted values with f32 sums. Without flash attention, K and V are cached as f16
// and the attention's Q and probabilities are converted to f16 for their products with them. How
// each engine rounds: reference/llama_cpp_rounding.h, gpu/shaders/round_dot.comp.
#include <array>
#include <cstdint>

#include "model/dtype.h"
#include "model/rope.h"

namespace tapdiff::model {
class Model;
struct Block;
struct ModelConfig;
}  // namespace tapdiff::model

namespace tapdiff::formats {

enum class DotType { f32, f16, bf16, q8_0, q8_1, q8_k };

// ggml-cpu's vec_dot_type of a weight stored as `weights`.
DotType dot_type(model::DType weights);
const char* dot_type_name(DotType t);  // "f32", "q8_k", ...

// UsageError naming the file where the emulation is not held to llama.cpp: a mixture of experts
// (llama.cpp's per-expert products are not emulated), norms scaled by (offset + w) (llama.cpp's
// converter stores Gemma's as 1 + w, rounded: run the GGUF), or GELU in its erf form (llama.cpp's
// graphs compute GELU by the table below).
void require_llama_cpp_precision(const model::Model& m);

// Whether the family's graph in llama.cpp is one of Gemma's (gemma, gemma2, gemma3: the embedding
// scaled after "embd", Q scaled first).
bool llama_cpp_gemma_graph(const model::ModelConfig& c);

// Whether llama.cpp's graph of this family scales Q by the attention scale before the attention
// (Gemma 1/2/3, Phi-3: Q rounded to f16 after that scale) rather than the scores after their
// product (the others: soft_max_ext's scale).
bool llama_cpp_scales_q_first(const model::ModelConfig& c);

// The attention's scale as llama.cpp computes it, in f32: 1.0f / sqrtf(head_dim), or Gemma 2/3's
// 1.0f / sqrtf(n_embd / n_head) for their largest models; a scale read from the file (Granite,
// SmolLM3) is its f32 value. (1 / sqrt(96) in double, rounded to f32, is one step off, say.)
float llama_cpp_attention_scale(const model::ModelConfig& c);

// A layer's RoPE frequencies with the angles as ggml computes them (model::GgmlAngles: theta
// stepped by powf(base, -2 / rotary_dim) in f32, divided by the rope_freqs.weight factors, times
// the linear scaling's 1 / factor) where its scaling is none, linear, or factors from the file; for
// YaRN, dynamic and LongRoPE the angles stay exact (their f32 steps are not modelled).
model::RopeFrequencies llama_cpp_rope_frequencies(const model::ModelConfig& c, int layer, double base,
                                                  std::int64_t seq_len);

// Whether the block's activation is GELU, which llama.cpp's precision computes from the table below.
bool llama_cpp_gelu_by_table(const model::Block& b);

// ggml-cpu's GELU (GGML_GELU_FP16, the tanh form): for -10 < x < 10 the f16 value at x rounded to
// f16, table[f16 bits of x] = f16 of 0.5f x (1 + tanhf(sqrt(2/pi) x (1 + 0.044715f x x))) in f32,
// the innermost product and sum fused (fmaf), as ggml's builds for CPUs with FMA (haswell and
// later) compute it; its builds without FMA (x64, sse42, sandybridge, ivybridge) differ at one
// entry, x = -1.999 (0xbfff). Its f16 bits, computed once.
const std::array<std::uint16_t, 65536>& llama_cpp_gelu_table();
// gelu(x) times up as ggml-cpu's vectors compute it from that table: exactly 0 at and below -10,
// x times up at and above 10 (NaN stays NaN).
float llama_cpp_gelu_mul(float x, float up);

}  // namespace tapdiff::formats
