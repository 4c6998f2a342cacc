#include "model/config.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include <nlohmann/json.hpp>

#include "model/errors.h"

namespace tapdiff::model {

namespace {

// The scaling of the sliding layers' RoPE (`sliding`) or of the others'; its per-pair factors one
// for each pair every layer that takes it rotates (each layer's heads where they differ).
void validate_rope_scaling(const ModelConfig& c, const RopeScaling& s, bool sliding, const std::string& source) {
  auto require = [&](bool ok, std::string_view what, auto found) {
    if (!ok)
      throw FormatError(fmt::format("{}: model config: RoPE scaling '{}': expected {}, found {}", source,
                                    rope_type_name(s.type), what, found));
  };
  const bool per_layer = !c.layer_shapes.empty();  // then of as many layers (validated first)
  for (int l = 0; l < (per_layer ? c.n_layers : 1); ++l) {
    if (per_layer && uses_sliding_rope(c, l) != sliding) continue;
    const auto pairs = static_cast<std::size_t>((per_layer ? rotary_dim(c, l) : rotary_dim(c)) / 2);
    if (s.type == RopeType::longrope)
      require(s.short_factor.size() == pairs && s.long_factor.size() == pairs,
              fmt::format("{} short and long factors (rotary_dim / 2)", pairs),
              fmt::format("{} and {}", s.short_factor.size(), s.long_factor.size()));
    require(s.freq_factors.empty() || s.freq_factors.size() == pairs,
            fmt::format("{} frequency factors (rotary_dim / 2)", pairs), s.freq_factors.size());
  }
  require(std::isfinite(s.factor) && s.factor > 0, "a finite factor > 0", s.factor);
  if (s.type != RopeType::standard && s.type != RopeType::linear && s.type != RopeType::proportional)
    require(s.original_context > 0, "an original context length > 0", s.original_context);
  if (s.type == RopeType::llama3)
    require(std::isfinite(s.low_freq_factor) && std::isfinite(s.high_freq_factor) &&
                s.high_freq_factor > s.low_freq_factor && s.low_freq_factor > 0,
            "0 < low_freq_factor < high_freq_factor", fmt::format("{} and {}", s.low_freq_factor, s.high_freq_factor));
  require(std::isfinite(s.partial) && s.partial >= 0 && s.partial <= 1, "a share of turned pairs in [0, 1]", s.partial);
  if (s.type == RopeType::yarn)
    require(std::isfinite(s.beta_fast) && std::isfinite(s.beta_slow) && s.beta_fast > 0 && s.beta_slow > 0,
            "finite beta_fast and beta_slow > 0", fmt::format("{} and {}", s.beta_fast, s.beta_slow));
  require(!s.by_run_context || (s.type == RopeType::longrope && s.run_context >= 0),
          "factors picked by the run's context for LongRoPE only", rope_type_name(s.type));
  require(std::isfinite(s.attention_factor) && s.attention_factor >= 0, "a finite attention factor",
          s.attention_factor);
  for (const auto* list : {&s.short_factor, &s.long_factor, &s.freq_factors})
    for (const double f : *list) require(std::isfinite(f) && f > 0, "finite per-pair factors > 0", f);
}

}  // namespace

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
  require(layer_shapes.empty() || std::ssize(layer_shapes) == n_layers, "a head shape for every layer, or none",
          layer_shapes.size());
  for (const AttentionShape& s : layer_shapes) {
    require(s.n_kv_heads >= 1 && n_heads % s.n_kv_heads == 0 && s.head_dim >= 2 && s.head_dim % 2 == 0 &&
                std::int64_t{n_heads} * s.head_dim <= std::numeric_limits<int>::max(),
            "each layer's kv heads dividing n_heads and an even head_dim (n_heads times it below 2^31)",
            fmt::format("{} kv heads of {} channels", s.n_kv_heads, s.head_dim));
  }
  require(layer_shapes.empty() || (rotary_dim == 0 && !latent()),
          "RoPE on whole heads and no latent attention where the layers' heads differ",
          fmt::format("rotary_dim {}", rotary_dim));
  require(ffn_dim >= 1, "ffn_dim >= 1", ffn_dim);
  require(ffn_dims.empty() || (std::ssize(ffn_dims) == n_layers &&
                               std::all_of(ffn_dims.begin(), ffn_dims.end(), [](int w) { return w >= 1; })),
          "an FFN width >= 1 for every layer, or none", fmt::format("{} widths", ffn_dims.size()));
  require(vocab >= 1, "vocab >= 1", vocab);
  require(std::isfinite(rope_base) && rope_base > 1.0, "a finite rope base > 1", rope_base);
  require(norm_eps > 0.0 && norm_eps < 1.0, "0 < norm eps < 1", norm_eps);
  require(rotary_dim >= 0 && rotary_dim <= head_dim && rotary_dim % 2 == 0, "an even rotary_dim up to head_dim",
          rotary_dim);
  validate_rope_scaling(*this, rope_scaling, false, source);
  if (sliding_rope) {
    require(std::isfinite(sliding_rope->base) && sliding_rope->base > 1.0, "a finite sliding layers' rope base > 1",
            sliding_rope->base);
    validate_rope_scaling(*this, sliding_rope->scaling, true, source);
  }
  if (query_temperature.beta != 0) {
    require(std::isfinite(query_temperature.beta) && query_temperature.beta > 0 && query_temperature.length >= 1,
            "a query temperature of a finite beta > 0 over a length >= 1",
            fmt::format("beta {} length {}", query_temperature.beta, query_temperature.length));
    require(model::rotary_dim(*this) == head_dim, "RoPE on whole heads with a query temperature",
            fmt::format("rotary_dim {} of {}", model::rotary_dim(*this), head_dim));
    require(query_temperature.offset >= 0, "a query temperature's position offset >= 0", query_temperature.offset);
    require(
        query_temperature.nope_layers || std::find(rope_layers.begin(), rope_layers.end(), false) == rope_layers.end(),
        "RoPE in every layer with a query temperature (it is applied with RoPE)", "a layer without");
  }
  require(sliding_window >= 0, "sliding_window >= 0", sliding_window);
  require(sliding_layers.empty() || std::ssize(sliding_layers) == n_layers, "a sliding flag for every layer, or none",
          sliding_layers.size());
  require(attention_chunk >= 0, "attention_chunk >= 0", attention_chunk);
  require(chunked_layers.empty() || std::ssize(chunked_layers) == n_layers, "a chunked flag for every layer, or none",
          chunked_layers.size());
  require(sliding_window == 0 || attention_chunk == 0, "sliding or chunked layers, not both",
          fmt::format("sliding_window {} and attention_chunk {}", sliding_window, attention_chunk));
  require(rope_layers.empty() || std::ssize(rope_layers) == n_layers, "a RoPE flag for every layer, or none",
          rope_layers.size());
  require(values_from_keys.empty() || (std::ssize(values_from_keys) == n_layers && !latent()),
          "a values-from-keys flag for every layer, or none (and no latent attention)", values_from_keys.size());
  require(context_length >= 0, "context_length >= 0", context_length);
  block.validate(source);
  if (experts.count > 0) {
    require(experts.active >= 1 && experts.active <= experts.count, "1 to n_experts active experts",
            fmt::format("{} of {}", experts.active, experts.count));
    require(experts.ffn_dim >= 1, "an expert FFN width >= 1", experts.ffn_dim);
    require(block.ffn == Ffn::gated, "gated experts (a mixture of plain FFNs is not implemented)", "ffn plain");
    require(experts.layers.empty() || std::ssize(experts.layers) == n_layers, "a MoE flag for every layer, or none",
            experts.layers.size());
    require(experts.shared_ffn_dim >= 0, "a shared expert FFN width >= 0", experts.shared_ffn_dim);
    require(experts.shared_ffn_dim > 0 || !experts.shared_gate, "a shared expert where its gate is",
            "a gate without a shared expert");
    require(experts.shared_ffn_dim > 0 || !experts.shared_average, "a shared expert where it is averaged in",
            "an average without a shared expert");
    require(experts.groups == 1 ||
                (experts.groups > 1 && experts.count % experts.groups == 0 && experts.count / experts.groups >= 2),
            "expert groups of equal size, two experts or more each",
            fmt::format("{} experts in {} groups", experts.count, experts.groups));
    require(experts.top_groups >= 1 && experts.top_groups <= experts.groups &&
                experts.top_groups * (experts.count / experts.groups) >= experts.active,
            "1 to groups groups chosen, holding at least the active experts",
            fmt::format("{} of {} groups for {} active", experts.top_groups, experts.groups, experts.active));
    require(experts.group_best >= 1 && experts.group_best <= experts.count / experts.groups,
            "a group scored by 1 to its size best scores", experts.group_best);
    require(std::isfinite(experts.scale) && experts.scale > 0, "a finite positive routed scale", experts.scale);
    require(!experts.choice_on_logits || (experts.score == RouterScore::sigmoid && !experts.selection_bias),
            "a choice on the logits for a sigmoid router without selection bias",
            fmt::format("score {}, selection bias {}", experts.score == RouterScore::sigmoid ? "sigmoid" : "softmax",
                        experts.selection_bias));
    require(!experts.weights_scale_input || (!experts.biases && !experts.sparsemixer),
            "experts whose input the weights scale without expert biases or a sparsemixer",
            "weights_scale_input with either");
    require(
        !experts.sparsemixer || (experts.active == 2 && experts.score == RouterScore::softmax &&
                                 !experts.selection_bias && experts.groups == 1 && !experts.normalize &&
                                 experts.scale == 1.0 && std::isfinite(experts.mixer_eps) && experts.mixer_eps >= 0),
        "a sparsemixer router of two experts over plain logits, its eps finite and >= 0",
        fmt::format("{} active, eps {}", experts.active, experts.mixer_eps));
    require(!experts.beside_dense || (experts.shared_ffn_dim == 0 && !has_choice_scores(*this)),
            "a mixture beside the dense FFN without a shared expert, choosing on the router's logits",
            fmt::format("shared expert width {}, choice scores {}", experts.shared_ffn_dim, has_choice_scores(*this)));
    require(!experts.expert_scales || !experts.sparsemixer, "expert weight scales without a sparsemixer", "both");
  } else {
    require(experts.active == 0 && experts.layers.empty(), "no active experts in a dense model", experts.active);
  }
  if (latent()) {
    require(mla.q_rank >= 0 && mla.nope_dim >= 1 && mla.rope_dim >= 2 && mla.rope_dim % 2 == 0 && mla.v_dim >= 1,
            "latent attention of q rank >= 0, nope channels >= 1, an even number of RoPE channels and value "
            "channels >= 1",
            fmt::format("q rank {}, nope {}, rope {}, v {}", mla.q_rank, mla.nope_dim, mla.rope_dim, mla.v_dim));
    require(head_dim == mla.nope_dim + mla.rope_dim && rotary_dim == mla.rope_dim && n_kv_heads == n_heads,
            "latent attention's heads of nope + rope channels, the rope ones rotated, a key per query head",
            fmt::format("head_dim {}, rotary_dim {}, {} kv heads of {}", head_dim, rotary_dim, n_kv_heads, n_heads));
    require(std::int64_t{n_heads} * mla.v_dim <= std::numeric_limits<int>::max(), "n_heads * v_dim below 2^31",
            fmt::format("{} x {}", n_heads, mla.v_dim));
    require(!block.qkv_bias && block.qk_norm == QkNorm::none && query_temperature.beta == 0 && attention_chunk == 0 &&
                rope_layers.empty(),
            "latent attention without q/k/v biases, q/k norms, a query temperature, chunks or NoPE layers",
            "one of them");
    require(mla.norm_eps > 0.0 && mla.norm_eps < 1.0, "0 < latent norms' eps < 1", mla.norm_eps);
  } else {
    require(mla == LatentAttention{}, "no latent attention's sizes without its kv rank", "some");
  }
  if (sparse()) {
    require(latent() && mla.q_rank > 0, "a sparse indexer beside latent attention with a q rank",
            fmt::format("kv rank {}, q rank {}", mla.kv_rank, mla.q_rank));
    require(indexer.head_dim >= mla.rope_dim && indexer.head_dim % 2 == 0 && indexer.top_k >= 1,
            "an indexer of heads at least rope_dim wide (even) keeping at least one position",
            fmt::format("heads of {}, rope_dim {}, top {}", indexer.head_dim, mla.rope_dim, indexer.top_k));
    require(std::int64_t{indexer.heads} * indexer.head_dim <= std::numeric_limits<int>::max(),
            "indexer heads * head_dim below 2^31", fmt::format("{} x {}", indexer.heads, indexer.head_dim));
  } else {
    require(indexer == SparseIndexer{}, "no indexer's sizes without its heads", "some");
  }
  require(kv_sources.empty() || std::ssize(kv_sources) == n_layers, "a KV source for every layer, or none",
          kv_sources.size());
  for (int l = 0; l < std::ssize(kv_sources); ++l) {
    const int s = kv_sources[static_cast<std::size_t>(l)];
    require(s >= 0 && s <= l && kv_sources[static_cast<std::size_t>(s)] == s && !latent() &&
                slides(*this, s) == slides(*this, l) && attention_shape(*this, s) == attention_shape(*this, l),
            "each layer's KV from itself or an earlier layer of its own kind and heads that keeps its own",
            fmt::format("layer {} from layer {}", l, s));
  }
  require(layer_inputs.dim >= 0 && (layer_inputs.dim == 0 || layer_inputs.vocab >= 1) &&
              std::int64_t{layer_inputs.dim} * n_layers <= std::numeric_limits<int>::max(),
          "per-layer inputs of dim >= 0 channels (n_layers times it below 2^31) from a table of >= 1 rows",
          fmt::format("{} channels, {} rows", layer_inputs.dim, layer_inputs.vocab));
  require(bos_token < vocab && eos_token < vocab, "special tokens inside the vocabulary",
          fmt::format("bos {} eos {} for vocab {}", bos_token, eos_token, vocab));
}

LayerInputScales layer_input_scales(const ModelConfig& c) {
  return {.projection = 1.0 / std::sqrt(static_cast<double>(c.dim)),
          .table = static_cast<float>(std::sqrt(static_cast<double>(c.layer_inputs.dim))),
          .sum = 1.0 / std::sqrt(2.0)};
}

int kv_source(const ModelConfig& c, int layer) {
  return layer >= 0 && layer < std::ssize(c.kv_sources) ? c.kv_sources[static_cast<std::size_t>(layer)] : layer;
}

bool shares_kv(const ModelConfig& c, int layer) { return kv_source(c, layer) != layer; }

AttentionShape attention_shape(const ModelConfig& c, int layer) {
  if (layer >= 0 && layer < std::ssize(c.layer_shapes)) return c.layer_shapes[static_cast<std::size_t>(layer)];
  return {c.n_kv_heads, c.head_dim};
}

int head_dim(const ModelConfig& c, int layer) { return attention_shape(c, layer).head_dim; }

int value_head_dim(const ModelConfig& c, int layer) { return c.latent() ? c.v_head_dim() : head_dim(c, layer); }

int q_dim(const ModelConfig& c, int layer) { return c.n_heads * head_dim(c, layer); }

int kv_dim(const ModelConfig& c, int layer) {
  const AttentionShape s = attention_shape(c, layer);
  return s.n_kv_heads * s.head_dim;
}

int attn_dim(const ModelConfig& c, int layer) { return c.latent() ? c.attn_dim() : q_dim(c, layer); }

int ffn_dim(const ModelConfig& c, int layer) {
  return c.ffn_dims.empty() || layer < 0 || layer >= c.n_layers ? c.ffn_dim
                                                                : c.ffn_dims[static_cast<std::size_t>(layer)];
}

double norm_eps(const ModelConfig& c, Op op) {
  if (op == Op::idx_k_norm) return SparseIndexer::kNormEps;
  return op == Op::q_a_norm || op == Op::kv_a_norm ? c.mla.norm_eps : c.norm_eps;
}

NormKind norm_kind(const ModelConfig& c, Op op) { return op == Op::idx_k_norm ? NormKind::layer : c.block.norm; }

bool slides(const ModelConfig& c, int layer) {
  return c.sliding_layers.empty() || c.sliding_layers.at(static_cast<std::size_t>(layer));
}

std::int64_t KeySpan::first(std::int64_t pos) const {
  if (chunk > 0) return pos - pos % chunk;
  return window > 0 ? std::max<std::int64_t>(0, pos - window + 1) : 0;
}

KeySpan key_span(const ModelConfig& c, int layer) {
  const bool chunked = c.chunked_layers.empty() || c.chunked_layers.at(static_cast<std::size_t>(layer));
  return {.window = slides(c, layer) ? c.sliding_window : 0, .chunk = chunked ? c.attention_chunk : 0};
}

bool full_attention(const ModelConfig& c) { return c.sliding_window == 0 && c.attention_chunk == 0; }

bool uses_sliding_rope(const ModelConfig& c, int layer) { return c.sliding_rope && slides(c, layer); }

double rope_base(const ModelConfig& c, int layer) {
  return uses_sliding_rope(c, layer) ? c.sliding_rope->base : c.rope_base;
}

const RopeScaling& rope_scaling(const ModelConfig& c, int layer) {
  return uses_sliding_rope(c, layer) ? c.sliding_rope->scaling : c.rope_scaling;
}

bool uses_rope(const ModelConfig& c, int layer) {
  return c.rope_layers.empty() || c.rope_layers.at(static_cast<std::size_t>(layer));
}

bool scales_query(const ModelConfig& c, int layer) {
  return c.query_temperature.beta != 0 && (!c.query_temperature.nope_layers || !uses_rope(c, layer));
}

bool has_rope_q(const ModelConfig& c, int layer) { return uses_rope(c, layer) || scales_query(c, layer); }

bool has_qk_norm(const ModelConfig& c, int layer) {
  return c.block.qk_norm != QkNorm::none && (c.block.qk_norm != QkNorm::per_head_plain || uses_rope(c, layer));
}

bool has_choice_scores(const ModelConfig& c) {
  return (c.experts.score == RouterScore::sigmoid && !c.experts.choice_on_logits) || c.experts.selection_bias;
}

Op choice_op(const ModelConfig& c) { return has_choice_scores(c) ? Op::moe_scores : Op::moe_router; }

bool uses_experts(const ModelConfig& c, int layer) {
  return c.experts.count > 0 && (c.experts.layers.empty() || c.experts.layers.at(static_cast<std::size_t>(layer)));
}

std::string_view rope_style_name(RopeStyle style) {
  switch (style) {
    case RopeStyle::interleaved: return "interleaved";
    case RopeStyle::rotate_half: return "rotate_half";
  }
  return "?";
}

namespace {

nlohmann::json rope_scaling_json(const RopeScaling& s) {
  nlohmann::json j = {{"type", rope_type_name(s.type)}};
  if (s.type == RopeType::standard && s.freq_factors.empty()) return j;
  j["factor"] = s.factor;
  if (s.original_context > 0) j["original_context"] = s.original_context;
  if (s.type == RopeType::llama3) j["low_freq_factor"] = s.low_freq_factor, j["high_freq_factor"] = s.high_freq_factor;
  if (s.type == RopeType::proportional) j["partial"] = s.partial;
  if (s.type == RopeType::yarn) j["beta_fast"] = s.beta_fast, j["beta_slow"] = s.beta_slow, j["truncate"] = s.truncate;
  if (s.attention_factor > 0) j["attention_factor"] = s.attention_factor;
  if (!s.short_factor.empty()) j["short_factor"] = s.short_factor, j["long_factor"] = s.long_factor;
  if (s.by_run_context) j["factors_by_run_context"] = s.run_context;
  if (!s.freq_factors.empty()) j["freq_factors"] = s.freq_factors;
  return j;
}

}  // namespace

nlohmann::json to_json(const ModelConfig& c) {
  nlohmann::json j = {{"arch", family_name(c.family)},
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
                      {"rotary_dim", rotary_dim(c)},
                      {"rope_scaling", rope_scaling_json(c.rope_scaling)},
                      {"tied_output", c.tied_output},
                      {"block", to_json(c.block)},
                      {"bos_token", c.bos_token},
                      {"eos_token", c.eos_token}};
  if (c.sliding_rope)
    j["sliding_rope"] = {{"rope_base", c.sliding_rope->base},
                         {"rope_scaling", rope_scaling_json(c.sliding_rope->scaling)}};
  if (c.query_temperature.beta != 0)
    j["query_temperature"] = {{"beta", c.query_temperature.beta},
                              {"length", c.query_temperature.length},
                              {"offset", c.query_temperature.offset},
                              {"nope_layers", c.query_temperature.nope_layers}};
  if (!c.sliding_layers.empty()) j["sliding_layers"] = c.sliding_layers;
  if (c.attention_chunk > 0) j["attention_chunk"] = c.attention_chunk;
  if (!c.chunked_layers.empty()) j["chunked_layers"] = c.chunked_layers;
  if (!c.rope_layers.empty()) j["rope_layers"] = c.rope_layers;
  if (!c.values_from_keys.empty()) j["values_from_keys"] = c.values_from_keys;
  if (!c.kv_sources.empty()) j["kv_sources"] = c.kv_sources;
  if (!c.ffn_dims.empty()) j["ffn_dims"] = c.ffn_dims;
  if (c.layer_inputs.dim > 0) j["layer_inputs"] = {{"dim", c.layer_inputs.dim}, {"vocab", c.layer_inputs.vocab}};
  if (!c.layer_shapes.empty()) {
    j["layer_shapes"] = nlohmann::json::array();
    for (const AttentionShape& s : c.layer_shapes)
      j["layer_shapes"].push_back({{"n_kv_heads", s.n_kv_heads}, {"head_dim", s.head_dim}});
  }
  if (c.experts.count > 0) {
    j["experts"] = {{"count", c.experts.count},
                    {"active", c.experts.active},
                    {"ffn_dim", c.experts.ffn_dim},
                    {"normalize", c.experts.normalize}};
    if (!c.experts.layers.empty()) j["experts"]["layers"] = c.experts.layers;
    if (c.experts.shared_ffn_dim > 0) {
      j["experts"]["shared_ffn_dim"] = c.experts.shared_ffn_dim;
      j["experts"]["shared_gate"] = c.experts.shared_gate;
      j["experts"]["shared_average"] = c.experts.shared_average;
    }
    if (c.experts.score == RouterScore::sigmoid) j["experts"]["score"] = "sigmoid";
    if (c.experts.selection_bias) j["experts"]["selection_bias"] = true;
    if (c.experts.router_bias) j["experts"]["router_bias"] = true;
    if (c.experts.biases) j["experts"]["biases"] = true;
    if (c.experts.groups > 1) {
      j["experts"]["groups"] = c.experts.groups;
      j["experts"]["top_groups"] = c.experts.top_groups;
      j["experts"]["group_best"] = c.experts.group_best;
    }
    if (c.experts.scale != 1.0) j["experts"]["scale"] = c.experts.scale;
    if (c.experts.weights_scale_input) j["experts"]["weights_scale_input"] = true;
    if (c.experts.choice_on_logits) j["experts"]["choice_on_logits"] = true;
    if (c.experts.sparsemixer) j["experts"]["sparsemixer_eps"] = c.experts.mixer_eps;
    if (c.experts.beside_dense) j["experts"]["beside_dense"] = true;
    if (c.experts.expert_scales) j["experts"]["expert_scales"] = true;
  }
  if (c.latent())
    j["mla"] = {{"q_rank", c.mla.q_rank},     {"kv_rank", c.mla.kv_rank}, {"nope_dim", c.mla.nope_dim},
                {"rope_dim", c.mla.rope_dim}, {"v_dim", c.mla.v_dim},     {"biases", c.mla.biases},
                {"norm_eps", c.mla.norm_eps}};
  if (c.sparse())
    j["indexer"] = {{"heads", c.indexer.heads}, {"head_dim", c.indexer.head_dim}, {"top_k", c.indexer.top_k}};
  return j;
}

}  // namespace tapdiff::model
