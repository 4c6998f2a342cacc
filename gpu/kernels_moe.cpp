// Kernels' mixture-of-experts ops (kernels.h): the router's choice, the experts' products and
// their weighted sum.
#include <algorithm>

#include <fmt/core.h>

#include "gpu/dispatch_math.h"
#include "gpu/kernel_shapes.h"
#include "gpu/kernels.h"
#include "gpu/shaders/push_constants.h"
#include "model/errors.h"

namespace tapdiff::gpu {

Kernel Kernels::moe_scores(Stream& s, const Region& logits, const DeviceWeight* bias, const Region& scores, int rows,
                           const model::Experts& experts, std::uint32_t faults) {
  RoutePush push{};
  push.rows = u32(rows), push.experts = u32(experts.count), push.has_bias = bias != nullptr ? 1u : 0u;
  push.sigmoid = experts.score == model::RouterScore::sigmoid ? 1u : 0u;
  dispatch(s, Shader::moe_scores, 0, {logits, bias != nullptr ? bias->region : logits, scores}, &push, sizeof push,
           fold(ceil_div(push.rows, wg_)), faults);
  return named("moe-route");
}

Kernel Kernels::moe_topk(Stream& s, const Region& scores, const Region& ids, int rows, const model::Experts& experts,
                         std::uint32_t faults) {
  if (experts.active > kMaxActiveExperts)
    throw UsageError(fmt::format("{} experts per token: the Vulkan router kernel takes at most {}", experts.active,
                                 kMaxActiveExperts));
  if (experts.groups > kMaxExpertGroups)
    throw UsageError(
        fmt::format("{} expert groups: the Vulkan router kernel takes at most {}", experts.groups, kMaxExpertGroups));
  RoutePush push{};
  push.rows = u32(rows), push.experts = u32(experts.count), push.k = u32(experts.active);
  if (experts.groups > 1 && experts.group_best != 1 && experts.group_best != 2)
    throw UsageError(fmt::format(
        "expert groups scored by their {} best: the Vulkan router kernel scores a group by its best one or two",
        experts.group_best));
  push.groups = u32(experts.groups), push.top_groups = u32(experts.top_groups);
  push.group_best = u32(experts.group_best);
  dispatch(s, Shader::moe_topk, 0, {scores, ids}, &push, sizeof push, fold(ceil_div(push.rows, wg_)), faults);
  return named("moe-route");
}

Kernel Kernels::moe_weights(Stream& s, const Region& logits, const Region& ids, const DeviceWeight* scales,
                            const Region& weights, int rows, const model::Experts& experts, std::uint32_t faults) {
  RoutePush push{};
  push.rows = u32(rows), push.experts = u32(experts.count), push.k = u32(experts.active);
  push.normalize = experts.normalize ? 1u : 0u;
  push.sigmoid = experts.score == model::RouterScore::sigmoid ? 1u : 0u;
  push.scale = static_cast<float>(experts.scale);
  push.sparsemixer = experts.sparsemixer ? 1u : 0u;
  push.mixer_eps = static_cast<float>(experts.mixer_eps);
  push.has_scales = scales != nullptr ? 1u : 0u;
  // bound, and unread, where there are none
  dispatch(s, Shader::moe_weights, 0, {logits, ids, scales != nullptr ? scales->region : logits, weights}, &push,
           sizeof push, fold(ceil_div(push.rows, wg_)), faults);
  return named("moe-route");
}

std::uint64_t Kernels::expert_plan_tiles(std::uint64_t pairs, int experts) {
  return ceil_div(pairs, kExpertTile) + std::min<std::uint64_t>(pairs, static_cast<std::uint64_t>(experts));
}

std::optional<Kernels::ExpertPlan> Kernels::moe_plan(Stream& s, const Region& ids, const ExpertPlan& space, int rows,
                                                     int k, int experts) {
  if (!choice_.experts_tiled(rows, experts)) return std::nullopt;
  const std::uint64_t pairs = static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(k);
  const ExpertPlan plan{space.tiles.sub(0, (1 + 3 * expert_plan_tiles(pairs, experts)) * 4),
                        space.sorted.sub(0, pairs * 4)};
  const PlanPush push{u32(static_cast<std::int64_t>(pairs)), u32(experts)};
  dispatch(s, Shader::moe_plan, 0, {ids, plan.tiles, plan.sorted}, &push, sizeof push, {1, 1});
  return plan;
}

Kernel Kernels::expert_matmul(Stream& s, const Region& x, const DeviceWeight& w, int n, const Region& ids, int k,
                              bool shared_input, const Region& out, int pairs, const std::optional<ExpertPlan>& plan,
                              std::uint32_t faults) {
  TAPDIFF_ASSERT(w.rows % n == 0, "stacked experts {} of {} rows, {} per expert", w.name, w.rows, n);
  if (static_cast<std::uint64_t>(w.rows) * w.row_bytes >= (1ull << 32))
    throw UsageError(
        fmt::format("{}: {} bytes of stacked experts: the Vulkan expert kernels address at most 4 GiB "
                    "per projection",
                    w.name, static_cast<std::uint64_t>(w.rows) * w.row_bytes));
  const MatmulPush push{u32(pairs),     u32(w.cols), u32(n), w.row_bytes, 0, u32(k), shared_input ? 1u : 0u,
                        u32(w.rows / n)};
  if (plan) {
    const Grid grid{static_cast<std::uint32_t>(ceil_div(push.n, kExpertTile)),
                    static_cast<std::uint32_t>(expert_plan_tiles(push.rows, static_cast<int>(push.experts)))};
    dispatch(s, Shader::matmul_tiled_experts, dtype_code(w.dtype), {w.region, x, plan->tiles, plan->sorted, out}, &push,
             sizeof push, grid, faults);
    return named("matmul-experts-tiled-64x64", w.dtype);
  }
  const std::initializer_list<Region> bindings = {w.region, x, ids, out};
  if (choice_.matvec_shader() == Shader::matvec_subgroup) {
    const std::uint32_t split = choice_.matvec_split(push.n, push.k), outputs = choice_.matvec_subgroups() / split;
    dispatch(s, Shader::matvec_experts_subgroup, dtype_code(w.dtype), bindings, &push, sizeof push,
             fold(static_cast<std::uint64_t>(pairs) * ceil_div(push.n, outputs)), faults, {outputs, split});
  } else {
    dispatch(s, Shader::matvec_experts_shared, dtype_code(w.dtype), bindings, &push, sizeof push,
             fold(static_cast<std::uint64_t>(pairs) * push.n), faults);
  }
  return named(choice_.expert_matmul_variant(), w.dtype);
}

Kernel Kernels::moe_sum(Stream& s, const Region& y, const Region& weights, const Region& out, int rows, int dim, int k,
                        bool unweighted) {
  const SumPush push{u32(rows), u32(dim), u32(k)};
  dispatch(s, unweighted ? Shader::moe_sum_unweighted : Shader::moe_sum, 0, {y, weights, out}, &push, sizeof push,
           fold(ceil_div(static_cast<std::uint64_t>(rows) * push.dim, wg_)));
  return named(unweighted ? "moe-sum-unweighted" : "moe-sum");
}

Kernel Kernels::expert_input(Stream& s, const Region& x, const Region& weights, const Region& out, int rows, int dim,
                             int k) {
  const SumPush push{u32(rows * k), u32(dim), u32(k)};
  dispatch(s, Shader::expert_input, 0, {x, weights, out}, &push, sizeof push,
           fold(ceil_div(static_cast<std::uint64_t>(push.rows) * push.dim, wg_)));
  return named("expert-input");
}

Kernel Kernels::expert_bias(Stream& s, const Region& ids, const DeviceWeight& bias, const Region& y, int pairs, int dim,
                            int experts) {
  const SumPush push{u32(pairs), u32(dim), u32(experts)};
  dispatch(s, Shader::expert_bias, 0, {ids, bias.region, y}, &push, sizeof push,
           fold(ceil_div(static_cast<std::uint64_t>(pairs) * push.dim, wg_)));
  return named("expert-bias");
}

Kernel Kernels::sigmoid_gate(Stream& s, const Region& y, const Region& logits, const Region& out, int rows, int dim,
                             std::uint32_t faults) {
  const SumPush push{u32(rows), u32(dim), 1};
  dispatch(s, Shader::sigmoid_gate, 0, {y, logits, out}, &push, sizeof push,
           fold(ceil_div(static_cast<std::uint64_t>(rows) * push.dim, wg_)), faults);
  return named("sigmoid-gate");
}

}  // namespace tapdiff::gpu
