// Llama 4 (its text decoder, llama4_text): Llama's RMSNorm block with RoPE on interleaved pairs, and
// - layers without RoPE (NoPE) where no_rope_layers says 0 (absent: every no_rope_layer_interval-th
//   layer), whose q is scaled by the attention temperature where attn_temperature_tuning (its
//   default): 1 + attn_scale * ln(1 + floor((pos + 1) / floor_scale));
// - on the layers that rotate, q and k RMS-normed per head after RoPE without a weight (its
//   L2Norm) where use_qk_norm, and attention in chunks (layer_types' chunked_attention; absent:
//   the RoPE layers where attention_chunk_size is set): a query sees the keys of its own chunk of
//   attention_chunk_size positions only;
// - the mixture in the layers moe_layers lists (absent: every interleave_moe_layer_step-th), its
//   experts intermediate_size wide: the router's top num_experts_per_tok logits, each expert's input
//   the token's times the sigmoid of its logit, the outputs added unweighted to a shared expert's
//   (intermediate_size wide) of the token's input; the dense layers' FFN intermediate_size_mlp wide.
// transformers saves the experts as feed_forward.experts.gate_up_proj [experts, dim, 2 ffn], gate's
// columns then up's, and down_proj [experts, ffn, dim] (HfExpertLayout::transposed_halves).
// Its GGUF (llama4), as llama.cpp builds it: every fourth layer without RoPE, chunks of 8192 and the
// temperature 1 + 0.1 ln(1 + floor((pos + 1) / 8192)), its fixed numbers (attention.sliding_window,
// which it reads only to drop them where 0, or sets to 8192, is refused at any other value); the
// layers (l + 1) % interleave_moe_layer_step == 0 mixtures of expert_feed_forward_length-wide experts
// beside a shared expert as wide, chosen on the logits' sigmoids (transformers: on the logits); the
// q/k norms unless the model has 128 experts (Maverick).
#include <fmt/format.h>

#include "formats/family_spec.h"
#include "formats/gguf_keys.h"
#include "formats/hf_keys.h"

namespace tapdiff::formats {

using namespace model;

namespace {

using nlohmann::json;

// The q/k norm, the router and the shared expert.
void llama4_block(ModelConfig& c) {
  c.block.qk_norm = QkNorm::per_head_plain;
  c.block.qk_norm_after_rope = true;
  c.experts.score = RouterScore::sigmoid;
  c.experts.normalize = false;
  c.experts.weights_scale_input = true;
  c.experts.shared_ffn_dim = c.experts.ffn_dim;
}

// moe_layers, the indices of the MoE layers; absent or null, every step-th layer from step - 1 on.
std::vector<bool> read_moe_layers(KeyReader& k, int n_layers) {
  const int step = k.integer("interleave_moe_layer_step", 1);
  if (step < 1) k.fail("interleave_moe_layer_step", "a step >= 1", std::to_string(step));
  std::vector<bool> moe(static_cast<std::size_t>(n_layers));
  const json* listed = k.find("moe_layers");
  if (listed == nullptr || listed->is_null()) {
    for (int l = step - 1; l < n_layers; l += step) moe[static_cast<std::size_t>(l)] = true;
    return moe;
  }
  if (!listed->is_array()) k.fail("moe_layers", "an array of layer indices", json_excerpt(*listed));
  for (const json& l : *listed) {
    if (!l.is_number_integer() || l.get<std::int64_t>() < 0 || l.get<std::int64_t>() >= n_layers)
      k.fail("moe_layers", fmt::format("layer indices below num_hidden_layers, {}", n_layers), json_excerpt(*listed));
    moe[l.get<std::size_t>()] = true;
  }
  return moe;
}

// Which layers attend in chunks: layer_types (chunked_attention or full_attention); absent, the
// layers that rotate where attention_chunk_size is set, as Llama4TextConfig makes them.
void read_chunked_layers(KeyReader& k, ModelConfig& c) {
  const json* size = k.find("attention_chunk_size");
  const bool sized = size != nullptr && !size->is_null();
  std::vector<bool> chunked =
      read_local_layers(k, c.n_layers, "chunked_attention", [&](int l) { return sized && uses_rope(c, l); });
  if (std::find(chunked.begin(), chunked.end(), true) == chunked.end()) return;
  if (!sized) k.fail("attention_chunk_size", "a chunk size for the chunked_attention layers", "none");
  c.attention_chunk = k.integer("attention_chunk_size");
  if (c.attention_chunk < 1) k.fail("attention_chunk_size", "a chunk of >= 1 positions", json_excerpt(*size));
  if (std::find(chunked.begin(), chunked.end(), false) != chunked.end()) c.chunked_layers = std::move(chunked);
}

void read_hf(KeyReader& k, ModelConfig& c) {
  c.block.activation = read_activation(k, "hidden_act", "silu");
  read_attention_bias(k, c.block);
  no_mlp_bias(k);
  set_rope_layers(c, read_no_rope_layers(k, c));
  read_chunked_layers(k, c);
  const int expert_ffn = c.ffn_dim;  // intermediate_size: each expert's and the shared expert's
  c.ffn_dim = k.integer("intermediate_size_mlp");
  read_experts(k, c, "num_local_experts", "", expert_ffn, false);
  llama4_block(c);
  c.experts.choice_on_logits = true;  // transformers' top k of the logits (llama.cpp's of their sigmoids)
  if (!k.boolean("use_qk_norm", true)) c.block.qk_norm = QkNorm::none;
  set_moe_layers(c, read_moe_layers(k, c.n_layers));
  const double scale = k.number("attn_scale", 0.1);
  const int floor_scale = k.integer("floor_scale", 8192);
  if (k.boolean("attn_temperature_tuning", true)) {
    if (floor_scale < 1) k.fail("floor_scale", "a length >= 1", std::to_string(floor_scale));
    if (!(scale > 0)) k.fail("attn_scale", "a scale > 0", json_excerpt(scale));
    c.query_temperature = {.beta = scale, .length = floor_scale, .offset = 1, .nope_layers = true};
  }
}

// llama.cpp's fixed numbers for Llama 4 (llama-model.cpp).
constexpr int kGgufChunk = 8192, kGgufNoRopeStep = 4;
constexpr QueryTemperature kGgufTemperature{.beta = 0.1, .length = 8192, .offset = 1, .nope_layers = true};

void read_gguf(const GgufFile& f, const std::string& prefix, ModelConfig& c) {
  read_gguf_experts(f, prefix, c, {.ffn_key = "expert_feed_forward_length", .renormalise = false, .required = true});
  const int step = int_key(f, prefix + "interleave_moe_layer_step", std::nullopt);  // llama.cpp requires it
  if (step < 1)
    throw_format_error(fmt::format("{}: metadata '{}interleave_moe_layer_step' = {}: expected a step >= 1",
                                   f.path().string(), prefix, step));
  std::vector<bool> moe(static_cast<std::size_t>(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l) moe[static_cast<std::size_t>(l)] = (l + 1) % step == 0;
  set_moe_layers(c, std::move(moe));
  llama4_block(c);
  if (c.experts.count == 128) c.block.qk_norm = QkNorm::none;  // llama.cpp: use_kq_norm false for Maverick
  const std::string window = prefix + "attention.sliding_window";
  if (const int w = int_key(f, window, kGgufChunk); w != kGgufChunk)
    throw_format_error(
        fmt::format("{}: metadata '{}' = {} is not supported: tapdiff implements llama.cpp's Llama 4 "
                    "chunks of {} positions",
                    f.path().string(), window, w, kGgufChunk));
  c.sliding_window = 0;
  std::vector<bool> rope = rope_but_every(c.n_layers, kGgufNoRopeStep);
  set_rope_layers(c, rope);
  c.attention_chunk = kGgufChunk;
  if (!c.rope_layers.empty()) c.chunked_layers = std::move(rope);
  c.query_temperature = kGgufTemperature;
}

}  // namespace

const FamilySpec& llama4_family() {
  static const FamilySpec spec{
      .family = Family::llama4,
      .hf = {.model_types = {"llama4_text"},
             .read = read_hf,
             .rope_style = RopeStyle::interleaved,
             .layer_names = {{"feed_forward.router.", "mlp.gate."}, {"feed_forward.", "mlp."}},
             .rope_theta = 500000.0,
             .experts = HfExpertLayout::transposed_halves,
             .composites = {{"llama4", {"vision_config", "boi_token_index", "eoi_token_index", "image_token_index"}}}},
      .gguf = {.architectures = {"llama4"},
               .rope_style = RopeStyle::interleaved,
               .keys = {"expert_count", "expert_used_count", "expert_feed_forward_length", "interleave_moe_layer_step"},
               .read = read_gguf},
      .llama_cpp = {.names_mapped = true, .moe_layers_misname_ffn_norm = true},
      .synth = {.block = llama4_block, .experts = true},
  };
  return spec;
}

}  // namespace tapdiff::formats
