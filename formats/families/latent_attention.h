#pragma once
// DeepSeek's multi-head latent attention (model/config.h LatentAttention) as DeepSeek-V2's and
// V3's Hugging Face configs describe it.
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

}  // namespace tapdiff::formats
