// Hugging Face config.json -> ModelConfig, as transformers 4.x and 5.x write it. Every key is
// accounted for: read (its meaning implemented, or a value whose meaning is not refused by name),
// or known not to change the forward pass. Any other key is refused: a model is computed as its
// library computes it, or not at all.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "formats/family_spec.h"
#include "formats/hf_keys.h"
#include "formats/safetensors_reader.h"
#include "model/errors.h"
#include "model/json_input.h"
#include "model/rope.h"

namespace tapdiff::formats {

using namespace model;

namespace {

using nlohmann::json;

// Keys that do not change the forward pass of a decoder run without dropout, without cache
// quirks, on given token ids: bookkeeping, training, generation and pipeline settings.
const std::set<std::string_view>& no_math_keys() {
  static const std::set<std::string_view> keys = {
      "_name_or_path", "add_cross_attention", "architectures", "attention_dropout", "bad_words_ids",
      "begin_suppress_tokens", "cache_implementation", "chunk_size_feed_forward", "cross_attention_hidden_size",
      "classifier_dropout", "decoder_start_token_id", "diversity_penalty", "do_sample", "dtype", "early_stopping",
      "embd_pdrop", "embedding_dropout", "hidden_dropout", "residual_dropout", "encoder_no_repeat_ngram_size",
      "exponential_decay_length_penalty", "finetuning_task", "forced_bos_token_id", "forced_eos_token_id", "id2label",
      "initializer_range", "is_decoder", "is_encoder_decoder", "label2id", "length_penalty", "max_length", "min_length",
      "no_repeat_ngram_size", "num_beam_groups", "num_beams", "num_return_sequences", "output_attentions",
      "output_hidden_states", "output_scores", "pad_token_id", "prefix", "pretraining_tp", "problem_type",
      "pruned_heads", "remove_invalid_values", "repetition_penalty", "resid_pdrop", "attn_pdrop", "return_dict",
      "return_dict_in_generate", "sep_token_id", "suppress_tokens", "task_specific_params", "temperature",
      "tf_legacy_loss", "tie_encoder_decoder", "tokenizer_class", "top_k", "top_p", "torch_dtype", "torchscript",
      "transformers_version", "typical_p", "use_bfloat16", "use_cache",
      // MoE training: the auxiliary loss, and router noise applied in training only
      "output_router_logits", "router_aux_loss_coef", "router_jitter_noise"};
  return keys;
}

// transformers' YaRN attention factor: given, or from mscale / mscale_all_dim, or 0.1 ln(factor) + 1.
double yarn_attention_factor(KeyReader& r, double factor) {
  if (r.find("attention_factor") != nullptr) return r.number("attention_factor");
  const double m = r.number("mscale", 0.0), m_all = r.number("mscale_all_dim", 0.0);
  return m != 0.0 && m_all != 0.0 ? yarn_mscale(factor, m) / yarn_mscale(factor, m_all) : yarn_mscale(factor);
}

// One RoPE parameter object (5.x rope_parameters, or 4.x rope_scaling) into c.rope_scaling, as
// transformers' rope initialisation functions read it; its unknown keys are refused.
void read_rope_object(const json& object, const std::string& where, double max_position, double top_original,
                      const HfRecipe& hf, ModelConfig& c) {
  KeyReader r(object, where);
  RopeScaling& s = c.rope_scaling;
  const json* type = r.find("rope_type");
  if (type == nullptr) type = r.find("type");
  const std::string name = type == nullptr ? "default" : type->is_string() ? type->get<std::string>() : "";
  static constexpr std::pair<std::string_view, RopeType> kTypes[] = {{"default", RopeType::standard},
                                                                     {"linear", RopeType::linear},
                                                                     {"dynamic", RopeType::dynamic},
                                                                     {"yarn", RopeType::yarn},
                                                                     {"llama3", RopeType::llama3},
                                                                     {"longrope", RopeType::longrope},
                                                                     {"proportional", RopeType::proportional}};
  const auto* known =
      std::find_if(std::begin(kTypes), std::end(kTypes), [&](const auto& t) { return t.first == name; });
  if (known == std::end(kTypes))
    r.unsupported("rope_type", type ? *type : json(name),
                  "default, linear, dynamic, yarn, llama3, longrope and proportional");
  s.type = known->second;
  r.find("type");  // 4.x's older name, read too: transformers takes rope_type when both are present
  if (r.find("rope_theta") != nullptr) c.rope_base = r.number("rope_theta");
  // Proportional RoPE turns that share of a whole head's pairs (RopeScaling::partial); the others
  // rotate that share of the head's channels.
  if (r.find("partial_rotary_factor") != nullptr && s.type != RopeType::proportional)
    c.rotary_dim = static_cast<int>(c.head_dim * r.number("partial_rotary_factor"));
  // A top-level original_max_position_embeddings (Phi-3) takes the place of the object's, as
  // transformers' standardize_rope_params puts it there.
  const double inner_original = r.number("original_max_position_embeddings", max_position);
  const double original = top_original > 0 ? top_original : inner_original;
  switch (s.type) {
    case RopeType::standard: break;
    case RopeType::linear: s.factor = r.number("factor"); break;
    case RopeType::proportional:
      s.factor = r.number("factor", 1.0);
      s.partial = r.number("partial_rotary_factor", 1.0);
      if (!(s.partial >= 0 && s.partial <= 1))
        r.fail("partial_rotary_factor", "a share in [0, 1]", json_excerpt(s.partial));
      break;
    case RopeType::dynamic:
      if (hf.ntk_alpha && r.find("alpha") != nullptr) {
        const double alpha = r.number("alpha");
        if (alpha <= 0 || c.head_dim <= 2)
          r.fail("alpha", "a number > 0 with heads wider than 2 channels",
                 fmt::format("{} (head_dim {})", alpha, c.head_dim));
        r.find("factor");  // transformers' ntk_alpha reads no factor
        s.type = RopeType::standard;
        c.rope_base *= std::pow(alpha, c.head_dim / (c.head_dim - 2.0));
        break;
      }
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
  if (hf.llama_4_scaling) {  // Ministral 3: over the object's original_max_position_embeddings, which it requires
    c.query_temperature = {.beta = r.number("llama_4_scaling_beta"),
                           .length = static_cast<int>(r.number("original_max_position_embeddings"))};
    r.find("max_position_embeddings");  // a copy of the config's, read by its validation only
  }
  r.refuse_unread_keys({});
}

// RoPE parameters per layer type (5.x's rope_parameters of Gemma 3: {"full_attention": {...},
// "sliding_attention": {...}}): the full layers' into c, the sliding layers' into c.sliding_rope.
// A type left out is the default RoPE with the family's base for it.
void read_rope_per_layer_type(const json& p, const std::string& where, double max_position, double top_original,
                              const HfRecipe& hf, ModelConfig& c) {
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
  if (full != nullptr) read_rope_object(*full, where + ": full_attention", max_position, top_original, hf, c);
  if (sliding != nullptr)
    read_rope_object(*sliding, where + ": sliding_attention", max_position, top_original, hf, local);
  if (local.rotary_dim != c.rotary_dim)
    types.fail("sliding_attention", fmt::format("the full layers' rotary dimension, {}", c.rotary_dim),
               fmt::format("{} (partial_rotary_factor)", local.rotary_dim));
  c.sliding_rope = SlidingRope{local.rope_base, local.rope_scaling};
}

// The RoPE parameters: 5.x's rope_parameters object, or 4.x's top-level rope_theta,
// partial_rotary_factor and rope_scaling (an object or null). `sliding_base`: the base of a family
// whose sliding layers have their own RoPE (Gemma 3), else 0; such a family's rope_parameters may
// also be per layer type, its rope_scaling is the full layers'.
void read_rope(KeyReader& k, const std::string& source, const HfRecipe& hf, ModelConfig& c) {
  const double default_base = hf.rope_theta, sliding_base = hf.sliding_rope_theta;
  const json* params = k.find("rope_parameters");
  const json* scaling = k.find("rope_scaling");
  if (params != nullptr && scaling != nullptr)
    k.fail("rope_scaling", "either rope_parameters (5.x) or rope_scaling (4.x)", "both");
  c.rope_base = k.number(std::string(hf.rope_theta_key), default_base);
  c.rotary_dim = static_cast<int>(c.head_dim * k.number(std::string(hf.partial_rotary_key), hf.partial_rotary_factor));
  if (sliding_base > 0)
    c.sliding_rope =
        SlidingRope{hf.sliding_rope_theta_key.empty() ? sliding_base
                                                      : k.number(std::string(hf.sliding_rope_theta_key), sliding_base),
                    {}};
  const double max_position = c.context_length;
  const double top_original = k.integer("original_max_position_embeddings", 0);
  const json* p = params != nullptr ? params : scaling;
  const std::string name = params != nullptr ? "rope_parameters" : "rope_scaling";
  if (p != nullptr && !p->is_object()) k.fail(name, "an object", json_excerpt(*p));
  if (p == nullptr && hf.llama_4_scaling)
    k.fail("rope_parameters", "an object holding llama_4_scaling_beta and original_max_position_embeddings", "none");
  if (p == nullptr && hf.rope_required)
    k.fail("rope_parameters", "an object stating the RoPE (the family's config class defaults to a scaled one)",
           "none");
  const bool per_layer_type = p != nullptr && (p->contains("full_attention") || p->contains("sliding_attention"));
  if (per_layer_type && (sliding_base == 0 || params == nullptr))
    k.unsupported(name, *p,
                  "RoPE parameters per layer type in 5.x rope_parameters of Gemma 3, Gemma 4 and OLMo 3 only");
  if (per_layer_type)
    read_rope_per_layer_type(*p, source + ": " + name, max_position, top_original, hf, c);
  else if (p != nullptr)
    read_rope_object(*p, source + ": " + name, max_position, top_original, hf, c);
  if (c.rotary_dim == c.head_dim) c.rotary_dim = 0;
}

ModelConfig decoder_config(const json& j, const std::string& source);

// A multimodal checkpoint whose text decoder is `family`, under text_config (model/family.h,
// HfComposite). tie_word_embeddings is read at both levels and must agree.
ModelConfig composite_config(const FamilySpec& family, const HfComposite& composite, KeyReader& k,
                             const std::string& source) {
  const json* text = k.find("text_config");
  if (text == nullptr || !text->is_object())
    k.fail("text_config", "an object", text ? json_excerpt(*text) : "no such key");
  const std::string_view text_model_type = family.hf.model_types.front();
  json text_config = *text;
  if (!text_config.contains("model_type")) text_config["model_type"] = text_model_type;
  if (text_config["model_type"] != text_model_type)
    k.unsupported("text_config", text_config["model_type"],
                  fmt::format("a {} text model inside {}", text_model_type, composite.model_type));
  ModelConfig c = decoder_config(text_config, source + ": text_config");
  if (k.boolean("tie_word_embeddings", c.tied_output) != c.tied_output)
    k.fail("tie_word_embeddings", fmt::format("text_config's value, {}", c.tied_output), json_excerpt(!c.tied_output));
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
  const std::string model_type = type != nullptr && type->is_string() ? type->get<std::string>() : "";
  const FamilySpec* family = hf_family(model_type);
  if (family == nullptr) {
    std::vector<std::string_view> names;
    for (const FamilySpec* f : all_families())
      names.insert(names.end(), f->hf.model_types.begin(), f->hf.model_types.end());
    for (const FamilySpec* f : all_families())
      for (const HfComposite& composite : f->hf.composites) names.push_back(composite.model_type);
    k.unsupported("model_type", type ? *type : json("(absent)"), fmt::format("{}", fmt::join(names, ", ")));
  }
  for (const HfComposite& composite : family->hf.composites)
    if (composite.model_type == model_type) return composite_config(*family, composite, k, source);
  const HfRecipe& hf = family->hf;
  // The family's name of a key every family reads.
  const auto key = [&](std::string_view standard) {
    for (const HfRename& r : hf.keys)
      if (r.from == standard) return std::string(r.to);
    return std::string(standard);
  };
  c.family = family->family;
  c.dim = k.integer(key("hidden_size"));
  c.n_layers = k.integer(key("num_hidden_layers"));
  c.n_heads = k.integer(key("num_attention_heads"));
  c.n_kv_heads = k.integer(key("num_key_value_heads"), c.n_heads);
  c.head_dim = k.integer("head_dim", hf.head_dim > 0 ? hf.head_dim : c.n_heads > 0 ? c.dim / c.n_heads : 0);
  c.ffn_dim = hf.ffn_multiple > 0 ? k.integer(key("intermediate_size"), hf.ffn_multiple * c.dim)
                                  : k.integer(key("intermediate_size"));
  c.vocab = k.integer("vocab_size");
  c.norm_eps = hf.eps_key.empty() ? hf.eps : k.number(std::string(hf.eps_key));
  c.context_length = k.integer(key("max_position_embeddings"), 0);
  read_rope(k, source, hf, c);
  c.rope_style = hf.rope_style;
  c.tied_output = k.boolean("tie_word_embeddings", hf.tied_by_default);
  hf.read(k, c);
  c.bos_token = k.token("bos_token_id");
  c.eos_token = k.token("eos_token_id");
  k.refuse_unread_keys(no_math_keys());
  return c;
}

}  // namespace

ModelConfig hf_config(const json& j, const std::string& source) { return decoder_config(j, source); }

}  // namespace tapdiff::formats
