#pragma once
// RoPE frequencies: what each rotated channel pair turns by per position, for every scaling that
// tapdiff implements, computed as transformers' rope initialisation functions
// (modeling_rope_utils.py) and llama.cpp's freq_factors compute them, in double.
//
// A pair i of the rotary_dim leading channels of a head turns by pos * inv_freq[i]; its cos and sin
// are multiplied by attention_factor (YaRN, LongRoPE); channels past rotary_dim pass unchanged.
#include <compare>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace tapdiff::model {

struct ModelConfig;

// How RoPE pairs the rotated channels of one head (d = rotary_dim):
//  interleaved: (x[2i], x[2i+1]) rotate together (GGUF `llama`, Meta's original checkpoints);
//  rotate_half: (x[i], x[i + d/2]) rotate together (Hugging Face, GGUF `qwen2`).
// Both use the angle pos * base^(-2i/d) for pair i.
enum class RopeStyle : std::uint8_t { interleaved, rotate_half };

// The other style.
constexpr RopeStyle flipped(RopeStyle style) {
  return style == RopeStyle::rotate_half ? RopeStyle::interleaved : RopeStyle::rotate_half;
}

// The two channels of pair i (0 <= i < pairs = rotary_dim / 2) in a style's layout.
struct RopePair {
  int a = 0, b = 0;
};
constexpr RopePair rope_pair(RopeStyle style, int i, int pairs) {
  return style == RopeStyle::interleaved ? RopePair{2 * i, 2 * i + 1} : RopePair{i, i + pairs};
}

enum class RopeType : std::uint8_t {
  standard,  // base^(-2i/d)
  linear,    // positions divided by factor
  dynamic,   // NTK-aware base, grown once the sequence passes original_context
  yarn,      // frequencies blended by a ramp between beta_fast and beta_slow rotations, scaled cos/sin
  llama3,    // low frequencies divided by factor, a smooth blend between low_freq and high_freq
  longrope,  // per-pair factors: short_factor within original_context, long_factor past it
  // base^(-2i/d) divided by factor for the first floor(partial d / 2) pairs of the whole head, the
  // others not turned (Gemma 4's full layers: transformers' "proportional")
  proportional,
};
std::string_view rope_type_name(RopeType type);  // as Hugging Face's rope_type: "default", "linear", ...

struct RopeScaling {
  RopeType type = RopeType::standard;
  double factor = 1.0;
  int original_context = 0;  // original_max_position_embeddings (dynamic, yarn, llama3, longrope)
  double low_freq_factor = 1.0, high_freq_factor = 4.0;  // llama3
  double beta_fast = 32.0, beta_slow = 1.0;              // yarn
  bool truncate = true;                                  // yarn: round the ramp's ends outward
  double attention_factor = 0.0;                         // yarn, longrope: 0 = derived from factor
  std::vector<double> short_factor, long_factor;         // longrope, one per pair
  double partial = 1.0;                                  // proportional: the share of the pairs that turn
  // longrope: which factors. transformers picks them per pass, long_factor once the pass reaches
  // past original_context; llama.cpp (a GGUF's rope_factors_long/short) once for the run,
  // long_factor when the context it runs with (n_ctx) exceeds original_context: run_context, 0
  // where not given (then no engine runs the model: require_runnable in model/weights.h).
  bool by_run_context = false;
  int run_context = 0;
  // llama.cpp's rope_freqs.weight (GGUF, Llama 3.1+): each pair's frequency is divided by its
  // factor, on top of the type above.
  std::vector<double> freq_factors;
};

// The angles as llama.cpp's CPU backend computes them (ggml_rope_cache_init), every step in f32:
// theta = pos; pair i turns by (theta / freq_factors[i]) * freq_scale, then theta *= theta_scale;
// cosf and sinf of it, times the attention factor.
struct GgmlAngles {
  float theta_scale = 1.0f;         // powf(base, -2 / rotary_dim)
  float freq_scale = 1.0f;          // 1 / factor for linear scaling, else 1
  std::vector<float> freq_factors;  // a GGUF's rope_freqs.weight; empty: 1 for every pair
  auto operator<=>(const GgmlAngles&) const = default;
};

// Llama 4's attention temperature (Ministral 3's llama_4_scaling_beta): q after RoPE times
// 1 + beta * ln(1 + floor((pos + offset) / length)) at its position pos; beta 0: none. Folded into
// the cos and sin that q turns by (query_frequencies), so it needs RoPE on whole heads. Ministral 3
// scales every layer's q; Llama 4 (attn_scale, floor_scale) only the q of the layers that do not
// rotate (nope_layers), at pos + 1.
struct QueryTemperature {
  double beta = 0;
  int length = 0;
  int offset = 0;
  bool nope_layers = false;
  auto operator<=>(const QueryTemperature&) const = default;
};

// The temperature's factor at a position.
double query_temperature(const QueryTemperature& t, std::int64_t pos);

struct RopeFrequencies {
  std::vector<double> inv_freq;   // [rotary_dim / 2]
  double attention_factor = 1.0;  // multiplies cos and sin
  // Set where an engine computes the angles as ggml does (llama.cpp's precision): rope_cos_sin then
  // takes ggml's f32 steps, not pos * inv_freq[i] in double.
  std::optional<GgmlAngles> ggml;
  QueryTemperature temperature;  // q's: multiplies cos and sin at each position
  bool still = false;  // a layer that does not rotate: no angle, no attention factor (q only scaled by the temperature)
  auto operator<=>(const RopeFrequencies&) const = default;
};

// cos and sin of each rotated pair's angle at `pos`, times the attention factor, into
// cos_sin[2i], cos_sin[2i + 1] (inv_freq.size() pairs): of pos * inv_freq[i] in double, or as ggml
// computes them in f32 where f.ggml is set. What both engines rotate by (reference::rope, the
// Vulkan engine's tables).
void rope_cos_sin(const RopeFrequencies& f, std::int64_t pos, std::span<double> cos_sin);

// The frequencies q of a layer turns by: f with the config's query temperature where it scales the layer.
RopeFrequencies query_frequencies(const ModelConfig& config, int layer, RopeFrequencies f);

// transformers' yarn_get_mscale: 0.1 mscale ln(factor) + 1 for a factor above 1, else 1.
double yarn_mscale(double factor, double mscale = 1.0);

// The channels of a head that RoPE rotates (config.rotary_dim, or head_dim when 0); in a layer,
// whose head may be its own width (model/config.h AttentionShape).
int rotary_dim(const ModelConfig& config);
int rotary_dim(const ModelConfig& config, int layer);

// A layer's frequencies for a pass whose last position is seq_len - 1 (dynamic and longrope depend
// on it, as transformers' dynamic_rope_update does), by the layer's scaling (model::rope_scaling);
// `base` is the layer's model::rope_base unless a planted fault changes it.
RopeFrequencies rope_frequencies(const ModelConfig& config, int layer, double base, std::int64_t seq_len);

}  // namespace tapdiff::model
