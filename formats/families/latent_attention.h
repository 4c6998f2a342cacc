#pragma once
// DeepSeek's multi-head latent attention (model/config.h LatentAttention) as DeepSeek-V2's and
// V3's Hugging Face configs describe it.
#include <string>

#include "formats/gguf_reader.h"
#include "formats/hf_keys.h"
#include "model/config.h"

namespace tapdiff::formats {

// q_lora_rank (absent: 1536; null: q_proj), kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim and
// v_head_dim (absent: the config classes' 512, 64, 128 and 128); attention_bias on q_a, kv_a and
// o; the scores' scale qk_head_dim^-1/2, times get_mscale(factor, mscale_all_dim)^2 where the RoPE
// is scaled and states mscale_all_dim (transformers' yarn_apply_mscale). transformers recomputes
// head_dim (qk_rope_head_dim, its RoPE's width) and qk_head_dim, so neither is read; a
// num_key_value_heads other than num_attention_heads breaks its attention and is refused, as is
// a partial_rotary_factor (the RoPE turns the whole qk_rope_head_dim).
void read_latent_attention_hf(KeyReader& k, model::ModelConfig& c);

// The same as llama.cpp's deepseek2 reads it: attention.kv_lora_rank, attention.q_lora_rank (absent:
// q straight from attn_q), rope.dimension_count (each head's RoPE part); each head's key and value
// widths key_length_mla and value_length_mla in a file of the absorbed form (its key_length and
// value_length the latent's, kv_lora_rank + the RoPE part and kv_lora_rank, one KV head), or
// key_length and value_length in an older one (a KV head per head); the latent norms of
// attention.layer_norm_rms_epsilon, no biases, the scores' scale key width^-1/2.
void read_latent_attention_gguf(const GgufFile& f, const std::string& prefix, model::ModelConfig& c);

}  // namespace tapdiff::formats
