#include "formats/hf_keys.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace tapdiff::formats {

using namespace model;

using nlohmann::json;

const json* per_layer_array(KeyReader& k, const std::string& key, int n_layers, std::string_view what) {
  const json* v = k.find(key);
  if (v != nullptr && (!v->is_array() || std::ssize(*v) != n_layers))
    k.fail(key, fmt::format("an array of {} {} (num_hidden_layers)", n_layers, what), json_excerpt(*v));
  return v;
}

std::vector<bool> read_local_layers(KeyReader& k, int n_layers, const std::string& local,
                                    const std::function<bool(int)>& by_default) {
  std::vector<bool> flags(static_cast<std::size_t>(n_layers));
  if (const json* types = per_layer_array(k, "layer_types", n_layers, "layer types")) {
    for (std::size_t l = 0; l < flags.size(); ++l) {
      const json& t = (*types)[l];
      if (t != "full_attention" && t != local) k.unsupported("layer_types", t, "full_attention and " + local);
      flags[l] = t == local;
    }
  } else {
    for (int l = 0; l < n_layers; ++l) flags[static_cast<std::size_t>(l)] = by_default(l);
  }
  return flags;
}

void read_layer_types(KeyReader& k, ModelConfig& c, bool enabled, const std::function<bool(int)>& slides_by_default) {
  std::vector<bool> slides = read_local_layers(k, c.n_layers, "sliding_attention", slides_by_default);
  const double window = k.number_or_off("sliding_window", 4096);
  if (window != std::floor(window) || window < 0 || window > std::numeric_limits<int>::max())
    k.fail("sliding_window", "a window of tokens, a non-negative integer", json_excerpt(window));
  const auto sliding = std::count(slides.begin(), slides.end(), true);
  c.sliding_window = enabled && sliding > 0 ? static_cast<int>(window) : 0;
  if (c.sliding_rope || (c.sliding_window > 0 && sliding < c.n_layers)) c.sliding_layers = std::move(slides);
}

std::vector<bool> read_no_rope_layers(KeyReader& k, const ModelConfig& c) {
  const int interval = k.integer("no_rope_layer_interval", 4);
  std::vector<bool> rope(static_cast<std::size_t>(c.n_layers));
  if (const json* flags = per_layer_array(k, "no_rope_layers", c.n_layers, "flags")) {
    for (std::size_t l = 0; l < rope.size(); ++l) {
      if ((*flags)[l] != 0 && (*flags)[l] != 1) k.fail("no_rope_layers", "flags 0 or 1", json_excerpt(*flags));
      rope[l] = (*flags)[l] == 1;
    }
  } else {
    if (interval < 1) k.fail("no_rope_layer_interval", "an interval >= 1", std::to_string(interval));
    rope = rope_but_every(c.n_layers, interval);
  }
  return rope;
}

std::vector<bool> rope_but_every(int n_layers, int interval) {
  std::vector<bool> rope(static_cast<std::size_t>(n_layers));
  for (int l = 0; l < n_layers; ++l) rope[static_cast<std::size_t>(l)] = (l + 1) % interval != 0;
  return rope;
}

void set_rope_layers(ModelConfig& c, std::vector<bool> rope) {
  if (std::find(rope.begin(), rope.end(), false) != rope.end()) c.rope_layers = std::move(rope);
}

Activation read_activation(KeyReader& k, const std::string& key, std::string_view fallback) {
  const json* v = k.find(key);
  const std::string name = v == nullptr ? std::string(fallback) : v->is_string() ? v->get<std::string>() : "";
  static constexpr std::pair<std::string_view, Activation> kNames[] = {
      {"silu", Activation::silu},          {"gelu", Activation::gelu}, {"gelu_pytorch_tanh", Activation::gelu_tanh},
      {"gelu_new", Activation::gelu_tanh}, {"relu", Activation::relu}, {"relu2", Activation::relu2},
      {"xielu", Activation::xielu}};
  for (const auto& [n, a] : kNames)
    if (name == n) return a;
  k.unsupported(key, v ? *v : json(name), "silu, gelu, gelu_pytorch_tanh, gelu_new, relu, relu2 and xielu");
}

void read_layer_norms_and_plain_ffn(KeyReader& k, Block& b, const std::string& key, std::string_view fallback) {
  b.norm = NormKind::layer;
  b.norm_bias = true;
  b.ffn = Ffn::plain;
  b.activation = read_activation(k, key, fallback);
}

void read_attention_bias(KeyReader& k, Block& b) { b.qkv_bias = b.o_bias = k.boolean("attention_bias", false); }

void no_mlp_bias(KeyReader& k) { k.require_value("mlp_bias", false, "no biases in this family's MLP"); }

void set_moe_layers(ModelConfig& c, std::vector<bool> moe) {
  if (std::none_of(moe.begin(), moe.end(), [](bool m) { return m; })) {
    c.experts = {};
  } else if (std::all_of(moe.begin(), moe.end(), [](bool m) { return m; })) {
    c.experts.layers.clear();
  } else {
    c.experts.layers = std::move(moe);
  }
}

void dense_layers_first(ModelConfig& c, int dense) {
  std::vector<bool> moe(static_cast<std::size_t>(c.n_layers), true);
  std::fill_n(moe.begin(), std::clamp(dense, 0, c.n_layers), false);
  set_moe_layers(c, std::move(moe));
}

void read_dense_layers_first(KeyReader& k, ModelConfig& c, int fallback) {
  dense_layers_first(c, k.integer("first_k_dense_replace", fallback));
}

std::vector<bool> read_mlp_layer_types(KeyReader& k, int n_layers, int dense_lead) {
  std::vector<bool> moe(static_cast<std::size_t>(n_layers));
  const nlohmann::json* types = per_layer_array(k, "mlp_layer_types", n_layers, "MLP layer types");
  for (int l = 0; l < n_layers; ++l) {
    const auto i = static_cast<std::size_t>(l);
    if (types == nullptr) {
      moe[i] = l >= dense_lead;
      continue;
    }
    const nlohmann::json& t = (*types)[i];
    if (t != "dense" && t != "sparse") k.unsupported("mlp_layer_types", t, "dense and sparse");
    moe[i] = t == "sparse";
  }
  return moe;
}

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

int shared_experts_width(KeyReader& k, const std::string& key, int fallback, int expert_width) {
  const int shared = k.integer(key, fallback);
  if (shared < 0 || std::int64_t{shared} * expert_width > std::numeric_limits<int>::max())
    k.fail(key, "a count >= 0 of experts whose width fits an int", std::to_string(shared));
  return shared * expert_width;
}

}  // namespace tapdiff::formats
