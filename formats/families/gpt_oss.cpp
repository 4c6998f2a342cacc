// gpt-oss: Llama's RMSNorm block with biases on q, k, v and o where attention_bias (its default),
// a learned sink logit per head in every attention softmax (self_attn.sinks), layers sliding by
// layer_types (without them: the even layers, sliding_window wide), YaRN by default, and every FFN a
// mixture: the router's logits with their bias, the top num_experts_per_tok of them softmaxed (the
// softmax over all renormalised over the chosen), each expert's gate, up and down with biases and
// the clamped SwiGLU, min(gate, limit) * sigmoid(alpha min(gate, limit)) * (clamp(up, +-limit) + 1)
// of swiglu_alpha and swiglu_limit. transformers saves a layer's experts as mlp.experts.gate_up_proj
// [experts, dim, 2 ffn] with gate and up in alternate columns and down_proj [experts, ffn, dim]
// (HfExpertLayout::transposed_alternating), and the router as mlp.router; its released checkpoints
// hold the experts in MXFP4 (quantization_config). Its hidden_act is never used: the
// experts compute the clamped SwiGLU whatever it says, and so does tapdiff.
// Its GGUF (gpt-oss, llama.cpp's openai_moe): attn_sinks, the FFN's norm named
// post_attention_norm, biases on the router (ffn_gate_inp.bias) and the experts (ffn_*_exps.bias
// [ffn, experts]), each expert expert_feed_forward_length wide (required), the clamp at llama.cpp's fixed
// alpha 1.702 and limit 7, layers sliding by attention.sliding_window_pattern (absent: 2, the even
// layers) attention.sliding_window wide; a sliding layers' base of their own (rope.freq_base_swa
// apart from rope.freq_base) is refused.
#include <fmt/format.h>

#include "formats/family_spec.h"
#include "formats/gguf_keys.h"
#include "formats/hf_keys.h"

namespace tapdiff::formats {

using namespace model;

namespace {

// What both formats and synth share beyond their keys: the sinks, the clamped SwiGLU and the biases.
void gpt_oss_block(ModelConfig& c) {
  c.block.attention_sinks = true;
  c.block.activation = Activation::swiglu_oai;
  c.block.o_bias = true;
  c.experts.normalize = c.experts.router_bias = c.experts.biases = true;
}

// Its released checkpoints' experts in MXFP4 (formats/hf_experts.h): quant_method mxfp4, every
// other tensor unquantized (modules_to_not_convert names them; their types tell it anyway).
void read_quantization(KeyReader& k) {
  const nlohmann::json* q = k.find("quantization_config");
  if (q == nullptr || q->is_null()) return;
  if (!q->is_object()) k.fail("quantization_config", "an object", model::json_excerpt(*q));
  KeyReader quantization(*q, k.source() + ": quantization_config");
  if (quantization.find("quant_method") == nullptr)
    quantization.fail("quant_method", "\"mxfp4\" (gpt-oss's experts)", "no such key");
  quantization.require_value("quant_method", "mxfp4", "gpt-oss's experts in MXFP4 blocks");
  quantization.find("modules_to_not_convert");
  quantization.refuse_unread_keys({});
}

void read_hf(KeyReader& k, ModelConfig& c) {
  read_experts(k, c, "num_local_experts", "", c.ffn_dim, true);
  read_quantization(k);
  gpt_oss_block(c);
  c.block.qkv_bias = c.block.o_bias = k.boolean("attention_bias", true);
  // null: transformers' config refuses it (a float field)
  c.block.swiglu = {.alpha = k.number_not_null("swiglu_alpha", 1.702), .limit = k.number_not_null("swiglu_limit", 7.0)};
  k.find("hidden_act");        // not used by the model (above)
  k.number("sliding_window");  // required: the config class's default (128) is not tapdiff's to assume
  read_layer_types(k, c, true, [](int l) { return l % 2 == 0; });
}

void read_gguf(const GgufFile& f, const std::string& prefix, ModelConfig& c) {
  // llama.cpp's gpt-oss requires each expert's width: no fallback to feed_forward_length
  int_key(f, prefix + "expert_feed_forward_length", std::nullopt);
  read_gguf_experts(f, prefix, c, {.ffn_key = "expert_feed_forward_length", .required = true});
  gpt_oss_block(c);
  c.block.qkv_bias = has_layer_tensor(f, "attn_q.bias");
  c.sliding_window = int_key(f, prefix + "attention.sliding_window", std::nullopt);
  read_gguf_sliding_layers(f, prefix, c, 2);
  const std::string swa_base = prefix + "rope.freq_base_swa";
  if (const auto base = f.get_float(swa_base); base && *base != c.rope_base)
    throw_format_error(
        fmt::format("{}: metadata '{}' = {} is not supported: tapdiff implements gpt-oss's sliding "
                    "layers rotated with {}rope.freq_base, {}",
                    f.path().string(), swa_base, *base, prefix, c.rope_base));
}

}  // namespace

const FamilySpec& gpt_oss_family() {
  static const FamilySpec spec{
      .family = Family::gpt_oss,
      .hf = {.model_types = {"gpt_oss"},
             .read = read_hf,
             .layer_names = {{"mlp.router.", "mlp.gate."}},
             .rope_theta = 150000.0,
             .rope_required = true,
             .experts = HfExpertLayout::transposed_alternating},
      .gguf = {.architectures = {"gpt-oss"},
               .rope_style = RopeStyle::rotate_half,
               .keys = {"expert_count", "expert_used_count", "expert_feed_forward_length", "attention.sliding_window",
                        "attention.sliding_window_pattern", "rope.freq_base_swa"},
               .read = read_gguf,
               .yarn = true,
               .layer_name = [](std::string_view name, const ModelConfig&) -> std::string_view {
                 return name == "post_attention_norm.weight" ? "ffn_norm.weight" : name;
               }},
      .llama_cpp = {.names_mapped = true, .softmax_weight_gating = true},
      .synth = {.block =
                    [](ModelConfig& c) {
                      gpt_oss_block(c);
                      c.block.qkv_bias = true;
                      c.sliding_window = 128;
                      c.sliding_layers.assign(static_cast<std::size_t>(c.n_layers), false);
                      for (int l = 0; l < c.n_layers; l += 2) c.sliding_layers[static_cast<std::size_t>(l)] = true;
                    },
                .experts = true,
                .ffn_norm = "post_attention_norm",
                .expert_gain = 8},
  };
  return spec;
}

}  // namespace tapdiff::formats
