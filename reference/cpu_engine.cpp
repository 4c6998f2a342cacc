#include "reference/cpu_engine.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <span>
#include <type_traits>
#include <vector>

#include <fmt/core.h>

#include "formats/llama_cpp_precision.h"
#include "model/block.h"
#include "model/errors.h"
#include "reference/emulation.h"
#include "reference/indexer_kernels.h"
#include "reference/kernels.h"
#include "reference/moe_kernels.h"
#include "reference/ops.h"
#include "reference/weight_matrix.h"
#include "reference/weight_store.h"

namespace tapdiff::reference {
namespace {

using model::HostTensor;
using model::Op;
using model::TensorId;
using model::WeightKind;

// A layer's vectors (norm weights and biases) by kind, always held (the matrices: WeightStore);
// those the model lacks (its block has no such norm or bias) are empty.
template <typename S>
struct LayerVectors {
  std::array<WeightMatrix<S>, std::size(model::kAllWeightKinds)> held;
  WeightMatrix<S>& operator[](WeightKind kind) { return held[static_cast<std::size_t>(kind)]; }
  const WeightMatrix<S>& operator[](WeightKind kind) const { return held[static_cast<std::size_t>(kind)]; }
};

template <typename S>
class CpuEngine final : public model::Engine {
 public:
  CpuEngine(const model::Model& model, int threads, model::Precision precision, std::uint64_t weight_budget);

  std::string name() const override { return "ref"; }
  std::string device() const override {
    return fmt::format("CPU (Eigen {}.{}.{}, {} threads{}{})", EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION,
                       EIGEN_MINOR_VERSION, threads_, weights_.streaming() ? ", weights streamed per layer" : "",
                       ops_->rounds_as());
  }
  std::string compute_dtype() const override;
  std::string kernel(Op op) const override { return ops_->kernel(op); }
  model::Scalar scalar() const override { return sizeof(S) == 4 ? model::Scalar::f32 : model::Scalar::f64; }

  void reset() override { n_past_ = 0; }
  void begin_chunk(std::span<const std::int32_t> tokens, const model::ChunkInfo& chunk) override;
  void execute(const model::Step& step, const model::Deliver& deliver) override;
  void end_chunk() override { n_past_ = chunk_.first_pos + chunk_.rows; }

  HostTensor read(const TensorId& id) override { return to_host(slot(id)); }
  HostTensor read_rows(const TensorId& id, std::int64_t first, std::int64_t count) override;
  void write(const TensorId& id, const HostTensor& value) override;
  HostTensor read_kv(int layer, bool value) override;
  void write_kv(int layer, bool value, const HostTensor& rows) override;

 private:
  const Mat<S>& slot(const TensorId& id) const;
  Mat<S>& output(const model::Step& step);
  void run(const model::Step& step, Mat<S>& out);
  void attend(const model::Step& step, Mat<S>& out);
  void round_cache_rows(Mat<S>& cache, Eigen::Index first, Eigen::Index rows) const;
  void append_kv(const model::Step& step);
  Mat<S> index_scores_of(const model::Step& step);
  static HostTensor to_host(const Eigen::Ref<const Mat<S>>& m);
  static Mat<S> from_host(const HostTensor& t);

  model::ModelConfig config_;
  int threads_;
  const model::Model& model_;
  model::Precision precision_;
  Roundings r_;  // what the emulation of precision_ rounds of what it loads and stores (S = float only)
  WeightStore<S> weights_;
  std::unique_ptr<Ops<S>> ops_;  // the math, or the emulation of precision_
  LayerVectors<S> globals_;      // the vectors outside the layers (the final norm's, the logits' bias)
  std::vector<LayerVectors<S>> layers_;
  std::vector<Mat<S>> k_cache_, v_cache_;          // per layer [capacity, kv_dim]; rows [0, n_past) valid
  std::vector<Mat<S>> index_keys_;                 // per layer [capacity, indexer.head_dim] (a sparse model's)
  std::array<Mat<S>, model::kOpCount> slots_;      // latest output of each op  [T, width]
  std::array<Mat<S>, model::kOpCount> scratch_;    // previous buffers of the slots, reused
  std::array<int, model::kOpCount> slot_layer_{};  // the layer each slot's content belongs to
  std::vector<std::int32_t> tokens_;
  model::ChunkInfo chunk_;
  int n_past_ = 0;
};

// Sets the OpenMP threads (0 = all hardware threads) before any weight is loaded. Eigen itself runs
// on one: the kernels split their work across the threads (kernels.cpp, matmul).
int use_threads(int threads) {
  const int n = threads > 0 ? threads : omp_get_max_threads();
  omp_set_num_threads(n);
  Eigen::setNbThreads(1);
  return n;
}

template <typename S>
CpuEngine<S>::CpuEngine(const model::Model& m, int threads, model::Precision precision, std::uint64_t weight_budget)
    : config_(m.config()),
      threads_(use_threads(threads)),
      model_(m),
      precision_(precision),
      r_(roundings(precision)),
      weights_(m, r_, r_.f16_tile_rows > 0 ? weight_budget / 2 : weight_budget),
      ops_(make_ops<S>(m, weights_, precision, weight_budget / 2)) {
  TAPDIFF_ASSERT((std::is_same_v<S, float> || precision == model::Precision::f64), "the emulations compute in f32");
  layers_.resize(static_cast<std::size_t>(config_.n_layers));
  for (const auto& [key, t] : m.tensors())
    if (model::is_vector(key.first))
      (model::is_per_layer(key.first) ? layers_[static_cast<std::size_t>(key.second)] : globals_)[key.first] =
          WeightMatrix<S>(t, r_.stored);
  k_cache_.resize(layers_.size());
  v_cache_.resize(layers_.size());
  index_keys_.resize(layers_.size());
  slot_layer_.fill(-2);
}

template <typename S>
std::string CpuEngine<S>::compute_dtype() const {
  // llama.cpp's values are f32 values: its dumps say so, and kernel() names the roundings.
  return std::string(model::precision_name(r_.llama_cpp_graph ? model::Precision::f32 : precision_));
}

template <typename S>
void CpuEngine<S>::begin_chunk(std::span<const std::int32_t> tokens, const model::ChunkInfo& chunk) {
  if (chunk.first_pos != n_past_)
    throw UsageError(fmt::format("chunk {} starts at position {}, but the KV cache holds {} rows", chunk.index,
                                 chunk.first_pos, n_past_));
  tokens_.assign(tokens.begin(), tokens.end());
  chunk_ = chunk;
}

template <typename S>
const Mat<S>& CpuEngine<S>::slot(const TensorId& id) const {
  const auto i = static_cast<std::size_t>(id.op);
  TAPDIFF_ASSERT(slot_layer_[i] == id.layer, "{} asked, but the slot holds layer {}", model::to_string(id),
                 slot_layer_[i]);
  return slots_[i];
}

template <typename S>
Mat<S>& CpuEngine<S>::output(const model::Step& step) {
  const auto i = static_cast<std::size_t>(step.op);
  slot_layer_[i] = step.layer;
  return slots_[i];
}

template <typename S>
void CpuEngine<S>::execute(const model::Step& step, const model::Deliver& deliver) {
  // Computed into the op's scratch buffer, then swapped in: buffers are reused across layers.
  // The f16 and bf16 emulations round here, once per op, so the kernels stay f32 and the KV cache
  // receives the rounded rope_k and v_proj.
  Mat<S>& scratch = scratch_[static_cast<std::size_t>(step.op)];
  run(step, scratch);
  ops_->round_stored(scratch);
  Mat<S>& dst = output(step);
  dst.swap(scratch);
  if (deliver) deliver(to_host(dst));
}

template <typename S>
void CpuEngine<S>::run(const model::Step& step, Mat<S>& out) {
  const auto in = [&](std::size_t i) -> const Mat<S>& { return slot(step.inputs[i]); };
  const int l = step.layer;
  const model::Block& block = config_.block;
  const LayerVectors<S>& w = l >= 0 && l < config_.n_layers ? layers_[static_cast<std::size_t>(l)] : globals_;
  // A vector of the layer (or a global one), null where the model has none.
  const auto vector = [&](std::optional<WeightKind> kind) -> const S* {
    return kind && !w[*kind].empty() ? w[*kind].vector().data() : nullptr;
  };
  // The op's norm of x, by its weight and bias (model::norm_weights) and its epsilon.
  const auto norm = [&](const Mat<S>& x) {
    const model::NormWeights nw = *model::norm_weights(step.op);
    ops_->norm(x, w[nw.weight].vector(), vector(nw.bias), model::norm_eps(config_, step.op), out);
  };
  // The op's matrix times its input, plus its bias where the model has one (model::op_weights).
  const auto product = [&] {
    const model::OpWeights pw = *model::op_weights(step.op, config_);
    ops_->product(in(0), pw.matrix, model::is_per_layer(pw.matrix) ? l : -1, vector(pw.bias), out);
  };
  switch (step.op) {
    case Op::embed:
      embed<S>(weights_.get(WeightKind::token_embd).matrix(), tokens_, block.embed_scale, out);
      if (block.learned_positions) {
        const ConstMatMap<S> table = weights_.get(WeightKind::pos_embd).matrix();
        const std::int64_t last = model::learned_position_row(block, table.rows(), chunk_.first_pos + out.rows() - 1);
        add_positions<S>(table, last - out.rows() + 1, out);
      }
      return;
    case Op::kv_a_norm: norm(in(0).leftCols(config_.mla.kv_rank)); return;  // the latent's channels, not the key part's
    case Op::attn_norm:
    case Op::q_a_norm:
    case Op::attn_post_norm:
    case Op::ffn_norm:
    case Op::ffn_post_norm:
    case Op::moe_norm:
    case Op::moe_post_norm:
    case Op::dense_post_norm:
    case Op::final_norm: norm(in(0)); return;
    case Op::moe_router_norm:  // the router's own scale, whatever the block's norm offset
      rms_norm<S>(in(0), w[WeightKind::moe_router_scale].vector(), config_.norm_eps, 0, out);
      out *= static_cast<S>(1 / std::sqrt(static_cast<double>(config_.dim)));
      return;
    case Op::q_proj:
    case Op::k_proj:
    case Op::v_proj:
      product();
      if (const auto clip = static_cast<S>(block.clip_qkv); clip > 0)
        out = out.unaryExpr([clip](S v) { return std::clamp(v, -clip, clip); });
      return;
    case Op::q_a_proj:
    case Op::kv_a_proj:
    case Op::idx_q_proj:
    case Op::idx_k_proj:
    case Op::idx_weights:
    case Op::o_proj:
    case Op::ffn_gate:
    case Op::ffn_up:
    case Op::ffn_down:
    case Op::moe_router: product(); return;
    case Op::q_norm:
    case Op::k_norm:
    case Op::v_norm: ops_->head_norm(in(0), w[model::norm_weights(step.op)->weight].vector(), out); return;
    case Op::rope_q:
    case Op::rope_k: {
      model::RopeFrequencies f = ops_->rope_frequencies(step.layer, chunk_.first_pos + chunk_.rows);
      if (step.op == Op::rope_q) f = model::query_frequencies(config_, step.layer, std::move(f));
      const model::LatentAttention& mla = config_.mla;
      if (!config_.latent())
        rope<S>(in(0), model::head_dim(config_, l), chunk_.first_pos, f, config_.rope_style, out);
      else if (step.op == Op::rope_q)  // each head's trailing rope_dim channels
        rope<S>(in(0), config_.head_dim, chunk_.first_pos, f, config_.rope_style, out, mla.nope_dim);
      else  // the shared key part, kv_a_proj's channels after the latent's
        rope<S>(in(0).rightCols(mla.rope_dim), mla.rope_dim, chunk_.first_pos, f, config_.rope_style, out);
      return;
    }
    case Op::idx_k_norm:
      reference::norm<S>(in(0), model::norm_kind(config_, step.op), w[WeightKind::idx_k_norm].vector(),
                         vector(WeightKind::idx_k_norm_b), model::norm_eps(config_, step.op), 0, out);
      return;
    case Op::idx_rope_q:
    case Op::idx_rope_k:  // rotate-half on each head's leading channels, at the attention's angles
      rope<S>(in(0), config_.indexer.head_dim, chunk_.first_pos,
              ops_->rope_frequencies(step.layer, chunk_.first_pos + chunk_.rows), model::RopeStyle::rotate_half, out);
      return;
    case Op::idx_scores: return kept_scores<S>(index_scores_of(step), chunk_.first_pos, config_.indexer.top_k, out);
    case Op::idx_ids: return kept_positions<S>(index_scores_of(step), chunk_.first_pos, config_.indexer.top_k, out);
    case Op::attn: attend(step, out); return;
    case Op::moe_sum:
      out = in(0) + in(1);
      if (config_.experts.shared_average) out *= S(0.5);
      return;
    case Op::ffn_sum: out = in(0) + in(1); return;
    case Op::attn_residual:
    case Op::ffn_residual:
    case Op::ple_residual:
      if (block.residual_scale == 1.0 || step.op == Op::ple_residual)
        out = in(0) + in(1);
      else
        out = in(0) + in(1) * static_cast<S>(block.residual_scale);
      if (block.layer_scale && step.op == model::last_residual(config_)) out *= w[WeightKind::layer_scale].vector()(0);
      return;
    case Op::ple_input: {
      const int width = config_.layer_inputs.dim;
      const ConstMatMap<S> projection = weights_.get(WeightKind::ple_model_proj).matrix();
      layer_input<S>(in(0), tokens_, weights_.get(WeightKind::ple_token_embd).matrix(), l * width,
                     ConstMatMap<S>(projection.row(static_cast<Eigen::Index>(l) * width).data(), width, config_.dim),
                     globals_[WeightKind::ple_proj_norm].vector(), config_.norm_eps, block.norm_offset,
                     model::layer_input_scales(config_), out);
      return;
    }
    case Op::ple_act: return ops_->gated_activation(in(0), in(1), out);
    case Op::ple_norm: norm(in(0)); return;
    case Op::ple_gate:
    case Op::ple_proj: product(); return;
    case Op::ffn_act:
      if (block.ffn == model::Ffn::plain)
        return ops_->activation(
            in(0), block.activation == model::Activation::xielu ? model::xielu_of(model_, l) : model::Xielu{}, out);
      return ops_->gated_activation(in(0), in(1), out);
    case Op::moe_scores: return expert_scores<S>(in(0), config_.experts.score, vector(WeightKind::moe_score_bias), out);
    case Op::moe_ids: {
      const model::Experts& e = config_.experts;
      return top_experts<S>(in(0), e.active, e.groups, e.top_groups, e.group_best, out);
    }
    case Op::moe_weights:
      expert_weights<S>(in(0), in(1), config_.experts, out, vector(WeightKind::moe_expert_scale));
      return;
    case Op::moe_out: {
      const ExpertMatrices<S> experts{weights_.get(WeightKind::expert_gate, l).matrix(),
                                      weights_.get(WeightKind::expert_up, l).matrix(),
                                      weights_.get(WeightKind::expert_down, l).matrix(),
                                      config_.experts.ffn_dim,
                                      vector(WeightKind::expert_b_gate),
                                      vector(WeightKind::expert_b_up),
                                      vector(WeightKind::expert_b_down)};
      mixture<S>(in(0), in(1), in(2), experts, block, config_.experts.weights_scale_input, r_.stored, out);
      return;
    }
    case Op::moe_shared: {
      const auto matrix = [&](WeightKind kind) { return weights_.get(kind, l).matrix(); };
      const std::optional<ConstMatMap<S>> gate_inp =
          config_.experts.shared_gate ? std::optional(matrix(WeightKind::shexp_gate_inp)) : std::nullopt;
      const SharedExpert<S> expert{matrix(WeightKind::shexp_gate), matrix(WeightKind::shexp_up),
                                   matrix(WeightKind::shexp_down), gate_inp ? &*gate_inp : nullptr};
      shared_expert<S>(in(0), expert, block, r_.stored, out);
      return;
    }
    case Op::logits:
      product();
      scale_softcap<S>(out, block.logit_scale, block.logit_softcap);
      return;
  }
}

// Rows [first, first + rows) of a cache rounded as the emulated engine caches K and V.
template <typename S>
void CpuEngine<S>::round_cache_rows(Mat<S>& cache, Eigen::Index first, Eigen::Index rows) const {
  if (rows > 0) ops_->round_cached(Eigen::Map<Mat<S>>(cache.row(first).data(), rows, cache.cols()));  // row-major
}

// A latent attention's keys [T, n_heads * head_dim]: each head's no-RoPE channels (k_proj), then
// the rotated part every head shares (rope_k).
template <typename S>
Mat<S> latent_keys(const Mat<S>& k_nope, const Mat<S>& k_rope, const model::ModelConfig& c) {
  const int nope = c.mla.nope_dim, rope = c.mla.rope_dim;
  Mat<S> k(k_nope.rows(), static_cast<Eigen::Index>(c.n_heads) * c.head_dim);
  for (int h = 0; h < c.n_heads; ++h) {
    k.middleCols(static_cast<Eigen::Index>(h) * c.head_dim, nope) =
        k_nope.middleCols(static_cast<Eigen::Index>(h) * nope, nope);
    k.middleCols(static_cast<Eigen::Index>(h) * c.head_dim + nope, rope) = k_rope;
  }
  return k;
}

// Appends the chunk's K (after RoPE) and V rows, attn's inputs 1 and 2, to the layer's cache at
// [first_pos, first_pos + T); a latent attention's keys assembled from inputs 1 and 3.
template <typename S>
void CpuEngine<S>::append_kv(const model::Step& step) {
  const int layer = step.layer;
  const Mat<S> latent = config_.latent() ? latent_keys(slot(step.inputs[1]), slot(step.inputs[3]), config_) : Mat<S>();
  const Mat<S>& k = config_.latent() ? latent : slot(step.inputs[1]);
  const Mat<S>& v = slot(step.inputs[2]);
  const Eigen::Index need = chunk_.first_pos + k.rows();
  for (const auto& [cache, width] : {std::pair{&k_cache_[static_cast<std::size_t>(layer)], k.cols()},
                                     std::pair{&v_cache_[static_cast<std::size_t>(layer)], v.cols()}}) {
    if (cache->rows() < need) cache->conservativeResize(std::max<Eigen::Index>(need, 2 * cache->rows()), width);
  }
  k_cache_[static_cast<std::size_t>(layer)].middleRows(chunk_.first_pos, k.rows()) = k;
  v_cache_[static_cast<std::size_t>(layer)].middleRows(chunk_.first_pos, v.rows()) = v;
  round_cache_rows(k_cache_[static_cast<std::size_t>(layer)], chunk_.first_pos, k.rows());
  round_cache_rows(v_cache_[static_cast<std::size_t>(layer)], chunk_.first_pos, v.rows());
}

// The indexer's scores for the chunk's queries (idx_scores' and idx_ids' inputs: idx_rope_q,
// idx_rope_k, idx_weights) over its cache, the chunk's keys written into it first (by either op:
// the same rows).
template <typename S>
Mat<S> CpuEngine<S>::index_scores_of(const model::Step& step) {
  Mat<S>& keys = index_keys_[static_cast<std::size_t>(step.layer)];
  const Mat<S>& chunk_keys = slot(step.inputs[1]);
  const Eigen::Index need = chunk_.first_pos + chunk_keys.rows();
  if (keys.rows() < need) keys.conservativeResize(std::max<Eigen::Index>(need, 2 * keys.rows()), chunk_keys.cols());
  keys.middleRows(chunk_.first_pos, chunk_keys.rows()) = chunk_keys;
  round_cache_rows(keys, chunk_.first_pos, chunk_keys.rows());
  return index_scores<S>(slot(step.inputs[0]), keys, slot(step.inputs[2]), chunk_.first_pos, config_.indexer);
}

template <typename S>
void CpuEngine<S>::attend(const model::Step& step, Mat<S>& out) {
  if (!model::shares_kv(config_, step.layer)) append_kv(step);  // else its source layer's, earlier in the pass
  const auto layer = static_cast<std::size_t>(step.layer);
  const auto source = static_cast<std::size_t>(model::kv_source(config_, step.layer));
  const auto& sinks = layers_[layer][WeightKind::attn_sinks];
  const AttentionExtras<S> extras{.sinks = sinks.empty() ? nullptr : sinks.vector().data(),
                                  .kept = config_.sparse() ? &slot(step.inputs.back()) : nullptr};
  ops_->attention(slot(step.inputs[0]), k_cache_[source], v_cache_[source], step.layer, chunk_.first_pos, extras, out);
}

template <typename S>
HostTensor CpuEngine<S>::read_rows(const TensorId& id, std::int64_t first, std::int64_t count) {
  const Mat<S>& m = slot(id);
  TAPDIFF_ASSERT(first >= 0 && count >= 0 && first + count <= m.rows(), "rows [{}, {}) of {} of {} rows", first,
                 first + count, model::to_string(id), m.rows());
  return to_host(m.middleRows(first, count));
}

template <typename S>
void CpuEngine<S>::write(const TensorId& id, const HostTensor& value) {
  const model::Step step{id.op, id.layer, {}};
  Mat<S>& dst = output(step);
  dst = from_host(value);
  ops_->round_stored(dst);
}

template <typename S>
HostTensor CpuEngine<S>::read_kv(int layer, bool value) {  // a layer sharing another's: that one's
  const Mat<S>& cache = (value ? v_cache_ : k_cache_).at(static_cast<std::size_t>(model::kv_source(config_, layer)));
  return to_host(cache.topRows(n_past_));
}

template <typename S>
void CpuEngine<S>::write_kv(int layer, bool value, const HostTensor& rows) {
  if (config_.sparse())
    throw UsageError(
        "write_kv: a sparse attention's indexer keeps a key cache of its own, which write_kv does not carry");
  Mat<S>& cache = (value ? v_cache_ : k_cache_).at(static_cast<std::size_t>(model::kv_source(config_, layer)));
  cache = from_host(rows);
  ops_->round_stored(cache);
  round_cache_rows(cache, 0, cache.rows());
  n_past_ = static_cast<int>(rows.rows());
}

template <typename S>
HostTensor CpuEngine<S>::to_host(const Eigen::Ref<const Mat<S>>& m) {
  HostTensor t(sizeof(S) == 4 ? model::Scalar::f32 : model::Scalar::f64, m.rows(), m.cols());
  S* data = nullptr;
  if constexpr (sizeof(S) == 4)
    data = t.f32().data();
  else
    data = t.f64().data();
  Eigen::Map<Mat<S>>(data, m.rows(), m.cols()) = m;
  return t;
}

template <typename S>
Mat<S> CpuEngine<S>::from_host(const HostTensor& t) {
  const HostTensor converted = t.to(sizeof(S) == 4 ? model::Scalar::f32 : model::Scalar::f64);
  Mat<S> m(t.rows(), t.cols());
  if constexpr (sizeof(S) == 4)
    std::copy_n(converted.f32().data(), m.size(), m.data());
  else
    std::copy_n(converted.f64().data(), m.size(), m.data());
  return m;
}

}  // namespace

std::unique_ptr<model::Engine> make_cpu_engine(const model::Model& m, const CpuEngineOptions& options) {
  model::require_runnable(m);
  const Roundings r = roundings(options.precision);
  if (r.llama_cpp_graph) formats::require_llama_cpp_precision(m);
  if ((r.activations != Storage::f32 || r.f16_sums) && m.config().experts.count > 0)
    throw UsageError(
        fmt::format("{}: the reference's {} emulation rounds the dense layers' products only; the "
                    "experts' products of a mixture of experts are not emulated",
                    m.path().string(), model::precision_name(options.precision)));
  const std::uint64_t budget = options.weight_budget > 0 ? options.weight_budget : default_weight_budget();
  if (options.precision == model::Precision::f64)
    return std::make_unique<CpuEngine<double>>(m, options.threads, options.precision, budget);
  return std::make_unique<CpuEngine<float>>(m, options.threads, options.precision, budget);
}

}  // namespace tapdiff::reference
