#include "model/rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "model/config.h"
#include "model/errors.h"

namespace tapdiff::model {
namespace {

// base^(-2i/d) for the d/2 pairs of d rotated channels.
std::vector<double> standard_inv_freq(double base, int d) {
  std::vector<double> f(static_cast<std::size_t>(d / 2));
  for (std::size_t i = 0; i < f.size(); ++i) f[i] = std::pow(base, -2.0 * static_cast<double>(i) / d);
  return f;
}

// transformers' _compute_dynamic_ntk_parameters: the base grows with the sequence once it passes
// the original context.
double dynamic_base(const RopeScaling& s, double base, int d, std::int64_t seq_len) {
  const double len = static_cast<double>(std::max<std::int64_t>(seq_len, s.original_context));
  return base * std::pow(s.factor * len / s.original_context - (s.factor - 1.0), d / (d - 2.0));
}

}  // namespace

double yarn_mscale(double factor, double mscale) { return factor <= 1.0 ? 1.0 : 0.1 * mscale * std::log(factor) + 1.0; }

namespace {

// transformers' _compute_yarn_parameters.
RopeFrequencies yarn(const RopeScaling& s, double base, int d) {
  auto correction_dim = [&](double rotations) {
    return d * std::log(s.original_context / (rotations * 2.0 * std::numbers::pi)) / (2.0 * std::log(base));
  };
  double low = correction_dim(s.beta_fast), high = correction_dim(s.beta_slow);
  if (s.truncate) low = std::floor(low), high = std::ceil(high);
  low = std::max(low, 0.0), high = std::min(high, d - 1.0);
  if (low == high) high += 0.001;
  RopeFrequencies out;
  for (const double extrapolation : standard_inv_freq(base, d)) {
    const double i = static_cast<double>(out.inv_freq.size());
    const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
    const double keep = 1.0 - ramp;  // the share of the unscaled frequency
    out.inv_freq.push_back(extrapolation / s.factor * (1.0 - keep) + extrapolation * keep);
  }
  out.attention_factor = s.attention_factor > 0 ? s.attention_factor : yarn_mscale(s.factor);
  return out;
}

// transformers' _compute_llama3_parameters.
std::vector<double> llama3(const RopeScaling& s, std::vector<double> f) {
  const double low_wavelen = s.original_context / s.low_freq_factor;
  const double high_wavelen = s.original_context / s.high_freq_factor;
  for (double& freq : f) {
    const double wavelen = 2.0 * std::numbers::pi / freq;
    if (wavelen > low_wavelen) {
      freq /= s.factor;
    } else if (wavelen >= high_wavelen) {
      const double smooth =
          (s.original_context / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      freq = (1.0 - smooth) * freq / s.factor + smooth * freq;
    }
  }
  return f;
}

// transformers' _compute_longrope_parameters with its _longrope_frequency_update, or llama.cpp's
// choice by the run's context (RopeScaling::by_run_context).
RopeFrequencies longrope(const RopeScaling& s, double base, int d, std::int64_t seq_len) {
  TAPDIFF_ASSERT(!s.by_run_context || s.run_context > 0, "LongRoPE by the run's context without one");
  const std::int64_t length = s.by_run_context ? s.run_context : seq_len;
  const std::vector<double>& factors = length > s.original_context ? s.long_factor : s.short_factor;
  RopeFrequencies out{standard_inv_freq(base, d), 1.0, std::nullopt, {}};
  TAPDIFF_ASSERT(factors.size() == out.inv_freq.size(), "{} longrope factors for {} pairs", factors.size(),
                 out.inv_freq.size());
  for (std::size_t i = 0; i < factors.size(); ++i) out.inv_freq[i] /= factors[i];
  out.attention_factor = s.attention_factor > 0 ? s.attention_factor
                         : s.factor <= 1.0
                             ? 1.0
                             : std::sqrt(1.0 + std::log(s.factor) / std::log(static_cast<double>(s.original_context)));
  return out;
}

}  // namespace

std::string_view rope_type_name(RopeType type) {
  switch (type) {
    case RopeType::standard: return "default";
    case RopeType::linear: return "linear";
    case RopeType::dynamic: return "dynamic";
    case RopeType::yarn: return "yarn";
    case RopeType::llama3: return "llama3";
    case RopeType::longrope: return "longrope";
    case RopeType::proportional: return "proportional";
  }
  return "?";
}

int rotary_dim(const ModelConfig& config) { return config.rotary_dim > 0 ? config.rotary_dim : config.head_dim; }

int rotary_dim(const ModelConfig& config, int layer) {
  return config.rotary_dim > 0 ? config.rotary_dim : head_dim(config, layer);
}

RopeFrequencies rope_frequencies(const ModelConfig& config, int layer, double base, std::int64_t seq_len) {
  const RopeScaling& s = rope_scaling(config, layer);
  const int d = rotary_dim(config, layer);
  RopeFrequencies out;
  switch (s.type) {
    case RopeType::standard: out.inv_freq = standard_inv_freq(base, d); break;
    case RopeType::linear:
      out.inv_freq = standard_inv_freq(base, d);
      for (double& f : out.inv_freq) f /= s.factor;
      break;
    case RopeType::dynamic:
      out.inv_freq = standard_inv_freq(seq_len > s.original_context ? dynamic_base(s, base, d, seq_len) : base, d);
      break;
    case RopeType::yarn: out = yarn(s, base, d); break;
    case RopeType::llama3: out.inv_freq = llama3(s, standard_inv_freq(base, d)); break;
    case RopeType::longrope: out = longrope(s, base, d, seq_len); break;
    case RopeType::proportional: {
      out.inv_freq = standard_inv_freq(base, d);
      const auto turned = static_cast<std::size_t>(s.partial * d / 2);
      for (std::size_t i = 0; i < out.inv_freq.size(); ++i)
        out.inv_freq[i] = i < turned ? out.inv_freq[i] / s.factor : 0.0;
      break;
    }
  }
  out.still = !uses_rope(config, layer);
  if (!s.freq_factors.empty()) {
    TAPDIFF_ASSERT(s.freq_factors.size() == out.inv_freq.size(), "{} freq_factors for {} pairs", s.freq_factors.size(),
                   out.inv_freq.size());
    for (std::size_t i = 0; i < out.inv_freq.size(); ++i) out.inv_freq[i] /= s.freq_factors[i];
  }
  return out;
}

double query_temperature(const QueryTemperature& t, std::int64_t pos) {
  if (t.beta == 0) return 1.0;
  return 1.0 + t.beta * std::log(1.0 + std::floor(static_cast<double>(pos + t.offset) / t.length));
}

RopeFrequencies query_frequencies(const ModelConfig& config, int layer, RopeFrequencies f) {
  if (scales_query(config, layer)) f.temperature = config.query_temperature;
  return f;
}

void rope_cos_sin(const RopeFrequencies& f, std::int64_t pos, std::span<double> cos_sin) {
  TAPDIFF_ASSERT(cos_sin.size() == 2 * f.inv_freq.size(), "cos and sin of {} pairs", f.inv_freq.size());
  const double temperature = query_temperature(f.temperature, pos);
  if (f.still) {  // no turn, so no RoPE scaling's attention factor either: the temperature alone
    for (std::size_t i = 0; i < f.inv_freq.size(); ++i) {
      cos_sin[2 * i] = temperature;
      cos_sin[2 * i + 1] = 0.0;
    }
    return;
  }
  if (!f.ggml) {
    for (std::size_t i = 0; i < f.inv_freq.size(); ++i) {
      const double angle = static_cast<double>(pos) * f.inv_freq[i];
      cos_sin[2 * i] = std::cos(angle) * f.attention_factor * temperature;
      cos_sin[2 * i + 1] = std::sin(angle) * f.attention_factor * temperature;
    }
    return;
  }
  const GgmlAngles& g = *f.ggml;
  const auto mscale = static_cast<float>(f.attention_factor * temperature);
  float theta = static_cast<float>(pos);
  for (std::size_t i = 0; i < f.inv_freq.size(); ++i) {
    const float factor = g.freq_factors.empty() ? 1.0f : g.freq_factors[i];
    const float angle = g.freq_scale * (theta / factor);
    cos_sin[2 * i] = std::cos(angle) * mscale;
    cos_sin[2 * i + 1] = std::sin(angle) * mscale;
    theta *= g.theta_scale;
  }
}

}  // namespace tapdiff::model
