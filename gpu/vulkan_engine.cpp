#include "gpu/vulkan_engine.h"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/core.h>

#include "gpu/device.h"
#include "gpu/device_weights.h"
#include "gpu/faults.h"
#include "gpu/host_activations.h"
#include "gpu/instance.h"
#include "gpu/kernels.h"
#include "gpu/kv_cache.h"
#include "gpu/pipelines.h"
#include "gpu/stream.h"
#include "model/errors.h"

namespace tapdiff::gpu {
namespace {

using model::HostTensor;
using model::Op;
using model::TensorId;
using model::WeightKind;

constexpr std::uint64_t kActivationBlock = 64ull << 20;

std::vector<DeviceInfo> devices_of(const Instance& instance) {
  std::vector<DeviceInfo> devices;
  for (VkPhysicalDevice d : instance.physical_devices())
    devices.push_back(query_device(d, static_cast<int>(devices.size())));
  return devices;
}

// cos and sin of angle = pos * base^(-2i/d) for the chunk's positions, [rows, d/2] of (cos, sin):
// computed in double and rounded to f32, the same expression as reference::rope.
std::vector<float> rope_table(int first_pos, int rows, int head_dim, double base) {
  const int half = head_dim / 2;
  std::vector<float> table(static_cast<std::size_t>(rows) * static_cast<std::size_t>(half) * 2);
  for (int t = 0; t < rows; ++t) {
    const double pos = static_cast<double>(first_pos + t);
    for (int i = 0; i < half; ++i) {
      const double angle = pos * std::pow(base, -2.0 * i / head_dim);
      const std::size_t at =
          2 * (static_cast<std::size_t>(t) * static_cast<std::size_t>(half) + static_cast<std::size_t>(i));
      table[at] = static_cast<float>(std::cos(angle));
      table[at + 1] = static_cast<float>(std::sin(angle));
    }
  }
  return table;
}

model::RopeStyle flipped(model::RopeStyle style) {
  return style == model::RopeStyle::rotate_half ? model::RopeStyle::interleaved : model::RopeStyle::rotate_half;
}

class Engine final : public VulkanEngine {
 public:
  Engine(const model::Model& m, const VulkanEngineOptions& options);
  ~Engine() override { stream_->abandon(); }

  std::string name() const override { return "vulkan"; }
  std::string device() const override { return summary(device_->info()); }
  std::string compute_dtype() const override { return activation_type_ == Activations::f16 ? "f16" : "f32"; }
  std::string kernel(Op op) const override;
  model::Scalar scalar() const override { return model::Scalar::f32; }

  void reset() override;
  void begin_chunk(std::span<const std::int32_t> tokens, const model::ChunkInfo& chunk) override;
  void execute(const model::Step& step, const model::Deliver& deliver) override;
  void end_chunk() override;
  HostTensor read(const TensorId& id) override;
  void write(const TensorId& id, const HostTensor& value) override;
  HostTensor read_kv(int layer, bool value) override;
  void write_kv(int layer, bool value, const HostTensor& rows) override;

  std::vector<std::string> validation_messages() const override { return instance_->messages(); }
  bool validation_enabled() const override { return instance_->validation(); }
  VulkanEngineStats stats() const override {
    return {stream_->submits(), stream_->barriers(), pipelines_->size(), weights_->bytes()};
  }
  const DeviceInfo& device_info() const override { return device_->info(); }

 private:
  void reserve_rows(int rows);
  Region slot(Op op) const;  // the op's output for the current chunk, [rows, width] f32
  Region input(const TensorId& id) const;
  std::string run(const model::Step& step, const Region& out);
  std::string attend(int layer, const Region& out);
  void upload_rope_tables();
  std::uint32_t kernel_faults(Op op, int layer) const;
  const DeviceWeight& matrix(Op op, int layer) const;
  const DeviceWeight* bias(Op op, int layer) const;
  model::DType weight_dtype(Op op) const;
  const DeviceWeight& norm_weight(Op op, int layer) const;
  std::uint64_t activation_bytes(std::int64_t rows, std::int64_t cols) const;
  HostTensor download_now(const Region& r, std::int64_t rows, std::int64_t cols);
  void upload(const HostTensor& value, const Region& r);

  model::ModelConfig config_;
  model::Graph graph_;
  FaultSet faults_;  // --inject
  Activations activation_type_;
  std::unique_ptr<Instance> instance_;
  std::unique_ptr<Device> device_;
  std::unique_ptr<Pipelines> pipelines_;
  std::unique_ptr<Stream> stream_;
  std::unique_ptr<DeviceWeights> weights_;
  std::unique_ptr<Kernels> kernels_;
  std::unique_ptr<KvCache> kv_;
  std::unique_ptr<Arena> activations_;             // slots, tokens and the RoPE tables, sized for capacity_ rows
  std::array<Region, model::kOpCount> slots_{};    // per op [capacity_, width]; overwritten per layer
  std::array<int, model::kOpCount> slot_layer_{};  // the layer each slot's content belongs to
  std::array<std::vector<std::string>, model::kOpCount> ran_;  // variants that ran, per op
  Region tokens_;                                              // [capacity_] int32
  // [capacity_, head_dim / 2] (cos, sin) each: the chunk's distinct RoPE tables (more than one only
  // where --inject moves a layer's positions or base), and the one each layer uses.
  std::vector<Region> rope_tables_;
  std::vector<std::size_t> rope_table_of_;
  int capacity_ = 0;
  model::ChunkInfo chunk_;
  bool in_chunk_ = false;
  int n_past_ = 0;
};

Engine::Engine(const model::Model& m, const VulkanEngineOptions& options)
    : config_(m.config()),
      graph_(m.config()),
      faults_(parse_faults(options.inject, m.config().n_layers)),
      activation_type_(options.f16 ? Activations::f16 : Activations::f32),
      rope_table_of_(static_cast<std::size_t>(m.config().n_layers)) {
  // At most one table per layer that a fault moves, plus the model's.
  std::size_t tables = 1;
  for (int l = 0; l < config_.n_layers; ++l) tables += moves_rope_table(faults_, l) ? 1 : 0;
  rope_tables_.resize(tables);
  InstanceOptions instance_options;
  instance_options.validation = options.validation.value_or(validation_requested_by_environment());
  instance_options.print_messages = options.print_validation;
  instance_ = std::make_unique<Instance>(instance_options);
  device_ = std::make_unique<Device>(*instance_, select_device(devices_of(*instance_), options.device),
                                     DeviceNeeds{options.f16});
  pipelines_ = std::make_unique<Pipelines>(*device_, activation_type_);
  stream_ = std::make_unique<Stream>(*device_);
  kernels_ = std::make_unique<Kernels>(*device_, *pipelines_, parse_kernel_overrides(options.kernels));
  if (config_.head_dim > kernels_->max_head_dim())
    throw UsageError(fmt::format("{}: head_dim {}: the Vulkan attention kernel handles head_dim up to {}",
                                 m.path().string(), config_.head_dim, kernels_->max_head_dim()));
  weights_ = std::make_unique<DeviceWeights>(*device_, *stream_, m, options.f16);
  kv_ = std::make_unique<KvCache>(*device_, config_.n_layers, config_.kv_dim(), gpu::activation_bytes(activation_type_),
                                  options.max_context);
  activations_ = std::make_unique<Arena>(*device_, "activations", MemoryKind::device_local, kActivationBlock);
  slot_layer_.fill(-2);
}

// The matrix a gemm op multiplies by (asserted for other ops) and its bias, if any.
const DeviceWeight& Engine::matrix(Op op, int l) const {
  switch (op) {
    case Op::q_proj: return weights_->get(WeightKind::wq, l);
    case Op::k_proj: return weights_->get(WeightKind::wk, l);
    case Op::v_proj: return weights_->get(WeightKind::wv, l);
    case Op::o_proj: return weights_->get(WeightKind::wo, l);
    case Op::ffn_gate: return weights_->get(WeightKind::ffn_gate, l);
    case Op::ffn_up: return weights_->get(WeightKind::ffn_up, l);
    case Op::ffn_down: return weights_->get(WeightKind::ffn_down, l);
    case Op::embed: return weights_->get(WeightKind::token_embd);
    case Op::logits: return weights_->get(config_.tied_output ? WeightKind::token_embd : WeightKind::output);
    case Op::attn_norm:
    case Op::rope_q:
    case Op::rope_k:
    case Op::attn:
    case Op::attn_residual:
    case Op::ffn_norm:
    case Op::ffn_act:
    case Op::ffn_residual:
    case Op::final_norm: break;
  }
  TAPDIFF_ASSERT(false, "{} has no weight matrix", model::op_name(op));
  return weights_->get(WeightKind::token_embd);
}

const DeviceWeight* Engine::bias(Op op, int l) const {
  if (op == Op::q_proj) return weights_->find(WeightKind::bq, l);
  if (op == Op::k_proj) return weights_->find(WeightKind::bk, l);
  if (op == Op::v_proj) return weights_->find(WeightKind::bv, l);
  return nullptr;
}

model::DType Engine::weight_dtype(Op op) const {
  const model::OpClass cls = model::op_class(op);
  if (cls != model::OpClass::gemm && cls != model::OpClass::embedding) return model::DType::f32;
  return matrix(op, op == Op::logits || op == Op::embed ? -1 : 0).dtype;
}

// The variants that ran for the op so far; before any ran, every variant it may run here, with the
// faults planted in it.
std::string Engine::kernel(Op op) const {
  std::vector<std::string> names = ran_[static_cast<std::size_t>(op)];
  if (names.empty()) {
    const std::vector<std::string> planned = kernels_->planned(model::op_class(op), weight_dtype(op));
    names = planned;
    for (int l = 0; l < config_.n_layers; ++l)
      for (const std::string& p : planned)
        if (const std::string faulty = p + faults_.label(op, l);
            faulty != p && std::find(names.begin(), names.end(), faulty) == names.end())
          names.push_back(faulty);
  }
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

void Engine::reset() {
  stream_->abandon();
  n_past_ = 0;
  in_chunk_ = false;
}

void Engine::reserve_rows(int rows) {
  if (rows <= capacity_) return;
  const int capacity = std::max(rows, 2 * capacity_);
  activations_->release();  // nothing in flight: the stream is idle between chunks
  capacity_ = 0;            // until every slot is allocated again
  for (Op op : model::kAllOps) {
    const std::uint64_t bytes = activation_bytes(capacity, graph_.width(op));
    slots_[static_cast<std::size_t>(op)] =
        activations_->allocate(bytes, fmt::format("the {} activations ({} rows)", model::op_name(op), capacity));
  }
  tokens_ = activations_->allocate(static_cast<std::uint64_t>(capacity) * 4, "the chunk's tokens");
  for (Region& table : rope_tables_)
    table = activations_->allocate(
        static_cast<std::uint64_t>(capacity) * static_cast<std::uint64_t>(config_.head_dim) * 4, "the RoPE table");
  capacity_ = capacity;
}

void Engine::begin_chunk(std::span<const std::int32_t> tokens, const model::ChunkInfo& chunk) {
  if (chunk.first_pos != n_past_)
    throw UsageError(fmt::format("chunk {} starts at position {}, but the KV cache holds {} rows", chunk.index,
                                 chunk.first_pos, n_past_));
  TAPDIFF_ASSERT(static_cast<int>(tokens.size()) == chunk.rows && chunk.rows > 0, "chunk of {} rows given {} tokens",
                 chunk.rows, tokens.size());
  for (std::int32_t t : tokens)
    if (t < 0 || t >= config_.vocab)
      throw UsageError(fmt::format("token id {} is outside the model's vocabulary of {} tokens", t, config_.vocab));
  stream_->abandon();  // only after an error left a chunk half recorded
  reserve_rows(chunk.rows);
  kv_->reserve(*stream_, chunk.first_pos + chunk.rows);
  chunk_ = chunk;
  in_chunk_ = true;
  slot_layer_.fill(-2);
  stream_->upload(tokens.data(), tokens.size_bytes(), tokens_);
  upload_rope_tables();
}

// One table per distinct (first position, base) among the layers: without --inject, the model's.
void Engine::upload_rope_tables() {
  std::vector<RopeTablePlan> plans;
  for (int l = 0; l < config_.n_layers; ++l) {
    const RopeTablePlan plan = rope_table_plan(faults_, l, chunk_, config_.rope_base);
    const auto at = static_cast<std::size_t>(std::find(plans.begin(), plans.end(), plan) - plans.begin());
    rope_table_of_[static_cast<std::size_t>(l)] = at;
    if (at < plans.size()) continue;
    TAPDIFF_ASSERT(at < rope_tables_.size(), "RoPE table {} of {}", at, rope_tables_.size());
    plans.push_back(plan);
    const std::vector<float> table = rope_table(plan.first_pos, chunk_.rows, config_.head_dim, plan.base);
    stream_->upload(table.data(), table.size() * sizeof(float), rope_tables_[at]);
  }
}

std::uint64_t Engine::activation_bytes(std::int64_t rows, std::int64_t cols) const {
  return static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(cols) * gpu::activation_bytes(activation_type_);
}

Region Engine::slot(Op op) const {
  return slots_[static_cast<std::size_t>(op)].sub(0, activation_bytes(chunk_.rows, graph_.width(op)));
}

Region Engine::input(const TensorId& id) const {
  const int held = slot_layer_[static_cast<std::size_t>(id.op)];
  TAPDIFF_ASSERT(held == id.layer, "{} asked, but the slot holds layer {}", model::to_string(id), held);
  return slot(id.op);
}

void Engine::execute(const model::Step& step, const model::Deliver& deliver) {
  TAPDIFF_ASSERT(in_chunk_, "execute {} outside a chunk", model::to_string(step.output()));
  const Region out = slot(step.op);
  const std::string variant = run(step, out) + faults_.label(step.op, step.layer);
  slot_layer_[static_cast<std::size_t>(step.op)] = step.layer;
  std::vector<std::string>& ran = ran_[static_cast<std::size_t>(step.op)];
  if (std::find(ran.begin(), ran.end(), variant) == ran.end()) ran.push_back(variant);
  if (!deliver) return;
  const std::int64_t rows = chunk_.rows, cols = graph_.width(step.op);
  stream_->download(out, [deliver, rows, cols, a = activation_type_](const std::byte* data) {
    deliver(activations_to_host(data, rows, cols, a));
  });
}

const DeviceWeight& Engine::norm_weight(Op op, int layer) const {
  if (op == Op::attn_norm) return weights_->get(WeightKind::attn_norm, layer);
  if (op == Op::ffn_norm) return weights_->get(WeightKind::ffn_norm, layer);
  return weights_->get(WeightKind::output_norm);
}

// The kFault* bits (kernels.h) that --inject plants in the kernel of a step.
std::uint32_t Engine::kernel_faults(Op op, int layer) const {
  const auto bit = [&](Fault f, std::uint32_t b) { return faults_.active(f, layer) ? b : 0u; };
  if (op == Op::attn_norm || op == Op::ffn_norm) return bit(Fault::rmsnorm_eps, kFaultNormEpsOutsideSqrt);
  if (op == Op::ffn_down) return bit(Fault::gemm_f16_accum, kFaultGemmF16Accumulate);
  if (op == Op::ffn_act) return bit(Fault::silu_approx, kFaultSiluHardSigmoid);
  if (op == Op::attn)
    return bit(Fault::mask_kv_offset, kFaultAttentionChunkMask) | bit(Fault::gqa_head_map, kFaultAttentionHeadModulo) |
           bit(Fault::softmax_no_max, kFaultAttentionNoMax);
  return 0;
}

std::string Engine::run(const model::Step& step, const Region& out) {
  const auto in = [&](std::size_t i) { return input(step.inputs[i]); };
  const int rows = chunk_.rows;
  const float eps = static_cast<float>(config_.norm_eps);
  const std::uint32_t faults = kernel_faults(step.op, step.layer);
  switch (step.op) {
    case Op::embed: return kernels_->embed(*stream_, matrix(Op::embed, -1), tokens_, out, rows);
    case Op::attn_norm:
    case Op::ffn_norm:
    case Op::final_norm:
      return kernels_->rms_norm(*stream_, in(0), norm_weight(step.op, step.layer), eps, out, rows, faults);
    case Op::q_proj:
    case Op::k_proj:
    case Op::v_proj:
    case Op::o_proj:
    case Op::ffn_gate:
    case Op::ffn_up:
    case Op::ffn_down:
    case Op::logits:
      return kernels_->matmul(*stream_, in(0), matrix(step.op, step.layer), bias(step.op, step.layer), out, rows,
                              faults);
    case Op::rope_q:
    case Op::rope_k: {
      const model::RopeStyle style =
          faults_.active(Fault::rope_pairing, step.layer) ? flipped(config_.rope_style) : config_.rope_style;
      return kernels_->rope(*stream_, in(0), rope_tables_[rope_table_of_[static_cast<std::size_t>(step.layer)]], out,
                            rows, graph_.width(step.op), config_.head_dim, style);
    }
    case Op::attn: return attend(step.layer, out);
    case Op::attn_residual:
    case Op::ffn_residual: return kernels_->add(*stream_, in(0), in(1), out, std::int64_t{rows} * config_.dim);
    case Op::ffn_act:
      return kernels_->silu_mul(*stream_, in(0), in(1), out, std::int64_t{rows} * config_.ffn_dim, faults);
  }
  return {};
}

// Appends the chunk's K (after RoPE) and V rows to the layer's cache at [first_pos, first_pos + T),
// then attends over cache rows [0, first_pos + T).
std::string Engine::attend(int layer, const Region& out) {
  const int first = chunk_.first_pos, rows = chunk_.rows;
  stream_->copy(input({Op::rope_k, layer}), kv_->rows(layer, false, first, rows));
  stream_->copy(input({Op::v_proj, layer}), kv_->rows(layer, true, first, rows));
  const AttentionShape shape{
      rows, first, config_.n_heads, config_.n_kv_heads, config_.head_dim, config_.sliding_window};
  // attn-scale (--inject): 1/d where 1/sqrt(d) is due.
  const auto d = static_cast<double>(config_.head_dim);
  const auto scale = static_cast<float>(1.0 / (faults_.active(Fault::attn_scale, layer) ? d : std::sqrt(d)));
  const std::string variant =
      kernels_->attention(*stream_, shape, scale, input({Op::rope_q, layer}), kv_->rows(layer, false, 0, first + rows),
                          kv_->rows(layer, true, 0, first + rows), out, kernel_faults(Op::attn, layer));
  if (faults_.active(Fault::kv_stale_chunk, layer) && !chunk_.decode) {
    // kv-stale-chunk (--inject): the prefill chunk's rows are zeroed once its own attention has read
    // them, as if the cache write had never persisted.
    const std::vector<std::byte> zeros(activation_bytes(rows, config_.kv_dim()));
    for (bool value : {false, true}) stream_->upload(zeros.data(), zeros.size(), kv_->rows(layer, value, first, rows));
  }
  return variant;
}

void Engine::end_chunk() {
  TAPDIFF_ASSERT(in_chunk_, "end_chunk without begin_chunk");
  in_chunk_ = false;
  stream_->flush();
  n_past_ = chunk_.first_pos + chunk_.rows;
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

HostTensor Engine::read(const TensorId& id) { return download_now(input(id), chunk_.rows, graph_.width(id.op)); }

void Engine::write(const TensorId& id, const HostTensor& value) {
  if (chunk_.rows == 0) throw UsageError(fmt::format("write {}: no chunk has begun", model::to_string(id)));
  if (value.rows() != chunk_.rows || value.cols() != graph_.width(id.op))
    throw UsageError(fmt::format("write {}: expected [{}, {}] for the current chunk, found [{}, {}]",
                                 model::to_string(id), chunk_.rows, graph_.width(id.op), value.rows(), value.cols()));
  slot_layer_[static_cast<std::size_t>(id.op)] = id.layer;
  upload(value, slot(id.op));
}

HostTensor Engine::read_kv(int layer, bool value) {
  TAPDIFF_ASSERT(layer >= 0 && layer < config_.n_layers, "KV cache of layer {}", layer);
  if (n_past_ == 0) return HostTensor(model::Scalar::f32, 0, config_.kv_dim());
  return download_now(kv_->rows(layer, value, 0, n_past_), n_past_, config_.kv_dim());
}

void Engine::write_kv(int layer, bool value, const HostTensor& rows) {
  TAPDIFF_ASSERT(layer >= 0 && layer < config_.n_layers, "KV cache of layer {}", layer);
  if (rows.cols() != config_.kv_dim())
    throw UsageError(
        fmt::format("write_kv layer {}: expected rows of {} values, found {}", layer, config_.kv_dim(), rows.cols()));
  const int n = static_cast<int>(rows.rows());
  kv_->reserve(*stream_, n);
  if (n > 0) upload(rows, kv_->rows(layer, value, 0, n));
  n_past_ = n;
}

}  // namespace

std::unique_ptr<VulkanEngine> make_vulkan_engine(const model::Model& model, const VulkanEngineOptions& options) {
  return std::make_unique<Engine>(model, options);
}

std::vector<DeviceInfo> list_devices() {
  const Instance instance(InstanceOptions{});
  return devices_of(instance);
}

}  // namespace tapdiff::gpu
