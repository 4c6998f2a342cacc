#include "dumps/name_map.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include "formats/family_spec.h"
#include "formats/llama_cpp_precision.h"
#include "model/config.h"
#include "model/errors.h"
#include "model/input_file.h"
#include "model/printable.h"
#include "model/toml_text.h"

namespace tapdiff::dumps {
namespace {

using model::Op;

MapRule one(std::string pattern, Op op, BlockKind block = BlockKind::any) {
  return {std::move(pattern), {op}, Combine::one, "", block, ""};
}
MapRule split(std::string pattern, std::vector<Op> ops, BlockKind block = BlockKind::any) {
  return {std::move(pattern), std::move(ops), Combine::split, "", block, ""};
}
NameMap named(std::string name, bool hf_layout = false) {
  NameMap m;
  m.name = std::move(name);
  m.hf_layout = hf_layout;
  return m;
}
MapRule sum(std::string pattern, Op op, std::string partner) {
  return {std::move(pattern), {op}, Combine::sum, std::move(partner), BlockKind::any, ""};
}
// An array read in the order that sorts the ids array `order` ascending, row by row.
MapRule ordered(std::string pattern, Op op, std::string order, BlockKind block = BlockKind::any) {
  return {std::move(pattern), {op}, Combine::one, "", block, std::move(order)};
}

// Hugging Face transformers: each module's output as a forward hook sees it (a tuple's members as
// "<module>.0", "<module>.1"), and "<module>:input" for what a module receives (the attention's
// output is o_proj's input; ffn_act is down_proj's; the embedding, where the model completes it
// after embed_tokens, is the first layer's). A mixture of experts (transformers 5.x: "mlp", or
// Granite-MoE's "block_sparse_moe"): its router ("gate", PhiMoE's and Granite-MoE's "router")
// returns the logits, the chosen experts' weights and their ids in its top-k order (read sorted
// ascending, the weights with them); the experts module their weighted sum; beside a shared
// expert, the shared expert's output (where no gate of its own scales it) and, where the block
// holds the shared expert ("mlp"; Granite-MoE-Shared's shared_mlp is the layer's), the block's.
void add_hf_experts(std::vector<MapRule>& rules, const std::string& block, bool holds_shared) {
  for (const std::string router : {"gate", "router"}) {
    const std::string ids = block + router + ".2";
    rules.push_back(one(block + router + ".0", Op::moe_router));
    rules.push_back(ordered(block + router + ".1", Op::moe_weights, ids));
    rules.push_back(ordered(ids, Op::moe_ids, ids));
  }
  rules.push_back(one(block + "experts", Op::moe_out));
  if (!holds_shared) return;
  rules.push_back(one(block + "shared_expert", Op::moe_shared, BlockKind::shared_expert_ungated));
  rules.push_back(one(block + "shared_experts", Op::moe_shared, BlockKind::shared_expert_ungated));
  rules.push_back(one(block.substr(0, block.size() - 1), Op::moe_sum, BlockKind::experts_with_shared));
}

NameMap hf_map() {
  const std::string l = "model.layers.{L}.";
  NameMap m = named("hf", true);
  m.family_names = true;
  m.rules = {one("model.embed_tokens", Op::embed, BlockKind::embedding_module_output),
             one("model.layers.0:input", Op::embed, BlockKind::embedding_completed_outside),
             one(l + "input_layernorm", Op::attn_norm),
             one(l + "self_attn.q_proj", Op::q_proj),
             one(l + "self_attn.k_proj", Op::k_proj),
             one(l + "self_attn.v_proj", Op::v_proj),
             split(l + "self_attn.qkv_proj", {Op::q_proj, Op::k_proj, Op::v_proj}),
             one(l + "self_attn.q_a_proj", Op::q_a_proj),  // latent attention (kv_b_proj's heads interleave k and v)
             one(l + "self_attn.q_a_layernorm", Op::q_a_norm),
             one(l + "self_attn.q_b_proj", Op::q_proj),
             one(l + "self_attn.kv_a_proj_with_mqa", Op::kv_a_proj),
             one(l + "self_attn.kv_a_layernorm", Op::kv_a_norm),
             one(l + "self_attn.q_norm", Op::q_norm),
             one(l + "self_attn.k_norm", Op::k_norm),
             one(l + "self_attn.v_norm", Op::v_norm),
             one(l + "self_attn.o_proj:input", Op::attn),
             one(l + "self_attn.o_proj", Op::o_proj),
             one(l + "post_attention_layernorm", Op::ffn_norm, BlockKind::without_post_norms),
             one(l + "post_attention_layernorm:input", Op::attn_residual, BlockKind::without_post_norms),
             one(l + "post_attention_layernorm", Op::attn_post_norm, BlockKind::with_post_norms),
             one(l + "pre_feedforward_layernorm:input", Op::attn_residual, BlockKind::with_post_norms),
             one(l + "pre_feedforward_layernorm", Op::ffn_norm),
             one(l + "mlp.gate_proj", Op::ffn_gate),
             one(l + "mlp.up_proj", Op::ffn_up),
             split(l + "mlp.gate_up_proj", {Op::ffn_gate, Op::ffn_up}),
             one(l + "mlp.down_proj:input", Op::ffn_act),
             one(l + "mlp.down_proj", Op::ffn_down),
             one(l + "post_feedforward_layernorm", Op::ffn_post_norm),
             one("model.layers.{L}", Op::ffn_residual, BlockKind::without_layer_inputs),
             one(l + "per_layer_input_gate:input", Op::ffn_residual, BlockKind::with_layer_inputs),  // Gemma 4's
             one(l + "per_layer_input_gate", Op::ple_gate),
             one(l + "per_layer_projection:input", Op::ple_act),
             one(l + "per_layer_projection", Op::ple_proj),
             one(l + "post_per_layer_input_norm", Op::ple_norm),
             one("model.layers.{L}", Op::ple_residual, BlockKind::with_layer_inputs),
             one("model.norm", Op::final_norm),
             one("logits", Op::logits)};
  add_hf_experts(m.rules, l + "mlp.", true);
  add_hf_experts(m.rules, l + "block_sparse_moe.", false);
  // Gemma 4's MoE block, beside the MLP: its router returns the probabilities (not the logits, which
  // are router.proj's), the weights and the ids.
  const std::string router = l + "router.";
  m.rules.insert(
      m.rules.end(),
      {one(router + "proj:input", Op::moe_router_norm), one(router + "proj", Op::moe_router),
       ordered(router + "1", Op::moe_weights, router + "2"), ordered(router + "2", Op::moe_ids, router + "2"),
       one(l + "pre_feedforward_layernorm_2", Op::moe_norm), one(l + "experts", Op::moe_out),
       one(l + "post_feedforward_layernorm_2", Op::moe_post_norm),
       one(l + "post_feedforward_layernorm_1", Op::dense_post_norm),
       one(l + "post_feedforward_layernorm:input", Op::ffn_sum, BlockKind::experts_beside_dense)});
  m.rules.push_back(one(l + "shared_mlp", Op::moe_shared, BlockKind::shared_expert_ungated));
  return m;
}

// vLLM: module outputs, a tuple's members as "<module>.0", "<module>.1" (embed_tokens the embedding
// where the model neither scales it nor adds positions to it after that module; linear layers return
// (output, bias); a norm given the residual returns (normed, residual); a decoder layer returns
// (FFN output, residual), whose sum is the layer's output).
NameMap vllm_map() {
  const std::string l = "model.layers.{L}.";
  NameMap m = named("vllm", true);
  m.family_names = true;
  m.rules = {one("model.embed_tokens", Op::embed, BlockKind::embedding_unscaled),
             one(l + "input_layernorm", Op::attn_norm),
             one(l + "input_layernorm.0", Op::attn_norm),
             split(l + "self_attn.qkv_proj.0", {Op::q_proj, Op::k_proj, Op::v_proj}),
             one(l + "self_attn.rotary_emb.0", Op::rope_q),
             one(l + "self_attn.rotary_emb.1", Op::rope_k),
             one(l + "self_attn.attn", Op::attn),
             one(l + "self_attn.o_proj.0", Op::o_proj),
             one(l + "post_attention_layernorm.0", Op::ffn_norm),
             one(l + "post_attention_layernorm.1", Op::attn_residual),
             split(l + "mlp.gate_up_proj.0", {Op::ffn_gate, Op::ffn_up}),
             one(l + "mlp.act_fn", Op::ffn_act),
             one(l + "mlp.down_proj.0", Op::ffn_down),
             sum("model.layers.{L}.0", Op::ffn_residual, "model.layers.{L}.1"),
             one("model.norm", Op::final_norm),
             one("model.norm.0", Op::final_norm),
             one("logits", Op::logits)};
  return m;
}

// llama.cpp: the names its graph gives tensors (ggml_tensor::name, as an eval callback sees them):
// "<name>-<layer>". Qcur/Kcur are named again after RoPE: the last tensor of that name is kept.
// The embedding is "embd" (after Granite's scale; releases before 2026 named it "inp_embd"), or,
// where Gemma's graphs scale it after that, "inp_scaled". With FFN biases, the gate's and up's sums
// are "ffn_gate_b" and "ffn_up_b". Phi-3 multiplies by q, k, v as one matrix ("wqkv") and by gate
// and up as one ("ffn_up"); its "Qcur" is named again once scaled, so its rope_q is not read.
// Latent attention (deepseek2): q_a_proj, its norm and q_b's product are each named "q", so the
// last, q_proj, is read; "kv_cmpr_pe" is kv_a_proj, "kv_cmpr" once normed kv_a_norm, "k_pe" once
// turned rope_k; its Qcur, Kcur and Vcur are the absorbed form's (in the latent space), "q_pe" each
// head's RoPE part alone, and it names no o_proj or shared expert's output: k_proj, v_proj,
// q_a_proj, q_a_norm, rope_q, o_proj and moe_shared are not read.
// A mixture of experts: the router's logits "ffn_moe_logits" (gpt-oss's top-k softmax: its biased
// logits "ffn_moe_probs", the chosen ones' softmax "ffn_moe_weights_softmax"), the scores a sigmoid router chooses on
// "ffn_moe_probs" (with a selection bias "ffn_moe_probs_biased"), the chosen ids "ffn_moe_topk" (by
// score: read sorted ascending, and the weights with them), the weights as the experts take them
// ("ffn_moe_weights", then "_norm" once divided by their sum, "_scaled" once scaled), their
// weighted sum "ffn_moe_out" and, beside a shared expert, the block's output "ffn_out" (the shared
// expert's parts are named as a dense FFN's, and not read). Llama 4's: q and k normed after RoPE
// "Qcur_normed", "Kcur_normed", the shared expert's output "ffn_moe_shexp", the block's
// "ffn_moe_out_merged"; in its mixtures' layers the attention's output is named again "ffn_norm"
// and the FFN norm's output has no name (ffn_norm is not read there; the last layer's "ffn_norm" is
// the attention's output gathered to the output rows, beside its "attn_out": not read).
// Gemma 4's (LlamaCppGraph::qk_named_before_rope, attn_out_after_residual): Qcur, Kcur and Vcur are q's, k's and v's
// products, "Qcur_normed" and "Kcur_normed" their norms before RoPE, whose outputs it leaves unnamed, as it does the
// values' norm; "attn_post_norm" is the attention's post-norm and "attn_out" the stream after its residual add; "l_out"
// is the layer's output (after the per-layer input, ple_residual, where the model has them). Its mixture's weights are
// named before the experts' learned scales multiply them (moe_weights is not read there), and its post-norms of the FFN
// and the mixture and the per-layer input's ops are unnamed.
NameMap llama_cpp_map() {
  NameMap m = named("llama.cpp");
  m.llama_cpp_names = true;
  m.rules = {
      one("embd", Op::embed, BlockKind::embedding_scaled_in_embd),
      one("inp_embd", Op::embed, BlockKind::embedding_scaled_in_embd),
      one("inp_scaled", Op::embed),
      one("attn_norm-{L}", Op::attn_norm),
      split("wqkv-{L}", {Op::q_proj, Op::k_proj, Op::v_proj}, BlockKind::projections_fused),
      one("Qcur-{L}", Op::rope_q, BlockKind::queries_rotated_apart),
      one("Qcur-{L}", Op::q_proj, BlockKind::queries_plain_apart),
      one("Kcur-{L}", Op::rope_k, BlockKind::keys_rotated),
      one("Kcur-{L}", Op::k_proj, BlockKind::keys_plain),
      one("Qcur_normed-{L}", Op::q_norm, BlockKind::qk_normed_after_rope),
      one("Kcur_normed-{L}", Op::k_norm, BlockKind::qk_normed_after_rope),
      one("Qcur_normed-{L}", Op::q_norm, BlockKind::qk_normed_before_rope),
      one("Kcur_normed-{L}", Op::k_norm, BlockKind::qk_normed_before_rope),
      one("Vcur-{L}", Op::v_proj, BlockKind::projections_apart),
      one("q-{L}", Op::q_proj, BlockKind::latent_attention),
      one("kv_cmpr_pe-{L}", Op::kv_a_proj, BlockKind::latent_attention),
      one("kv_cmpr-{L}", Op::kv_a_norm, BlockKind::latent_attention),
      one("k_pe-{L}", Op::rope_k, BlockKind::latent_attention),
      one("kqv_out-{L}", Op::attn),
      one("attn_out-{L}", Op::o_proj, BlockKind::attn_out_projection),
      one("attn_out-{L}", Op::attn_residual, BlockKind::attn_out_residual),
      one("attn_post_norm-{L}", Op::attn_post_norm, BlockKind::attn_out_residual),
      one("ffn_inp-{L}", Op::attn_residual),
      one("ffn_norm-{L}", Op::ffn_norm, BlockKind::ffn_norm_as_named),
      one("ffn_norm-{L}", Op::o_proj, BlockKind::attn_out_as_ffn_norm),
      one("attn_post_norm-{L}", Op::ffn_norm, BlockKind::without_post_norms),  // Seed-OSS's
      split("ffn_up-{L}", {Op::ffn_gate, Op::ffn_up}, BlockKind::projections_fused),
      one("ffn_gate-{L}", Op::ffn_gate, BlockKind::without_mlp_bias),
      one("ffn_up-{L}", Op::ffn_up, BlockKind::without_mlp_bias),
      one("ffn_gate_b-{L}", Op::ffn_gate, BlockKind::with_mlp_bias),
      one("ffn_up_b-{L}", Op::ffn_up, BlockKind::with_mlp_bias),
      one("ffn_swiglu-{L}", Op::ffn_act),
      one("ffn_geglu-{L}", Op::ffn_act),
      one("ffn_out-{L}", Op::ffn_down),
      one("ffn_moe_logits-{L}", Op::moe_router, BlockKind::router_logits),
      one("ffn_moe_probs-{L}", Op::moe_router, BlockKind::router_softmax_weight),
      ordered("ffn_moe_weights_softmax-{L}", Op::moe_weights, "ffn_moe_topk-{L}", BlockKind::router_softmax_weight),
      one("ffn_moe_probs-{L}", Op::moe_scores, BlockKind::choice_scores_unbiased),
      one("ffn_moe_probs_biased-{L}", Op::moe_scores, BlockKind::choice_scores_biased),
      ordered("ffn_moe_topk-{L}", Op::moe_ids, "ffn_moe_topk-{L}"),
      ordered("ffn_moe_weights-{L}", Op::moe_weights, "ffn_moe_topk-{L}", BlockKind::expert_weights_plain),
      ordered("ffn_moe_weights_norm-{L}", Op::moe_weights, "ffn_moe_topk-{L}", BlockKind::expert_weights_normalized),
      ordered("ffn_moe_weights_scaled-{L}", Op::moe_weights, "ffn_moe_topk-{L}", BlockKind::expert_weights_scaled),
      one("ffn_moe_out-{L}", Op::moe_out),
      one("ffn_out-{L}", Op::moe_sum, BlockKind::experts_with_shared),
      one("ffn_moe_shexp-{L}", Op::moe_shared, BlockKind::experts_with_shared),
      one("ffn_moe_out_merged-{L}", Op::moe_sum, BlockKind::experts_with_shared),
      one("l_out-{L}", Op::ffn_residual, BlockKind::without_layer_inputs),
      one("l_out-{L}", Op::ple_residual, BlockKind::with_layer_inputs),
      one("result_norm", Op::final_norm),
      one("result_output", Op::logits)};
  return m;
}

struct Preset {
  std::string_view name;
  NameMap (*make)();
};
constexpr Preset kPresets[] = {
    {"tapdiff", [] { return named("tapdiff"); }}, {"hf", hf_map}, {"vllm", vllm_map}, {"llama.cpp", llama_cpp_map}};

// The layer an op outside the blocks has: embed -1, final_norm and logits n_layers.
std::optional<int> fixed_layer(Op op, int n_layers) {
  if (op == Op::embed) return -1;
  if (op == Op::final_norm || op == Op::logits) return n_layers;
  return std::nullopt;
}

// The layer `name` has under `pattern` ("{L}" a layer number in [0, n_layers)), -2 for a pattern
// without "{L}" that is the name, nullopt when it does not match.
std::optional<int> match(std::string_view pattern, std::string_view name, int n_layers) {
  const std::size_t at = pattern.find("{L}");
  if (at == std::string_view::npos) return pattern == name ? std::optional<int>(-2) : std::nullopt;
  const std::string_view prefix = pattern.substr(0, at), suffix = pattern.substr(at + 3);
  if (name.size() <= prefix.size() + suffix.size() || !name.starts_with(prefix) || !name.ends_with(suffix))
    return std::nullopt;
  const std::string_view digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  int layer = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), layer);
  if (error != std::errc() || end != digits.data() + digits.size() || layer < 0 || layer >= n_layers)
    return std::nullopt;
  return layer;
}

// Whether the embedding is the model's embedding module's output: nothing scales it or adds
// positions after that module (`scaled_inside`: or the module scales it itself, as transformers'
// Gemma does).
bool embedding_from_module(const model::ModelConfig& c, bool scaled_inside) {
  return !c.block.learned_positions && (c.block.embed_scale == 1 || scaled_inside);
}
bool hf_embedding_from_module(const model::ModelConfig& c) {
  return embedding_from_module(c, formats::family_spec(c.family).hf.embedding_module_scales);
}

// Whether a layer is a mixture of experts with a shared expert beside it.
bool shared_expert_layer(const model::ModelConfig& c, int layer) {
  return layer >= 0 && model::uses_experts(c, layer) && c.experts.shared_ffn_dim > 0;
}

// A layer where llama.cpp's graph names the attention's output "ffn_norm" (LlamaCppGraph::moe_layers_misname_ffn_norm).
bool ffn_norm_misnamed(const model::ModelConfig& c, int layer) {
  return formats::family_spec(c.family).llama_cpp.moe_layers_misname_ffn_norm && layer >= 0 &&
         model::uses_experts(c, layer);
}

bool qk_named_before_rope(const model::ModelConfig& c) {
  return formats::family_spec(c.family).llama_cpp.qk_named_before_rope;
}

bool dense_ffn_op(Op op) { return op == Op::ffn_gate || op == Op::ffn_up || op == Op::ffn_act || op == Op::ffn_down; }

// Whether the rule holds for the model (and, for a rule of a layer's block, `layer`). A dense FFN's
// ops are never those of a mixture-of-experts layer in place of it (llama.cpp names a shared
// expert's parts as a dense FFN's: those are left unread).
bool applies(const MapRule& rule, const model::ModelConfig& c, int layer) {
  if (layer >= 0 && model::uses_experts(c, layer) && !c.experts.beside_dense &&
      std::any_of(rule.ops.begin(), rule.ops.end(), dense_ffn_op))
    return false;
  switch (rule.block) {
    case BlockKind::any: return true;
    case BlockKind::without_post_norms: return !c.block.post_norms;
    case BlockKind::with_post_norms: return c.block.post_norms;
    case BlockKind::without_layer_inputs: return c.layer_inputs.dim == 0;
    case BlockKind::with_layer_inputs: return c.layer_inputs.dim > 0;
    case BlockKind::experts_beside_dense: return c.experts.beside_dense && layer >= 0 && model::uses_experts(c, layer);
    case BlockKind::without_mlp_bias: return !c.block.mlp_bias;
    case BlockKind::with_mlp_bias: return c.block.mlp_bias;
    case BlockKind::embedding_scaled_in_embd: return !formats::llama_cpp_gemma_graph(c);
    case BlockKind::projections_fused: return formats::family_spec(c.family).llama_cpp.fused_projections;
    case BlockKind::projections_apart:
      return !formats::family_spec(c.family).llama_cpp.fused_projections && !c.latent();
    // llama.cpp scales the weights by Gemma 4's experts' learned scales later, unnamed
    case BlockKind::expert_weights_plain:
      return !c.experts.normalize && c.experts.scale == 1.0 && !c.experts.expert_scales;
    case BlockKind::expert_weights_normalized:
      return c.experts.normalize && c.experts.scale == 1.0 && !c.experts.expert_scales;
    case BlockKind::expert_weights_scaled: return c.experts.scale != 1.0 && !c.experts.expert_scales;
    case BlockKind::embedding_module_output: return hf_embedding_from_module(c);
    case BlockKind::embedding_completed_outside: return !hf_embedding_from_module(c);
    case BlockKind::embedding_unscaled: return embedding_from_module(c, false);
    case BlockKind::choice_scores_unbiased: return model::has_choice_scores(c) && !c.experts.selection_bias;
    case BlockKind::choice_scores_biased: return c.experts.selection_bias;
    case BlockKind::router_logits: return !formats::family_spec(c.family).llama_cpp.softmax_weight_gating;
    case BlockKind::router_softmax_weight: return formats::family_spec(c.family).llama_cpp.softmax_weight_gating;
    case BlockKind::experts_with_shared: return shared_expert_layer(c, layer);
    case BlockKind::shared_expert_ungated: return shared_expert_layer(c, layer) && !c.experts.shared_gate;
    case BlockKind::queries_rotated_apart:
      return !formats::family_spec(c.family).llama_cpp.fused_projections && !c.latent() && !qk_named_before_rope(c) &&
             (layer < 0 || model::has_rope_q(c, layer));
    case BlockKind::queries_plain_apart:
      return !formats::family_spec(c.family).llama_cpp.fused_projections && !c.latent() && layer >= 0 &&
             (!model::has_rope_q(c, layer) || qk_named_before_rope(c));
    case BlockKind::keys_rotated:
      return !c.latent() && !qk_named_before_rope(c) && (layer < 0 || model::uses_rope(c, layer));
    case BlockKind::keys_plain:
      return !c.latent() && layer >= 0 && (!model::uses_rope(c, layer) || qk_named_before_rope(c));
    case BlockKind::attn_out_projection: return !formats::family_spec(c.family).llama_cpp.attn_out_after_residual;
    case BlockKind::attn_out_residual: return formats::family_spec(c.family).llama_cpp.attn_out_after_residual;
    case BlockKind::qk_normed_before_rope:
      return qk_named_before_rope(c) && !c.block.qk_norm_after_rope && (layer < 0 || model::has_qk_norm(c, layer));
    case BlockKind::latent_attention: return c.latent();
    case BlockKind::qk_normed_after_rope:
      return c.block.qk_norm_after_rope && (layer < 0 || model::has_qk_norm(c, layer));
    case BlockKind::ffn_norm_as_named: return !ffn_norm_misnamed(c, layer);
    case BlockKind::attn_out_as_ffn_norm: return ffn_norm_misnamed(c, layer) && layer < c.n_layers - 1;
  }
  return false;
}

std::string with_layer(const std::string& pattern, int layer) {
  const std::size_t at = pattern.find("{L}");
  return at == std::string::npos ? pattern : pattern.substr(0, at) + std::to_string(layer) + pattern.substr(at + 3);
}

// "LAYER/OP", as /taps names a tap.
std::optional<model::TensorId> tap_name(std::string_view name) {
  const std::size_t slash = name.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  int layer = 0;
  const std::string_view digits = name.substr(0, slash);
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), layer);
  const std::optional<Op> op = model::op_from_name(name.substr(slash + 1));
  if (error != std::errc() || end != digits.data() + digits.size() || !op) return std::nullopt;
  return model::TensorId{*op, layer};
}

[[noreturn]] void bad_map(const std::filesystem::path& path, std::string_view key, std::string_view expected,
                          std::string_view found) {
  throw FormatError(fmt::format("{}: '{}': expected {}, found {}", path.string(), model::printable(key), expected,
                                model::printable(found)));
}

Op op_named(const std::filesystem::path& path, std::string_view key, const toml::node& node) {
  const auto name = node.value<std::string>();
  const std::optional<Op> op = name ? model::op_from_name(*name) : std::nullopt;
  if (!op) bad_map(path, key, "an op name (docs/dump-format.md)", name ? fmt::format("'{}'", *name) : "another type");
  return *op;
}

std::vector<std::string> names_of(const std::filesystem::path& path, std::string_view key, const toml::node& node) {
  if (const auto s = node.value<std::string>()) return {*s};
  std::vector<std::string> out;
  if (const toml::array* a = node.as_array())
    for (const toml::node& n : *a) {
      const auto s = n.value<std::string>();
      if (!s) bad_map(path, key, "an array of names (strings)", "an item of another type");
      out.push_back(*s);
    }
  if (out.empty()) bad_map(path, key, "a name or an array of names", "something else");
  return out;
}

}  // namespace

std::vector<std::string_view> preset_names() {
  std::vector<std::string_view> out;
  for (const Preset& p : kPresets) out.push_back(p.name);
  return out;
}

NameMap preset_map(std::string_view name) {
  for (const Preset& p : kPresets)
    if (p.name == name) return p.make();
  throw UsageError(fmt::format("--map {}: expected one of {} or a TOML map file (docs/import.md)", name,
                               fmt::join(preset_names(), ", ")));
}

NameMap map_from_toml(const std::filesystem::path& path) {
  const std::string text = model::read_regular_file(path, "name map");
  model::check_toml_text(text, path.string());
  toml::table t;
  try {
    t = toml::parse(text, path.string());
  } catch (const toml::parse_error& e) {
    throw FormatError(
        fmt::format("{}: expected a TOML name map, found a parse error: {}", path.string(), e.description()));
  }
  NameMap m = named(path.string());
  if (const toml::node* base = t.get("base")) {
    const auto name = base->value<std::string>();
    if (!name) bad_map(path, "base", "a preset name", "another type");
    m = preset_map(*name);
    m.name = path.string();
  }
  std::vector<MapRule> added;  // the file's rules in its order; the last one first in m.rules
  for (const auto& [key, node] : t) {
    const std::string k(key.str());
    if (k == "base") continue;
    if (k == "layout") {
      m.hf_layout = false;
      const auto v = node.value<std::string>();
      if (v == "rotate_half")
        m.layout = model::RopeStyle::rotate_half;
      else if (v == "interleaved")
        m.layout = model::RopeStyle::interleaved;
      else if (v == "model")
        m.layout = std::nullopt;
      else
        bad_map(path, k, "rotate_half, interleaved or model", v ? fmt::format("'{}'", *v) : "another type");
    } else if (k == "heads_first") {
      const auto v = node.value<bool>();
      if (!v) bad_map(path, k, "true or false", "another type");
      m.heads_first = *v;
    } else if (k == "tokens" || k == "positions" || k == "decode") {
      (k == "tokens" ? m.tokens : k == "positions" ? m.positions : m.decode) = names_of(path, k, node);
    } else if (k == "taps") {
      const toml::table* taps = node.as_table();
      if (taps == nullptr) bad_map(path, k, "a table of NAME = OP or NAME = [OPS]", "another type");
      for (const auto& [name, value] : *taps) {
        const std::string where = fmt::format("taps.\"{}\"", name.str());
        if (const toml::array* ops = value.as_array()) {
          MapRule rule = split(std::string(name.str()), {});
          for (const toml::node& op : *ops) rule.ops.push_back(op_named(path, where, op));
          if (rule.ops.size() < 2) bad_map(path, where, "two ops or more for a split array", "fewer");
          added.push_back(std::move(rule));
        } else {
          added.push_back(one(std::string(name.str()), op_named(path, where, value)));
        }
      }
    } else if (k == "sums") {
      const toml::table* sums = node.as_table();
      if (sums == nullptr) bad_map(path, k, "a table of OP = [NAME, NAME]", "another type");
      for (const auto& [op_key, value] : *sums) {
        const std::string where = fmt::format("sums.{}", op_key.str());
        const std::optional<Op> op = model::op_from_name(op_key.str());
        if (!op) bad_map(path, where, "an op name (docs/dump-format.md)", fmt::format("'{}'", op_key.str()));
        const std::vector<std::string> names = names_of(path, where, value);
        if (names.size() != 2) bad_map(path, where, "two names", std::to_string(names.size()));
        added.push_back(sum(names[0], *op, names[1]));
      }
    } else if (k != "orders") {
      bad_map(path, k, "base, layout, heads_first, tokens, positions, decode, [taps], [sums] or [orders]",
              "an unknown key");
    }
  }
  m.rules.insert(m.rules.begin(), std::make_move_iterator(added.rbegin()), std::make_move_iterator(added.rend()));
  if (const toml::node* orders = t.get("orders")) {  // after [taps]: it names their arrays
    const toml::table* table = orders->as_table();
    if (table == nullptr) bad_map(path, "orders", "a table of NAME = IDS_NAME", "another type");
    for (const auto& [key, value] : *table) {
      const std::string name(key.str());  // a copy: clang 14 lets no lambda capture a structured binding
      const std::string where = fmt::format("orders.\"{}\"", name);
      const auto ids = value.value<std::string>();
      if (!ids) bad_map(path, where, "the name of an array of expert ids", "another type");
      const auto rule = std::find_if(m.rules.begin(), m.rules.end(),
                                     [&](const MapRule& r) { return r.pattern == name && r.combine == Combine::one; });
      if (rule == m.rules.end()) bad_map(path, where, "the name of an array the map reads as one op", "another name");
      rule->order = *ids;
    }
  }
  if (t.contains("taps") || t.contains("sums")) m.llama_cpp_names = false;  // the user's names for their model
  return m;
}

namespace {

// A module's name (with a hook's ":input" or a tuple member's ".0") as Llama's, where the map's
// names are the family's (NameMap::family_names): the renames read names with a dot after them.
std::string as_llama(const NameMap& map, std::string_view name, const model::ModelConfig& config) {
  if (!map.family_names) return std::string(name);
  const std::size_t colon = std::min(name.find(':'), name.size());
  std::string renamed =
      formats::hf_llama_name(std::string(name.substr(0, colon)) + ".", formats::family_spec(config.family).hf);
  renamed.pop_back();
  return renamed + std::string(name.substr(colon));
}

// A rule's other array (a sum's partner, the expert ids its rows are read in the order of) as the
// file names it: where the rule's two names differ only after their common beginning (vLLM's
// "model.layers.{L}.0" and ".1"; a router's ".1" and ".2"), the array's own name with that end
// replaced, so a name the family renamed (NameMap::family_names) finds its file's other array.
std::string other_in_file(std::string_view name, const std::string& pattern, const std::string& partner) {
  const auto common = static_cast<std::size_t>(
      std::mismatch(pattern.begin(), pattern.end(), partner.begin(), partner.end()).first - pattern.begin());
  const std::string_view own_end = std::string_view(pattern).substr(common);
  if (!name.ends_with(own_end)) return partner;
  return std::string(name.substr(0, name.size() - own_end.size())) + partner.substr(common);
}

}  // namespace

void require_map_fits(const NameMap& map, const model::ModelConfig& config) {
  if (!map.llama_cpp_names || formats::family_spec(config.family).llama_cpp.names_mapped) return;
  std::vector<std::string_view> names;
  for (const formats::FamilySpec* f : formats::all_families())
    if (f->llama_cpp.names_mapped) names.push_back(model::family_name(f->family));
  throw UsageError(fmt::format(
      "--map {}: its names are those of {}'s graphs, not {}'s: give the names {}'s graph "
      "writes in a TOML map (docs/import.md)",
      map.name, fmt::join(names, ", "), model::family_name(config.family), model::family_name(config.family)));
}

std::optional<model::RopeStyle> values_layout(const NameMap& map, const model::ModelConfig& config) {
  // Latent attention's checkpoints hold each head's RoPE channels (its last ones) in the order their
  // config states (DeepSeek-V3's rope_interleave): the model's own.
  if (config.latent()) {
    if (!map.hf_layout && map.layout && *map.layout != config.rope_style)
      throw UsageError(
          fmt::format("--map {}: layout {}: a latent attention model's q/k channels are read in the "
                      "model's own order, {}",
                      map.name, model::rope_style_name(*map.layout), model::rope_style_name(config.rope_style)));
    return std::nullopt;
  }
  if (map.hf_layout) return formats::family_spec(config.family).hf.rope_style;
  return map.layout;
}

std::optional<Resolved> resolve(const NameMap& map, std::string_view file_name, const model::ModelConfig& config) {
  const std::string llama = as_llama(map, file_name, config);
  const std::string_view name = llama;
  for (const MapRule& rule : map.rules) {
    const std::optional<int> layer = match(rule.pattern, name, config.n_layers);
    if (!layer || !applies(rule, config, *layer)) continue;
    const auto in_file = [&](const std::string& other) {
      return *layer >= 0 ? other_in_file(file_name, with_layer(rule.pattern, *layer), with_layer(other, *layer))
                         : other_in_file(file_name, rule.pattern, other);
    };
    Resolved r{{},
               rule.combine,
               rule.combine != Combine::sum ? std::string() : in_file(rule.partner),
               rule.order.empty() ? std::string() : in_file(rule.order)};
    for (const Op op : rule.ops) {
      const std::optional<int> fixed = fixed_layer(op, config.n_layers);
      if (*layer == -2 && !fixed) continue;  // a block op needs "{L}" in its pattern
      r.ids.push_back({op, fixed.value_or(*layer)});
    }
    if (r.ids.size() == rule.ops.size()) return r;
  }
  if (const std::optional<model::TensorId> id = tap_name(name)) return Resolved{{*id}, Combine::one, "", ""};
  return std::nullopt;
}

bool is_sum_partner(const NameMap& map, std::string_view file_name, const model::ModelConfig& config) {
  const std::string name = as_llama(map, file_name, config);
  for (const MapRule& rule : map.rules)
    if (const std::optional<int> layer =
            rule.combine == Combine::sum ? match(rule.partner, name, config.n_layers) : std::nullopt;
        layer && applies(rule, config, *layer))
      return true;
  return false;
}

}  // namespace tapdiff::dumps
