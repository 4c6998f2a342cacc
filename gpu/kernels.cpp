#include "gpu/kernels.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <span>
#include <utility>

#include <fmt/core.h>

#include "formats/llama_cpp_precision.h"
#include "gpu/attention_coop2.h"
#include "gpu/dispatch_math.h"
#include "gpu/kernel_shapes.h"
#include "gpu/pipelines.h"
#include "gpu/shaders/push_constants.h"
#include "gpu/stream.h"
#include "model/errors.h"

namespace tapdiff::gpu {
namespace {

// The split-KV partials of a pass: (m, l, sums[head_dim]) f32 per row, head and split.
std::uint64_t partial_bytes(const AttentionShape& a, std::uint32_t splits) {
  return static_cast<std::uint64_t>(a.rows) * static_cast<std::uint64_t>(a.heads) * splits *
         (static_cast<std::uint64_t>(a.head_dim) + 2) * 4;
}

}  // namespace

Kernels::Kernels(KernelChoice choice, Pipelines& pipelines)
    : choice_(std::move(choice)), pipelines_(&pipelines), wg_(choice_.workgroup_size()) {
  TAPDIFF_ASSERT(pipelines.activations() == choice_.profile().activations, "pipelines of other activations");
}

Kernels::Grid Kernels::gemm_grid(const GemmVariant& v, std::uint32_t rows, std::uint32_t cols) {
  const Grid tiles = tile_grid(rows, cols, v.tile_rows, v.tile_cols);
  return v.rows_along_x ? Grid{tiles.y, tiles.x} : tiles;
}

Kernels::Grid Kernels::fold(std::uint64_t groups) const {
  const std::uint64_t max_x = choice_.profile().info.max_workgroup_count[0];
  const std::uint64_t x = std::min(groups, max_x);
  const std::uint64_t y = x == 0 ? 0 : ceil_div(groups, x);
  TAPDIFF_ASSERT(y <= choice_.profile().info.max_workgroup_count[1], "{} workgroups exceed the device's grid", groups);
  return {static_cast<std::uint32_t>(x), static_cast<std::uint32_t>(y)};
}

Kernels::Grid Kernels::tile_grid(std::uint32_t rows, std::uint32_t cols, std::uint32_t tile_rows,
                                 std::uint32_t tile_cols) {
  return {static_cast<std::uint32_t>(ceil_div(cols, tile_cols)), static_cast<std::uint32_t>(ceil_div(rows, tile_rows))};
}

void Kernels::dispatch(Stream& s, Shader shader, std::uint32_t dtype, std::initializer_list<Region> bindings,
                       const void* push, std::uint32_t push_bytes, Grid grid, std::uint32_t faults,
                       std::initializer_list<std::uint32_t> more) {
  if (grid.x == 0 || grid.y == 0) return;
  const std::span<const Region> all(bindings.begin(), bindings.size());
  const ShaderCode& code = shader_code(shader, pipelines_->activations());
  TAPDIFF_ASSERT(all.size() == code.bindings, "{} bindings for {}", all.size(), code.name);
  s.order(all.first(all.size() - code.outputs), all.last(code.outputs));  // the outputs are the last bindings
  std::array<std::uint32_t, 5> spec = {dtype, choice_.local_size(shader), faults};
  TAPDIFF_ASSERT(more.size() <= spec.size() - 3, "{} more specialization constants", more.size());
  std::copy(more.begin(), more.end(), spec.begin() + 3);
  // Constant 2 only with a fault or more constants: the clean pipelines of the kernels without
  // more constants are made exactly as a build without faults would make them.
  const std::size_t constants = faults == 0 && more.size() == 0 ? 2 : 3 + more.size();
  const Pipeline& p = pipelines_->get(shader, std::span<const std::uint32_t>(spec).first(constants));
  const VkCommandBuffer cmd = s.cmd();
  const VkDescriptorSet set = s.descriptor_sets().allocate(p.set_layout, all);
  std::array<std::byte, kPushConstantBytes> data{};
  TAPDIFF_ASSERT(push_bytes <= data.size(), "{} bytes of push constants", push_bytes);
  std::memcpy(data.data(), push, push_bytes);
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
  vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0, nullptr);
  vkCmdPushConstants(cmd, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushConstantBytes, data.data());
  vkCmdDispatch(cmd, grid.x, grid.y, 1);
}

Kernel Kernels::embed(Stream& s, const DeviceWeight& table, const Region& tokens, float scale, const Region& out,
                      int rows) {
  const EmbedPush push{u32(rows), u32(table.cols), table.row_bytes, scale};
  dispatch(s, Shader::embed, dtype_code(table.dtype), {table.region, tokens, out}, &push, sizeof push,
           fold(ceil_div(static_cast<std::uint64_t>(rows) * push.dim, wg_)));
  return named("embed-gather", table.dtype);
}

Kernel Kernels::layer_input(Stream& s, const DeviceWeight& table, const Region& tokens, const Region& x, int first_col,
                            float table_scale, float sum_scale, const Region& out, int rows, int dim) {
  TAPDIFF_ASSERT(first_col >= 0 && first_col + dim <= table.cols, "columns [{}, {}) of {}", first_col, first_col + dim,
                 table.name);
  const LayerInputPush push{u32(rows), u32(dim), table.row_bytes, u32(first_col), table_scale, sum_scale};
  dispatch(s, Shader::layer_input, dtype_code(table.dtype), {table.region, tokens, x, out}, &push, sizeof push,
           fold(ceil_div(static_cast<std::uint64_t>(rows) * push.dim, wg_)));
  return named("layer-input", table.dtype);
}

Kernel Kernels::rms_norm(Stream& s, const Region& x, const DeviceWeight& w, float eps, const Region& out, int rows,
                         std::uint32_t faults) {
  TAPDIFF_ASSERT(w.dtype == model::DType::f32, "norm weight {} as {}", w.name, model::dtype_name(w.dtype));
  const NormPush push{u32(rows), u32(w.cols), eps, 1.0f};
  if (choice_.llama_cpp()) {
    TAPDIFF_ASSERT(faults == 0, "a fault planted in rms_norm-ggml");
    dispatch(s, Shader::rms_norm_ggml, 0, {x, w.region, out}, &push, sizeof push,
             fold(static_cast<std::uint64_t>(rows)));
    return named("rms_norm-ggml");
  }
  dispatch(s, Shader::rms_norm, 0, {x, w.region, out}, &push, sizeof push, fold(static_cast<std::uint64_t>(rows)),
           faults);
  return named("rms_norm-tree");
}

Kernel Kernels::layer_norm(Stream& s, const Region& x, const DeviceWeight& w, const DeviceWeight* bias, float eps,
                           const Region& out, int rows, std::uint32_t faults) {
  TAPDIFF_ASSERT(w.dtype == model::DType::f32 && (bias == nullptr || bias->dtype == model::DType::f32),
                 "norm weight {} as {}", w.name, model::dtype_name(w.dtype));
  const LayerNormPush push{u32(rows), u32(w.cols), eps, bias != nullptr ? 1u : 0u};
  // Without a bias the weight stands in for the unused binding (never read).
  if (choice_.llama_cpp()) {
    TAPDIFF_ASSERT(faults == 0, "a fault planted in layer_norm-ggml");
    dispatch(s, Shader::layer_norm_ggml, 0, {x, w.region, bias != nullptr ? bias->region : w.region, out}, &push,
             sizeof push, fold(static_cast<std::uint64_t>(rows)));
    return named("layer_norm-ggml");
  }
  dispatch(s, Shader::layer_norm, 0, {x, w.region, bias != nullptr ? bias->region : w.region, out}, &push, sizeof push,
           fold(static_cast<std::uint64_t>(rows)), faults);
  return named("layer_norm-tree");
}

Kernel Kernels::add_rms_norm(Stream& s, const Region& a, const Region& b, float scale, const DeviceWeight& w, float eps,
                             const Region& sum, const Region& out, int rows, std::uint32_t faults) {
  TAPDIFF_ASSERT(w.dtype == model::DType::f32, "norm weight {} as {}", w.name, model::dtype_name(w.dtype));
  const NormPush push{u32(rows), u32(w.cols), eps, scale};
  dispatch(s, Shader::add_rms_norm, 0, {a, b, w.region, sum, out}, &push, sizeof push,
           fold(static_cast<std::uint64_t>(rows)), faults);
  return named("add+rms_norm-tree");
}

Kernel Kernels::matmul(Stream& s, const Region& x, const DeviceWeight& w, const DeviceWeight* bias, const Region& out,
                       int rows, std::uint32_t faults) {
  TAPDIFF_ASSERT(bias == nullptr || bias->dtype == model::DType::f32, "bias {} as {}", bias->name,
                 model::dtype_name(bias->dtype));
  const MatmulPush push{u32(rows), u32(w.cols), u32(w.rows), w.row_bytes, bias != nullptr ? 1u : 0u, 0, 0, 0};
  // Without a bias the weights stand in for the unused binding (never read).
  const Region& b = bias != nullptr ? bias->region : w.region;
  const std::initializer_list<Region> bindings = {w.region, x, b, out};
  const bool aligned = push.k % 8 == 0 && push.n % 8 == 0 && push.row_bytes % 16 == 0;
  const Gemm gemm = choice_.gemm(rows, push.n, w.dtype, aligned, faults);
  if (gemm == Gemm::matvec) {
    if (choice_.matvec_shader() == Shader::matvec_subgroup) {
      const std::uint32_t split = choice_.matvec_split(push.n, push.k), outputs = choice_.matvec_subgroups() / split;
      dispatch(s, Shader::matvec_subgroup, dtype_code(w.dtype), bindings, &push, sizeof push,
               fold(static_cast<std::uint64_t>(rows) * ceil_div(push.n, outputs)), faults, {outputs, split});
    } else
      dispatch(s, Shader::matvec_shared, dtype_code(w.dtype), bindings, &push, sizeof push,
               fold(static_cast<std::uint64_t>(rows) * push.n), faults);
    return choice_.gemm_kernel(gemm, w.dtype);
  }
  const GemmVariant& v = gemm_variant(gemm);
  Shader shader = v.shader;
  std::uint32_t constant_faults = 0;
  if (faults != 0 && v.faults_by_constant)
    constant_faults = faults;
  else if (faults != 0) {
    TAPDIFF_ASSERT(v.fault_build.has_value(), "a fault planted in {}", v.label());
    shader = *v.fault_build;
  }
  dispatch(s, shader, v.dtype_constant ? dtype_code(w.dtype) : 0, bindings, &push, sizeof push,
           gemm_grid(v, push.rows, push.n), constant_faults);
  return choice_.gemm_kernel(gemm, w.dtype);
}

void Kernels::matmul_coop_probe(Stream& s, const Region& x, const DeviceWeight& w, const Region& out, int rows,
                                std::uint32_t probe) {
  if (!choice_.coop_missing().empty())
    throw EnvironmentError(fmt::format("the cooperative-matrix GEMM: {}", choice_.coop_missing()));
  const MatmulPush push{u32(rows), u32(w.cols), u32(w.rows), w.row_bytes, 0, 0, 0, 0};
  dispatch(s, Shader::matmul_coop_probe, dtype_code(w.dtype), {w.region, x, w.region, out}, &push, sizeof push,
           gemm_grid(gemm_variant(Gemm::coop), push.rows, push.n), 0, {probe});
}

Kernel Kernels::rope(Stream& s, const Region& x, const Region& table, const Region& out, int rows, int width,
                     int head_dim, int rotary_dim, int rotary_first, model::RopeStyle style) {
  const RopePush push{u32(rows),       u32(width),
                      u32(head_dim),   style == model::RopeStyle::rotate_half ? 1u : 0u,
                      u32(rotary_dim), u32(rotary_first)};
  const std::uint32_t pairs_per_invocation = head_dim % 8 == 0 && rotary_dim == head_dim ? 4 : 1;  // rope.comp
  dispatch(s, Shader::rope, 0, {x, table, out}, &push, sizeof push,
           fold(ceil_div(static_cast<std::uint64_t>(rows) * push.width / 2 / pairs_per_invocation, wg_)));
  return named("rope-table");
}

Kernel Kernels::attention(Stream& s, const AttentionShape& a, float scale, const Region& q, const Region& k,
                          const Region& v, const Region& row_table, const Region* sinks, const Region* kept,
                          const Region& scratch, const Region& out, std::uint32_t faults) {
  TAPDIFF_ASSERT(a.head_dim <= choice_.max_head_dim(), "head_dim {} in the attention kernel", a.head_dim);
  TAPDIFF_ASSERT((sinks != nullptr) == a.sinks, "attention sinks {} for a shape {} them", sinks != nullptr,
                 a.sinks ? "with" : "without");
  TAPDIFF_ASSERT((kept != nullptr) == (a.kept > 0), "kept positions {} for a shape of {} kept", kept != nullptr,
                 a.kept);
  const AttentionPlan plan = choice_.attention(a, faults);
  AttentionPush push{u32(a.rows),
                     u32(a.heads),
                     u32(a.heads / a.kv_heads),
                     u32(a.head_dim),
                     u32(a.window),
                     u32(a.heads * a.head_dim),
                     u32(a.kv_heads * a.head_dim),
                     scale,
                     plan.split_keys,
                     plan.splits,
                     a.softcap,
                     1.0f,
                     sinks != nullptr ? 1u : 0u,
                     u32(a.chunk),
                     u32(a.kept)};
  const Region& sink_values = sinks != nullptr ? *sinks : q;  // bound, and unread, where there are none
  if (a.scale_q_first) {
    TAPDIFF_ASSERT(choice_.llama_cpp(), "q scaled first outside llama.cpp's precision");
    push.q_scale = std::exchange(push.scale, 1.0f);
  }
  // attention_flash.comp: tiles of 32 (row, head) pairs of the heads of one GQA group (of one head
  // with gqa-head-map planted, whose heads do not share K/V in groups); attention_decode.comp: one
  // row and such a pack of heads per workgroup.
  const std::uint32_t pack = (faults & kFaultAttentionHeadModulo) != 0 ? 1 : push.group;
  const std::uint64_t units = push.heads / pack;
  const std::uint64_t tiles = ceil_div(static_cast<std::uint64_t>(push.rows) * pack, kFlashRows) * units;
  using Kind = AttentionPlan::Kind;
  switch (plan.kind) {
    case Kind::coop2:
      dispatch(s, Shader::attention_coop2, 0, {q, k, v, row_table, out}, &push, sizeof push,
               fold(ceil_div(static_cast<std::uint64_t>(push.rows) * pack, kCoop2AttentionTile.rows) * units), 0,
               {push.head_dim, coop2_attention_keys(push.head_dim)});
      break;
    case Kind::coop:
      dispatch(s, Shader::attention_coop, 0, {q, k, v, row_table, out}, &push, sizeof push,
               fold(ceil_div(static_cast<std::uint64_t>(push.rows) * pack, kCoopAttentionRows) * units), faults,
               {push.head_dim});
      break;
    case Kind::flash:
      dispatch(s, Shader::attention_flash, 0, {q, k, v, row_table, sink_values, out}, &push, sizeof push, fold(tiles),
               faults, {push.head_dim, choice_.flash_keys()});
      break;
    case Kind::split:
    case Kind::decode: {
      const std::uint64_t bytes = partial_bytes(a, plan.splits);
      TAPDIFF_ASSERT(scratch.size >= bytes, "attention scratch of {} bytes for {}", scratch.size, bytes);
      const Region partial = scratch.sub(0, bytes);
      if (plan.kind == Kind::split)
        dispatch(s, Shader::attention_split, 0, {q, k, v, row_table, partial}, &push, sizeof push,
                 fold(tiles * plan.splits), faults, {push.head_dim, choice_.flash_keys()});
      else
        dispatch(s, Shader::attention_decode, 0, {q, k, v, row_table, partial}, &push, sizeof push,
                 fold(push.rows * units * plan.splits), faults, {push.head_dim, pack});
      const CombinePush combine{push.rows, push.heads, push.head_dim, plan.splits, push.sinks};
      dispatch(s, Shader::attention_combine, 0, {partial, sinks != nullptr ? *sinks : partial, out}, &combine,
               sizeof combine, fold(static_cast<std::uint64_t>(push.rows) * push.heads),
               faults & kFaultAttentionSinksDropped);
      break;
    }
    case Kind::two_pass:
      dispatch(s, choice_.llama_cpp() ? Shader::attention_llama_cpp : Shader::attention, 0,
               {q, k, v, row_table, sink_values, kept != nullptr ? *kept : q, out}, &push, sizeof push,
               fold(static_cast<std::uint64_t>(a.rows) * push.heads), faults);
      break;
  }
  return choice_.attention_kernel(plan.kind, a.head_dim);
}

Kernel Kernels::index_topk(Stream& s, const Region& q, const Region& keys, const Region& w, const Region& row_table,
                           const Region& scratch, const Region& out, int rows, int positions,
                           const model::SparseIndexer& indexer, bool scores, std::uint32_t faults) {
  if (indexer.top_k > kMaxKeptPositions)
    throw UsageError(fmt::format("an indexer keeping {} positions: the Vulkan indexer kernel keeps at most {}",
                                 indexer.top_k, kMaxKeptPositions));
  TAPDIFF_ASSERT(scratch.size >= index_scratch_bytes(rows, positions), "indexer scratch of {} bytes", scratch.size);
  const IndexPush push{u32(rows),
                       u32(indexer.heads),
                       u32(indexer.head_dim),
                       u32(indexer.top_k),
                       u32(positions),
                       static_cast<float>(1 / std::sqrt(static_cast<double>(indexer.heads))),
                       static_cast<float>(1 / std::sqrt(static_cast<double>(indexer.head_dim)))};
  dispatch(s, scores ? Shader::index_scores : Shader::index_topk, 0,
           {q, keys, w, row_table, scratch.sub(0, index_scratch_bytes(rows, positions)), out}, &push, sizeof push,
           fold(static_cast<std::uint64_t>(rows)), faults);
  return named("index-topk");
}

std::uint64_t Kernels::index_scratch_bytes(int rows, int positions) {
  return static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(positions) * sizeof(float);
}

std::uint64_t Kernels::attention_scratch_bytes(const AttentionShape& a) const {
  const AttentionPlan plan = choice_.attention(a);
  return plan.kind == AttentionPlan::Kind::split || plan.kind == AttentionPlan::Kind::decode
             ? partial_bytes(a, plan.splits)
             : 0;
}

void Kernels::round_to_dot_type(Stream& s, formats::DotType type, const Region& x, const Region& out,
                                const Region& excess, int rows, int width) {
  TAPDIFF_ASSERT(choice_.llama_cpp() && type != formats::DotType::f32, "round_dot to {}", formats::dot_type_name(type));
  const std::uint32_t block = type == formats::DotType::q8_k                                    ? 256
                              : type == formats::DotType::f16 || type == formats::DotType::bf16 ? 1
                                                                                                : 32;
  TAPDIFF_ASSERT(width % block == 0, "rows of {} values are no whole blocks of {}", width, block);
  const std::uint64_t values = static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(width);
  const RoundDotPush push{u32(static_cast<std::int64_t>(values / block)), static_cast<std::uint32_t>(type)};
  dispatch(s, Shader::round_dot, 0, {x, out, excess}, &push, sizeof push, fold(ceil_div(push.units, wg_)));
}

void Kernels::q8_1_correction(Stream& s, const Region& excess, const DeviceWeight& w, const Region& out, int rows) {
  TAPDIFF_ASSERT(w.dtype == model::DType::q4_1 || w.dtype == model::DType::q5_1, "{}: a Q8_1 correction of {} weights",
                 w.name, model::dtype_name(w.dtype));
  const Q81CorrectionPush push{u32(rows), u32(w.rows), u32(w.cols / 32), w.row_bytes,
                               static_cast<std::uint32_t>(model::block_bytes(w.dtype))};
  dispatch(s, Shader::q8_1_correction, 0, {excess, w.region, out}, &push, sizeof push,
           fold(ceil_div(static_cast<std::uint64_t>(push.rows) * push.n, wg_)));
}

Kernel Kernels::head_columns(Stream& s, const Region& a, const Region& b, const ColumnsPush& push, const Region& out) {
  dispatch(s, Shader::head_columns, 0, {a, b, out}, &push, sizeof push,
           fold(ceil_div(static_cast<std::uint64_t>(push.rows) * push.heads * push.width, wg_)));
  return named("head-columns");
}

void Kernels::copy(Stream& s, const Region& src, const Region& dst) {
  TAPDIFF_ASSERT(src.size % 4 == 0 && dst.size >= src.size, "copy of {} bytes into {}", src.size, dst.size);
  const CountPush push{u32(static_cast<std::int64_t>(src.size / 4))};
  dispatch(s, Shader::copy, 0, {src, dst.sub(0, src.size)}, &push, sizeof push, fold(ceil_div(push.n, wg_)));
}

std::uint64_t Kernels::elementwise_groups(std::uint32_t n) const {
  // elementwise.glsl: kWide values per invocation, 8 with f16 activations, 4 with f32
  const std::uint32_t wide = pipelines_->activations() == Activations::f16 ? 8 : 4;
  return ceil_div(n % wide == 0 ? n / wide : n, wg_);
}

Kernel Kernels::add(Stream& s, const Region& a, const Region& b, float scale, const Region& out, std::int64_t n) {
  const AddPush push{u32(n), scale};
  dispatch(s, Shader::add, 0, {a, b, out}, &push, sizeof push, fold(elementwise_groups(push.n)));
  return named("add");
}

Kernel Kernels::gated_activation(Stream& s, const Region& gate, const Region& up, const Region& out, std::int64_t n,
                                 std::uint32_t faults, const Region* gelu_table) {
  if (choice_.gelu_by_table()) {
    TAPDIFF_ASSERT(gelu_table != nullptr && gelu_table->size >= 65536 * sizeof(float) && faults == 0,
                   "llama.cpp's GELU without its table, or with a fault");
    const GeluTablePush push{u32(n), 1};
    dispatch(s, Shader::gelu_llama_cpp, 0, {gate, up, *gelu_table, out}, &push, sizeof push,
             fold(ceil_div(push.n, wg_)));
  } else {
    ActivationPush push{};
    push.n = u32(n), push.activation = static_cast<std::uint32_t>(choice_.activation()), push.gated = 1;
    push.alpha = static_cast<float>(choice_.swiglu().alpha);
    push.limit = static_cast<float>(choice_.swiglu().limit);
    dispatch(s, Shader::gated_act, 0, {gate, up, out}, &push, sizeof push, fold(elementwise_groups(push.n)), faults);
  }
  return choice_.activation_kernel();
}

Kernel Kernels::activation(Stream& s, const Region& x, const Region& out, std::int64_t n, std::uint32_t faults,
                           const model::Xielu& xielu, const Region* gelu_table) {
  if (choice_.gelu_by_table()) {
    TAPDIFF_ASSERT(gelu_table != nullptr && gelu_table->size >= 65536 * sizeof(float) && faults == 0,
                   "llama.cpp's GELU without its table, or with a fault");
    const GeluTablePush push{u32(n), 0};
    dispatch(s, Shader::gelu_llama_cpp, 0, {x, x, *gelu_table, out}, &push, sizeof push, fold(ceil_div(push.n, wg_)));
    return choice_.activation_kernel();
  }
  ActivationPush push{};
  push.n = u32(n), push.activation = static_cast<std::uint32_t>(choice_.activation()), push.gated = 0;
  push.alpha_p = static_cast<float>(xielu.alpha_p), push.alpha_n = static_cast<float>(xielu.alpha_n);
  push.beta = static_cast<float>(xielu.beta), push.eps = static_cast<float>(xielu.eps);
  dispatch(s, Shader::gated_act, 0, {x, x, out}, &push, sizeof push, fold(elementwise_groups(push.n)), faults);
  return choice_.activation_kernel();
}

Kernel Kernels::scale_softcap(Stream& s, const Region& x, float scale, float cap, std::int64_t n) {
  const ScaleSoftcapPush push{u32(n), scale, cap, 0.0f};
  dispatch(s, Shader::scale_softcap, 0, {x}, &push, sizeof push, fold(ceil_div(static_cast<std::uint64_t>(n), wg_)));
  return named("scale_softcap");
}

Kernel Kernels::clip(Stream& s, const Region& x, float clip, std::int64_t n) {
  const ScaleSoftcapPush push{u32(n), 1.0f, 0.0f, clip};
  dispatch(s, Shader::scale_softcap, 0, {x}, &push, sizeof push, fold(ceil_div(static_cast<std::uint64_t>(n), wg_)));
  return named("clip");
}

}  // namespace tapdiff::gpu
