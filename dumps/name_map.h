#pragma once
// How an outside engine's array names become taps (docs/import.md): presets for the names Hugging
// Face modules, vLLM modules and llama.cpp's graph give each value, and a user's TOML map. A rule
// holds one op, or the ops a fused array holds side by side in its columns (split: qkv, gate_up),
// or one op as the sum of two arrays (vLLM's residual stream, kept in two halves).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/config.h"
#include "model/graph.h"

namespace tapdiff::dumps {

enum class Combine : std::uint8_t { one, split, sum };

// Which models a rule applies to: any; by their block (model/block.h), those without or with
// post-norms (Hugging Face's post_attention_layernorm is the FFN's norm in a block without them and
// the attention's post-norm in one with them), without or with FFN biases; by how llama.cpp's graph
// of their family names its tensors, those whose "embd" holds the embedding after its scale (all
// but Gemma's, scaled later as "inp_scaled"), those whose q, k and v and whose gate and up are
// one product each (Phi-3: "wqkv" and "ffn_up" hold them side by side, its "Vcur" is a view in
// prefill and its last "Qcur" is scaled) and the others; by their experts' weights, those that take
// the chosen scores as they are, divided by their sum (experts.normalize), or times experts.scale.
enum class BlockKind : std::uint8_t {
  any,
  without_post_norms,
  with_post_norms,
  without_mlp_bias,
  with_mlp_bias,
  embedding_scaled_in_embd,
  projections_fused,
  projections_apart,
  expert_weights_plain,
  expert_weights_normalized,
  expert_weights_scaled,
  // Whether transformers' (and vLLM's) embedding module returns the embed op, or the model completes it
  // after the module (Granite's multiplier, GPT-2's and OPT's positions): then the first layer's input
  embedding_module_output,
  embedding_completed_outside,
  embedding_unscaled,  // vLLM's: a model that neither scales its embedding nor adds positions to it
  // A router whose choice is made on scores of their own (moe_scores): sigmoid scores without a
  // selection bias, or any scores with one
  choice_scores_unbiased,
  choice_scores_biased,
  // llama.cpp's router: its logits as named first, or a top-k softmax's (LlamaCppGraph::softmax_weight_gating)
  router_logits,
  router_softmax_weight,
  // Per layer: a mixture of experts with a shared expert beside it (the block's output is moe_sum),
  // and one whose shared expert has no gate of its own (its output is moe_shared)
  experts_with_shared,
  shared_expert_ungated,
  // Per layer, with q, k and v apart: q turned or scaled (the layer has rope_q), or left as
  // projected (a layer without RoPE: llama.cpp's Qcur is q_proj's value there); k turned, or not
  queries_rotated_apart,
  queries_plain_apart,
  keys_rotated,
  keys_plain,
  // Multi-head latent attention (model_config.mla): llama.cpp's absorbed form, whose Qcur, Kcur and
  // Vcur are the latent space's, none of the ops' above
  latent_attention,
  // Per layer: q and k normed after RoPE (Llama 4's; llama.cpp's Qcur_normed and Kcur_normed)
  qk_normed_after_rope,
  // Per layer: the FFN norm's output under its own name, or where llama.cpp's graph gives that name
  // to the attention's output (LlamaCppGraph::moe_layers_misname_ffn_norm), all but the last layer
  // (which names so the attention's output gathered to the output rows, and keeps "attn_out")
  ffn_norm_as_named,
  attn_out_as_ffn_norm,
  // Whether the layers end with Gemma 4's per-layer inputs (the layer's output is ple_residual)
  without_layer_inputs,
  with_layer_inputs,
  // Per layer: a mixture beside the dense FFN (Gemma 4's MoE block: the FFN's output is ffn_sum)
  experts_beside_dense,
  // llama.cpp's "attn_out": o_proj's output, or the stream after the residual add
  // (LlamaCppGraph::attn_out_after_residual)
  attn_out_projection,
  attn_out_residual,
  // Per layer, in a graph that names q and k before RoPE only (LlamaCppGraph::qk_named_before_rope):
  // q and k normed before RoPE (Qcur_normed, Kcur_normed)
  qk_normed_before_rope,
};

struct MapRule {
  std::string pattern;         // the array's name; "{L}" stands for the layer number
  std::vector<model::Op> ops;  // one op; split: the ops whose columns the array holds, in order
  Combine combine = Combine::one;
  std::string partner;  // sum: the other array's pattern
  BlockKind block = BlockKind::any;
  // The pattern of an array of expert ids in the order an engine chose them (llama.cpp's top-k, by
  // score): each row of this array is read in the order that sorts that row's ids ascending, as
  // moe_ids and moe_weights are held (its own pattern for the ids themselves). "": as stored.
  std::string order;
};

struct NameMap {
  std::string name;  // the preset's, or the TOML file's path
  std::vector<MapRule> rules;
  // The order of each head's q/k channels in the dump's values; nullopt: the model's own, or where
  // hf_layout (Hugging Face and vLLM), the order of the family's Hugging Face checkpoints (rotate_half
  // for most; ERNIE 4.5's and Cohere's interleaved; a latent attention model's: its own). Where it
  // differs from the model's, q/k ops are permuted to it (values_layout).
  std::optional<model::RopeStyle> layout;
  bool hf_layout = false;
  // The arrays of per-head ops (q, k, v, their norms and RoPE, attn) held heads first, as an
  // attention computes them: [heads, rows, head_dim], or [1, heads, rows, head_dim] (MLX's and
  // PyTorch's [batch, heads, rows, head_dim]); other ops' arrays as ever.
  bool heads_first = false;
  // The names are the modules' of the model's Hugging Face classes (hf, vllm): each family's own
  // first read as Llama's, as its checkpoints' tensor names are (formats::hf_llama_name: GPT-2's
  // "transformer.h.{L}.attn.c_attn" as "model.layers.{L}.self_attn.qkv_proj").
  bool family_names = false;
  // The rules hold the names of llama.cpp's graphs, which name the values of each family in its own
  // way: they hold for the families whose files say so (formats::LlamaCppGraph::names_mapped).
  bool llama_cpp_names = false;
  std::vector<std::string> tokens = {"tokens", "input_ids"};  // the per-row token ids, by the first name present
  std::vector<std::string> positions = {"positions", "position_ids"};
  std::vector<std::string> decode = {"decode"};
};

// "tapdiff" (LAYER/OP, as /taps names them), "hf", "vllm", "llama.cpp"; UsageError listing them
// for another name.
NameMap preset_map(std::string_view name);
std::vector<std::string_view> preset_names();

// A user's map (docs/import.md): TOML with an optional base preset, layout, provenance names,
// [taps], [sums] and [orders]. FormatError naming the file and the key for anything else.
NameMap map_from_toml(const std::filesystem::path& path);

// UsageError where the map's rules do not hold the names of the model's family (NameMap::llama_cpp_names):
// naming the families they hold and the way out, a TOML map of the engine's names.
void require_map_fits(const NameMap& map, const model::ModelConfig& config);

// The q/k channel order of the map's values for the model (NameMap::layout); nullopt: the model's own.
std::optional<model::RopeStyle> values_layout(const NameMap& map, const model::ModelConfig& config);

// What one array name is under a map, for a model's config: the taps it holds (several for a
// split), how, and for a sum the partner's name. Names of the form LAYER/OP are taps in every map.
struct Resolved {
  std::vector<model::TensorId> ids;
  Combine combine = Combine::one;
  std::string partner;
  std::string order;  // MapRule::order with the layer filled in
};
std::optional<Resolved> resolve(const NameMap& map, std::string_view name, const model::ModelConfig& config);
// Whether `name` is the second array of some sum (used through its partner).
bool is_sum_partner(const NameMap& map, std::string_view name, const model::ModelConfig& config);

}  // namespace tapdiff::dumps
