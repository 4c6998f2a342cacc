#include "formats/llama_cpp_precision.h"

#include <cmath>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "formats/family_spec.h"
#include "model/errors.h"
#include "model/half_float.h"
#include "model/layer_features.h"
#include "model/weights.h"

namespace tapdiff::formats {

using namespace model;

DotType dot_type(DType weights) {
  switch (weights) {
    case DType::f32: return DotType::f32;
    case DType::f16: return DotType::f16;
    case DType::bf16: return DotType::bf16;
    case DType::q8_0:
    case DType::q4_0:
    case DType::q5_0:
    case DType::iq4_nl:
    case DType::mxfp4: return DotType::q8_0;
    case DType::q4_1:
    case DType::q5_1: return DotType::q8_1;
    case DType::q2_k:
    case DType::q3_k:
    case DType::q4_k:
    case DType::q5_k:
    case DType::q6_k:
    case DType::iq4_xs: return DotType::q8_k;
  }
  TAPDIFF_ASSERT(false, "weight type {} has no dot-product type", static_cast<int>(weights));
  return DotType::f32;
}

const char* dot_type_name(DotType t) {
  switch (t) {
    case DotType::f32: return "f32";
    case DotType::f16: return "f16";
    case DotType::bf16: return "bf16";
    case DotType::q8_0: return "q8_0";
    case DotType::q8_1: return "q8_1";
    case DotType::q8_k: return "q8_k";
  }
  return "?";
}

void require_llama_cpp_precision(const Model& m) {
  const ModelConfig& c = m.config();
  if (c.latent())
    throw UsageError(
        fmt::format("{}: the llama.cpp emulation does not round latent attention's products (llama.cpp computes "
                    "them in the absorbed form, its cache holding the latent)",
                    m.path().string()));
  if (const std::string_view what = layer_feature(c); !what.empty())
    throw UsageError(fmt::format("{}: the llama.cpp emulation does not round {} (tapdiff has no llama.cpp graph of it)",
                                 m.path().string(), what));
  if (c.experts.count > 0)
    throw UsageError(
        fmt::format("{}: the llama.cpp emulation does not round a mixture of experts' products "
                    "(--dtype llama.cpp is for dense models)",
                    m.path().string()));
  if (c.block.norm_offset != 0)
    throw UsageError(fmt::format(
        "{}: the norms scale by ({} + w); llama.cpp's converter stores that sum rounded to the file's type and "
        "--dtype llama.cpp emulates llama.cpp's graph of it: run the model's GGUF",
        m.path().string(), c.block.norm_offset));
  if (c.block.norm == NormKind::layer && c.block.qk_norm != QkNorm::none)
    throw UsageError(fmt::format(
        "{}: q/k norms in a LayerNorm block; llama.cpp's graphs of these norm q and k per head with weights of their "
        "own, which tapdiff does not implement, so --dtype llama.cpp has nothing of llama.cpp's to emulate",
        m.path().string()));
  if (c.block.activation == Activation::gelu)
    throw UsageError(
        fmt::format("{}: GELU in its erf form; llama.cpp's graphs compute GELU in its tanh form (through an f16 "
                    "table), so --dtype llama.cpp has nothing of llama.cpp's to emulate for this model",
                    m.path().string()));
}

bool llama_cpp_gemma_graph(const ModelConfig& c) { return family_spec(c.family).llama_cpp.gemma; }

bool llama_cpp_scales_q_first(const ModelConfig& c) { return family_spec(c.family).llama_cpp.scales_q_first; }

float llama_cpp_attention_scale(const ModelConfig& c) {
  if (c.block.attention_scale == 0) return 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  const int gemma_n = c.dim / c.n_heads;  // read_gemma2_block_gguf's rule for the largest Gemma 2/3
  if (llama_cpp_gemma_graph(c) && c.block.attention_scale == 1.0 / std::sqrt(static_cast<double>(gemma_n)))
    return 1.0f / std::sqrt(static_cast<float>(gemma_n));
  return static_cast<float>(c.block.attention_scale);
}

RopeFrequencies llama_cpp_rope_frequencies(const ModelConfig& c, int layer, double base, std::int64_t seq_len) {
  RopeFrequencies f = rope_frequencies(c, layer, base, seq_len);
  const RopeScaling& s = rope_scaling(c, layer);
  if (s.type != RopeType::standard && s.type != RopeType::linear) return f;
  GgmlAngles& g = f.ggml.emplace();
  g.theta_scale = std::pow(static_cast<float>(base), -2.0f / static_cast<float>(rotary_dim(c)));
  g.freq_scale = s.type == RopeType::linear ? 1.0f / static_cast<float>(s.factor) : 1.0f;
  g.freq_factors.assign(s.freq_factors.begin(), s.freq_factors.end());
  return f;
}

bool llama_cpp_gelu_by_table(const Block& b) { return b.activation == Activation::gelu_tanh; }

const std::array<std::uint16_t, 65536>& llama_cpp_gelu_table() {
  static const std::array<std::uint16_t, 65536> table = [] {
    std::array<std::uint16_t, 65536> t{};
    constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f, kCoefA = 0.044715f;
    for (std::size_t i = 0; i < t.size(); ++i) {
      const float x = widen_f16(static_cast<std::uint16_t>(i));
      t[i] = narrow_f16(0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * std::fma(kCoefA * x, x, 1.0f))));
    }
    return t;
  }();
  return table;
}

float llama_cpp_gelu_mul(float x, float up) {
  if (x <= -10.0f) return 0.0f;
  if (x >= 10.0f || std::isnan(x)) return x * up;
  return widen_f16(llama_cpp_gelu_table()[narrow_f16(x)]) * up;
}

}  // namespace tapdiff::formats
