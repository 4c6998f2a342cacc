#include "model/block.h"

#include <cmath>

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "model/errors.h"
#include "model/json_input.h"

namespace tapdiff::model {

std::string_view activation_name(Activation a) {
  switch (a) {
    case Activation::silu: return "silu";
    case Activation::gelu: return "gelu";
    case Activation::gelu_tanh: return "gelu_tanh";
  }
  return "?";
}

std::string_view qk_norm_name(QkNorm q) {
  switch (q) {
    case QkNorm::none: return "none";
    case QkNorm::per_head: return "per_head";
    case QkNorm::whole: return "whole";
  }
  return "?";
}

void Block::validate(const std::string& source) const {
  auto require = [&](bool ok, std::string_view what, double found) {
    if (!ok) throw FormatError(fmt::format("{}: model config: expected {}, found {}", source, what, found));
  };
  require(pre_norms || post_norms, "a norm before or after each block (pre_norms or post_norms)", 0);
  require(std::isfinite(norm_offset), "a finite norm offset", norm_offset);
  require(std::isfinite(embed_scale) && embed_scale > 0, "a finite embedding scale > 0", embed_scale);
  require(std::isfinite(residual_scale) && residual_scale > 0, "a finite residual scale > 0", residual_scale);
  require(std::isfinite(attention_scale) && attention_scale >= 0, "a finite attention scale >= 0 (0: 1/sqrt(head_dim))",
          attention_scale);
  require(std::isfinite(attention_softcap) && attention_softcap >= 0, "a finite attention soft-cap >= 0 (0: none)",
          attention_softcap);
  require(std::isfinite(logit_scale) && logit_scale > 0, "a finite logit scale > 0", logit_scale);
  require(std::isfinite(logit_softcap) && logit_softcap >= 0, "a finite logit soft-cap >= 0 (0: none)", logit_softcap);
}

double attention_scale(const Block& block, int head_dim) {
  return block.attention_scale > 0 ? block.attention_scale : 1.0 / std::sqrt(static_cast<double>(head_dim));
}

nlohmann::json to_json(const Block& b) {
  return {{"pre_norms", b.pre_norms},
          {"post_norms", b.post_norms},
          {"norm_offset", b.norm_offset},
          {"qk_norm", qk_norm_name(b.qk_norm)},
          {"activation", activation_name(b.activation)},
          {"qkv_bias", b.qkv_bias},
          {"o_bias", b.o_bias},
          {"mlp_bias", b.mlp_bias},
          {"embed_scale", b.embed_scale},
          {"residual_scale", b.residual_scale},
          {"attention_scale", b.attention_scale},
          {"attention_softcap", b.attention_softcap},
          {"logit_scale", b.logit_scale},
          {"logit_softcap", b.logit_softcap}};
}

Block block_from_json(const nlohmann::json& j, const std::string& source) {
  auto fail = [&](const std::string& key, std::string_view expected, const nlohmann::json& found) {
    throw FormatError(
        fmt::format("{}: model_config.block.{}: expected {}, found {}", source, key, expected, json_excerpt(found)));
  };
  if (!j.is_object()) fail("", "an object", j);
  Block b;
  const auto flag = [&](const char* key, bool& out) {
    if (!j.contains(key)) return;
    if (!j.at(key).is_boolean()) fail(key, "true or false", j.at(key));
    out = j.at(key).get<bool>();
  };
  const auto number = [&](const char* key, double& out) {
    if (!j.contains(key)) return;
    if (!j.at(key).is_number()) fail(key, "a number", j.at(key));
    out = j.at(key).get<double>();
  };
  // An enum by its name: the name function's value for some value of the enum.
  const auto named = [&](const char* key, auto& out, auto name_of, auto... values) {
    if (!j.contains(key)) return;
    const nlohmann::json& v = j.at(key);
    for (auto value : {values...})
      if (v.is_string() && v.get<std::string>() == name_of(value)) return void(out = value);
    fail(key, fmt::format("one of {}", fmt::join({name_of(values)...}, ", ")), v);
  };
  flag("pre_norms", b.pre_norms);
  flag("post_norms", b.post_norms);
  number("norm_offset", b.norm_offset);
  named("qk_norm", b.qk_norm, qk_norm_name, QkNorm::none, QkNorm::per_head, QkNorm::whole);
  named("activation", b.activation, activation_name, Activation::silu, Activation::gelu, Activation::gelu_tanh);
  flag("qkv_bias", b.qkv_bias);
  flag("o_bias", b.o_bias);
  flag("mlp_bias", b.mlp_bias);
  number("embed_scale", b.embed_scale);
  number("residual_scale", b.residual_scale);
  number("attention_scale", b.attention_scale);
  number("attention_softcap", b.attention_softcap);
  number("logit_scale", b.logit_scale);
  number("logit_softcap", b.logit_softcap);
  b.validate(source);
  return b;
}

}  // namespace tapdiff::model
