// Hugging Face config.json -> ModelConfig, as transformers 4.x and 5.x write it. Every key is
// accounted for: read (its meaning implemented, or a value whose meaning is not refused by name),
// or known not to change the forward pass. Any other key is refused: a model is computed as its
// library computes it, or not at all.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "model/errors.h"
#include "model/json_input.h"
#include "model/safetensors_reader.h"

namespace tapdiff::model {
namespace {

using nlohmann::json;
constexpr int kIntMax = std::numeric_limits<int>::max();

// Keys that do not change the forward pass of a decoder run without dropout, without cache
// quirks, on given token ids: bookkeeping, training, generation and pipeline settings.
const std::set<std::string_view>& no_math_keys() {
  static const std::set<std::string_view> keys = {
      "_name_or_path", "add_cross_attention", "architectures", "attention_dropout", "bad_words_ids",
      "begin_suppress_tokens", "cache_implementation", "chunk_size_feed_forward", "cross_attention_hidden_size",
      "decoder_start_token_id", "diversity_penalty", "do_sample", "dtype", "early_stopping", "embd_pdrop",
      "encoder_no_repeat_ngram_size", "exponential_decay_length_penalty", "finetuning_task", "forced_bos_token_id",
      "forced_eos_token_id", "id2label", "initializer_range", "is_decoder", "is_encoder_decoder", "label2id",
      "length_penalty", "max_length", "min_length", "no_repeat_ngram_size", "num_beam_groups", "num_beams",
      "num_return_sequences", "output_attentions", "output_hidden_states", "output_scores", "pad_token_id", "prefix",
      "pretraining_tp", "problem_type", "pruned_heads", "remove_invalid_values", "repetition_penalty", "resid_pdrop",
      "return_dict", "return_dict_in_generate", "sep_token_id", "suppress_tokens", "task_specific_params",
      "temperature", "tf_legacy_loss", "tie_encoder_decoder", "tokenizer_class", "top_k", "top_p", "torch_dtype",
      "torchscript", "transformers_version", "typical_p", "use_bfloat16", "use_cache",
      // MoE training: the auxiliary loss, and router noise applied in training only
      "output_router_logits", "router_aux_loss_coef", "router_jitter_noise"};
  return keys;
}

// Reads one JSON object's keys, remembering which were read; the base of the config and RoPE readers.
class KeyReader {
 public:
  KeyReader(const json& j, std::string source) : j_(j), source_(std::move(source)) {}

  const json* find(const std::string& key) {
    read_.insert(key);
    const auto it = j_.find(key);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }
  int integer(const std::string& key, std::optional<int> fallback = std::nullopt) {
    const json* v = find(key);
    if (v == nullptr) return fallback ? *fallback : fail(key, "an integer", "no such key");
    if (!v->is_number_integer() || v->get<std::int64_t>() < 0 || v->get<std::int64_t>() > kIntMax)
      fail(key, "a non-negative integer", json_excerpt(*v));
    return v->get<int>();
  }
  double number(const std::string& key, std::optional<double> fallback = std::nullopt) {
    const json* v = find(key);
    if (v == nullptr) return fallback ? *fallback : fail(key, "a number", "no such key");
    if (!v->is_number() || !std::isfinite(v->get<double>())) fail(key, "a finite number", json_excerpt(*v));
    return v->get<double>();
  }
  // A number that null switches off: absent -> fallback, null -> 0, else the number.
  double number_or_off(const std::string& key, double fallback) {
    read_.insert(key);
    const auto it = j_.find(key);
    if (it == j_.end()) return fallback;
    return it->is_null() ? 0.0 : number(key);
  }
  bool boolean(const std::string& key, bool fallback) {
    const json* v = find(key);
    if (v == nullptr) return fallback;
    if (!v->is_boolean()) fail(key, "true or false", json_excerpt(*v));
    return v->get<bool>();
  }
  std::vector<double> numbers(const std::string& key) {
    const json* v = find(key);
    if (v == nullptr || !v->is_array()) fail(key, "an array of numbers", v ? json_excerpt(*v) : "no such key");
    std::vector<double> out;
    for (const json& x : *v) {
      if (!x.is_number() || !std::isfinite(x.get<double>())) fail(key, "an array of finite numbers", json_excerpt(*v));
      out.push_back(x.get<double>());
    }
    return out;
  }
  // A token id, or the first of an array of ids; -1 when absent.
  int token(const std::string& key) {
    const json* v = find(key);
    if (v != nullptr && v->is_array()) v = v->empty() ? nullptr : &v->front();
    if (v == nullptr) return -1;
    if (!v->is_number_integer() || v->get<std::int64_t>() < 0 || v->get<std::int64_t>() > kIntMax)
      fail(key, "a token id or an array of them", json_excerpt(*v));
    return v->get<int>();
  }
  // Refuses `key` unless absent, null or equal to `supported`.
  void require_value(const std::string& key, const json& supported, std::string_view meaning) {
    if (const json* v = find(key); v != nullptr && *v != supported)
      unsupported(key, *v, fmt::format("{} only ({})", supported.dump(), meaning));
  }
  // Refuses every key that was not read, is not null (as absent) and is not in `harmless`.
  void refuse_unread_keys(const std::set<std::string_view>& harmless) const {
    for (const auto& [key, value] : j_.items())
      if (!value.is_null() && !read_.contains(key) && !harmless.contains(key))
        unsupported(key, value, "only the keys whose meaning it implements (docs/models.md)");
  }
  [[noreturn]] int fail(const std::string& key, std::string_view expected, const std::string& found) const {
    throw_format_error(fmt::format("{}: '{}': expected {}, found {}", source_, key, expected, found));
  }
  [[noreturn]] void unsupported(const std::string& key, const json& value, std::string_view supported) const {
    throw_format_error(fmt::format("{}: '{}' = {} is not supported: tapdiff implements {}", source_, key,
                                   json_excerpt(value), supported));
  }

 private:
  const json& j_;
  std::string source_;
  std::set<std::string> read_;
};

// transformers' YaRN attention factor: given, or from mscale / mscale_all_dim, or 0.1 ln(factor) + 1.
double yarn_attention_factor(KeyReader& r, double factor) {
  auto mscale = [&](double m) { return factor <= 1.0 ? 1.0 : 0.1 * m * std::log(factor) + 1.0; };
  if (r.find("attention_factor") != nullptr) return r.number("attention_factor");
  const double m = r.number("mscale", 0.0), m_all = r.number("mscale_all_dim", 0.0);
  return m != 0.0 && m_all != 0.0 ? mscale(m) / mscale(m_all) : mscale(1.0);
}

// One RoPE parameter object (5.x rope_parameters, or 4.x rope_scaling) into c.rope_scaling, as
// transformers' rope initialisation functions read it; its unknown keys are refused.
void read_rope_object(const json& object, const std::string& where, double max_position, double top_original,
                      ModelConfig& c) {
  KeyReader r(object, where);
  RopeScaling& s = c.rope_scaling;
  const json* type = r.find("rope_type");
  if (type == nullptr) type = r.find("type");
  const std::string name = type == nullptr ? "default" : type->is_string() ? type->get<std::string>() : "";
  static constexpr std::pair<std::string_view, RopeType> kTypes[] = {
      {"default", RopeType::standard}, {"linear", RopeType::linear}, {"dynamic", RopeType::dynamic},
      {"yarn", RopeType::yarn},        {"llama3", RopeType::llama3}, {"longrope", RopeType::longrope}};
  const auto* known =
      std::find_if(std::begin(kTypes), std::end(kTypes), [&](const auto& t) { return t.first == name; });
  if (known == std::end(kTypes))
    r.unsupported("rope_type", type ? *type : json(name), "default, linear, dynamic, yarn, llama3 and longrope");
  s.type = known->second;
  r.find("type");  // 4.x's older name, read too: transformers takes rope_type when both are present
  if (r.find("rope_theta") != nullptr) c.rope_base = r.number("rope_theta");
  if (r.find("partial_rotary_factor") != nullptr)
    c.rotary_dim = static_cast<int>(c.head_dim * r.number("partial_rotary_factor"));
  // A top-level original_max_position_embeddings (Phi-3) takes the place of the object's, as
  // transformers' standardize_rope_params puts it there.
  const double inner_original = r.number("original_max_position_embeddings", max_position);
  const double original = top_original > 0 ? top_original : inner_original;
  switch (s.type) {
    case RopeType::standard: break;
    case RopeType::linear: s.factor = r.number("factor"); break;
    case RopeType::dynamic:
      s.factor = r.number("factor");
      s.original_context = static_cast<int>(max_position);  // transformers grows past max_position_embeddings
      break;
    case RopeType::yarn:
      s.original_context = static_cast<int>(original);
      s.factor = r.find("factor") != nullptr ? r.number("factor") : max_position / original;
      s.attention_factor = yarn_attention_factor(r, s.factor);
      s.beta_fast = r.number("beta_fast", 32.0), s.beta_slow = r.number("beta_slow", 1.0);
      s.truncate = r.boolean("truncate", true);
      break;
    case RopeType::llama3:
      s.original_context = static_cast<int>(original);
      s.factor = r.number("factor");
      s.low_freq_factor = r.number("low_freq_factor"), s.high_freq_factor = r.number("high_freq_factor");
      break;
    case RopeType::longrope:
      s.original_context = static_cast<int>(original);
      s.factor = r.find("factor") == nullptr ? max_position / original : r.number("factor");
      s.short_factor = r.numbers("short_factor"), s.long_factor = r.numbers("long_factor");
      s.attention_factor = r.find("attention_factor") != nullptr ? r.number("attention_factor")
                           : s.factor <= 1.0                     ? 1.0
                                             : std::sqrt(1.0 + std::log(s.factor) / std::log(original));
      break;
  }
  r.refuse_unread_keys({});
}

// RoPE parameters per layer type (5.x's rope_parameters of Gemma 3: {"full_attention": {...},
// "sliding_attention": {...}}): the full layers' into c, the sliding layers' into c.sliding_rope.
// A type left out is the default RoPE with the family's base for it.
void read_rope_per_layer_type(const json& p, const std::string& where, double max_position, double top_original,
                              ModelConfig& c) {
  KeyReader types(p, where);
  auto object = [&](const std::string& key) {
    const json* v = types.find(key);
    if (v != nullptr && !v->is_object()) types.fail(key, "an object", json_excerpt(*v));
    return v;
  };
  const json* full = object("full_attention");
  const json* sliding = object("sliding_attention");
  types.refuse_unread_keys({});
  ModelConfig local = c;
  local.rope_base = c.sliding_rope ? c.sliding_rope->base : c.rope_base;
  if (full != nullptr) read_rope_object(*full, where + ": full_attention", max_position, top_original, c);
  if (sliding != nullptr) read_rope_object(*sliding, where + ": sliding_attention", max_position, top_original, local);
  if (local.rotary_dim != c.rotary_dim)
    types.fail("sliding_attention", fmt::format("the full layers' rotary dimension, {}", c.rotary_dim),
               fmt::format("{} (partial_rotary_factor)", local.rotary_dim));
  c.sliding_rope = SlidingRope{local.rope_base, local.rope_scaling};
}

// The RoPE parameters: 5.x's rope_parameters object, or 4.x's top-level rope_theta,
// partial_rotary_factor and rope_scaling (an object or null). `sliding_base`: the base of a family
// whose sliding layers have their own RoPE (Gemma 3), else 0; such a family's rope_parameters may
// also be per layer type, its rope_scaling is the full layers'.
void read_rope(KeyReader& k, const std::string& source, double default_base, double sliding_base, ModelConfig& c) {
  const json* params = k.find("rope_parameters");
  const json* scaling = k.find("rope_scaling");
  if (params != nullptr && scaling != nullptr)
    k.fail("rope_scaling", "either rope_parameters (5.x) or rope_scaling (4.x)", "both");
  c.rope_base = k.number("rope_theta", default_base);
  c.rotary_dim = static_cast<int>(c.head_dim * k.number("partial_rotary_factor", 1.0));
  if (sliding_base > 0) c.sliding_rope = SlidingRope{k.number("rope_local_base_freq", sliding_base), {}};
  const double max_position = k.integer("max_position_embeddings", 0);
  const double top_original = k.integer("original_max_position_embeddings", 0);
  const json* p = params != nullptr ? params : scaling;
  const std::string name = params != nullptr ? "rope_parameters" : "rope_scaling";
  if (p != nullptr && !p->is_object()) k.fail(name, "an object", json_excerpt(*p));
  const bool per_layer_type = p != nullptr && (p->contains("full_attention") || p->contains("sliding_attention"));
  if (per_layer_type && (sliding_base == 0 || params == nullptr))
    k.unsupported(name, *p, "RoPE parameters per layer type in Gemma 3's rope_parameters only");
  if (per_layer_type)
    read_rope_per_layer_type(*p, source + ": " + name, max_position, top_original, c);
  else if (p != nullptr)
    read_rope_object(*p, source + ": " + name, max_position, top_original, c);
  if (c.rotary_dim == c.head_dim) c.rotary_dim = 0;
}

// A per-layer key, if present: an array of one entry per layer (`what` names the entries), else
// FormatError naming the key.
const json* per_layer_array(KeyReader& k, const std::string& key, int n_layers, std::string_view what) {
  const json* v = k.find(key);
  if (v != nullptr && (!v->is_array() || std::ssize(*v) != n_layers))
    k.fail(key, fmt::format("an array of {} {} (num_hidden_layers)", n_layers, what), json_excerpt(*v));
  return v;
}

// Which layers slide, from 5.x's layer_types ("full_attention" or "sliding_attention" per layer)
// or, where a 4.x config has none, the family's own rule; sliding_window is their window (absent:
// the config class's 4096; null, or not `enabled`: none, every layer attends fully, as
// transformers does). Where the sliding layers have their own RoPE, the types are always kept.
void read_layer_types(KeyReader& k, ModelConfig& c, bool enabled, const std::function<bool(int)>& slides_by_default) {
  std::vector<bool> slides(static_cast<std::size_t>(c.n_layers));
  if (const json* types = per_layer_array(k, "layer_types", c.n_layers, "layer types")) {
    for (std::size_t l = 0; l < slides.size(); ++l) {
      const json& t = (*types)[l];
      if (t != "full_attention" && t != "sliding_attention")
        k.unsupported("layer_types", t, "full_attention and sliding_attention");
      slides[l] = t == "sliding_attention";
    }
  } else {
    for (int l = 0; l < c.n_layers; ++l) slides[static_cast<std::size_t>(l)] = slides_by_default(l);
  }
  const double window = k.number_or_off("sliding_window", 4096);
  if (window != std::floor(window) || window < 0 || window > kIntMax)
    k.fail("sliding_window", "a window of tokens, a non-negative integer", json_excerpt(window));
  const auto sliding = std::count(slides.begin(), slides.end(), true);
  c.sliding_window = enabled && sliding > 0 ? static_cast<int>(window) : 0;
  if (c.sliding_rope || (c.sliding_window > 0 && sliding < c.n_layers)) c.sliding_layers = std::move(slides);
}

// Qwen2 and Qwen3: a window only where use_sliding_window is set; 4.x configs slide the layers
// from max_window_layers on.
void read_qwen2_windows(KeyReader& k, ModelConfig& c) {
  const bool use = k.boolean("use_sliding_window", false);
  const int from = k.integer("max_window_layers", 28);  // Qwen2Config's default
  read_layer_types(k, c, use, [&](int layer) { return layer >= from; });
}

// The activation a config names (hidden_act, or Gemma 2/3's hidden_activation), as ACT2FN maps it.
Activation read_activation(KeyReader& k, const std::string& key, std::string_view fallback) {
  const json* v = k.find(key);
  const std::string name = v == nullptr ? std::string(fallback) : v->is_string() ? v->get<std::string>() : "";
  static constexpr std::pair<std::string_view, Activation> kNames[] = {
      {"silu", Activation::silu}, {"gelu", Activation::gelu}, {"gelu_pytorch_tanh", Activation::gelu_tanh}};
  for (const auto& [n, a] : kNames)
    if (name == n) return a;
  k.unsupported(key, v ? *v : json(name), "silu, gelu and gelu_pytorch_tanh");
}

// attention_bias: a bias on q, k, v and o_proj.
void read_attention_bias(KeyReader& k, Block& b) { b.qkv_bias = b.o_bias = k.boolean("attention_bias", false); }

// One family: its block and the keys that are its own (beyond the sizes, RoPE and tokens every
// family reads). A model_type outside this table is refused.
struct HfFamily {
  std::string_view model_type;
  void (*read)(KeyReader& k, ModelConfig& c);
  bool tied_by_default = false;   // tie_word_embeddings when the config leaves it out
  double rope_theta = 10000.0;    // rope_theta when the config leaves it out
  double sliding_rope_theta = 0;  // > 0: the sliding layers have their own RoPE, of this base by default
};

// Families whose MLP has no bias: mlp_bias absent or false.
void no_mlp_bias(KeyReader& k) { k.require_value("mlp_bias", false, "no biases in this family's MLP"); }

void read_llama(KeyReader& k, ModelConfig& c) {
  c.block.activation = read_activation(k, "hidden_act", "silu");
  c.block.mlp_bias = k.boolean("mlp_bias", false);
  read_attention_bias(k, c.block);
}

// What Gemma 1 and 2 share: RMSNorm by (1 + w), the embedding times sqrt(hidden_size) as
// transformers keeps it (a float32 tensor, GemmaTextScaledWordEmbedding), causal attention only.
void read_gemma(KeyReader& k, ModelConfig& c) {
  no_mlp_bias(k);
  read_attention_bias(k, c.block);
  k.require_value("use_bidirectional_attention", false, "causal attention");
  c.block.norm_offset = 1.0;
  c.block.embed_scale = static_cast<float>(std::sqrt(static_cast<double>(c.dim)));
}

// Gemma 2 and 3: Gemma's block with norms after the attention and the FFN, attention scaled by
// query_pre_attn_scalar, a final logit soft-cap (null: none) of the given default.
void read_gemma2_block(KeyReader& k, ModelConfig& c, double logit_cap) {
  read_gemma(k, c);
  c.block.activation = read_activation(k, "hidden_activation", "gelu_pytorch_tanh");
  c.block.post_norms = true;
  c.block.attention_scale = 1.0 / std::sqrt(k.number("query_pre_attn_scalar", 256));
  c.block.logit_softcap = k.number_or_off("final_logit_softcapping", logit_cap);
}

// Gemma 3's text model: Gemma 2's block with q/k norms per head, no final soft-cap by default,
// five sliding layers to one full by default (4.x: sliding_window_pattern), and the sliding layers'
// own RoPE (read with the RoPE parameters). The layer types are kept even where nothing slides,
// since they choose each layer's RoPE. Gemma3Attention keeps attn_logit_softcapping but never
// passes it to the attention, so it caps nothing (llama.cpp's gemma3 graph neither).
void read_gemma3(KeyReader& k, ModelConfig& c) {
  read_gemma2_block(k, c, 0.0);
  k.find("attn_logit_softcapping");
  c.block.qk_norm = QkNorm::per_head;
  const int pattern = k.integer("sliding_window_pattern", 6);
  k.find("_sliding_window_pattern");  // what 5.x saves of it beside layer_types; Gemma3TextConfig reads it not
  if (pattern < 1) k.fail("sliding_window_pattern", "a pattern >= 1", std::to_string(pattern));
  read_layer_types(k, c, true, [&](int layer) { return (layer + 1) % pattern != 0; });
}

// SmolLM3: Llama's block, and layers without RoPE. no_rope_layers: 1 where a layer rotates q and k,
// 0 where it does not; absent: every no_rope_layer_interval-th layer (counting from 1) has none, as
// SmolLM3Config makes it. Its 4.x rule slides the layers without RoPE where use_sliding_window.
void read_smollm3(KeyReader& k, ModelConfig& c) {
  read_llama(k, c);
  const int interval = k.integer("no_rope_layer_interval", 4);
  std::vector<bool> rope(static_cast<std::size_t>(c.n_layers));
  if (const json* flags = per_layer_array(k, "no_rope_layers", c.n_layers, "flags")) {
    for (std::size_t l = 0; l < rope.size(); ++l) {
      if ((*flags)[l] != 0 && (*flags)[l] != 1) k.fail("no_rope_layers", "flags 0 or 1", json_excerpt(*flags));
      rope[l] = (*flags)[l] == 1;
    }
  } else {
    if (interval < 1) k.fail("no_rope_layer_interval", "an interval >= 1", std::to_string(interval));
    for (int l = 0; l < c.n_layers; ++l) rope[static_cast<std::size_t>(l)] = (l + 1) % interval != 0;
  }
  const bool use = k.boolean("use_sliding_window", false);
  read_layer_types(k, c, true, [&](int layer) { return use && !rope[static_cast<std::size_t>(layer)]; });
  if (std::count(rope.begin(), rope.end(), false) > 0) c.rope_layers = std::move(rope);
}

// Mistral: Llama's block without MLP biases, every layer within `sliding_window` (absent or null: none).
void read_mistral(KeyReader& k, ModelConfig& c) {
  c.block.activation = read_activation(k, "hidden_act", "silu");
  no_mlp_bias(k);
  c.sliding_window = k.integer("sliding_window", 0);
}

// The mixture of experts: `count_key` experts (or `alias`, where the family has one: Qwen3-MoE's
// 5.x saves num_local_experts for its num_experts; either is read, not both), num_experts_per_tok
// of them per token, each `ffn_dim` wide.
void read_experts(KeyReader& k, ModelConfig& c, const std::string& count_key, const std::string& alias, int ffn_dim,
                  bool normalize) {
  Experts& e = c.experts;
  const bool aliased = !alias.empty() && k.find(alias) != nullptr;
  if (aliased && k.find(count_key) != nullptr) k.fail(alias, fmt::format("either {} or {}", count_key, alias), "both");
  e.count = k.integer(aliased ? alias : count_key);
  e.active = k.integer("num_experts_per_tok");
  e.ffn_dim = ffn_dim;
  e.normalize = normalize;
}

// Qwen3-MoE: Qwen3's attention; a layer is MoE unless listed in mlp_only_layers or off the
// decoder_sparse_step (layer + 1 a multiple of it), as Qwen3MoeDecoderLayer chooses; the dense
// layers' FFN is intermediate_size wide, each expert's moe_intermediate_size; the chosen weights
// renormalised where norm_topk_prob.
void read_qwen3_moe(KeyReader& k, ModelConfig& c) {
  c.block.activation = read_activation(k, "hidden_act", "silu");
  no_mlp_bias(k);
  read_attention_bias(k, c.block);
  c.block.qk_norm = QkNorm::per_head;
  read_qwen2_windows(k, c);
  read_experts(k, c, "num_experts", "num_local_experts", k.integer("moe_intermediate_size"),
               k.boolean("norm_topk_prob", false));
  const int step = k.integer("decoder_sparse_step", 1);
  if (step < 1) k.fail("decoder_sparse_step", "a step >= 1", std::to_string(step));
  std::vector<bool> moe(static_cast<std::size_t>(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l) moe[static_cast<std::size_t>(l)] = (l + 1) % step == 0;
  if (const json* dense = k.find("mlp_only_layers")) {
    if (!dense->is_array()) k.fail("mlp_only_layers", "an array of layer indices", json_excerpt(*dense));
    for (const json& l : *dense) {
      if (!l.is_number_integer() || l.get<std::int64_t>() < 0 || l.get<std::int64_t>() >= c.n_layers)
        k.fail("mlp_only_layers", fmt::format("layer indices below num_hidden_layers ({})", c.n_layers),
               json_excerpt(*dense));
      moe[l.get<std::size_t>()] = false;
    }
  }
  if (c.experts.count == 0) moe.assign(moe.size(), false);
  if (std::count(moe.begin(), moe.end(), true) == 0) {
    c.experts = {};  // every layer dense: Qwen3's block
  } else if (std::count(moe.begin(), moe.end(), false) > 0) {
    c.experts.layers = std::move(moe);
  }
}

constexpr HfFamily kFamilies[] = {
    {"llama", read_llama},
    {"mistral", read_mistral},
    // Mixtral: Mistral's block with every FFN a mixture of experts, intermediate_size wide each,
    // the chosen weights renormalised (MixtralTopKRouter).
    {"mixtral",
     [](KeyReader& k, ModelConfig& c) {
       read_mistral(k, c);
       read_experts(k, c, "num_local_experts", "", c.ffn_dim, true);
     }},
    {"qwen3_moe", read_qwen3_moe},
    {"qwen2",
     [](KeyReader& k, ModelConfig& c) {
       c.block.activation = read_activation(k, "hidden_act", "silu");
       no_mlp_bias(k);
       c.block.qkv_bias = true;
       read_qwen2_windows(k, c);
     }},
    {"qwen3",
     [](KeyReader& k, ModelConfig& c) {
       c.block.activation = read_activation(k, "hidden_act", "silu");
       no_mlp_bias(k);
       read_attention_bias(k, c.block);
       c.block.qk_norm = QkNorm::per_head;
       read_qwen2_windows(k, c);
     }},
    {"granite",
     [](KeyReader& k, ModelConfig& c) {
       read_llama(k, c);
       c.block.embed_scale = k.number("embedding_multiplier", 1.0);
       c.block.residual_scale = k.number("residual_multiplier", 1.0);
       c.block.attention_scale = k.number("attention_multiplier", 1.0);
       c.block.logit_scale = 1.0 / k.number("logits_scaling", 1.0);
     }},
    {"olmo2",
     [](KeyReader& k, ModelConfig& c) {
       c.block.activation = read_activation(k, "hidden_act", "silu");
       no_mlp_bias(k);
       read_attention_bias(k, c.block);
       c.block.pre_norms = false;
       c.block.post_norms = true;
       c.block.qk_norm = QkNorm::whole;
     }},
    {"gemma",
     [](KeyReader& k, ModelConfig& c) {
       read_gemma(k, c);
       c.block.activation = read_activation(k, "hidden_act", "gelu_pytorch_tanh");
     },
     true},
    {"gemma2",
     [](KeyReader& k, ModelConfig& c) {
       read_gemma2_block(k, c, 30.0);
       c.block.attention_softcap = k.number_or_off("attn_logit_softcapping", 50.0);
       read_layer_types(k, c, true, [](int layer) { return layer % 2 == 0; });  // Gemma2Config: 0, 2, 4, ... slide
     },
     true},
    {"gemma3_text", read_gemma3, true, 1'000'000.0, 10'000.0},
    {"smollm3", read_smollm3, true},
    {"phi3",
     [](KeyReader& k, ModelConfig& c) {
       c.block.activation = read_activation(k, "hidden_act", "silu");
       k.require_value("attention_bias", false, "Phi-3's projections without biases");
       c.sliding_window = k.integer("sliding_window", 0);
       if (c.rope_scaling.type == RopeType::yarn)  // Phi3Config turns "yarn" (and "su") into longrope
         k.fail("rope_parameters",
                "Phi-3's RoPE as default, linear or longrope (transformers reads 'yarn' as longrope)",
                "rope_type yarn");
     }},
};

// A multimodal checkpoint whose text decoder is one of the families above, under text_config: a
// token-id run computes that decoder only, so the image encoder's keys are read as unused (its
// tensors too: model/safetensors_reader.cpp). tie_word_embeddings is read at both levels and
// must agree.
struct HfComposite {
  std::string_view model_type;
  std::string_view text_model_type;         // text_config's model_type (absent: this one)
  std::set<std::string_view> encoder_keys;  // keys of the image encoder and its projector
};

const HfComposite kComposites[] = {
    {"gemma3",
     "gemma3_text",
     {"vision_config", "mm_tokens_per_image", "boi_token_index", "eoi_token_index", "image_token_index"}},
    // Mistral 3 (Mistral-Small-3.1, Devstral's multimodal parent): Mistral under a Pixtral encoder.
    {"mistral3",
     "mistral",
     {"vision_config", "image_token_index", "projector_hidden_act", "vision_feature_layer", "multimodal_projector_bias",
      "spatial_merge_size"}},
};

ModelConfig decoder_config(const json& j, const std::string& source);

ModelConfig composite_config(const HfComposite& composite, KeyReader& k, const std::string& source) {
  const json* text = k.find("text_config");
  if (text == nullptr || !text->is_object())
    k.fail("text_config", "an object", text ? json_excerpt(*text) : "no such key");
  json text_config = *text;
  if (!text_config.contains("model_type")) text_config["model_type"] = composite.text_model_type;
  if (text_config["model_type"] != composite.text_model_type)
    k.unsupported("text_config", text_config["model_type"],
                  fmt::format("a {} text model inside {}", composite.text_model_type, composite.model_type));
  ModelConfig c = decoder_config(text_config, source + ": text_config");
  if (k.boolean("tie_word_embeddings", c.tied_output) != c.tied_output)
    k.fail("tie_word_embeddings", fmt::format("text_config's value, {}", c.tied_output), json_excerpt(!c.tied_output));
  c.arch = composite.model_type;
  std::set<std::string_view> unused = no_math_keys();
  unused.insert(composite.encoder_keys.begin(), composite.encoder_keys.end());
  k.refuse_unread_keys(unused);
  return c;
}

ModelConfig decoder_config(const json& j, const std::string& source) {
  if (!j.is_object()) throw_format_error(fmt::format("{}: expected a JSON object, found {}", source, json_excerpt(j)));
  KeyReader k(j, source);
  ModelConfig c;
  const json* type = k.find("model_type");
  auto named = [&](std::string_view t) {
    return type != nullptr && type->is_string() && type->get<std::string>() == t;
  };
  for (const HfComposite& composite : kComposites)
    if (named(composite.model_type)) return composite_config(composite, k, source);
  const auto* family =
      std::find_if(std::begin(kFamilies), std::end(kFamilies), [&](const HfFamily& f) { return named(f.model_type); });
  if (family == std::end(kFamilies)) {
    std::vector<std::string_view> names;
    for (const HfFamily& f : kFamilies) names.push_back(f.model_type);
    for (const HfComposite& composite : kComposites) names.push_back(composite.model_type);
    k.unsupported("model_type", type ? *type : json("(absent)"), fmt::format("{}", fmt::join(names, ", ")));
  }
  c.arch = type->get<std::string>();
  c.dim = k.integer("hidden_size");
  c.n_layers = k.integer("num_hidden_layers");
  c.n_heads = k.integer("num_attention_heads");
  c.n_kv_heads = k.integer("num_key_value_heads", c.n_heads);
  c.head_dim = k.integer("head_dim", c.n_heads > 0 ? c.dim / c.n_heads : 0);
  c.ffn_dim = k.integer("intermediate_size");
  c.vocab = k.integer("vocab_size");
  c.norm_eps = k.number("rms_norm_eps");
  c.context_length = k.integer("max_position_embeddings", 0);
  read_rope(k, source, family->rope_theta, family->sliding_rope_theta, c);
  c.rope_style = RopeStyle::rotate_half;
  c.tied_output = k.boolean("tie_word_embeddings", family->tied_by_default);
  family->read(k, c);
  c.bos_token = k.token("bos_token_id");
  c.eos_token = k.token("eos_token_id");
  k.refuse_unread_keys(no_math_keys());
  return c;
}

}  // namespace

ModelConfig hf_config(const json& j, const std::string& source) { return decoder_config(j, source); }

}  // namespace tapdiff::model
