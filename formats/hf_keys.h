#pragma once
// Reading a Hugging Face config.json for a family (formats/families/): KeyReader remembers which keys
// were read, so that every key is read, known not to change the forward pass, or refused by name;
// and the readers of keys several families share.
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/config.h"
#include "model/errors.h"
#include "model/json_input.h"

namespace tapdiff::formats {

// Reads one JSON object's keys, remembering which were read; the base of the config and RoPE readers.
class KeyReader {
 public:
  KeyReader(const nlohmann::json& j, std::string source) : j_(j), source_(std::move(source)) {}

  const nlohmann::json* find(const std::string& key) {
    read_.insert(key);
    const auto it = j_.find(key);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }
  int integer(const std::string& key, std::optional<int> fallback = std::nullopt) {
    const nlohmann::json* v = find(key);
    if (v == nullptr) return fallback ? *fallback : fail(key, "an integer", "no such key");
    if (!v->is_number_integer() || v->get<std::int64_t>() < 0 ||
        v->get<std::int64_t>() > std::numeric_limits<int>::max())
      fail(key, "a non-negative integer", model::json_excerpt(*v));
    return v->get<int>();
  }
  double number(const std::string& key, std::optional<double> fallback = std::nullopt) {
    const nlohmann::json* v = find(key);
    if (v == nullptr) return fallback ? *fallback : fail(key, "a number", "no such key");
    if (!v->is_number() || !std::isfinite(v->get<double>())) fail(key, "a finite number", model::json_excerpt(*v));
    return v->get<double>();
  }
  // A number the model's library refuses as null: absent -> fallback, null refused, else the number.
  double number_not_null(const std::string& key, double fallback) {
    if (const auto it = j_.find(key); it != j_.end() && it->is_null()) fail(key, "a number", "null");
    return number(key, fallback);
  }
  // A number that null switches off: absent -> fallback, null -> 0, else the number.
  double number_or_off(const std::string& key, double fallback) {
    read_.insert(key);
    const auto it = j_.find(key);
    if (it == j_.end()) return fallback;
    return it->is_null() ? 0.0 : number(key);
  }
  bool boolean(const std::string& key, bool fallback) {
    const nlohmann::json* v = find(key);
    if (v == nullptr) return fallback;
    if (!v->is_boolean()) fail(key, "true or false", model::json_excerpt(*v));
    return v->get<bool>();
  }
  std::vector<double> numbers(const std::string& key) {
    const nlohmann::json* v = find(key);
    if (v == nullptr || !v->is_array()) fail(key, "an array of numbers", v ? model::json_excerpt(*v) : "no such key");
    std::vector<double> out;
    for (const nlohmann::json& x : *v) {
      if (!x.is_number() || !std::isfinite(x.get<double>()))
        fail(key, "an array of finite numbers", model::json_excerpt(*v));
      out.push_back(x.get<double>());
    }
    return out;
  }
  // A token id, or the first of an array of ids; -1 when absent.
  int token(const std::string& key) {
    const nlohmann::json* v = find(key);
    if (v != nullptr && v->is_array()) v = v->empty() ? nullptr : &v->front();
    if (v == nullptr) return -1;
    if (!v->is_number_integer() || v->get<std::int64_t>() < 0 ||
        v->get<std::int64_t>() > std::numeric_limits<int>::max())
      fail(key, "a token id or an array of them", model::json_excerpt(*v));
    return v->get<int>();
  }
  // Refuses `key` unless absent, null or equal to `supported`.
  void require_value(const std::string& key, const nlohmann::json& supported, std::string_view meaning) {
    if (const nlohmann::json* v = find(key); v != nullptr && *v != supported)
      unsupported(key, *v, fmt::format("{} only ({})", supported.dump(), meaning));
  }
  // Refuses every key that was not read, is not null (as absent) and is not in `harmless`.
  void refuse_unread_keys(const std::set<std::string_view>& harmless) const {
    for (const auto& [key, value] : j_.items())
      if (!value.is_null() && !read_.contains(key) && !harmless.contains(key))
        unsupported(key, value, "only the keys whose meaning it implements (docs/models.md)");
  }
  const std::string& source() const { return source_; }
  bool has(const std::string& key) const { return j_.contains(key); }  // present, null or not
  [[noreturn]] int fail(const std::string& key, std::string_view expected, const std::string& found) const {
    throw_format_error(fmt::format("{}: '{}': expected {}, found {}", source_, key, expected, found));
  }
  [[noreturn]] void unsupported(const std::string& key, const nlohmann::json& value, std::string_view supported) const {
    throw_format_error(fmt::format("{}: '{}' = {} is not supported: tapdiff implements {}", source_, key,
                                   model::json_excerpt(value), supported));
  }

 private:
  const nlohmann::json& j_;
  std::string source_;
  std::set<std::string> read_;
};

// A per-layer key, if present: an array of one entry per layer (`what` names the entries), else
// FormatError naming the key.
const nlohmann::json* per_layer_array(KeyReader& k, const std::string& key, int n_layers, std::string_view what);

// Which layers attend locally, from 5.x's layer_types ("full_attention" or `local` per layer) or,
// where the config has none, `by_default`; another type refused by name.
std::vector<bool> read_local_layers(KeyReader& k, int n_layers, const std::string& local,
                                    const std::function<bool(int)>& by_default);

// Which layers slide, from 5.x's layer_types ("full_attention" or "sliding_attention" per layer)
// or, where a 4.x config has none, the family's own rule; sliding_window is their window (absent:
// the config class's 4096; null, or not `enabled`: none, every layer attends fully, as
// transformers does). Where the sliding layers have their own RoPE, the types are always kept.
void read_layer_types(KeyReader& k, model::ModelConfig& c, bool enabled,
                      const std::function<bool(int)>& slides_by_default);

// Which layers rotate q and k: no_rope_layers, 1 where a layer does and 0 where it does not;
// absent, every no_rope_layer_interval-th layer (counting from 1; absent: 4) has none (SmolLM3, Llama 4).
std::vector<bool> read_no_rope_layers(KeyReader& k, const model::ModelConfig& c);
// Every layer rotating but each interval-th, counting from 1 (SmolLM3's and Llama 4's default rule;
// llama.cpp's fixed step of 4 for both).
std::vector<bool> rope_but_every(int n_layers, int interval);
// c.rope_layers as `rope` says: left empty where every layer rotates.
void set_rope_layers(model::ModelConfig& c, std::vector<bool> rope);

// The activation a config names (hidden_act, or Gemma 2/3's hidden_activation), as ACT2FN maps it.
model::Activation read_activation(KeyReader& k, const std::string& key, std::string_view fallback);

// GPT-2's block and its kin (StarCoder 2, Phi-2, GPT-NeoX, OPT, Falcon, Nemotron): LayerNorms
// with biases and a plain FFN whose activation `key` names (`fallback` where absent).
void read_layer_norms_and_plain_ffn(KeyReader& k, model::Block& b, const std::string& key, std::string_view fallback);

// attention_bias: a bias on q, k, v and o_proj.
void read_attention_bias(KeyReader& k, model::Block& b);

// Families whose MLP has no bias: mlp_bias absent or false.
void no_mlp_bias(KeyReader& k);

// The mixture of experts: `count_key` experts (or `alias`, where the family has one: Qwen3-MoE's
// 5.x saves num_local_experts for its num_experts; either is read, not both), num_experts_per_tok
// of them per token, each `ffn_dim` wide.
// Which layers are mixtures (moe[l]), as experts.layers holds them: none, a dense model (experts
// cleared); all, experts.layers empty. For a Hugging Face folder's keys or a GGUF file's alike.
void set_moe_layers(model::ModelConfig& c, std::vector<bool> moe);
// Layers [0, dense) keep a dense FFN, the others are mixtures.
void dense_layers_first(model::ModelConfig& c, int dense);
// first_k_dense_replace (absent: fallback), as dense_layers_first takes it.
void read_dense_layers_first(KeyReader& k, model::ModelConfig& c, int fallback);
// Which layers are mixtures: mlp_layer_types ("dense" or "sparse" per layer; another type refused
// by name), or where the config has none, those from dense_lead on.
std::vector<bool> read_mlp_layer_types(KeyReader& k, int n_layers, int dense_lead);

void read_experts(KeyReader& k, model::ModelConfig& c, const std::string& count_key, const std::string& alias,
                  int ffn_dim, bool normalize);

// The width of a layer's shared experts: `key` (absent: fallback) experts >= 0, each expert_width wide,
// their sum refused where it does not fit an int.
int shared_experts_width(KeyReader& k, const std::string& key, int fallback, int expert_width);

}  // namespace tapdiff::formats
