#include "formats/gguf_keys.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include <fmt/format.h>

#include "model/errors.h"

namespace tapdiff::formats {

using namespace model;

int int_key(const GgufFile& f, const std::string& key, std::optional<int> fallback) {
  const auto v = f.get_int(key);
  if (!v && !fallback)
    throw_format_error(fmt::format("{}: missing metadata key '{}' (expected an integer)", f.path().string(), key));
  if (!v) return *fallback;
  if (*v < 0 || *v > std::numeric_limits<int>::max())
    throw_format_error(fmt::format("{}: metadata '{}': expected an integer in [0, {}], found {}", f.path().string(),
                                   key, std::numeric_limits<int>::max(), *v));
  return static_cast<int>(*v);
}

std::vector<int> layer_int_key(const GgufFile& f, const std::string& key, int n_layers, std::optional<int> fallback) {
  const GgufValue* v = f.find(key);
  if (v == nullptr || v->type != gguf::ValueType::array)
    return std::vector<int>(static_cast<std::size_t>(std::max(n_layers, 1)), int_key(f, key, fallback));
  const auto values = f.get_int_array(key);
  if (values->empty() || values->size() != static_cast<std::size_t>(n_layers))
    throw_format_error(fmt::format("{}: metadata '{}': expected {} values (one per layer), found {}", f.path().string(),
                                   key, n_layers, values->size()));
  for (const std::int32_t value : *values)
    if (value < 0)
      throw_format_error(
          fmt::format("{}: metadata '{}': expected integers >= 0, found {}", f.path().string(), key, value));
  return {values->begin(), values->end()};
}

double float_key(const GgufFile& f, const std::string& key, double fallback) {
  return f.get_float(key).value_or(fallback);
}

void read_gguf_experts(const GgufFile& f, const std::string& prefix, ModelConfig& c, const GgufExperts& how) {
  Experts& e = c.experts;
  e.count = int_key(f, prefix + "expert_count", 0);
  e.active = int_key(f, prefix + "expert_used_count", 0);
  if (e.count == 0 && how.required)
    throw_format_error(fmt::format("{}: missing metadata key '{}expert_count' (llama.cpp's {} needs it)",
                                   f.path().string(), prefix, prefix.substr(0, prefix.size() - 1)));
  if (e.count == 0) return void(e.active = 0);
  e.normalize = how.renormalise;
  e.ffn_dim = how.ffn_key.empty()
                  ? c.ffn_dim
                  : int_key(f, prefix + std::string(how.ffn_key), e.active > 0 ? c.ffn_dim / e.active : 0);
}

bool has_layer_tensor(const GgufFile& f, std::string_view name) {
  return f.find_tensor("blk.0." + std::string(name)) != nullptr;
}

void read_gguf_layer_norms_and_plain_ffn(const GgufFile& f, ModelConfig& c, Activation activation) {
  Block& b = c.block;
  b.norm = NormKind::layer;
  b.norm_bias = true;
  b.ffn = Ffn::plain;
  b.activation = activation;
  b.o_bias = has_layer_tensor(f, "attn_output.bias");
  b.mlp_bias = has_layer_tensor(f, "ffn_up.bias");
}

void read_gguf_sliding_layers(const GgufFile& f, const std::string& prefix, ModelConfig& c, int pattern) {
  const std::string key = prefix + "attention.sliding_window_pattern";
  c.sliding_layers.assign(static_cast<std::size_t>(c.n_layers), false);
  const GgufValue* v = f.find(key);
  if (v != nullptr && v->type == gguf::ValueType::array) {
    const auto layers = f.get_bool_array(key);
    if (layers->size() != static_cast<std::size_t>(c.n_layers))
      throw_format_error(fmt::format("{}: metadata '{}': expected {} values (one per layer), found {}",
                                     f.path().string(), key, c.n_layers, layers->size()));
    for (std::size_t l = 0; l < layers->size(); ++l) c.sliding_layers[l] = (*layers)[l];
    return;
  }
  if (v != nullptr) pattern = int_key(f, key, std::nullopt);
  for (int l = 0; l < c.n_layers; ++l)
    c.sliding_layers[static_cast<std::size_t>(l)] = pattern == 0 || l % pattern < pattern - 1;
}

void refuse_sliding_rope_base(const GgufFile& f, const std::string& prefix, const ModelConfig& c) {
  const std::string key = prefix + "rope.freq_base_swa";
  if (const auto base = f.get_float(key); base && *base != c.rope_base)
    throw_format_error(
        fmt::format("{}: metadata '{}' = {} is not supported: llama.cpp's {} rotates its sliding layers "
                    "with {}rope.freq_base, {}",
                    f.path().string(), key, *base, prefix.substr(0, prefix.size() - 1), prefix, c.rope_base));
}

int gguf_shared_experts_width(const GgufFile& f, const std::string& prefix, int expert_width) {
  const std::int64_t wide = std::int64_t{int_key(f, prefix + "expert_shared_count", 0)} * expert_width;
  if (wide > std::numeric_limits<int>::max())
    throw_format_error(
        fmt::format("{}: metadata '{}expert_shared_count': expected shared experts whose width fits "
                    "an int, found {} wide",
                    f.path().string(), prefix, wide));
  return static_cast<int>(wide);
}

}  // namespace tapdiff::formats
