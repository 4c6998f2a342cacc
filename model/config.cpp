#include "model/config.h"

#include <cstdint>
#include <limits>

#include <nlohmann/json.hpp>

#include "model/errors.h"

namespace tapdiff::model {

void ModelConfig::validate(const std::string& source) const {
  auto require = [&](bool ok, std::string_view what, auto found) {
    if (!ok) throw FormatError(fmt::format("{}: model config: expected {}, found {}", source, what, found));
  };
  require(n_layers >= 1, "at least 1 layer", n_layers);
  require(dim >= 1, "dim >= 1", dim);
  require(n_heads >= 1, "n_heads >= 1", n_heads);
  require(n_kv_heads >= 1 && n_heads % n_kv_heads == 0, "n_kv_heads dividing n_heads",
          fmt::format("{} kv heads for {} heads", n_kv_heads, n_heads));
  require(head_dim >= 2 && head_dim % 2 == 0, "an even head_dim", head_dim);
  // q_dim() and kv_dim() (<= q_dim) are ints.
  require(std::int64_t{n_heads} * head_dim <= std::numeric_limits<int>::max(), "n_heads * head_dim below 2^31",
          fmt::format("{} x {}", n_heads, head_dim));
  require(ffn_dim >= 1, "ffn_dim >= 1", ffn_dim);
  require(vocab >= 1, "vocab >= 1", vocab);
  require(rope_base > 1.0, "rope base > 1", rope_base);
  require(norm_eps > 0.0 && norm_eps < 1.0, "0 < norm eps < 1", norm_eps);
  require(sliding_window >= 0, "sliding_window >= 0", sliding_window);
  require(bos_token < vocab && eos_token < vocab, "special tokens inside the vocabulary",
          fmt::format("bos {} eos {} for vocab {}", bos_token, eos_token, vocab));
}

std::string_view rope_style_name(RopeStyle style) {
  switch (style) {
    case RopeStyle::interleaved: return "interleaved";
    case RopeStyle::rotate_half: return "rotate_half";
  }
  return "?";
}

nlohmann::json to_json(const ModelConfig& c) {
  return {{"arch", c.arch},
          {"n_layers", c.n_layers},
          {"dim", c.dim},
          {"n_heads", c.n_heads},
          {"n_kv_heads", c.n_kv_heads},
          {"head_dim", c.head_dim},
          {"ffn_dim", c.ffn_dim},
          {"vocab", c.vocab},
          {"context_length", c.context_length},
          {"sliding_window", c.sliding_window},
          {"rope_base", c.rope_base},
          {"norm_eps", c.norm_eps},
          {"rope_style", rope_style_name(c.rope_style)},
          {"tied_output", c.tied_output},
          {"qkv_bias", c.qkv_bias},
          {"bos_token", c.bos_token},
          {"eos_token", c.eos_token}};
}

}  // namespace tapdiff::model
