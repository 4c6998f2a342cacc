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
    case Activation::relu: return "relu";
    case Activation::relu2: return "relu2";
    case Activation::xielu: return "xielu";
    case Activation::swiglu_oai: return "swiglu_oai";
  }
  return "?";
}

std::string_view norm_kind_name(NormKind n) { return n == NormKind::rms ? "rms" : "layer"; }

std::string_view ffn_name(Ffn f) { return f == Ffn::gated ? "gated" : "plain"; }

std::string_view parallel_name(Parallel p) {
  switch (p) {
    case Parallel::none: return "none";
    case Parallel::shared_norm: return "shared_norm";
    case Parallel::own_norm: return "own_norm";
  }
  return "?";
}

std::string_view qk_norm_name(QkNorm q) {
  switch (q) {
    case QkNorm::none: return "none";
    case QkNorm::per_head: return "per_head";
    case QkNorm::whole: return "whole";
    case QkNorm::per_head_plain: return "per_head_plain";
  }
  return "?";
}

void Block::validate(const std::string& source) const {
  auto require = [&](bool ok, std::string_view what, double found) {
    if (!ok) throw FormatError(fmt::format("{}: model config: expected {}, found {}", source, what, found));
  };
  require(pre_norms || post_norms, "a norm before or after each block (pre_norms or post_norms)", 0);
  require(std::isfinite(norm_offset), "a finite norm offset", norm_offset);
  const auto refuse = [&](bool bad, std::string_view what, std::string_view found) {
    if (bad) throw FormatError(fmt::format("{}: model config: expected {}, found {}", source, what, found));
  };
  refuse(position_offset < 0 || (position_offset > 0 && !learned_positions),
         "a position offset >= 0 of learned positions", std::to_string(position_offset));
  refuse(activation == Activation::xielu && ffn != Ffn::plain, "xIELU in a plain FFN", "a gated one");
  refuse(activation == Activation::swiglu_oai && ffn != Ffn::gated, "the clamped SwiGLU in a gated FFN", "a plain one");
  require(std::isfinite(swiglu.alpha), "a finite swiglu alpha", swiglu.alpha);
  require(std::isfinite(swiglu.limit) && swiglu.limit > 0, "a finite swiglu limit > 0", swiglu.limit);
  refuse(norm_bias && norm != NormKind::layer, "norm biases on LayerNorms only", "norm_bias with RMSNorms");
  refuse(v_norm && (norm != NormKind::rms || norm_offset != 0),
         "a value norm in an RMSNorm block without a norm offset", "v_norm with another norm");
  refuse(norm_bias && post_norms, "norm biases in a block without post-norms", "norm_bias with post_norms");
  refuse(parallel != Parallel::none && (!pre_norms || post_norms), "a parallel block with pre-norms only",
         "parallel with post_norms, or without pre_norms");
  require(std::isfinite(embed_scale) && embed_scale > 0, "a finite embedding scale > 0", embed_scale);
  require(std::isfinite(residual_scale) && residual_scale > 0, "a finite residual scale > 0", residual_scale);
  require(std::isfinite(attention_scale) && attention_scale >= 0, "a finite attention scale >= 0 (0: 1/sqrt(head_dim))",
          attention_scale);
  require(std::isfinite(attention_softcap) && attention_softcap >= 0, "a finite attention soft-cap >= 0 (0: none)",
          attention_softcap);
  require(std::isfinite(clip_qkv) && clip_qkv >= 0, "a finite clip of q, k and v >= 0 (0: none)", clip_qkv);
  require(std::isfinite(logit_scale) && logit_scale > 0, "a finite logit scale > 0", logit_scale);
  require(std::isfinite(logit_softcap) && logit_softcap >= 0, "a finite logit soft-cap >= 0 (0: none)", logit_softcap);
}

bool has_ffn_norm(const Block& block) {
  return block.parallel == Parallel::none ? block.pre_norms : block.parallel == Parallel::own_norm;
}

std::int64_t learned_position_row(const Block& block, std::int64_t table_rows, std::int64_t position) {
  const std::int64_t row = position + block.position_offset;
  if (row >= table_rows)
    throw UsageError(fmt::format("position {} is past the model's {} learned positions", position,
                                 table_rows - block.position_offset));
  return row;
}

double attention_scale(const Block& block, int head_dim) {
  return block.attention_scale > 0 ? block.attention_scale : 1.0 / std::sqrt(static_cast<double>(head_dim));
}

nlohmann::json to_json(const Block& b) {
  nlohmann::json j = {{"pre_norms", b.pre_norms},
                      {"post_norms", b.post_norms},
                      {"norm", norm_kind_name(b.norm)},
                      {"norm_offset", b.norm_offset},
                      {"norm_bias", b.norm_bias},
                      {"qk_norm", qk_norm_name(b.qk_norm)},
                      {"qk_norm_after_rope", b.qk_norm_after_rope},
                      {"ffn", ffn_name(b.ffn)},
                      {"activation", activation_name(b.activation)},
                      {"parallel", parallel_name(b.parallel)},
                      {"qkv_bias", b.qkv_bias},
                      {"clip_qkv", b.clip_qkv},
                      {"o_bias", b.o_bias},
                      {"mlp_bias", b.mlp_bias},
                      {"output_bias", b.output_bias},
                      {"embed_scale", b.embed_scale},
                      {"learned_positions", b.learned_positions},
                      {"position_offset", b.position_offset},
                      {"residual_scale", b.residual_scale},
                      {"attention_scale", b.attention_scale},
                      {"attention_softcap", b.attention_softcap},
                      {"attention_sinks", b.attention_sinks},
                      {"logit_scale", b.logit_scale},
                      {"logit_softcap", b.logit_softcap}};
  if (b.v_norm) j["v_norm"] = true;  // written where set only: the blocks before them read the same
  if (b.layer_scale) j["layer_scale"] = true;
  if (b.activation == Activation::swiglu_oai) {
    j["swiglu_alpha"] = b.swiglu.alpha;
    j["swiglu_limit"] = b.swiglu.limit;
  }
  return j;
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
  named("norm", b.norm, norm_kind_name, NormKind::rms, NormKind::layer);
  number("norm_offset", b.norm_offset);
  flag("norm_bias", b.norm_bias);
  named("qk_norm", b.qk_norm, qk_norm_name, QkNorm::none, QkNorm::per_head, QkNorm::whole, QkNorm::per_head_plain);
  flag("qk_norm_after_rope", b.qk_norm_after_rope);
  named("ffn", b.ffn, ffn_name, Ffn::gated, Ffn::plain);
  named("activation", b.activation, activation_name, Activation::silu, Activation::gelu, Activation::gelu_tanh,
        Activation::relu, Activation::relu2, Activation::xielu, Activation::swiglu_oai);
  number("swiglu_alpha", b.swiglu.alpha);
  number("swiglu_limit", b.swiglu.limit);
  named("parallel", b.parallel, parallel_name, Parallel::none, Parallel::shared_norm, Parallel::own_norm);
  flag("qkv_bias", b.qkv_bias);
  number("clip_qkv", b.clip_qkv);
  flag("o_bias", b.o_bias);
  flag("mlp_bias", b.mlp_bias);
  flag("output_bias", b.output_bias);
  number("embed_scale", b.embed_scale);
  flag("learned_positions", b.learned_positions);
  double offset = b.position_offset;
  number("position_offset", offset);
  if (offset != std::floor(offset) || offset < 0 || offset > 1 << 20)
    fail("position_offset", "a small non-negative integer", j.at("position_offset"));
  b.position_offset = static_cast<int>(offset);
  number("residual_scale", b.residual_scale);
  number("attention_scale", b.attention_scale);
  number("attention_softcap", b.attention_softcap);
  flag("attention_sinks", b.attention_sinks);
  flag("v_norm", b.v_norm);
  flag("layer_scale", b.layer_scale);
  number("logit_scale", b.logit_scale);
  number("logit_softcap", b.logit_softcap);
  b.validate(source);
  return b;
}

}  // namespace tapdiff::model
