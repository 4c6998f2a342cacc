#include "gpu/vulkan_engine.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <utility>

#include <fmt/core.h>

#include "formats/llama_cpp_precision.h"
#include "gpu/device.h"
#include "gpu/device_profile.h"
#include "gpu/device_weights.h"
#include "gpu/dispatch_math.h"
#include "gpu/faults.h"
#include "gpu/host_activations.h"
#include "gpu/instance.h"
#include "gpu/kernels.h"
#include "gpu/kv_cache.h"
#include "gpu/llama_cpp_steps.h"
#include "gpu/pipelines.h"
#include "gpu/rope_tables.h"
#include "gpu/stream.h"
#include "model/errors.h"
#include "model/learned_scalar.h"

namespace tapdiff::gpu {
namespace {

using model::BatchPart;
using model::HostTensor;
using model::Op;
using model::TensorId;
using model::WeightKind;

constexpr std::uint64_t kActivationBlock = 64ull << 20;

// The channels of a head in a layer's attention: its head_dim, but in latent attention, computed
// in the materialised form, the wider of a key's (qk_head_dim) and a value's (v_head_dim), the
// narrower zero-padded to it in the cache (and q with the keys).
int attention_width(const model::ModelConfig& c, int layer) {
  return c.latent() ? std::max(c.head_dim, c.v_head_dim()) : model::head_dim(c, layer);
}

// Each distinct shape of the model's layers' heads.
std::vector<HeadShape> head_shapes(const model::ModelConfig& c) {
  std::vector<HeadShape> shapes;
  for (int l = 0; l < c.n_layers; ++l) {
    const model::AttentionShape a = model::attention_shape(c, l);
    const HeadShape h{attention_width(c, l), c.n_heads / a.n_kv_heads};
    if (std::find(shapes.begin(), shapes.end(), h) == shapes.end()) shapes.push_back(h);
  }
  return shapes;
}

// A layer's width of a key (and of a value) in its own cache.
int cache_width(const model::ModelConfig& c, int layer) {
  return model::attention_shape(c, layer).n_kv_heads * attention_width(c, layer);
}

// Each layer's cache width; 0 where it attends over another's.
std::vector<int> cache_widths(const model::ModelConfig& c) {
  std::vector<int> widths;
  for (int l = 0; l < c.n_layers; ++l) widths.push_back(model::shares_kv(c, l) ? 0 : cache_width(c, l));
  return widths;
}

// x [rows, heads * from] with each head's channels cut or zero-padded to `to`, on the host: latent
// attention's keys and values between the model's widths and the cache's.
HostTensor resized_heads(const HostTensor& x, int heads, int from, int to) {
  const HostTensor f = x.to(model::Scalar::f32);
  HostTensor out(model::Scalar::f32, x.rows(), std::int64_t{heads} * to);
  std::span<float> o = out.f32();
  std::fill(o.begin(), o.end(), 0.0F);
  const auto kept = static_cast<std::ptrdiff_t>(std::min(from, to));
  for (std::ptrdiff_t head = 0; head < x.rows() * heads; ++head)
    std::copy_n(f.f32().begin() + head * from, kept, o.begin() + head * to);
  return out;
}

// The same on the device (head_columns.comp): rows [first_row, first_row + rows) of x.
ColumnsPush resized_heads(int rows, int heads, int from, int to, int first_row = 0) {
  return {u32(rows),
          u32(heads),
          u32(to),
          u32(std::min(from, to)),
          u32(heads * from),
          u32(first_row * heads * from),
          u32(from),
          0,
          0,
          0};
}

// A sequence's rows in the current pass: rows [row0, row0 + rows) of every op output.
struct Part {
  int sequence = 0;
  int first_pos = 0;
  int rows = 0;
  int row0 = 0;
  bool decode = false;
};

class Engine final : public VulkanEngine {
 public:
  Engine(const model::Model& m, const VulkanEngineOptions& options);
  ~Engine() override { stream_->abandon(); }

  std::string name() const override { return "vulkan"; }
  std::string device() const override { return summary(device_->info()); }
  std::string compute_dtype() const override {
    switch (activation_type_) {
      case Activations::f16: return "f16";
      case Activations::bf16: return "bf16";
      case Activations::f32: break;
    }
    return "f32";
  }
  std::string kernel(Op op) const override;
  std::vector<KernelId> planned(Op op) const;  // what the op may run here, before it ran
  model::Scalar scalar() const override { return model::Scalar::f32; }

  void reset() override;
  void begin_chunk(std::span<const std::int32_t> tokens, const model::ChunkInfo& chunk) override;
  bool runs_batches() const override { return true; }
  void set_sequences(int n) override;
  void begin_batch(int index, std::span<const BatchPart> parts) override;
  void execute(const model::Step& step, const model::Deliver& deliver) override;
  void end_chunk() override;
  HostTensor read(const TensorId& id) override;
  HostTensor read_rows(const TensorId& id, std::int64_t first, std::int64_t count) override;
  void write(const TensorId& id, const HostTensor& value) override;
  HostTensor read_kv(int layer, bool value) override;
  void write_kv(int layer, bool value, const HostTensor& rows) override;

  std::vector<std::string> validation_messages() const override { return instance_->messages(first_message_); }
  bool validation_enabled() const override { return instance_->validation(); }
  void set_profiling(bool on) override { stream_->set_timestamps(on); }
  VulkanEngineStats stats() const override {
    return {stream_->submits(), stream_->barriers(), pipelines_->size(), weights_->bytes(), op_seconds_};
  }
  const DeviceInfo& device_info() const override { return device_->info(); }
  std::vector<PipelineStatistics> pipeline_statistics() const override { return pipelines_->statistics(); }

 private:
  void reserve_rows(int rows);
  Region slot(Op op) const;  // the op's output for the current chunk, [rows, width] f32
  Region input(const TensorId& id) const;
  KernelId run(const model::Step& step, const Region& out);
  Kernel product(const Region& x, Op op, int layer, const DeviceWeight* bias, const Region& out, std::uint32_t faults);
  int widest_product_input() const;
  KernelId attend(const model::Step& step, const Region& out);
  void write_latent_cache(const model::Step& step);
  KernelId index_topk(const model::Step& step, const Region& out, std::uint32_t faults);
  void require_exact_positions(int positions) const;
  KernelId latent_part(const model::Step& step, const Region& out, std::uint32_t faults);
  AttentionShape layer_attention(int layer) const;  // the pass's attention in a layer
  KernelId residual(const model::Step& step, const Region& out);
  KernelId layer_input(const model::Step& step, const Region& out);
  KernelId mixture(const model::Step& step, const Region& out);
  KernelId shared_expert(const model::Step& step, const Region& out);
  void upload_row_table();
  model::ChunkInfo chunk_of(const Part& part) const { return {chunk_.index, part.first_pos, part.rows, part.decode}; }
  float attention_scale(int layer) const;
  const Region* gelu_table() const { return llama_cpp_ ? llama_cpp_->gelu_table() : nullptr; }
  const DeviceWeight& matrix(Op op, int layer) const;
  const DeviceWeight* bias(Op op, int layer) const;
  Kernel norm(const Region& x, const model::Step& step, const Region& out, int rows, std::uint32_t faults);
  KernelId embed(const Region& out);
  void upload_positions();
  model::DType weight_dtype(Op op) const;
  const DeviceWeight& norm_weight(Op op, int layer) const;
  std::uint64_t activation_bytes(std::int64_t rows, std::int64_t cols) const;
  HostTensor download_now(const Region& r, std::int64_t rows, std::int64_t cols);
  std::pair<int, int> model_cache_width(int source, bool value) const;
  // Copies the chunk's output in `out` ([rows, cols]) back once the chunk has run, and hands it to
  // deliver.
  void deliver_after_chunk(const Region& out, std::int64_t cols, const model::Deliver& deliver);
  void upload(const HostTensor& value, const Region& r);

  model::ModelConfig config_;
  model::Graph graph_;
  FaultSet faults_;  // --inject
  Activations activation_type_;
  std::shared_ptr<const Instance> instance_;  // the process's (shared_instance)
  std::size_t first_message_ = 0;             // the instance's validation messages before this engine
  std::unique_ptr<Device> device_;
  std::unique_ptr<Pipelines> pipelines_;
  std::unique_ptr<Stream> stream_;
  std::unique_ptr<DeviceWeights> weights_;
  std::unique_ptr<Kernels> kernels_;
  std::unique_ptr<KvCache> kv_;
  std::unique_ptr<KvCache> index_keys_;            // a sparse model's indexer keys (idx_rope_k): K half only
  std::unique_ptr<Arena> activations_;             // slots, tokens and the RoPE tables, sized for capacity_ rows
  std::unique_ptr<Arena> scratch_;                 // attention_scratch_: grown when a pass needs more
  Region attention_scratch_;                       // split-KV attention's partial results (Kernels::attention)
  std::array<Region, model::kOpCount> slots_{};    // per op [capacity_, width]; overwritten per layer
  std::array<int, model::kOpCount> slot_layer_{};  // the layer each slot's content belongs to
  std::array<std::vector<KernelId>, model::kOpCount> ran_;  // the kernels that ran, per op
  HostTensor delivered_;                              // each delivery widened into it, reused (deliver_after_chunk)
  std::array<double, model::kOpCount> op_seconds_{};  // set_profiling
  Region tokens_;                                     // [capacity_] int32
  std::vector<model::Xielu> xielu_;                   // each layer's xIELU scalars (activation xielu), else empty
  std::vector<float> layer_scales_;                   // each layer's output scale (block.layer_scale), else empty
  Region positions_;      // learned positions: [capacity_] int32, each row's row of pos_embd
  Region position_rows_;  // ... and those rows, [capacity_, dim]
  // moe_out's (token, expert) pairs: [capacity_ * active, experts.ffn_dim] each, and their outputs
  // [.., dim]; their inputs [.., dim] where the weights scale them; the room for a plan grouping them by expert
  Region expert_gate_, expert_up_, expert_hidden_, expert_out_, expert_input_;
  // moe_shared's: [capacity_, experts.shared_ffn_dim] each, its FFN's output [.., dim] and its
  // gate's logits [.., 1] (where it has a gate)
  Region shared_gate_, shared_up_, shared_hidden_, shared_out_, shared_logits_;
  Region ple_projected_;  // ple_input's projection of the embedding, [capacity_, layer_inputs.dim]
  // Latent attention's: kv_a_proj's latent [capacity_, kv_rank] and key part [.., rope_dim] apart;
  // q widened to the heads' attention_width (where values are wider than keys) and the attention's
  // output before it is narrowed to the values', [.., n_heads * attention_width] each
  Region latent_rows_, key_part_, wide_q_, wide_out_;
  Kernels::ExpertPlan expert_plan_;
  std::unique_ptr<LlamaCppSteps> llama_cpp_;  // in llama.cpp's precision only
  Region row_table_;  // [capacity_] of (cache row of position 0, position, chunk's first position, leak), attention's
  std::unique_ptr<RopeTables> rope_;  // in the activations' arena
  // The norm step whose output the residual add before it computed (Kernels::add_rms_norm), and
  // the kernel that did; op embed: none.
  struct FusedNorm {
    TensorId norm{Op::embed, -1};
    Kernel kernel;
  } fused_norm_;
  int capacity_ = 0;
  model::ChunkInfo chunk_;    // the pass: index, total rows, decode when every part is a decode step
  std::vector<Part> parts_;   // its sequences
  AttentionShape attention_;  // its attention
  bool in_chunk_ = false;
  std::vector<int> n_past_ = {0};  // per sequence
};

Engine::Engine(const model::Model& m, const VulkanEngineOptions& options)
    : config_(m.config()),
      graph_(m.config()),
      faults_(parse_faults(options.inject, m.config().n_layers)),
      activation_type_(options.f16    ? Activations::f16
                       : options.bf16 ? Activations::bf16
                                      : Activations::f32) {
  require_faults_fit(faults_, graph_, config_);
  if (config_.block.activation == model::Activation::xielu)
    for (int l = 0; l < config_.n_layers; ++l) xielu_.push_back(model::xielu_of(m, l));
  if (config_.block.layer_scale)
    for (int l = 0; l < config_.n_layers; ++l)
      layer_scales_.push_back(static_cast<float>(model::learned_scalar(m, WeightKind::layer_scale, l)));
  if (options.f16 && options.bf16) throw UsageError("the vulkan engine holds f16 or bf16 activations, not both");
  if (options.llama_cpp) {
    if (options.f16 || options.bf16)
      throw UsageError("the vulkan engine computes llama.cpp's precision in f32, not with f16 or bf16 activations");
    formats::require_llama_cpp_precision(m);
    if (!options.inject.empty())
      throw UsageError(fmt::format(
          "--inject {}: faults are planted in the f32 and f16 kernels, not in --dtype llama.cpp's", options.inject));
  }
  rope_ = std::make_unique<RopeTables>(config_, faults_, options.llama_cpp);
  InstanceOptions instance_options;
  instance_options.validation = options.validation.value_or(validation_requested_by_environment());
  instance_options.print_messages = options.print_validation;
  instance_ = shared_instance(instance_options);
  first_message_ = instance_->message_count();
  device_ = std::make_unique<Device>(*instance_, select_device(devices_of(*instance_), options.device),
                                     DeviceNeeds{options.f16, options.pipeline_statistics, options.llama_cpp});
  pipelines_ = std::make_unique<Pipelines>(*device_, activation_type_);
  stream_ = std::make_unique<Stream>(*device_);
  const std::vector<HeadShape> heads = head_shapes(config_);
  std::vector<int> head_dims;
  for (const HeadShape& h : heads) head_dims.push_back(h.head_dim);
  kernels_ = std::make_unique<Kernels>(
      KernelChoice(device_profile(*device_, activation_type_, head_dims), parse_kernel_overrides(options.kernels),
                   heads, config_.block, options.llama_cpp),
      *pipelines_);
  for (int head_dim : head_dims)
    if (head_dim > kernels_->choice().max_head_dim())
      throw UsageError(fmt::format("{}: head_dim {}: the Vulkan attention kernel handles head_dim up to {}",
                                   m.path().string(), head_dim, kernels_->choice().max_head_dim()));
  weights_ = std::make_unique<DeviceWeights>(*device_, *stream_, m, activation_type_);
  kv_ = std::make_unique<KvCache>(*device_, cache_widths(config_), gpu::activation_bytes(activation_type_),
                                  options.max_context);
  if (config_.sparse())
    index_keys_ = std::make_unique<KvCache>(
        *device_, std::vector<int>(static_cast<std::size_t>(config_.n_layers), config_.indexer.head_dim),
        gpu::activation_bytes(activation_type_), options.max_context);
  activations_ = std::make_unique<Arena>(*device_, "activations", MemoryKind::device_local, kActivationBlock);
  scratch_ = std::make_unique<Arena>(*device_, "attention scratch", MemoryKind::device_local, kActivationBlock);
  if (options.llama_cpp) llama_cpp_ = std::make_unique<LlamaCppSteps>(*device_, *stream_, *kernels_, config_.block);
  slot_layer_.fill(-2);
}

// The matrix a gemm op multiplies by (model::op_weights; the embedding's table; asserted for other
// ops) and its bias, if any.
const DeviceWeight& Engine::matrix(Op op, int l) const {
  if (op == Op::embed) return weights_->get(WeightKind::token_embd);
  const auto w = model::op_weights(op, config_);
  TAPDIFF_ASSERT(w.has_value(), "{} has no weight matrix", model::op_name(op));
  return weights_->get(w->matrix, model::is_per_layer(w->matrix) ? l : -1);
}

const DeviceWeight* Engine::bias(Op op, int l) const {
  const auto w = model::op_weights(op, config_);
  return w && w->bias ? weights_->find(*w->bias, model::is_per_layer(*w->bias) ? l : -1) : nullptr;
}

// The tokens' rows of the embedding, scaled; in GPT-2 and OPT plus their positions' rows.
KernelId Engine::embed(const Region& out) {
  const int rows = chunk_.rows;
  KernelId id = kernels_->embed(*stream_, matrix(Op::embed, -1), tokens_, static_cast<float>(config_.block.embed_scale),
                                out, rows);
  if (!config_.block.learned_positions) return id;
  const Region positions = position_rows_.sub(0, activation_bytes(rows, config_.dim));
  id.kernels.push_back(
      kernels_->embed(*stream_, weights_->get(WeightKind::pos_embd), positions_, 1.0f, positions, rows));
  id.kernels.push_back(kernels_->add(*stream_, out, positions, 1.0f, out, std::int64_t{rows} * config_.dim));
  return id;
}

// A norm step over `rows` rows of its weight's width: the model's RMSNorm, or its LayerNorm with
// the bias of that norm where the model has one.
Kernel Engine::norm(const Region& x, const model::Step& step, const Region& out, int rows, std::uint32_t faults) {
  const DeviceWeight& w = norm_weight(step.op, step.layer);
  const auto eps = static_cast<float>(model::norm_eps(config_, step.op));
  if (model::norm_kind(config_, step.op) == model::NormKind::rms)
    return kernels_->rms_norm(*stream_, x, w, eps, out, rows, faults);
  const std::optional<WeightKind> kind = model::norm_weights(step.op)->bias;
  const DeviceWeight* bias = kind ? weights_->find(*kind, model::is_per_layer(*kind) ? step.layer : -1) : nullptr;
  return kernels_->layer_norm(*stream_, x, w, bias, eps, out, rows, faults);
}

// The weights' storage of the op's first step (f32 for ops without weights, or absent from the model).
model::DType Engine::weight_dtype(Op op) const {
  const model::OpClass cls = model::op_class(op);
  if (cls != model::OpClass::gemm && cls != model::OpClass::embedding && cls != model::OpClass::experts)
    return model::DType::f32;
  for (const model::Step& s : graph_.steps())
    if (s.op == op)
      return op == Op::moe_shared             ? weights_->get(WeightKind::shexp_gate, s.layer).dtype
             : op == Op::ple_input            ? weights_->get(WeightKind::ple_token_embd).dtype
             : cls == model::OpClass::experts ? weights_->get(WeightKind::expert_gate, s.layer).dtype
                                              : matrix(op, s.layer).dtype;
  return model::DType::f32;
}

// The variants that ran for the op so far; before any ran, every variant it may run here, with the
// faults planted in it.
std::string Engine::kernel(Op op) const {
  std::vector<KernelId> ids = ran_[static_cast<std::size_t>(op)];
  if (ids.empty()) {
    const std::vector<KernelId> planned = this->planned(op);
    ids = planned;
    for (int l = 0; l < config_.n_layers; ++l)
      for (KernelId faulty : planned) {
        faulty.faults = faults_.planted_in(op, l);
        if (!faulty.faults.empty() && std::find(ids.begin(), ids.end(), faulty) == ids.end()) ids.push_back(faulty);
      }
  }
  std::string out;
  for (const KernelId& id : ids) out += (out.empty() ? "" : ", ") + to_string(id);
  return out;
}

// The choice's kernels of the op's class, but where run() composes the op of other kernels or
// runs a residual add without the norm after it.
std::vector<KernelId> Engine::planned(Op op) const {
  const KernelChoice& choice = kernels_->choice();
  const Kernel add = choice.named("add"), scale = choice.named("scale_softcap"), norm = choice.named("rms_norm-tree");
  const Kernel columns = choice.named("head-columns");
  switch (op) {
    case Op::moe_shared: return choice.planned_shared_expert(weight_dtype(op), config_.experts.shared_gate);
    case Op::moe_out: return choice.planned_mixture(weight_dtype(op), config_.experts);
    case Op::ple_input: {  // the projection's product, its norm, then the table's slice added (layer_input)
      if (config_.layer_inputs.dim == 0) break;
      std::vector<KernelId> ids = choice.planned(model::OpClass::gemm, weights_->get(WeightKind::ple_model_proj).dtype);
      for (KernelId& id : ids)
        id.kernels.insert(id.kernels.end(), {norm, choice.named("layer-input", weight_dtype(op))});
      return ids;
    }
    case Op::moe_router_norm: return {KernelId({norm, scale})};
    case Op::q_a_norm: return {KernelId(norm)};
    case Op::kv_a_norm: return {KernelId({columns, norm})};  // latent_part
    case Op::rope_k:
      if (config_.latent()) return {KernelId({columns, choice.named("rope-table")})};
      break;
    case Op::idx_k_norm: return {KernelId(choice.named("layer_norm-tree"))};
    case Op::idx_scores:
    case Op::idx_ids: return {KernelId(choice.named("index-topk"))};
    case Op::attn: {  // latent attention's output narrowed after it (attend); a sparse one's: two-pass only
      std::vector<KernelId> ids = config_.sparse() ? std::vector<KernelId>{KernelId(choice.named("attention-two-pass"))}
                                                   : choice.planned(model::OpClass::attention, model::DType::f32);
      if (config_.latent())
        for (KernelId& id : ids) id.kernels.push_back(columns);
      return ids;
    }
    case Op::moe_sum: return {config_.experts.shared_average ? KernelId({add, scale}) : KernelId(add)};
    case Op::ffn_sum: return {KernelId(add)};
    case Op::attn_residual:
    case Op::ffn_residual:
    case Op::ple_residual: {
      if (!layer_scales_.empty() && op == model::last_residual(config_)) return {KernelId({add, scale})};
      const bool normed = std::any_of(graph_.steps().begin(), graph_.steps().end(), [&](const model::Step& s) {
        return s.op == op && graph_.norm_of(s.output()).has_value();
      });
      if (!normed) return {KernelId(add)};
      break;
    }
    default: break;
  }
  return choice.planned(model::op_class(op), weight_dtype(op));
}

void Engine::reset() {
  stream_->abandon();
  std::fill(n_past_.begin(), n_past_.end(), 0);
  in_chunk_ = false;
}

void Engine::set_sequences(int n) {
  if (n < 1) throw UsageError(fmt::format("a batch of {} sequences: expected at least 1", n));
  reset();
  n_past_.assign(static_cast<std::size_t>(n), 0);
}

void Engine::reserve_rows(int rows) {
  if (rows <= capacity_) return;
  const int capacity = std::max(rows, 2 * capacity_);
  activations_->release();  // nothing in flight: the stream is idle between chunks
  capacity_ = 0;            // until every slot is allocated again
  for (Op op : model::kAllOps) {
    const std::uint64_t bytes = activation_bytes(capacity, graph_.max_width(op));
    if (bytes == 0) continue;  // an op this model has not (the experts' of a dense one)
    slots_[static_cast<std::size_t>(op)] =
        activations_->allocate(bytes, fmt::format("the {} activations ({} rows)", model::op_name(op), capacity));
  }
  if (config_.experts.count > 0) {
    const std::int64_t pairs = std::int64_t{capacity} * config_.experts.active;
    for (Region* r : {&expert_gate_, &expert_up_, &expert_hidden_})
      *r = activations_->allocate(activation_bytes(pairs, config_.experts.ffn_dim), "the experts' FFN activations");
    expert_out_ = activations_->allocate(activation_bytes(pairs, config_.dim), "the experts' outputs");
    if (config_.experts.weights_scale_input)
      expert_input_ = activations_->allocate(activation_bytes(pairs, config_.dim), "the experts' weighted inputs");
    const auto plan_tiles = Kernels::expert_plan_tiles(static_cast<std::uint64_t>(pairs), config_.experts.count);
    expert_plan_ = {activations_->allocate((1 + 3 * plan_tiles) * 4, "the experts' tiles"),
                    activations_->allocate(static_cast<std::uint64_t>(pairs) * 4, "the pairs grouped by expert")};
  }
  if (const int f = config_.experts.shared_ffn_dim; f > 0) {
    for (Region* r : {&shared_gate_, &shared_up_, &shared_hidden_})
      *r = activations_->allocate(activation_bytes(capacity, f), "the shared expert's FFN activations");
    if (config_.experts.shared_gate) {
      shared_out_ = activations_->allocate(activation_bytes(capacity, config_.dim), "the shared expert's output");
      shared_logits_ = activations_->allocate(activation_bytes(capacity, 1), "the shared expert's gate logits");
    }
  }
  if (const int width = config_.layer_inputs.dim; width > 0)
    ple_projected_ = activations_->allocate(activation_bytes(capacity, width), "the per-layer inputs' projection");
  if (config_.latent()) {
    latent_rows_ = activations_->allocate(activation_bytes(capacity, config_.mla.kv_rank), "the latent's rows");
    key_part_ = activations_->allocate(activation_bytes(capacity, config_.mla.rope_dim), "the shared key part");
    const std::int64_t wide = std::int64_t{config_.n_heads} * attention_width(config_, 0);
    for (Region* r : {&wide_q_, &wide_out_})
      *r = activations_->allocate(activation_bytes(capacity, wide), "the latent attention's widened heads");
  }
  if (llama_cpp_) llama_cpp_->allocate(*activations_, capacity, widest_product_input());
  tokens_ = activations_->allocate(static_cast<std::uint64_t>(capacity) * 4, "the chunk's tokens");
  if (config_.block.learned_positions) {
    positions_ = activations_->allocate(static_cast<std::uint64_t>(capacity) * 4, "the chunk's positions");
    position_rows_ = activations_->allocate(activation_bytes(capacity, config_.dim), "the position embeddings");
  }
  row_table_ = activations_->allocate(static_cast<std::uint64_t>(capacity) * 16, "the attention row table");
  rope_->allocate(*activations_, capacity);
  capacity_ = capacity;
}

void Engine::begin_chunk(std::span<const std::int32_t> tokens, const model::ChunkInfo& chunk) {
  TAPDIFF_ASSERT(static_cast<int>(tokens.size()) == chunk.rows && chunk.rows > 0, "chunk of {} rows given {} tokens",
                 chunk.rows, tokens.size());
  const BatchPart part{0, tokens, chunk.first_pos, chunk.decode};
  begin_batch(chunk.index, std::span<const BatchPart>(&part, 1));
}

void Engine::begin_batch(int index, std::span<const BatchPart> parts) {
  TAPDIFF_ASSERT(!parts.empty(), "a pass without rows");
  std::vector<Part> planned;
  std::vector<std::int32_t> tokens;
  int longest = 0;
  bool decode = true;
  for (const BatchPart& p : parts) {
    if (p.sequence < 0 || p.sequence >= static_cast<int>(n_past_.size()))
      throw UsageError(fmt::format("sequence {} of a batch of {}", p.sequence, n_past_.size()));
    if (std::any_of(planned.begin(), planned.end(), [&](const Part& q) { return q.sequence == p.sequence; }))
      throw UsageError(fmt::format("sequence {} appears twice in one pass", p.sequence));
    const int held = n_past_[static_cast<std::size_t>(p.sequence)];
    if (p.first_pos != held)
      throw UsageError(fmt::format("{}chunk {} starts at position {}, but the KV cache holds {} rows",
                                   n_past_.size() > 1 ? fmt::format("sequence {}: ", p.sequence) : "", index,
                                   p.first_pos, held));
    TAPDIFF_ASSERT(!p.tokens.empty(), "sequence {} has no rows in pass {}", p.sequence, index);
    for (std::int32_t t : p.tokens)
      if (t < 0 || t >= config_.vocab)
        throw UsageError(fmt::format("token id {} is outside the model's vocabulary of {} tokens", t, config_.vocab));
    const auto rows = static_cast<int>(p.tokens.size());
    planned.push_back({p.sequence, p.first_pos, rows, static_cast<int>(tokens.size()), p.decode});
    tokens.insert(tokens.end(), p.tokens.begin(), p.tokens.end());
    longest = std::max(longest, p.first_pos + rows);
    decode = decode && p.decode;
  }
  stream_->abandon();  // only after an error left a chunk half recorded
  const auto rows = static_cast<int>(tokens.size());
  reserve_rows(rows);
  kv_->reserve(*stream_, static_cast<int>(n_past_.size()), longest);
  if (index_keys_) {
    require_exact_positions(longest);
    index_keys_->reserve(*stream_, static_cast<int>(n_past_.size()), longest);
  }
  parts_ = std::move(planned);
  chunk_ = {index, parts_.front().first_pos, rows, decode};
  attention_ = {rows,
                config_.n_heads,
                0,  // each layer's heads and key span: layer_attention
                0,
                0,
                static_cast<int>(parts_.size()),
                longest,
                static_cast<float>(config_.block.attention_softcap),
                config_.block.attention_sinks,
                false,
                0};
  // the attention's partials, or the indexer's scores of every row's positions
  std::uint64_t bytes = index_keys_ ? Kernels::index_scratch_bytes(rows, longest) : 0;
  for (int l = 0; l < config_.n_layers; ++l)
    bytes = std::max(bytes, kernels_->attention_scratch_bytes(layer_attention(l)));
  if (bytes > attention_scratch_.size) {
    const std::uint64_t size = std::max(bytes, 2 * attention_scratch_.size);
    scratch_->release();  // nothing in flight: the stream is idle between passes
    attention_scratch_ = {};
    attention_scratch_ = scratch_->allocate(size, "the attention partials");
  }
  in_chunk_ = true;
  fused_norm_ = {};
  slot_layer_.fill(-2);
  stream_->upload(tokens.data(), tokens.size() * sizeof(std::int32_t), tokens_);
  if (config_.block.learned_positions) upload_positions();
  upload_row_table();
  std::vector<model::ChunkInfo> rope_parts;
  for (const Part& p : parts_) rope_parts.push_back(chunk_of(p));
  rope_->upload(*stream_, rope_parts);
}

// Each row's row of the learned position table (model::learned_position_row).
void Engine::upload_positions() {
  const std::int64_t table = weights_->get(WeightKind::pos_embd).rows;
  std::vector<std::int32_t> rows;
  for (const Part& p : parts_)
    for (int t = 0; t < p.rows; ++t)
      rows.push_back(static_cast<std::int32_t>(model::learned_position_row(config_.block, table, p.first_pos + t)));
  stream_->upload(rows.data(), rows.size() * sizeof(std::int32_t), positions_);
}

// Per row: (cache row of its sequence's position 0, position, chunk's first position, leak), where
// leak = (end << 3) | rows: the cache rows [end - rows, end) that the sequence before it in the pass
// holds last (at most kLeakRows; 0 for the first). Only the planted batch-seq-leak reads the leak.
void Engine::upload_row_table() {
  constexpr int kLeakRows = 4;
  std::vector<std::uint32_t> table;
  std::uint32_t leak = 0;
  for (const Part& p : parts_) {
    for (int t = 0; t < p.rows; ++t)
      table.insert(table.end(),
                   {static_cast<std::uint32_t>(kv_->base(p.sequence)), static_cast<std::uint32_t>(p.first_pos + t),
                    static_cast<std::uint32_t>(p.first_pos), leak});
    const int held = p.first_pos + p.rows;
    leak = static_cast<std::uint32_t>(kv_->base(p.sequence) + held) << 3 |
           static_cast<std::uint32_t>(std::min(held, kLeakRows));
  }
  stream_->upload(table.data(), table.size() * sizeof(std::uint32_t), row_table_);
}

std::uint64_t Engine::activation_bytes(std::int64_t rows, std::int64_t cols) const {
  return static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(cols) * gpu::activation_bytes(activation_type_);
}

Region Engine::slot(Op op) const {
  return slots_[static_cast<std::size_t>(op)].sub(0, activation_bytes(chunk_.rows, graph_.max_width(op)));
}

Region Engine::input(const TensorId& id) const {
  const int held = slot_layer_[static_cast<std::size_t>(id.op)];
  TAPDIFF_ASSERT(held == id.layer, "{} asked, but the slot holds layer {}", model::to_string(id), held);
  return slot(id.op);
}

void Engine::execute(const model::Step& step, const model::Deliver& deliver) {
  TAPDIFF_ASSERT(in_chunk_, "execute {} outside a chunk", model::to_string(step.output()));
  const Region out = slot(step.op);
  KernelId id = run(step, out);
  id.faults = faults_.planted_in(step.op, step.layer);
  slot_layer_[static_cast<std::size_t>(step.op)] = step.layer;
  std::vector<KernelId>& ran = ran_[static_cast<std::size_t>(step.op)];
  if (std::find(ran.begin(), ran.end(), id) == ran.end()) ran.push_back(std::move(id));
  if (stream_->timestamps())
    stream_->mark([this, at = static_cast<std::size_t>(step.op)](double seconds) { op_seconds_[at] += seconds; });
  if (deliver) deliver_after_chunk(out, graph_.width(step.output()), deliver);
  // The device starts on the uploads and the embedding while the first layer is recorded, and is
  // kept fed with ever fewer submissions: after layers 1, 2, 4, 8, ... (counting from 1; the host
  // records a layer in a fraction of the time the device runs it). Each submission costs the device
  // a gap between command buffers. end_chunk() waits for them all.
  if (step.op == Op::embed ||
      (step.op == Op::ffn_residual && std::has_single_bit(static_cast<unsigned>(step.layer) + 1)))
    stream_->submit();
}

void Engine::deliver_after_chunk(const Region& out, std::int64_t cols, const model::Deliver& deliver) {
  const std::int64_t rows = chunk_.rows;
  // f16 activations are offered as they are first (a dump stored as f16 takes them unconverted);
  // otherwise one host tensor serves every delivery: taps copy what they keep (model::Deliver).
  stream_->download(out, [this, deliver, rows, cols](const std::byte* data) {
    if (activation_type_ == Activations::f16 &&
        deliver.offer_f16(
            {{reinterpret_cast<const std::uint16_t*>(data), static_cast<std::size_t>(rows * cols)}, rows, cols}))
      return;
    activations_to_host(data, rows, cols, activation_type_, delivered_);
    deliver(delivered_);
  });
}

const DeviceWeight& Engine::norm_weight(Op op, int layer) const {
  const WeightKind kind = model::norm_weights(op)->weight;
  return weights_->get(kind, model::is_per_layer(kind) ? layer : -1);
}

// The model's scale (1/sqrt(head_dim) but where its block says otherwise), llama.cpp's in its
// precision, or the one --inject plants.
float Engine::attention_scale(int layer) const {
  const int head_dim = model::head_dim(config_, layer);
  if (const auto planted = planted_attention_scale(faults_, layer, head_dim)) return *planted;
  if (kernels_->choice().llama_cpp()) return formats::llama_cpp_attention_scale(config_);
  return static_cast<float>(model::attention_scale(config_.block, head_dim));
}

KernelId Engine::run(const model::Step& step, const Region& out) {
  const auto in = [&](std::size_t i) { return input(step.inputs[i]); };
  const int rows = chunk_.rows;
  const std::uint32_t faults = shader_fault_bits(faults_, step.op, step.layer);
  switch (step.op) {
    case Op::embed: return embed(out);
    case Op::attn_norm:
    case Op::attn_post_norm:
    case Op::ffn_norm:
    case Op::ffn_post_norm:
    case Op::moe_norm:
    case Op::moe_post_norm:
    case Op::dense_post_norm:
    case Op::ple_norm:
    case Op::final_norm:
      if (const FusedNorm fused = std::exchange(fused_norm_, {}); fused.norm == step.output()) return fused.kernel;
      return norm(in(0), step, out, rows, faults);
    case Op::q_norm:
    case Op::k_norm:
    case Op::v_norm: {  // each group of the weight's width (a head, or the whole row) is one row of the norm
      const auto groups = static_cast<int>(rows * graph_.width(step.output()) / norm_weight(step.op, step.layer).cols);
      return norm(in(0), step, out, groups, faults);
    }
    case Op::q_proj:
    case Op::k_proj:
    case Op::v_proj: {
      KernelId id = product(in(0), step.op, step.layer, bias(step.op, step.layer), out, faults);
      if (const double clip = config_.block.clip_qkv; clip > 0)
        id.kernels.push_back(
            kernels_->clip(*stream_, out, static_cast<float>(clip), std::int64_t{rows} * graph_.width(step.output())));
      return id;
    }
    case Op::o_proj:
    case Op::ffn_gate:
    case Op::ffn_up:
    case Op::ffn_down:
    case Op::ple_gate:
    case Op::ple_proj:
    case Op::moe_router: return product(in(0), step.op, step.layer, bias(step.op, step.layer), out, faults);
    case Op::moe_router_norm: {  // RMS by the router's own scale, times 1/sqrt(dim)
      KernelId id = norm(in(0), step, out, rows, faults);
      id.kernels.push_back(kernels_->scale_softcap(*stream_, out, static_cast<float>(1 / std::sqrt(config_.dim)), 0.0F,
                                                   std::int64_t{rows} * config_.dim));
      return id;
    }
    case Op::ffn_sum: return kernels_->add(*stream_, in(0), in(1), 1.0F, out, std::int64_t{rows} * config_.dim);
    case Op::ple_input: return layer_input(step, out);
    case Op::q_a_proj:
    case Op::kv_a_proj: return product(in(0), step.op, step.layer, bias(step.op, step.layer), out, faults);
    case Op::q_a_norm: return norm(in(0), step, out, rows, faults);
    case Op::kv_a_norm: return latent_part(step, out, faults);
    case Op::moe_scores:
      return kernels_->moe_scores(*stream_, in(0), weights_->find(WeightKind::moe_score_bias, step.layer), out, rows,
                                  config_.experts, faults);
    case Op::moe_ids: return kernels_->moe_topk(*stream_, in(0), out, rows, config_.experts, faults);
    case Op::moe_weights:
      return kernels_->moe_weights(*stream_, in(0), in(1), weights_->find(WeightKind::moe_expert_scale, step.layer),
                                   out, rows, config_.experts, faults);
    case Op::moe_out: return mixture(step, out);
    case Op::moe_shared: return shared_expert(step, out);
    case Op::moe_sum: {
      const std::int64_t n = std::int64_t{rows} * config_.dim;
      KernelId id = kernels_->add(*stream_, in(0), in(1), 1.0F, out, n);
      if (config_.experts.shared_average) id.kernels.push_back(kernels_->scale_softcap(*stream_, out, 0.5F, 0.0F, n));
      return id;
    }
    case Op::logits: {
      KernelId id = product(in(0), step.op, step.layer, bias(step.op, step.layer), out, faults);
      const model::Block& b = config_.block;
      if (b.logit_scale == 1.0 && b.logit_softcap == 0.0) return id;
      id.kernels.push_back(kernels_->scale_softcap(*stream_, out, static_cast<float>(b.logit_scale),
                                                   static_cast<float>(b.logit_softcap),
                                                   std::int64_t{rows} * config_.vocab));
      return id;
    }
    case Op::rope_q:
    case Op::rope_k: {
      if (step.op == Op::rope_k && config_.latent()) return latent_part(step, out, faults);
      const model::RopeStyle style = planted_rope_style(faults_, config_, step.layer);
      const bool query = step.op == Op::rope_q;
      return kernels_->rope(*stream_, in(0), query ? rope_->queries(step.layer) : rope_->keys(step.layer), out, rows,
                            graph_.width(step.output()), model::head_dim(config_, step.layer),
                            model::rotary_dim(config_, step.layer),
                            rope_first_channel(faults_, config_, step.layer, query), style);
    }
    case Op::attn: return attend(step, out);
    case Op::idx_q_proj:
    case Op::idx_k_proj:
    case Op::idx_weights: return product(in(0), step.op, step.layer, bias(step.op, step.layer), out, faults);
    case Op::idx_k_norm: return norm(in(0), step, out, rows, faults);
    case Op::idx_rope_q:
    case Op::idx_rope_k: {  // rotate-half on each head's leading RoPE channels, at the layer's key angles
      const int head_dim = config_.indexer.head_dim;
      return kernels_->rope(*stream_, in(0), rope_->index(step.layer), out, rows, graph_.width(step.output()), head_dim,
                            config_.mla.rope_dim, 0, model::RopeStyle::rotate_half);
    }
    case Op::idx_scores:
    case Op::idx_ids: return index_topk(step, out, faults);
    case Op::attn_residual:
    case Op::ffn_residual:
    case Op::ple_residual: return residual(step, out);
    case Op::ffn_act:
    case Op::ple_act: {
      const std::int64_t n = std::int64_t{rows} * graph_.width(step.output());
      if (config_.block.ffn == model::Ffn::plain && step.op == Op::ffn_act)
        return kernels_->activation(*stream_, in(0), out, n, faults,
                                    xielu_.empty() ? model::Xielu{} : xielu_[static_cast<std::size_t>(step.layer)],
                                    gelu_table());
      return kernels_->gated_activation(*stream_, in(0), in(1), out, n, faults, gelu_table());
    }
  }
  return {};
}

// x W^T (+ bias) for a product step (in llama.cpp's precision, as it converts x).
Kernel Engine::product(const Region& x, Op op, int layer, const DeviceWeight* bias, const Region& out,
                       std::uint32_t faults) {
  const DeviceWeight& w = matrix(op, layer);
  if (llama_cpp_) return llama_cpp_->product(x, w, bias, out, chunk_.rows, faults);
  return kernels_->matmul(*stream_, x, w, bias, out, chunk_.rows, faults);
}

// Latent attention's kv_a_norm and rope_k: kv_a_proj's latent channels normed, its trailing key
// part (the RoPE channels every head shares) rotated, each first gathered apart.
KernelId Engine::latent_part(const model::Step& step, const Region& out, std::uint32_t faults) {
  const model::LatentAttention& mla = config_.mla;
  const int rows = chunk_.rows, stride = mla.kv_rank + mla.rope_dim;
  const bool latent = step.op == Op::kv_a_norm;
  const int width = latent ? mla.kv_rank : mla.rope_dim;
  const Region part = (latent ? latent_rows_ : key_part_).sub(0, activation_bytes(rows, width));
  const Region kv_a = input(step.inputs[0]);
  const ColumnsPush push{u32(rows), 1, u32(width), u32(width), u32(stride), u32(latent ? 0 : mla.kv_rank), 0, 0, 0, 0};
  KernelId id = kernels_->head_columns(*stream_, kv_a, kv_a, push, part);
  if (latent) {
    id.kernels.push_back(norm(part, step, out, rows, faults));
    return id;
  }
  id.kernels.push_back(kernels_->rope(*stream_, part, rope_->keys(step.layer), out, rows, width, width, width, 0,
                                      planted_rope_style(faults_, config_, step.layer)));
  return id;
}

// The widest input of the model's products (their matrices' columns).
int Engine::widest_product_input() const {
  int widest = 0;
  for (const model::Step& s : graph_.steps())
    if (model::op_class(s.op) == model::OpClass::gemm)
      widest = std::max(widest, static_cast<int>(graph_.width(s.inputs[0])));
  return widest;
}

// A residual add (the per-layer input's unscaled), with the norm that reads its output (in the
// graph) where the kernels fuse them: the norm's output is written now and its step records
// nothing, unless a value is written in between (Engine::write: a step fed other inputs computes
// its own output). A layer's last add with a learned scale (block.layer_scale) is scaled after it,
// its norm apart.
KernelId Engine::residual(const model::Step& step, const Region& out) {
  const Region a = input(step.inputs[0]), b = input(step.inputs[1]);
  const auto scale = step.op == Op::ple_residual ? 1.0F : static_cast<float>(config_.block.residual_scale);
  const std::int64_t n = std::int64_t{chunk_.rows} * config_.dim;
  if (!layer_scales_.empty() && step.op == model::last_residual(config_)) {
    KernelId id = kernels_->add(*stream_, a, b, scale, out, n);
    id.kernels.push_back(
        kernels_->scale_softcap(*stream_, out, layer_scales_[static_cast<std::size_t>(step.layer)], 0.0F, n));
    return id;
  }
  const std::optional<TensorId> norm = graph_.norm_of(step.output());
  if (!kernels_->choice().fuses_norms() || !norm) return kernels_->add(*stream_, a, b, scale, out, n);
  Kernel kernel = kernels_->add_rms_norm(*stream_, a, b, scale, norm_weight(norm->op, norm->layer),
                                         static_cast<float>(config_.norm_eps), out, slot(norm->op), chunk_.rows,
                                         shader_fault_bits(faults_, norm->op, norm->layer));
  fused_norm_ = {*norm, kernel};
  return kernel;
}

// A layer's per-layer input (model/config.h LayerInputs): the embedding times the layer's rows of
// the projection, RMS-normed, plus the tokens' slice of the table. The norm of the projection
// times `projection` is the norm of the projection with epsilon eps / projection^2: it runs so.
KernelId Engine::layer_input(const model::Step& step, const Region& out) {
  const int rows = chunk_.rows, width = config_.layer_inputs.dim, l = step.layer;
  const model::LayerInputScales scales = model::layer_input_scales(config_);
  const DeviceWeight& projection = weights_->get(WeightKind::ple_model_proj);
  DeviceWeight slice = projection;
  slice.rows = width;
  slice.region = projection.region.sub(static_cast<std::uint64_t>(l) * width * projection.row_bytes,
                                       static_cast<std::uint64_t>(width) * projection.row_bytes);
  const Region projected = ple_projected_.sub(0, activation_bytes(rows, width));
  KernelId id = kernels_->matmul(*stream_, input(step.inputs[0]), slice, nullptr, projected, rows, 0);
  const auto eps = static_cast<float>(config_.norm_eps / (scales.projection * scales.projection));
  id.kernels.push_back(
      kernels_->rms_norm(*stream_, projected, weights_->get(WeightKind::ple_proj_norm), eps, out, rows, 0));
  id.kernels.push_back(kernels_->layer_input(*stream_, weights_->get(WeightKind::ple_token_embd), tokens_, out,
                                             l * width, static_cast<float>(scales.table),
                                             static_cast<float>(scales.sum), out, rows, width));
  return id;
}

// The chosen experts' FFNs per (token, expert) pair, then each token's weighted sum of its pairs.
KernelId Engine::mixture(const model::Step& step, const Region& out) {
  const int l = step.layer, rows = chunk_.rows, k = config_.experts.active, f = config_.experts.ffn_dim;
  const int pairs = rows * k;
  const Region x = input(step.inputs[0]), ids = input(step.inputs[1]), weights = input(step.inputs[2]);
  const auto used = [&](const Region& r, int width) { return r.sub(0, activation_bytes(pairs, width)); };
  const Region gate = used(expert_gate_, f), up = used(expert_up_, f), hidden = used(expert_hidden_, f);
  const Region y = used(expert_out_, config_.dim);
  // moe_out's faults: swiglu-unclamped's in the activation, the others in the products
  const std::uint32_t planted = shader_fault_bits(faults_, Op::moe_out, l);
  const std::uint32_t faults = planted & ~kFaultSwigluUnclamped;
  const auto plan = kernels_->moe_plan(*stream_, ids, expert_plan_, rows, k, config_.experts.count);
  const int count = config_.experts.count;
  // The experts' biases where they have them (gpt-oss), added to each pair's product.
  std::optional<Kernel> biased;
  const auto add_bias = [&](WeightKind kind, const Region& values, int width) {
    if (const DeviceWeight* b = weights_->find(kind, l))
      biased = kernels_->expert_bias(*stream_, ids, *b, values, pairs, width, count);
  };
  // Llama 4's: each pair's input its token's row times its weight, the outputs then added unweighted
  const bool scaled = config_.experts.weights_scale_input;
  std::optional<Kernel> scaling;
  if (scaled)
    scaling = kernels_->expert_input(*stream_, x, weights, used(expert_input_, config_.dim), rows, config_.dim, k);
  const Region& in = scaled ? used(expert_input_, config_.dim) : x;
  KernelId id = kernels_->expert_matmul(*stream_, in, weights_->get(WeightKind::expert_gate, l), f, ids, k, !scaled,
                                        gate, pairs, plan, faults);
  kernels_->expert_matmul(*stream_, in, weights_->get(WeightKind::expert_up, l), f, ids, k, !scaled, up, pairs, plan,
                          faults);
  add_bias(WeightKind::expert_b_gate, gate, f);
  add_bias(WeightKind::expert_b_up, up, f);
  id.kernels.push_back(
      kernels_->gated_activation(*stream_, gate, up, hidden, std::int64_t{pairs} * f, planted & kFaultSwigluUnclamped));
  kernels_->expert_matmul(*stream_, hidden, weights_->get(WeightKind::expert_down, l), config_.dim, ids, k, false, y,
                          pairs, plan, faults);
  add_bias(WeightKind::expert_b_down, y, config_.dim);
  if (biased) id.kernels.push_back(*biased);
  if (scaling) id.kernels.push_back(*scaling);
  id.kernels.push_back(kernels_->moe_sum(*stream_, y, weights, out, rows, config_.dim, k, scaled));
  return id;
}

// The shared expert's FFN for every row, then its sigmoid gate where it has one.
KernelId Engine::shared_expert(const model::Step& step, const Region& out) {
  const int l = step.layer, rows = chunk_.rows, f = config_.experts.shared_ffn_dim;
  const Region x = input(step.inputs[0]);
  const auto used = [&](const Region& r, int width) { return r.sub(0, activation_bytes(rows, width)); };
  const auto weight = [&](WeightKind kind) -> const DeviceWeight& { return weights_->get(kind, l); };
  const Region gate = used(shared_gate_, f), up = used(shared_up_, f), hidden = used(shared_hidden_, f);
  const bool gated = config_.experts.shared_gate;
  const Region y = gated ? used(shared_out_, config_.dim) : out;
  KernelId id = kernels_->matmul(*stream_, x, weight(WeightKind::shexp_gate), nullptr, gate, rows, 0);
  kernels_->matmul(*stream_, x, weight(WeightKind::shexp_up), nullptr, up, rows, 0);
  id.kernels.push_back(kernels_->gated_activation(*stream_, gate, up, hidden, std::int64_t{rows} * f, 0));
  kernels_->matmul(*stream_, hidden, weight(WeightKind::shexp_down), nullptr, y, rows, 0);
  if (!gated) return id;
  const Region logits = used(shared_logits_, 1);
  kernels_->matmul(*stream_, x, weight(WeightKind::shexp_gate_inp), nullptr, logits, rows, 0);
  id.kernels.push_back(kernels_->sigmoid_gate(*stream_, y, logits, out, rows, config_.dim,
                                              shader_fault_bits(faults_, Op::moe_shared, l)));
  return id;
}

AttentionShape Engine::layer_attention(int layer) const {
  AttentionShape shape = attention_;
  const model::AttentionShape heads = model::attention_shape(config_, layer);
  shape.kv_heads = heads.n_kv_heads;
  shape.head_dim = attention_width(config_, layer);
  const model::KeySpan span = model::key_span(config_, layer);
  shape.window = span.window;
  shape.chunk = span.chunk;
  shape.scale_q_first = kernels_->choice().llama_cpp() && formats::llama_cpp_scales_q_first(config_);
  shape.kept = config_.indexer.top_k;
  return shape;
}

// Appends each sequence's K (after RoPE) and V rows of the pass to its cache at [first_pos,
// first_pos + rows), then attends: each row over its own sequence's rows [0, position]. A layer
// that shares an earlier layer's cache (model::shares_kv) appends nothing and attends over that one.
// Latent attention's heads attend at attention_width: q widened where the values are wider than
// the keys, the output narrowed to the values' channels.
KernelId Engine::attend(const model::Step& step, const Region& out) {
  const int layer = step.layer, source = model::kv_source(config_, layer), rows = chunk_.rows;
  const int width = attention_width(config_, layer), heads = config_.n_heads, kv_width = cache_width(config_, layer);
  const bool latent = config_.latent();
  const Region q_rows = input(step.inputs[0]);
  if (source == layer && latent) write_latent_cache(step);
  if (source == layer && !latent) {
    const Region k_rows = input(step.inputs[1]), v_rows = input(step.inputs[2]);
    for (const Part& p : parts_) {
      const std::uint64_t at = activation_bytes(p.row0, kv_width), bytes = activation_bytes(p.rows, kv_width);
      for (const auto& [values, value] : {std::pair{k_rows, false}, std::pair{v_rows, true}}) {
        const Region cache = kv_->rows(layer, value, p.sequence, p.first_pos, p.rows);
        if (llama_cpp_)
          llama_cpp_->cache(values.sub(at, bytes), cache, p.rows, kv_width);
        else
          kernels_->copy(*stream_, values.sub(at, bytes), cache);
      }
    }
  }
  const int qk = model::head_dim(config_, layer);
  const bool widen_q = width > qk;
  const Region q = widen_q ? wide_q_.sub(0, activation_bytes(rows, std::int64_t{heads} * width)) : q_rows;
  if (widen_q) kernels_->head_columns(*stream_, q_rows, q_rows, resized_heads(rows, heads, qk, width), q);
  const Region o = latent ? wide_out_.sub(0, activation_bytes(rows, std::int64_t{heads} * width)) : out;
  const AttentionShape shape = layer_attention(layer);
  const DeviceWeight* sinks = weights_->find(WeightKind::attn_sinks, layer);
  const Region kept = config_.sparse() ? input(step.inputs.back()) : Region{};
  KernelId id = kernels_->attention(*stream_, shape, attention_scale(layer), q, kv_->all(source, false),
                                    kv_->all(source, true), row_table_.sub(0, static_cast<std::uint64_t>(rows) * 16),
                                    sinks != nullptr ? &sinks->region : nullptr, config_.sparse() ? &kept : nullptr,
                                    attention_scratch_, o, shader_fault_bits(faults_, Op::attn, layer));
  if (latent)
    id.kernels.push_back(
        kernels_->head_columns(*stream_, o, o, resized_heads(rows, heads, width, config_.v_head_dim()), out));
  if (faults_.active(Fault::kv_stale_chunk, layer) && source == layer)
    for (const Part& p : parts_) {
      if (p.decode) continue;
      // kv-stale-chunk (--inject): the prefill chunk's rows are zeroed once its own attention has
      // read them, as if the cache write had never persisted.
      const std::vector<std::byte> zeros(activation_bytes(p.rows, kv_width));
      for (bool value : {false, true})
        stream_->upload(zeros.data(), zeros.size(), kv_->rows(layer, value, p.sequence, p.first_pos, p.rows));
    }
  return id;
}

// The indexer's choice (idx_scores or idx_ids, both reading idx_rope_q, idx_rope_k, idx_weights)
// over its key cache, the pass's keys written into it first (by either op: the same rows).
KernelId Engine::index_topk(const model::Step& step, const Region& out, std::uint32_t faults) {
  const int layer = step.layer, width = config_.indexer.head_dim;
  // the row table's cache rows are the KV cache's: both caches grow alike (begin_batch)
  TAPDIFF_ASSERT(index_keys_->capacity() == kv_->capacity(), "indexer cache of {} rows a sequence, KV cache of {}",
                 index_keys_->capacity(), kv_->capacity());
  const Region keys = input(step.inputs[1]);
  for (const Part& p : parts_)
    kernels_->copy(*stream_, keys.sub(activation_bytes(p.row0, width), activation_bytes(p.rows, width)),
                   index_keys_->rows(layer, false, p.sequence, p.first_pos, p.rows));
  return kernels_->index_topk(*stream_, input(step.inputs[0]), index_keys_->all(layer, false), input(step.inputs[2]),
                              row_table_.sub(0, static_cast<std::uint64_t>(chunk_.rows) * 16), attention_scratch_, out,
                              chunk_.rows, attention_.keys, config_.indexer, step.op == Op::idx_scores, faults);
}

// The kept positions (idx_ids) are activations: exact integers up to 2^11 in f16, 2^8 in bf16.
void Engine::require_exact_positions(int positions) const {
  const int exact = activation_type_ == Activations::f16    ? 1 << 11
                    : activation_type_ == Activations::bf16 ? 1 << 8
                                                            : 1 << 24;
  if (positions > exact)
    throw UsageError(
        fmt::format("a pass over {} positions: the Vulkan engine's {} activations hold DeepSeek-V3.2's "
                    "kept positions (idx_ids) exactly up to {} only",
                    positions, compute_dtype(), exact));
}

// Latent attention's cache rows of the pass: each head's key its no-RoPE channels (k_proj) then the
// rotated part every head shares (rope_k), its value (v_proj), each zero-padded to attention_width.
void Engine::write_latent_cache(const model::Step& step) {
  TAPDIFF_ASSERT(!llama_cpp_, "latent attention in llama.cpp's precision");
  const int layer = step.layer, heads = config_.n_heads, width = attention_width(config_, layer);
  const int nope = config_.mla.nope_dim, rope = config_.mla.rope_dim, v = config_.v_head_dim();
  const Region k_nope = input(step.inputs[1]), values = input(step.inputs[2]), k_rope = input(step.inputs[3]);
  for (const Part& p : parts_) {
    const ColumnsPush keys{
        u32(p.rows), u32(heads), u32(width), u32(nope),         u32(heads * nope), u32(p.row0 * heads * nope),
        u32(nope),   u32(rope),  u32(rope),  u32(p.row0 * rope)};
    kernels_->head_columns(*stream_, k_nope, k_rope, keys, kv_->rows(layer, false, p.sequence, p.first_pos, p.rows));
    kernels_->head_columns(*stream_, values, values, resized_heads(p.rows, heads, v, width, p.row0),
                           kv_->rows(layer, true, p.sequence, p.first_pos, p.rows));
  }
}

void Engine::end_chunk() {
  TAPDIFF_ASSERT(in_chunk_, "end_chunk without begin_chunk");
  in_chunk_ = false;
  stream_->flush();
  for (const Part& p : parts_) n_past_[static_cast<std::size_t>(p.sequence)] = p.first_pos + p.rows;
}

// Downloads a region now: mid-chunk too, the rest of the chunk goes on in a new command buffer.
HostTensor Engine::download_now(const Region& r, std::int64_t rows, std::int64_t cols) {
  HostTensor result;
  stream_->download(r, [&result, rows, cols, a = activation_type_](const std::byte* data) {
    result = activations_to_host(data, rows, cols, a);
  });
  stream_->flush();
  return result;
}

// Records the upload of a value into a region in the activations' layout; flushed between chunks.
void Engine::upload(const HostTensor& value, const Region& r) {
  const std::vector<std::byte> bytes = activations_to_device(value, activation_type_);
  stream_->upload(bytes.data(), bytes.size(), r);
  if (!in_chunk_) stream_->flush();
}

HostTensor Engine::read(const TensorId& id) { return download_now(input(id), chunk_.rows, graph_.width(id)); }

HostTensor Engine::read_rows(const TensorId& id, std::int64_t first, std::int64_t count) {
  TAPDIFF_ASSERT(first >= 0 && count >= 0 && first + count <= chunk_.rows, "rows [{}, {}) of {} of {} rows", first,
                 first + count, model::to_string(id), chunk_.rows);
  const std::int64_t width = graph_.width(id);
  if (count == 0) return HostTensor(model::Scalar::f32, 0, width);  // no 0-byte copy on the device
  return download_now(input(id).sub(activation_bytes(first, width), activation_bytes(count, width)), count, width);
}

void Engine::write(const TensorId& id, const HostTensor& value) {
  if (chunk_.rows == 0) throw UsageError(fmt::format("write {}: no chunk has begun", model::to_string(id)));
  if (value.rows() != chunk_.rows || value.cols() != graph_.width(id))
    throw UsageError(fmt::format("write {}: expected [{}, {}] for the current chunk, found [{}, {}]",
                                 model::to_string(id), chunk_.rows, graph_.width(id), value.rows(), value.cols()));
  slot_layer_[static_cast<std::size_t>(id.op)] = id.layer;
  fused_norm_ = {};  // the next norm computes its own output from what it is fed
  upload(value, slot(id.op));
}

// The model's width of a cached key or value (the reference's: latent attention's values are
// v_head_dim wide), and the width of a head's in it.
std::pair<int, int> Engine::model_cache_width(int source, bool value) const {
  const int head = value ? model::value_head_dim(config_, source) : model::head_dim(config_, source);
  return {model::attention_shape(config_, source).n_kv_heads * head, head};
}

// A layer sharing another's cache reads and writes that one's (as the reference's).
HostTensor Engine::read_kv(int layer, bool value) {
  TAPDIFF_ASSERT(layer >= 0 && layer < config_.n_layers, "KV cache of layer {}", layer);
  const int source = model::kv_source(config_, layer), width = cache_width(config_, source);
  const auto [model_width, head] = model_cache_width(source, value);
  const int held = n_past_.front();
  if (held == 0) return HostTensor(model::Scalar::f32, 0, model_width);
  HostTensor rows = download_now(kv_->rows(source, value, 0, 0, held), held, width);
  if (width == model_width) return rows;
  return resized_heads(rows, config_.n_heads, attention_width(config_, source), head);
}

void Engine::write_kv(int layer, bool value, const HostTensor& rows) {
  TAPDIFF_ASSERT(layer >= 0 && layer < config_.n_layers, "KV cache of layer {}", layer);
  if (config_.sparse())
    throw UsageError(
        "write_kv: a sparse attention's indexer keeps a key cache of its own, which write_kv does not carry");
  const int source = model::kv_source(config_, layer), width = cache_width(config_, source);
  const auto [model_width, head] = model_cache_width(source, value);
  if (rows.cols() != model_width)
    throw UsageError(
        fmt::format("write_kv layer {}: expected rows of {} values, found {}", layer, model_width, rows.cols()));
  const int n = static_cast<int>(rows.rows());
  kv_->reserve(*stream_, static_cast<int>(n_past_.size()), n);
  const HostTensor cached =
      width == model_width ? rows : resized_heads(rows, config_.n_heads, head, attention_width(config_, source));
  if (n > 0) upload(llama_cpp_ ? LlamaCppSteps::cached_values(cached) : cached, kv_->rows(source, value, 0, 0, n));
  n_past_.front() = n;
}

}  // namespace

std::unique_ptr<VulkanEngine> make_vulkan_engine(const model::Model& model, const VulkanEngineOptions& options) {
  model::require_runnable(model);
  return std::make_unique<Engine>(model, options);
}

std::vector<DeviceInfo> list_devices() { return devices_of(*shared_instance(InstanceOptions{})); }

}  // namespace tapdiff::gpu
