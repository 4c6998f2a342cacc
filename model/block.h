#pragma once
// What one decoder layer computes, as data: which norms sit where and of which kind, the q/k
// norms, the biases, the FFN and its activation, whether attention and FFN run side by side, and
// the scalar scales of a family. The graph (model/graph.h) is built from it, both engines execute
// that graph, and a family is a Block plus its tensor names (formats/families/). A Llama block is
// Block{}:
//
//   x -> attn_norm -> q/k/v_proj -> [q/k_norm] -> rope -> attn -> o_proj -> [attn_post_norm] -> + x
//     -> ffn_norm -> act(ffn_gate) * ffn_up -> ffn_down -> [ffn_post_norm] -> + (the stream)
//
// (GPT-2 and OPT add a learned position embedding to the token's and rotate nothing.)
//
// A parallel block (GPT-J, Phi-2, GPT-NeoX, Cohere, Falcon) feeds the FFN from the layer's input,
// not from the attention's residual add, and adds both outputs to the stream:
//
//   x -> attn_norm -> ... -> o_proj -> + x (attn_residual)
//   x -> [ffn_norm] -> FFN -> + attn_residual (ffn_residual)
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace tapdiff::model {

// ffn_act = act(gate) * up in a gated FFN, act(up) in a plain one.
enum class Activation : std::uint8_t {
  silu,        // x * sigmoid(x)                                   (SwiGLU: Llama, Mistral, Qwen, ...)
  gelu,        // x/2 (1 + erf(x / sqrt 2))                        (transformers' "gelu")
  gelu_tanh,   // x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))    ("gelu_pytorch_tanh", "gelu_new": GeGLU in Gemma,
               // GPT-2)
  relu,        // max(x, 0)                                        (OPT)
  relu2,       // max(x, 0)^2                                      (Nemotron, Arcee)
  xielu,       // model/xielu.h, with each layer's learned scalars  (Apertus; plain FFNs only)
  swiglu_oai,  // gated only: g = min(gate, limit), u = clamp(up, -limit, limit), g * sigmoid(alpha g) * (u + 1)
               // (gpt-oss's experts; Block::swiglu holds alpha and limit)
};
std::string_view activation_name(Activation a);  // "silu", ..., "xielu", "swiglu_oai"

// What every norm of the block computes over its n channels (q/k norms and the final norm too):
//   rms:   x / sqrt(mean(x^2) + eps) * (offset + w)
//   layer: (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) * (offset + w) [+ b]
enum class NormKind : std::uint8_t { rms, layer };
std::string_view norm_kind_name(NormKind n);  // "rms", "layer"

// The FFN of a dense layer: gated, down(act(gate(x)) * up(x)) (Llama); plain, down(act(up(x)))
// (GPT-2's c_fc and c_proj, StarCoder 2's, Nemotron's, Arcee's: up is the first matrix).
enum class Ffn : std::uint8_t { gated, plain };
std::string_view ffn_name(Ffn f);  // "gated", "plain"

// Where the FFN of a parallel block reads its input (model/block.h's diagram): none, a sequential
// block; shared_norm, attn_norm's output (one norm: GPT-J, Phi-2, Cohere); own_norm, ffn_norm of
// the layer's input (GPT-NeoX's use_parallel_residual, Falcon's ln_mlp).
enum class Parallel : std::uint8_t { none, shared_norm, own_norm };
std::string_view parallel_name(Parallel p);  // "none", "shared_norm", "own_norm"

// Where q and k are RMS-normed before RoPE (or after it: qk_norm_after_rope).
enum class QkNorm : std::uint8_t {
  none,
  per_head,  // each head's head_dim channels, one weight [head_dim] shared by the heads (Qwen3, Gemma 3)
  whole,     // the whole projection's row, one weight [q_dim] or [kv_dim] (OLMo 2)
  // each head's channels without a weight (ones stand in), in the layers that rotate only: Llama 4's
  // L2Norm (an RMS norm; qk_norm_after_rope)
  per_head_plain,
};
std::string_view qk_norm_name(QkNorm q);  // "none", "per_head", "whole", "per_head_plain"

// The constants of the clamped SwiGLU (Activation::swiglu_oai): gpt-oss's swiglu_alpha and swiglu_limit.
struct SwigluClamp {
  double alpha = 1.702;
  double limit = 7.0;
  friend bool operator==(const SwigluClamp&, const SwigluClamp&) = default;
};

struct Block {
  bool pre_norms = true;    // attn_norm before the attention, ffn_norm before the FFN
  bool post_norms = false;  // attn_post_norm after o_proj, ffn_post_norm after ffn_down (Gemma 2/3, OLMo 2)
  NormKind norm = NormKind::rms;
  double norm_offset = 0;  // every norm scales by (norm_offset + w): 1 for Gemma's weights in transformers
  bool norm_bias = false;  // LayerNorms add a bias: attn_norm, ffn_norm and the final norm (not q/k norms)
  QkNorm qk_norm = QkNorm::none;
  bool qk_norm_after_rope = false;  // the q/k norms read RoPE's output (HunYuan), not the projections'
  Ffn ffn = Ffn::gated;
  Activation activation = Activation::silu;
  SwigluClamp swiglu;  // activation swiglu_oai only
  Parallel parallel = Parallel::none;
  bool qkv_bias = false;     // q/k/v_proj carry a bias
  double clip_qkv = 0;       // > 0: q/k/v_proj's outputs clamped to [-clip_qkv, clip_qkv] (OLMo)
  bool o_bias = false;       // o_proj carries a bias
  bool mlp_bias = false;     // ffn_gate (where gated), ffn_up and ffn_down carry biases
  bool output_bias = false;  // the logits' matrix carries a bias (Phi-2's lm_head)
  double embed_scale = 1;    // embed = table[token] * embed_scale (Gemma: sqrt(dim); Granite: embedding_multiplier)
  bool learned_positions = false;  // embed adds row (position + position_offset) of pos_embd (GPT-2, OPT)
  int position_offset = 0;         // OPT: 2
  double residual_scale = 1;       // x + residual_scale * update (Granite: residual_multiplier)
  double attention_scale = 0;      // scores = q.k * attention_scale; 0: 1/sqrt(head_dim)
  double attention_softcap = 0;    // then cap * tanh(scores / cap) before the mask; 0: none (Gemma 2)
  // Each head's softmax has one more logit in its denominator, the layer's learned sink for the head
  // (attn_sinks [n_heads]), whose value adds nothing (gpt-oss).
  bool attention_sinks = false;
  bool v_norm = false;       // v_proj's heads RMS-normed without a weight before the cache (Gemma 4's v_norm)
  bool layer_scale = false;  // ffn_residual times the layer's learned scalar (layer_scale [1]: Gemma 4's layer_scalar)
  double logit_scale = 1;    // logits = (final_norm W) * logit_scale (Granite: 1 / logits_scaling)
  double logit_softcap = 0;  // then cap * tanh(logits / cap); 0: none (Gemma 2)

  // Throws FormatError("<source>: ...") for values that cannot describe a working block.
  void validate(const std::string& source) const;
  friend bool operator==(const Block&, const Block&) = default;
};

// Whether the block has ffn_norm: a sequential block with pre-norms, or a parallel one whose FFN
// has its own norm.
bool has_ffn_norm(const Block& block);

// The row of a learned position table (learned_positions) that `position` reads: position +
// position_offset; UsageError where the table of `table_rows` rows has none for it.
std::int64_t learned_position_row(const Block& block, std::int64_t table_rows, std::int64_t position);

// The scale of attention scores for a head width: attention_scale, or 1/sqrt(head_dim).
double attention_scale(const Block& block, int head_dim);

nlohmann::json to_json(const Block& block);
// The block to_json wrote (a dump's model_config.block); FormatError naming `source` and the key
// for a field of the wrong type or an unknown name. Fields left out keep Block{}'s values.
Block block_from_json(const nlohmann::json& j, const std::string& source);

}  // namespace tapdiff::model
