#pragma once
// What Gemma 1, 2 and 3 share, in each format.
#include "formats/family_spec.h"
#include "formats/hf_keys.h"
#include "model/config.h"

namespace tapdiff::formats {

// RMSNorm by (1 + w), the embedding times sqrt(hidden_size) as transformers keeps it (a float32
// tensor, GemmaTextScaledWordEmbedding), causal attention only.
void read_gemma_hf(KeyReader& k, model::ModelConfig& c);

// As llama.cpp computes them: the converter stores every norm as 1 + w (so no offset here), the
// embedding times sqrtf(n_embd), GELU in its tanh form, the output tied to token_embd.
void read_gemma_gguf(model::ModelConfig& c);

// Gemma 2 and 3: Gemma's block with norms after the attention and the FFN, attention scaled by
// query_pre_attn_scalar, a final logit soft-cap (null: none) of the given default.
void read_gemma2_block_hf(KeyReader& k, model::ModelConfig& c, double logit_cap);

// Gemma 2 and 3 as llama.cpp computes them: Gemma's, norms after the attention and the FFN, q
// scaled by 1/sqrt(head_dim), or by 1/sqrt(n_embd / n_head) for the model of `big_layers` layers.
void read_gemma2_block_gguf(model::ModelConfig& c, int big_layers);

// llama.cpp's graphs of Gemma 1, 2 and 3: the embedding scaled after "embd", Q scaled first.
inline constexpr LlamaCppGraph kGemmaLlamaCppGraph{.gemma = true, .scales_q_first = true, .names_mapped = true};

}  // namespace tapdiff::formats
