#include "model/weights.h"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <set>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "model/errors.h"
#include "model/mapped_file.h"
#include "model/sha256_cache.h"

namespace tapdiff::model {

std::string_view weight_kind_name(WeightKind kind) {
  switch (kind) {
    case WeightKind::token_embd: return "token_embd";
    case WeightKind::attn_norm: return "attn_norm";
    case WeightKind::wq: return "wq";
    case WeightKind::wk: return "wk";
    case WeightKind::wv: return "wv";
    case WeightKind::bq: return "bq";
    case WeightKind::bk: return "bk";
    case WeightKind::bv: return "bv";
    case WeightKind::q_norm: return "q_norm";
    case WeightKind::k_norm: return "k_norm";
    case WeightKind::wo: return "wo";
    case WeightKind::bo: return "bo";
    case WeightKind::attn_post_norm: return "attn_post_norm";
    case WeightKind::ffn_norm: return "ffn_norm";
    case WeightKind::ffn_gate: return "ffn_gate";
    case WeightKind::ffn_up: return "ffn_up";
    case WeightKind::ffn_down: return "ffn_down";
    case WeightKind::b_gate: return "b_gate";
    case WeightKind::b_up: return "b_up";
    case WeightKind::b_down: return "b_down";
    case WeightKind::ffn_post_norm: return "ffn_post_norm";
    case WeightKind::moe_router: return "moe_router";
    case WeightKind::moe_score_bias: return "moe_score_bias";
    case WeightKind::expert_gate: return "expert_gate";
    case WeightKind::expert_up: return "expert_up";
    case WeightKind::expert_down: return "expert_down";
    case WeightKind::shexp_gate: return "shexp_gate";
    case WeightKind::shexp_up: return "shexp_up";
    case WeightKind::shexp_down: return "shexp_down";
    case WeightKind::shexp_gate_inp: return "shexp_gate_inp";
    case WeightKind::output_norm: return "output_norm";
    case WeightKind::output: return "output";
    case WeightKind::attn_norm_b: return "attn_norm_b";
    case WeightKind::ffn_norm_b: return "ffn_norm_b";
    case WeightKind::output_norm_b: return "output_norm_b";
    case WeightKind::output_b: return "output_b";
    case WeightKind::pos_embd: return "pos_embd";
    case WeightKind::xielu_alpha_p: return "xielu_alpha_p";
    case WeightKind::xielu_alpha_n: return "xielu_alpha_n";
    case WeightKind::xielu_beta: return "xielu_beta";
    case WeightKind::xielu_eps: return "xielu_eps";
    case WeightKind::attn_sinks: return "attn_sinks";
    case WeightKind::moe_router_b: return "moe_router_b";
    case WeightKind::expert_b_gate: return "expert_b_gate";
    case WeightKind::expert_b_up: return "expert_b_up";
    case WeightKind::expert_b_down: return "expert_b_down";
    case WeightKind::wq_a: return "wq_a";
    case WeightKind::q_a_norm: return "q_a_norm";
    case WeightKind::wkv_a: return "wkv_a";
    case WeightKind::kv_a_norm: return "kv_a_norm";
    case WeightKind::bq_a: return "bq_a";
    case WeightKind::bkv_a: return "bkv_a";
    case WeightKind::v_norm: return "v_norm";
    case WeightKind::layer_scale: return "layer_scale";
    case WeightKind::ple_token_embd: return "ple_token_embd";
    case WeightKind::ple_model_proj: return "ple_model_proj";
    case WeightKind::ple_proj_norm: return "ple_proj_norm";
    case WeightKind::ple_gate: return "ple_gate";
    case WeightKind::ple_proj: return "ple_proj";
    case WeightKind::ple_post_norm: return "ple_post_norm";
    case WeightKind::moe_router_scale: return "moe_router_scale";
    case WeightKind::moe_expert_scale: return "moe_expert_scale";
    case WeightKind::moe_norm: return "moe_norm";
    case WeightKind::moe_post_norm: return "moe_post_norm";
    case WeightKind::dense_post_norm: return "dense_post_norm";
    case WeightKind::idx_wq: return "idx_wq";
    case WeightKind::idx_wk: return "idx_wk";
    case WeightKind::idx_k_norm: return "idx_k_norm";
    case WeightKind::idx_k_norm_b: return "idx_k_norm_b";
    case WeightKind::idx_w_proj: return "idx_w_proj";
  }
  return "?";
}

std::optional<OpWeights> op_weights(Op op, const ModelConfig& c) {
  switch (op) {
    case Op::q_a_proj: return OpWeights{WeightKind::wq_a, WeightKind::bq_a};
    case Op::kv_a_proj: return OpWeights{WeightKind::wkv_a, WeightKind::bkv_a};
    case Op::q_proj: return OpWeights{WeightKind::wq, WeightKind::bq};
    case Op::k_proj: return OpWeights{WeightKind::wk, WeightKind::bk};
    case Op::v_proj: return OpWeights{WeightKind::wv, WeightKind::bv};
    case Op::o_proj: return OpWeights{WeightKind::wo, WeightKind::bo};
    case Op::ffn_gate: return OpWeights{WeightKind::ffn_gate, WeightKind::b_gate};
    case Op::ffn_up: return OpWeights{WeightKind::ffn_up, WeightKind::b_up};
    case Op::ffn_down: return OpWeights{WeightKind::ffn_down, WeightKind::b_down};
    case Op::ple_gate: return OpWeights{WeightKind::ple_gate, std::nullopt};
    case Op::ple_proj: return OpWeights{WeightKind::ple_proj, std::nullopt};
    case Op::idx_q_proj: return OpWeights{WeightKind::idx_wq, std::nullopt};
    case Op::idx_k_proj: return OpWeights{WeightKind::idx_wk, std::nullopt};
    case Op::idx_weights: return OpWeights{WeightKind::idx_w_proj, std::nullopt};
    case Op::moe_router:
      return OpWeights{WeightKind::moe_router,
                       c.experts.router_bias ? std::optional(WeightKind::moe_router_b) : std::nullopt};
    case Op::logits:
      return OpWeights{c.tied_output ? WeightKind::token_embd : WeightKind::output,
                       c.block.output_bias ? std::optional(WeightKind::output_b) : std::nullopt};
    default: return std::nullopt;
  }
}

std::optional<NormWeights> norm_weights(Op op) {
  switch (op) {
    case Op::attn_norm: return NormWeights{WeightKind::attn_norm, WeightKind::attn_norm_b};
    case Op::q_a_norm: return NormWeights{WeightKind::q_a_norm, std::nullopt};
    case Op::kv_a_norm: return NormWeights{WeightKind::kv_a_norm, std::nullopt};
    case Op::idx_k_norm: return NormWeights{WeightKind::idx_k_norm, WeightKind::idx_k_norm_b};
    case Op::q_norm: return NormWeights{WeightKind::q_norm, std::nullopt};
    case Op::k_norm: return NormWeights{WeightKind::k_norm, std::nullopt};
    case Op::v_norm: return NormWeights{WeightKind::v_norm, std::nullopt};
    case Op::attn_post_norm: return NormWeights{WeightKind::attn_post_norm, std::nullopt};
    case Op::ffn_norm: return NormWeights{WeightKind::ffn_norm, WeightKind::ffn_norm_b};
    case Op::ffn_post_norm: return NormWeights{WeightKind::ffn_post_norm, std::nullopt};
    case Op::ple_norm: return NormWeights{WeightKind::ple_post_norm, std::nullopt};
    case Op::moe_router_norm: return NormWeights{WeightKind::moe_router_scale, std::nullopt};
    case Op::moe_norm: return NormWeights{WeightKind::moe_norm, std::nullopt};
    case Op::moe_post_norm: return NormWeights{WeightKind::moe_post_norm, std::nullopt};
    case Op::dense_post_norm: return NormWeights{WeightKind::dense_post_norm, std::nullopt};
    case Op::final_norm: return NormWeights{WeightKind::output_norm, WeightKind::output_norm_b};
    default: return std::nullopt;
  }
}

bool is_per_layer(WeightKind kind) {
  return kind != WeightKind::token_embd && kind != WeightKind::output_norm && kind != WeightKind::output &&
         kind != WeightKind::output_norm_b && kind != WeightKind::output_b && kind != WeightKind::pos_embd &&
         kind != WeightKind::ple_token_embd && kind != WeightKind::ple_model_proj && kind != WeightKind::ple_proj_norm;
}

bool is_vector(WeightKind kind) {
  switch (kind) {
    case WeightKind::token_embd:
    case WeightKind::wq:
    case WeightKind::wk:
    case WeightKind::wv:
    case WeightKind::wo:
    case WeightKind::ffn_gate:
    case WeightKind::ffn_up:
    case WeightKind::ffn_down:
    case WeightKind::moe_router:
    case WeightKind::expert_gate:
    case WeightKind::expert_up:
    case WeightKind::expert_down:
    case WeightKind::shexp_gate:
    case WeightKind::shexp_up:
    case WeightKind::shexp_down:
    case WeightKind::shexp_gate_inp:
    case WeightKind::output:
    case WeightKind::pos_embd:
    case WeightKind::wq_a:
    case WeightKind::wkv_a:
    case WeightKind::ple_token_embd:
    case WeightKind::ple_model_proj:
    case WeightKind::ple_gate:
    case WeightKind::ple_proj:
    case WeightKind::idx_wq:
    case WeightKind::idx_wk:
    case WeightKind::idx_w_proj: return false;
    case WeightKind::attn_norm:
    case WeightKind::bq:
    case WeightKind::bk:
    case WeightKind::bv:
    case WeightKind::q_norm:
    case WeightKind::k_norm:
    case WeightKind::bo:
    case WeightKind::attn_post_norm:
    case WeightKind::ffn_norm:
    case WeightKind::b_gate:
    case WeightKind::b_up:
    case WeightKind::b_down:
    case WeightKind::ffn_post_norm:
    case WeightKind::moe_score_bias:
    case WeightKind::output_norm:
    case WeightKind::attn_norm_b:
    case WeightKind::ffn_norm_b:
    case WeightKind::output_norm_b:
    case WeightKind::output_b:
    case WeightKind::xielu_alpha_p:
    case WeightKind::xielu_alpha_n:
    case WeightKind::xielu_beta:
    case WeightKind::xielu_eps:
    case WeightKind::attn_sinks:
    case WeightKind::moe_router_b:
    case WeightKind::expert_b_gate:
    case WeightKind::expert_b_up:
    case WeightKind::expert_b_down:
    case WeightKind::q_a_norm:
    case WeightKind::kv_a_norm:
    case WeightKind::bq_a:
    case WeightKind::bkv_a:
    case WeightKind::v_norm:
    case WeightKind::layer_scale:
    case WeightKind::ple_proj_norm:
    case WeightKind::ple_post_norm:
    case WeightKind::moe_router_scale:
    case WeightKind::moe_expert_scale:
    case WeightKind::moe_norm:
    case WeightKind::moe_post_norm:
    case WeightKind::dense_post_norm:
    case WeightKind::idx_k_norm:
    case WeightKind::idx_k_norm_b: return true;
  }
  return false;
}

bool is_norm(WeightKind kind) {
  return kind == WeightKind::attn_norm || kind == WeightKind::q_norm || kind == WeightKind::k_norm ||
         kind == WeightKind::attn_post_norm || kind == WeightKind::ffn_norm || kind == WeightKind::ffn_post_norm ||
         kind == WeightKind::output_norm || kind == WeightKind::q_a_norm || kind == WeightKind::kv_a_norm ||
         kind == WeightKind::ple_proj_norm || kind == WeightKind::ple_post_norm || kind == WeightKind::moe_norm ||
         kind == WeightKind::moe_post_norm || kind == WeightKind::dense_post_norm;
}

std::span<const std::byte> WeightTensor::contiguous(std::vector<std::byte>& storage) const {
  if (parts.empty()) return bytes;
  storage.clear();
  for (const std::span<const std::byte> part : parts) storage.insert(storage.end(), part.begin(), part.end());
  return storage;
}

WeightTensor WeightTensor::row_slice(std::int64_t first, std::int64_t count) const {
  const std::size_t size = row_bytes(dtype, cols);
  return WeightTensor{fmt::format("{}[{}:{}]", name, first, first + count),
                      dtype,
                      count,
                      cols,
                      bytes.subspan(static_cast<std::size_t>(first) * size, static_cast<std::size_t>(count) * size),
                      {}};
}

Model::Model(std::filesystem::path path, ModelConfig config) : path_(std::move(path)), config_(std::move(config)) {}
Model::~Model() {
  stop_hashing_ = true;  // a prefetch still hashing stops within a block; its future then waits for it
}

const WeightTensor* Model::find(WeightKind kind, int layer) const {
  auto it = tensors_.find({kind, is_per_layer(kind) ? layer : -1});
  return it == tensors_.end() ? nullptr : &it->second;
}

const WeightTensor& Model::weight(WeightKind kind, int layer) const {
  if (const WeightTensor* t = find(kind, layer)) return *t;
  throw FormatError(fmt::format("{}: missing tensor: expected {}{} for this {} model, found none", path_.string(),
                                weight_kind_name(kind), is_per_layer(kind) ? fmt::format(" of layer {}", layer) : "",
                                family_name(config_.family)));
}

const MappedFile& Model::adopt(std::unique_ptr<MappedFile> file) {
  files_.push_back(std::move(file));
  return *files_.back();
}

void Model::add(WeightKind kind, int layer, WeightTensor tensor) {
  tensors_[{kind, is_per_layer(kind) ? layer : -1}] = std::move(tensor);
}

std::span<const std::byte> Model::hold(std::vector<std::byte> bytes) { return held_.emplace_back(std::move(bytes)); }

void Model::add_values(WeightKind kind, int layer, std::string name, std::span<const float> values) {
  std::vector<std::byte> bytes(values.size_bytes());
  std::memcpy(bytes.data(), values.data(), bytes.size());
  add(kind, layer,
      WeightTensor{
          std::move(name), DType::f32, 1, static_cast<std::int64_t>(values.size()), hold(std::move(bytes)), {}});
}

namespace {

// Weights of ones for a norm the file must not hold.
void add_ones(Model& model, WeightKind kind, int layer, int width, std::string_view norms) {
  if (const WeightTensor* t = model.find(kind, layer))
    throw FormatError(fmt::format("{}: tensor '{}' is not supported: {}'s {} have no weight", model.path().string(),
                                  t->name, family_name(model.config().family), norms));
  model.add_values(kind, layer, fmt::format("(ones: the {} have no weight)", norms),
                   std::vector<float>(static_cast<std::size_t>(width), 1.0f));
}

}  // namespace

void add_unit_norms(Model& model) {
  const ModelConfig& c = model.config();
  add_ones(model, WeightKind::output_norm, -1, c.dim, "norms");
  for (int l = 0; l < c.n_layers; ++l)
    for (const WeightKind kind : {WeightKind::attn_norm, WeightKind::ffn_norm})
      add_ones(model, kind, l, c.dim, "norms");
}

void add_unit_head_norms(Model& model) {
  const ModelConfig& c = model.config();
  if (c.block.v_norm)
    for (int l = 0; l < c.n_layers; ++l)
      if (!shares_kv(c, l)) add_ones(model, WeightKind::v_norm, l, head_dim(c, l), "value norms");
  if (c.block.qk_norm != QkNorm::per_head_plain) return;
  for (int l = 0; l < c.n_layers; ++l)
    if (has_qk_norm(c, l))
      for (const WeightKind kind : {WeightKind::q_norm, WeightKind::k_norm})
        if (kind == WeightKind::q_norm || !shares_kv(c, l)) add_ones(model, kind, l, head_dim(c, l), "q and k norms");
}

void add_values_from_keys(Model& model) {
  const ModelConfig& c = model.config();
  for (int l = 0; l < std::ssize(c.values_from_keys); ++l) {
    if (!c.values_from_keys[static_cast<std::size_t>(l)]) continue;
    for (const auto& [from, to] :
         {std::pair{WeightKind::wk, WeightKind::wv}, std::pair{WeightKind::bk, WeightKind::bv}}) {
      if (const WeightTensor* t = model.find(to, l))
        throw FormatError(
            fmt::format("{}: tensor '{}' is not supported: layer {}'s values are its keys' projection "
                        "(attention_k_eq_v), it has no {} of its own",
                        model.path().string(), t->name, l, weight_kind_name(to)));
      if (const WeightTensor* keys = model.find(from, l)) {
        WeightTensor values = *keys;
        values.name = fmt::format("{} (its values' too)", keys->name);
        model.add(to, l, std::move(values));
      }
    }
  }
}

void Model::add_parts(const WeightTensor& whole, std::span<const WeightPart> parts, const std::string& file) {
  // A vector's parts are runs of its values, a matrix's runs of its rows.
  const bool vector = whole.rows == 1 && parts.size() > 1;
  const std::int64_t units = vector ? whole.cols : whole.rows, groups = parts.front().groups;
  std::int64_t per_group = 0;
  for (const WeightPart& part : parts) per_group += part.rows;
  if (per_group > 0 && units != per_group * groups)
    throw FormatError(fmt::format("{}: tensor '{}' has {} {}, but the {} weights it fuses have {} for this config",
                                  file, whole.name, units, vector ? "values" : "rows", parts.size(),
                                  per_group * groups));
  const bool floats = whole.dtype == DType::f32 || whole.dtype == DType::f16 || whole.dtype == DType::bf16;
  if (vector && !floats)
    throw FormatError(fmt::format("{}: tensor '{}': expected a fused bias of f32, f16 or bf16 values, found {}", file,
                                  whole.name, dtype_name(whole.dtype)));
  const std::size_t unit_bytes = row_bytes(whole.dtype, vector ? 1 : whole.cols);
  std::vector<std::byte> storage;
  std::int64_t offset = 0;
  for (const WeightPart& part : parts) {  // a fused tensor and its parts apart (attn_qkv and attn_q) too
    if (const WeightTensor* twin = find(part.kind, part.layer))
      throw FormatError(fmt::format("{}: tensors '{}' and '{}' are both {} of layer {} for a {} model", file,
                                    twin->name, whole.name, weight_kind_name(part.kind), part.layer,
                                    family_name(config_.family)));
    if (part.rows == 0) {
      add(part.kind, part.layer, whole);
    } else if (groups == 1 && !vector) {
      add(part.kind, part.layer, whole.row_slice(offset, part.rows));
    } else {  // gathered from each run
      const std::span<const std::byte> all = whole.contiguous(storage);
      std::vector<std::byte> bytes;
      const auto bytes_per_unit = static_cast<std::ptrdiff_t>(unit_bytes);
      const auto at = [&](std::int64_t unit) {
        return all.begin() + static_cast<std::ptrdiff_t>(unit) * bytes_per_unit;
      };
      for (std::int64_t g = 0; g < groups; ++g)
        bytes.insert(bytes.end(), at(g * per_group + offset), at(g * per_group + offset + part.rows));
      const std::int64_t n = part.rows * groups;
      add(part.kind, part.layer,
          WeightTensor{groups == 1
                           ? fmt::format("{}[{}:{}]", whole.name, offset, offset + part.rows)
                           : fmt::format("{}[{} of each of {} runs]", whole.name, weight_kind_name(part.kind), groups),
                       whole.dtype,
                       vector ? 1 : n,
                       vector ? n : whole.cols,
                       hold(std::move(bytes)),
                       {}});
    }
    offset += part.rows;
  }
}

void Model::validate() const {
  const ModelConfig& c = config_;
  std::set<std::pair<WeightKind, int>> used;
  auto check = [&](WeightKind kind, int layer, std::int64_t rows, std::int64_t cols) {
    used.insert({kind, layer});
    const WeightTensor& t = weight(kind, layer);
    if (t.rows != rows || t.cols != cols)
      throw FormatError(fmt::format("{}: tensor '{}' has shape [{}, {}], but the config implies [{}, {}]",
                                    path_.string(), t.name, t.rows, t.cols, rows, cols));
  };
  check(WeightKind::token_embd, -1, c.vocab, c.dim);
  const Block& b = c.block;
  check(WeightKind::output_norm, -1, 1, c.dim);
  if (b.learned_positions) {  // as many as the trained context, after the offset
    used.insert({WeightKind::pos_embd, -1});
    const WeightTensor& t = weight(WeightKind::pos_embd);
    if (t.cols != c.dim || t.rows <= b.position_offset)
      throw FormatError(fmt::format("{}: tensor '{}' has shape [{}, {}], but the config implies [positions + {}, {}]",
                                    path_.string(), t.name, t.rows, t.cols, b.position_offset, c.dim));
  }
  if (b.norm_bias) check(WeightKind::output_norm_b, -1, 1, c.dim);
  if (!c.tied_output) check(WeightKind::output, -1, c.vocab, c.dim);
  if (b.output_bias) check(WeightKind::output_b, -1, 1, c.vocab);
  const int per_layer = c.layer_inputs.dim;
  if (per_layer > 0) {
    check(WeightKind::ple_token_embd, -1, c.layer_inputs.vocab, std::int64_t{c.n_layers} * per_layer);
    check(WeightKind::ple_model_proj, -1, std::int64_t{c.n_layers} * per_layer, c.dim);
    check(WeightKind::ple_proj_norm, -1, 1, per_layer);
  }
  for (int l = 0; l < c.n_layers; ++l) {
    const int q_width = q_dim(c, l), kv_width = kv_dim(c, l);
    const bool own_kv = !shares_kv(c, l);  // a layer attending over another's cache has no k/v weights
    const int q_norm_width = b.qk_norm == QkNorm::whole ? q_width : head_dim(c, l);
    const int k_norm_width = b.qk_norm == QkNorm::whole ? kv_width : head_dim(c, l);
    const auto vector = [&](bool present, WeightKind kind, std::int64_t width) {
      if (present) check(kind, l, 1, width);
    };
    vector(b.pre_norms, WeightKind::attn_norm, c.dim);
    vector(b.pre_norms && b.norm_bias, WeightKind::attn_norm_b, c.dim);
    if (c.latent()) {
      const LatentAttention& a = c.mla;
      if (a.q_rank > 0) {
        check(WeightKind::wq_a, l, a.q_rank, c.dim);
        check(WeightKind::q_a_norm, l, 1, a.q_rank);
        vector(a.biases, WeightKind::bq_a, a.q_rank);
      }
      check(WeightKind::wq, l, c.q_dim(), a.q_rank > 0 ? a.q_rank : c.dim);
      check(WeightKind::wkv_a, l, a.kv_rank + a.rope_dim, c.dim);
      vector(a.biases, WeightKind::bkv_a, a.kv_rank + a.rope_dim);
      check(WeightKind::kv_a_norm, l, 1, a.kv_rank);
      check(WeightKind::wk, l, std::int64_t{c.n_heads} * a.nope_dim, a.kv_rank);
      check(WeightKind::wv, l, c.attn_dim(), a.kv_rank);
      if (c.sparse()) {
        const SparseIndexer& x = c.indexer;
        check(WeightKind::idx_wq, l, std::int64_t{x.heads} * x.head_dim, a.q_rank);
        check(WeightKind::idx_wk, l, x.head_dim, c.dim);
        check(WeightKind::idx_k_norm, l, 1, x.head_dim);
        check(WeightKind::idx_k_norm_b, l, 1, x.head_dim);
        check(WeightKind::idx_w_proj, l, x.heads, c.dim);
      }
    } else {
      check(WeightKind::wq, l, q_width, c.dim);
      if (own_kv) check(WeightKind::wk, l, kv_width, c.dim);
      if (own_kv) check(WeightKind::wv, l, kv_width, c.dim);
    }
    vector(b.qkv_bias, WeightKind::bq, q_width);
    vector(b.qkv_bias && own_kv, WeightKind::bk, kv_width);
    vector(b.qkv_bias && own_kv, WeightKind::bv, kv_width);
    vector(has_qk_norm(c, l), WeightKind::q_norm, q_norm_width);
    vector(has_qk_norm(c, l) && own_kv, WeightKind::k_norm, k_norm_width);
    vector(b.v_norm && own_kv, WeightKind::v_norm, head_dim(c, l));
    vector(b.layer_scale, WeightKind::layer_scale, 1);
    check(WeightKind::wo, l, c.dim, attn_dim(c, l));
    vector(b.o_bias, WeightKind::bo, c.dim);
    vector(b.attention_sinks, WeightKind::attn_sinks, c.n_heads);
    vector(b.post_norms, WeightKind::attn_post_norm, c.dim);
    vector(has_ffn_norm(b), WeightKind::ffn_norm, c.dim);
    vector(has_ffn_norm(b) && b.norm_bias, WeightKind::ffn_norm_b, c.dim);
    if (uses_experts(c, l)) {
      const Experts& e = c.experts;
      check(WeightKind::moe_router, l, e.count, c.dim);
      check(WeightKind::expert_gate, l, std::int64_t{e.count} * e.ffn_dim, c.dim);
      check(WeightKind::expert_up, l, std::int64_t{e.count} * e.ffn_dim, c.dim);
      check(WeightKind::expert_down, l, std::int64_t{e.count} * c.dim, e.ffn_dim);
      if (e.shared_ffn_dim > 0) {
        check(WeightKind::shexp_gate, l, e.shared_ffn_dim, c.dim);
        check(WeightKind::shexp_up, l, e.shared_ffn_dim, c.dim);
        check(WeightKind::shexp_down, l, c.dim, e.shared_ffn_dim);
      }
      if (e.shared_gate) check(WeightKind::shexp_gate_inp, l, 1, c.dim);
      if (e.selection_bias) check(WeightKind::moe_score_bias, l, 1, e.count);
      vector(e.router_bias, WeightKind::moe_router_b, e.count);
      vector(e.biases, WeightKind::expert_b_gate, std::int64_t{e.count} * e.ffn_dim);
      vector(e.biases, WeightKind::expert_b_up, std::int64_t{e.count} * e.ffn_dim);
      vector(e.biases, WeightKind::expert_b_down, std::int64_t{e.count} * c.dim);
      vector(e.expert_scales, WeightKind::moe_expert_scale, e.count);
      for (const WeightKind kind :
           {WeightKind::moe_router_scale, WeightKind::moe_norm, WeightKind::moe_post_norm, WeightKind::dense_post_norm})
        vector(e.beside_dense, kind, c.dim);
    }
    if (!uses_experts(c, l) || c.experts.beside_dense) {
      const bool gated = b.ffn == Ffn::gated;
      const int width = ffn_dim(c, l);
      if (gated) check(WeightKind::ffn_gate, l, width, c.dim);
      check(WeightKind::ffn_up, l, width, c.dim);
      check(WeightKind::ffn_down, l, c.dim, width);
      vector(gated && b.mlp_bias, WeightKind::b_gate, width);
      for (const WeightKind kind :
           {WeightKind::xielu_alpha_p, WeightKind::xielu_alpha_n, WeightKind::xielu_beta, WeightKind::xielu_eps})
        vector(b.activation == Activation::xielu, kind, 1);
      vector(b.mlp_bias, WeightKind::b_up, width);
      vector(b.mlp_bias, WeightKind::b_down, c.dim);
    }
    vector(b.post_norms, WeightKind::ffn_post_norm, c.dim);
    if (per_layer > 0) {
      check(WeightKind::ple_gate, l, per_layer, c.dim);
      check(WeightKind::ple_proj, l, c.dim, per_layer);
      check(WeightKind::ple_post_norm, l, 1, c.dim);
    }
  }
  for (const auto& [key, t] : tensors_)
    if (!used.contains(key))
      throw FormatError(
          fmt::format("{}: tensor '{}' is not supported: the model's config ({}, block {}) computes no op that uses it",
                      path_.string(), t.name, family_name(c.family), to_json(c.block).dump()));
}

const std::string& Model::sha256() const {
  const std::lock_guard lock(sha256_mutex_);
  if (!sha256_.valid()) sha256_ = std::async(std::launch::deferred, [this] { return find_sha256(); }).share();
  return sha256_.get();
}

void Model::prefetch_sha256() const {
  const std::lock_guard lock(sha256_mutex_);
  if (!sha256_.valid()) sha256_ = std::async(std::launch::async, [this] { return find_sha256(); }).share();
}

std::string Model::find_sha256() const {
  std::vector<std::filesystem::path> paths;
  for (const auto& file : files_) paths.push_back(file->path());
  const std::string key = sha256_cache_key(paths);
  if (std::optional<std::string> cached = cached_sha256(key)) return *std::move(cached);
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
    throw EnvironmentError("sha256: OpenSSL could not start a digest");
  constexpr std::size_t kBlock = std::size_t{64} << 20;
  for (const auto& file : files_)
    for (std::size_t at = 0; at < file->size(); at += kBlock) {
      if (stop_hashing_) return {};  // the model is going away: nobody will read the hash
      EVP_DigestUpdate(ctx.get(), file->bytes().data() + at, std::min(kBlock, file->size() - at));
    }
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), digest.data(), &len);
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) hex += fmt::format("{:02x}", digest[i]);
  remember_sha256(key, hex);
  return hex;
}

void require_runnable(const Model& m) {
  const RopeScaling& s = m.config().rope_scaling;
  if (s.by_run_context && s.run_context == 0)
    throw UsageError(
        fmt::format("{}: its LongRoPE (rope_factors_long and rope_factors_short) has llama.cpp pick the long or the "
                    "short factors by the context size it runs with (n_ctx, -c): give that size with --context N",
                    m.path().string()));
}

}  // namespace tapdiff::model
