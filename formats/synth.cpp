#include "formats/synth.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>
#include <set>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "formats/family_spec.h"
#include "formats/gguf_writer.h"
#include "model/errors.h"
#include "model/rope.h"

namespace tapdiff::formats {

using namespace model;

namespace {

// splitmix64: a tiny, well-mixed, platform-independent generator.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::uint64_t hash_name(std::uint64_t seed, const std::string& name) {
  std::uint64_t h = mix(seed);
  for (const char c : name) h = mix(h ^ static_cast<unsigned char>(c));
  return h;
}

// Standard normal samples from a counter-based stream (Box-Muller): row r of a tensor depends
// only on (tensor seed, r), so rows can be generated in parallel and still be deterministic.
class Normal {
 public:
  explicit Normal(std::uint64_t seed) : state_(seed) {}
  double operator()() {
    const double u1 = (static_cast<double>(mix(state_++) >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
    const double u2 = static_cast<double>(mix(state_++) >> 11) * 0x1.0p-53;          // [0, 1)
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }

 private:
  std::uint64_t state_;
};

struct TensorPlan {
  std::string name;
  std::int64_t rows, cols;  // a stack of experts: rows of every expert, expert after expert
  double mean, stddev;
  bool matrix;      // stored in the chosen dtype (else f32)
  int layer = -1;   // of a blk.N tensor
  int experts = 0;  // > 0: stacked experts, a 3-D tensor [experts, rows / experts, cols]
};

// The tensor's GGUF shape (ne: columns first).
std::vector<std::int64_t> gguf_shape(const TensorPlan& t) {
  if (t.experts > 0) return {t.cols, t.rows / t.experts, t.experts};
  if (t.rows == 1 && !t.matrix) return {t.cols};
  return {t.cols, t.rows};
}

std::vector<TensorPlan> plan_tensors(const ModelConfig& c) {
  std::vector<TensorPlan> plan;
  int layer = -1;
  auto matrix = [&](std::string name, int rows, int cols, double var) {
    plan.push_back({std::move(name), rows, cols, 0.0, std::sqrt(var), true, layer});
  };
  auto vector = [&](std::string name, int n, double mean, double stddev) {
    plan.push_back({std::move(name), 1, n, mean, stddev, false, layer});
  };
  auto stacked = [&](std::string name, int rows, int cols, double var) {
    plan.push_back({std::move(name), std::int64_t{c.experts.count} * rows, cols, 0.0, std::sqrt(var), true, layer,
                    c.experts.count});
  };
  matrix("token_embd.weight", c.vocab, c.dim, 1.0);
  for (int l = 0; l < c.n_layers; ++l) {
    layer = l;
    const std::string b = fmt::format("blk.{}.", l);
    vector(b + "attn_norm.weight", c.dim, 1.0, 0.1);
    // Latent attention as llama.cpp's converter lays it out with a KV head per head: attn_kv_b holds
    // each head's key rows, then its value rows.
    if (c.latent()) {
      const LatentAttention& m = c.mla;
      if (m.q_rank > 0) {
        matrix(b + "attn_q_a.weight", m.q_rank, c.dim, 1.0 / c.dim);
        vector(b + "attn_q_a_norm.weight", m.q_rank, 1.0, 0.1);
        matrix(b + "attn_q_b.weight", c.q_dim(), m.q_rank, kSynthQkGain / m.q_rank);
      } else {
        matrix(b + "attn_q.weight", c.q_dim(), c.dim, kSynthQkGain / c.dim);
      }
      matrix(b + "attn_kv_a_mqa.weight", m.kv_rank + m.rope_dim, c.dim, kSynthQkGain / c.dim);
      vector(b + "attn_kv_a_norm.weight", m.kv_rank, 1.0, 0.1);
      matrix(b + "attn_kv_b.weight", c.n_heads * (m.nope_dim + m.v_dim), m.kv_rank, 1.0 / m.kv_rank);
    } else {
      matrix(b + "attn_q.weight", c.q_dim(), c.dim, kSynthQkGain / c.dim);
      matrix(b + "attn_k.weight", c.kv_dim(), c.dim, kSynthQkGain / c.dim);
      matrix(b + "attn_v.weight", c.kv_dim(), c.dim, 1.0 / c.dim);
    }
    if (c.block.qkv_bias) {
      vector(b + "attn_q.bias", c.q_dim(), 0.0, 0.1);
      vector(b + "attn_k.bias", c.kv_dim(), 0.0, 0.1);
      vector(b + "attn_v.bias", c.kv_dim(), 0.0, 0.1);
    }
    // each head's, or the whole projection's (none for norms without a weight)
    if (c.block.qk_norm == QkNorm::per_head || c.block.qk_norm == QkNorm::whole) {
      const bool per_head = c.block.qk_norm == QkNorm::per_head;
      vector(b + "attn_q_norm.weight", per_head ? c.head_dim : c.q_dim(), 1.0, 0.1);
      vector(b + "attn_k_norm.weight", per_head ? c.head_dim : c.kv_dim(), 1.0, 0.1);
    }
    matrix(b + "attn_output.weight", c.dim, c.attn_dim(), 1.0 / c.attn_dim());
    if (c.block.o_bias) vector(b + "attn_output.bias", c.dim, 0.0, 0.1);
    if (c.block.attention_sinks) vector(b + "attn_sinks.weight", c.n_heads, 0.0, 1.0);
    vector(b + std::string(family_spec(c.family).synth.ffn_norm) + ".weight", c.dim, 1.0, 0.1);
    if (uses_experts(c, l)) {  // the router in f32, as llama.cpp's converter stores it
      const int f = c.experts.ffn_dim;
      plan.push_back({b + "ffn_gate_inp.weight", c.experts.count, c.dim, 0.0, std::sqrt(1.0 / c.dim), false, layer});
      if (c.experts.selection_bias) vector(b + "exp_probs_b.bias", c.experts.count, 0.0, 0.1);
      if (c.experts.router_bias) vector(b + "ffn_gate_inp.bias", c.experts.count, 0.0, 0.1);
      const double gain = family_spec(c.family).synth.expert_gain;
      stacked(b + "ffn_gate_exps.weight", f, c.dim, gain * gain / c.dim);
      stacked(b + "ffn_up_exps.weight", f, c.dim, gain * gain / c.dim);
      stacked(b + "ffn_down_exps.weight", c.dim, f, kSynthFfnDownGain / f / (gain * gain));
      if (c.experts.biases) {  // [width, experts] in the file, in f32
        for (const auto& [name, width] : {std::pair<std::string, int>{"ffn_gate_exps.bias", f},
                                          {"ffn_up_exps.bias", f},
                                          {"ffn_down_exps.bias", c.dim}})
          plan.push_back({b + name, c.experts.count, width, 0.0, 0.1, false, layer});
      }
      if (const int shared = c.experts.shared_ffn_dim; shared > 0) {
        matrix(b + "ffn_gate_shexp.weight", shared, c.dim, 1.0 / c.dim);
        matrix(b + "ffn_up_shexp.weight", shared, c.dim, 1.0 / c.dim);
        matrix(b + "ffn_down_shexp.weight", c.dim, shared, kSynthFfnDownGain / shared);
      }
      if (c.experts.shared_gate) vector(b + "ffn_gate_inp_shexp.weight", c.dim, 0.0, std::sqrt(1.0 / c.dim));
    } else {
      matrix(b + "ffn_gate.weight", c.ffn_dim, c.dim, 1.0 / c.dim);
      matrix(b + "ffn_up.weight", c.ffn_dim, c.dim, 1.0 / c.dim);
      matrix(b + "ffn_down.weight", c.dim, c.ffn_dim, kSynthFfnDownGain / c.ffn_dim);
    }
  }
  layer = -1;
  vector("output_norm.weight", c.dim, 1.0, 0.1);
  if (!c.tied_output) matrix("output.weight", c.vocab, c.dim, 1.0 / c.dim);
  return plan;
}

// Channels carrying outliers: spread deterministically over the residual stream.
std::set<std::int64_t> outlier_set(const SynthOptions& o) {
  std::set<std::int64_t> channels;
  for (int i = 0; i < o.outlier_channels; ++i)
    channels.insert(static_cast<std::int64_t>(mix(o.seed + 7919u * static_cast<unsigned>(i)) %
                                              static_cast<std::uint64_t>(o.config.dim)));
  return channels;
}

std::vector<float> generate(const TensorPlan& t, const SynthOptions& o, const std::set<std::int64_t>& outliers) {
  std::vector<float> values(static_cast<std::size_t>(t.rows * t.cols));
  const std::uint64_t tensor_seed = hash_name(o.seed, t.name);
  const bool embedding = t.name == "token_embd.weight";
  const bool norm = t.name.find("norm.weight") != std::string::npos;
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < t.rows; ++r) {
    Normal normal(mix(tensor_seed + static_cast<std::uint64_t>(r)) * 2654435761u);
    float* row = values.data() + r * t.cols;
    for (std::int64_t c = 0; c < t.cols; ++c) {
      double v = t.mean + t.stddev * normal();
      if (outliers.count(c) != 0) v = embedding ? v * o.outlier_scale : norm ? v / o.outlier_scale : v;
      row[c] = static_cast<float>(v);
    }
  }
  return values;
}

void add_config(GgufWriter& w, const ModelConfig& c) {
  const GgufRecipe& gguf = family_spec(c.family).gguf;
  const std::string a(gguf.architectures.front());
  w.add_string("general.architecture", a);
  w.add_string("general.name", "tapdiff synth");
  w.add_u32(a + ".block_count", static_cast<std::uint32_t>(c.n_layers));
  w.add_u32(a + ".embedding_length", static_cast<std::uint32_t>(c.dim));
  w.add_u32(a + ".attention.head_count", static_cast<std::uint32_t>(c.n_heads));
  w.add_u32(a + ".attention.head_count_kv", static_cast<std::uint32_t>(c.n_kv_heads));
  w.add_u32(a + ".attention.key_length", static_cast<std::uint32_t>(c.head_dim));
  w.add_u32(a + ".attention.value_length", static_cast<std::uint32_t>(c.v_head_dim()));
  w.add_u32(a + ".feed_forward_length", static_cast<std::uint32_t>(c.ffn_dim));
  w.add_u32(a + ".context_length", static_cast<std::uint32_t>(c.context_length));
  w.add_u32(a + ".rope.dimension_count", static_cast<std::uint32_t>(rotary_dim(c)));
  if (c.latent()) {
    if (c.mla.q_rank > 0) w.add_u32(a + ".attention.q_lora_rank", static_cast<std::uint32_t>(c.mla.q_rank));
    w.add_u32(a + ".attention.kv_lora_rank", static_cast<std::uint32_t>(c.mla.kv_rank));
  }
  w.add_f32(a + ".rope.freq_base", static_cast<float>(c.rope_base));
  w.add_f32(a + ".attention.layer_norm_rms_epsilon", static_cast<float>(c.norm_eps));
  w.add_u32(a + ".vocab_size", static_cast<std::uint32_t>(c.vocab));
  if (c.experts.count > 0) {
    w.add_u32(a + ".expert_count", static_cast<std::uint32_t>(c.experts.count));
    w.add_u32(a + ".expert_used_count", static_cast<std::uint32_t>(c.experts.active));
    // the keys the family's llama.cpp graph reads (its recipe's)
    const auto has_key = [&](std::string_view key) { return std::ranges::find(gguf.keys, key) != gguf.keys.end(); };
    if (has_key("expert_feed_forward_length"))
      w.add_u32(a + ".expert_feed_forward_length", static_cast<std::uint32_t>(c.experts.ffn_dim));
    if (has_key("interleave_moe_layer_step")) w.add_u32(a + ".interleave_moe_layer_step", 1);  // every layer's
    if (has_key("expert_shared_count"))  // shared experts of the routed ones' width
      w.add_u32(a + ".expert_shared_count", static_cast<std::uint32_t>(c.experts.shared_ffn_dim / c.experts.ffn_dim));
    else if (c.experts.shared_ffn_dim > 0 && has_key("expert_shared_feed_forward_length"))
      w.add_u32(a + ".expert_shared_feed_forward_length", static_cast<std::uint32_t>(c.experts.shared_ffn_dim));
    if (c.experts.score == RouterScore::sigmoid && has_key("expert_gating_func")) {
      w.add_u32(a + ".expert_gating_func", 2);  // llama.cpp's LLAMA_EXPERT_GATING_FUNC_TYPE_SIGMOID
      w.add_bool(a + ".expert_weights_norm", c.experts.normalize);
      w.add_f32(a + ".expert_weights_scale", static_cast<float>(c.experts.scale));
    }
    if (const auto dense = std::ranges::find(c.experts.layers, true) - c.experts.layers.begin();
        dense > 0 && has_key("leading_dense_block_count"))
      w.add_u32(a + ".leading_dense_block_count", static_cast<std::uint32_t>(dense));
    if (c.experts.groups > 1) {
      w.add_u32(a + ".expert_group_count", static_cast<std::uint32_t>(c.experts.groups));
      w.add_u32(a + ".expert_group_used_count", static_cast<std::uint32_t>(c.experts.top_groups));
    }
  }
  if (c.sliding_window > 0)  // the family's pattern of sliding layers is its recipe's default
    w.add_u32(a + ".attention.sliding_window", static_cast<std::uint32_t>(c.sliding_window));
}

void add_vocabulary(GgufWriter& w, int vocab) {
  SynthVocabulary v = synth_vocabulary(vocab);
  w.add_string("tokenizer.ggml.model", "llama");
  w.add_string_array("tokenizer.ggml.tokens", v.tokens);
  w.add_f32_array("tokenizer.ggml.scores", v.scores);
  w.add_i32_array("tokenizer.ggml.token_type", v.types);
  w.add_u32("tokenizer.ggml.unknown_token_id", 0);
  if (vocab > 1) w.add_u32("tokenizer.ggml.bos_token_id", 1);
  if (vocab > 2) w.add_u32("tokenizer.ggml.eos_token_id", 2);
}

}  // namespace

ModelConfig synth_shape(const std::string& name) {
  auto shape = [](int layers, int dim, int heads, int kv_heads, int head_dim, int ffn, int vocab, int context) {
    ModelConfig c;
    c.n_layers = layers, c.dim = dim, c.n_heads = heads, c.n_kv_heads = kv_heads, c.head_dim = head_dim;
    c.ffn_dim = ffn, c.vocab = vocab, c.context_length = context, c.bos_token = 1, c.eos_token = 2;
    return c;
  };
  if (name == "tiny") return shape(2, 64, 4, 2, 16, 192, 512, 2048);
  if (name == "small") return shape(4, 256, 8, 4, 32, 704, 2048, 4096);
  if (name == "tinyllama") return shape(22, 2048, 32, 4, 64, 5632, 32000, 2048);
  if (name == "llama3-8b") {
    ModelConfig c = shape(32, 4096, 32, 8, 128, 14336, 128256, 8192);
    c.rope_base = 500000.0;
    return c;
  }
  // Mixtures of experts (arch qwen3moe): experts, experts per token, an expert's FFN width.
  auto moe = [](ModelConfig c, int experts, int active, int expert_ffn) {
    c.family = Family::qwen3_moe;
    c.experts = {experts, active, expert_ffn, true, {}};
    c.rope_base = 1000000.0;
    return c;
  };
  if (name == "tiny-moe") return moe(shape(2, 64, 4, 2, 16, 192, 512, 2048), 8, 2, 64);
  // Latent attention (arch deepseek2): q's rank, the latent's, each head's RoPE, no-RoPE and value
  // channels; the first `dense` layers dense.
  auto latent = [](ModelConfig c, LatentAttention mla, int dense) {
    c.family = Family::deepseek_v3;
    c.mla = mla;
    c.n_kv_heads = c.n_heads, c.head_dim = mla.nope_dim + mla.rope_dim, c.rotary_dim = mla.rope_dim;
    c.experts.layers.assign(static_cast<std::size_t>(c.n_layers), true);
    std::fill_n(c.experts.layers.begin(), dense, false);
    return c;
  };
  if (name == "tiny-mla")
    return latent(moe(shape(3, 64, 4, 4, 24, 192, 512, 2048), 8, 2, 32),
                  {.q_rank = 32, .kv_rank = 32, .nope_dim = 16, .rope_dim = 8, .v_dim = 16}, 1);
  if (name == "deepseek-v3") {
    ModelConfig c = latent(moe(shape(61, 7168, 128, 128, 192, 18432, 129280, 4096), 256, 8, 2048),
                           {.q_rank = 1536, .kv_rank = 512, .nope_dim = 128, .rope_dim = 64, .v_dim = 128}, 3);
    c.rope_base = 10000.0;
    return c;
  }
  if (name == "qwen3-30b-a3b") return moe(shape(48, 2048, 32, 4, 128, 6144, 151936, 4096), 128, 8, 768);
  if (name == "gpt-oss-20b") {
    ModelConfig c = moe(shape(24, 2880, 64, 8, 64, 2880, 201088, 131072), 32, 4, 2880);
    c.rope_base = 150000.0;
    return c;
  }
  throw UsageError(fmt::format(
      "unknown synth shape '{}': expected tiny, small, tinyllama, llama3-8b, tiny-moe, qwen3-30b-a3b, gpt-oss-20b, "
      "tiny-mla or deepseek-v3",
      name));
}

void set_synth_layers(ModelConfig& c, int layers) {
  c.n_layers = layers;
  if (!c.experts.layers.empty()) c.experts.layers.resize(static_cast<std::size_t>(layers), true);
}

SynthVocabulary synth_vocabulary(int vocab) {
  SynthVocabulary v;
  auto add = [&](std::string piece, float score, std::int32_t type) {
    if (static_cast<int>(v.tokens.size()) >= vocab) return;
    v.tokens.push_back(std::move(piece)), v.scores.push_back(score), v.types.push_back(type);
  };
  add("<unk>", 0, 2), add("<s>", 0, 3), add("</s>", 0, 3);
  for (int b = 0; b < 256; ++b) add(fmt::format("<0x{:02X}>", b), 0, 6);
  std::set<std::string> seen;
  auto piece = [&](const std::string& p) {
    if (seen.insert(p).second) add(p, -static_cast<float>(v.tokens.size()), 1);
  };
  piece("\xE2\x96\x81");  // "▁", the SentencePiece space
  for (char ch = ' ' + 1; ch <= '~'; ++ch) piece(std::string(1, ch));
  static const char* const kWords[] = {
      "the",   "a",      "and",   "to",    "of",    "in",    "is",     "it",     "was",  "that",     "he",
      "she",   "for",    "on",    "with",  "as",    "at",    "by",     "his",    "her",  "they",     "be",
      "this",  "from",   "or",    "had",   "not",   "but",   "what",   "all",    "were", "when",     "we",
      "there", "can",    "an",    "your",  "which", "their", "said",   "if",     "do",   "will",     "each",
      "about", "how",    "up",    "out",   "them",  "then",  "many",   "some",   "so",   "these",    "would",
      "other", "into",   "has",   "more",  "time",  "two",   "like",   "him",    "see",  "could",    "no",
      "way",   "my",     "than",  "been",  "who",   "its",   "now",    "people", "over", "down",     "only",
      "very",  "just",   "day",   "one",   "upon",  "once",  "little", "girl",   "boy",  "dog",      "cat",
      "fox",   "quick",  "brown", "jumps", "lazy",  "play",  "happy",  "big",    "red",  "ball",     "story",
      "code",  "return", "int",   "for",   "while", "def",   "class",  "write",  "list", "function", "explain"};
  for (const char* word : kWords) {
    const std::string w = std::string("\xE2\x96\x81") + word;
    for (std::size_t len = 4; len <= w.size(); ++len) piece(w.substr(0, len));  // "▁t", "▁th", "▁the"
  }
  for (int i = 0; static_cast<int>(v.tokens.size()) < vocab; ++i) piece(fmt::format("\xE2\x96\x81tok{}", i));
  return v;
}

namespace {

// llama.cpp's use_more_bits (llama-quant.cpp): the first and last eighth of the layers and every
// third one between.
bool use_more_bits(int layer, int n_layers) {
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

DType storage_of(const TensorPlan& t, const SynthOptions& o, int n_layers) {
  if (!t.matrix) return DType::f32;
  if (!o.medium_mix) return o.dtype;
  const bool more_bits = t.layer >= 0 && use_more_bits(t.layer, n_layers) &&
                         (t.name.ends_with(".attn_v.weight") || t.name.find(".ffn_down") != std::string::npos);
  return t.name == "output.weight" || more_bits ? DType::q6_k : o.dtype;
}

constexpr DType kMediumMixBases[] = {DType::q4_k, DType::q5_k};

std::string storage_name(const SynthOptions& o) {
  return o.medium_mix ? std::string(dtype_name(o.dtype)) + "_m" : std::string(dtype_name(o.dtype));
}

}  // namespace

bool set_synth_storage(SynthOptions& options, std::string_view name) {
  for (DType base : kMediumMixBases) {
    if (name == std::string(dtype_name(base)) + "_m") {
      options.dtype = base, options.medium_mix = true;
      return true;
    }
  }
  const auto dtype = dtype_from_name(name);
  if (!dtype) return false;
  options.dtype = *dtype, options.medium_mix = false;
  return true;
}

std::string synth_storage_names() {
  std::string names = dtype_names();
  for (DType base : kMediumMixBases) names += fmt::format(", {}_m", dtype_name(base));
  return names;
}

std::string synth_digest(const SynthOptions& o) {
  constexpr std::uint64_t kGeneratorVersion = 2;  // bump when the generated bytes change
  const std::string text =
      fmt::format("{}|{}|{}|{}|{}|{}|{}|{}", to_json(o.config).dump(), storage_name(o), o.seed, o.outlier_channels,
                  o.outlier_scale, kSynthQkGain, kSynthFfnDownGain, kGeneratorVersion);
  return fmt::format("{:016x}", hash_name(0, text));
}

void write_synth_model(const std::filesystem::path& path, const SynthOptions& options) {
  ModelConfig c = options.config;
  const FamilySpec& family = family_spec(c.family);
  if (family.synth.block == nullptr)
    throw UsageError(fmt::format("synth: --arch must be {}, found '{}'", synth_architectures(), family_name(c.family)));
  if (family.synth.experts != (c.experts.count > 0))
    throw UsageError(fmt::format("synth: arch {} {} experts, found {}", family.gguf.architectures.front(),
                                 family.synth.experts ? "needs" : "has no", c.experts.count));
  if (family.synth.latent != c.latent())
    throw UsageError(fmt::format("synth: arch {} {} latent attention (shapes tiny-mla, deepseek-v3), found a shape {}",
                                 family.gguf.architectures.front(), family.synth.latent ? "needs" : "has no",
                                 c.latent() ? "with it" : "without it"));
  c.rope_style = family.gguf.rope_style;
  c.block.qkv_bias = false, c.block.qk_norm = QkNorm::none;  // biases and q/k norms are the family's
  family.synth.block(c);
  c.validate("synth");
  if (!std::isfinite(options.outlier_scale) || options.outlier_scale <= 0)
    throw UsageError(fmt::format("synth: expected a finite outlier scale > 0, found {}", options.outlier_scale));
  if (options.outlier_channels < 0 || options.outlier_channels > c.dim)
    throw UsageError(
        fmt::format("synth: expected 0 to {} outlier channels (dim), found {}", c.dim, options.outlier_channels));
  if (options.medium_mix && std::ranges::find(kMediumMixBases, options.dtype) == std::end(kMediumMixBases))
    throw UsageError(
        fmt::format("synth: the _M mix is llama.cpp's over q4_k or q5_k, found {}", dtype_name(options.dtype)));
  const std::vector<TensorPlan> plan = plan_tensors(c);
  std::vector<DType> storage;
  for (const TensorPlan& t : plan) {
    storage.push_back(storage_of(t, options, c.n_layers));
    if (t.cols % block_size(storage.back()) != 0)
      throw UsageError(fmt::format(
          "synth: {} needs the rows of {} to be a multiple of {} wide, found {} (dim {}, "
          "heads*head_dim {}, ffn {})",
          dtype_name(storage.back()), t.name, block_size(storage.back()), t.cols, c.dim, c.q_dim(), c.ffn_dim));
  }
  GgufWriter writer(path);
  add_config(writer, c);
  add_vocabulary(writer, c.vocab);
  for (std::size_t i = 0; i < plan.size(); ++i) {
    writer.add_tensor(plan[i].name, storage[i], gguf_shape(plan[i]));
  }
  const std::set<std::int64_t> outliers = outlier_set(options);
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const TensorPlan& t = plan[i];
    const std::vector<float> values = generate(t, options, outliers);
    const DType dtype = storage[i];
    std::vector<std::byte> bytes(static_cast<std::size_t>(t.rows) * row_bytes(dtype, t.cols));
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < t.rows; ++r)
      quantize_row(dtype, values.data() + r * t.cols,
                   bytes.data() + static_cast<std::size_t>(r) * row_bytes(dtype, t.cols), t.cols);
    writer.write_tensor_data(bytes);
  }
  writer.finish();
}

}  // namespace tapdiff::formats
