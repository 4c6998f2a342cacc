#include "gpu/faults.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <utility>

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "gpu/kernels.h"
#include "model/comma_list.h"
#include "model/errors.h"

namespace tapdiff::gpu {
namespace {

using model::Op;
using model::OpClass;

constexpr double kWrongBaseFactor = 100;  // rope-base: 1e4 read as 1e6

// In the order of the Fault enum.
const std::array<FaultInfo, kFaultCount> kCatalogue = {{
    {Fault::rope_off_by_one,
     "rope-off-by-one",
     "RoPE rotates row t by the angle of position t + 1",
     "positions counted from 1, or n_past incremented before the rotation instead of after",
     {Op::rope_q, Op::rope_k},
     OpClass::rope,
     std::nullopt},
    {Fault::rope_chunk_reset,
     "rope-chunk-reset",
     "positions restart at 0 in every prefill chunk after the first (decode steps are right)",
     "chunked prefill passing the position within the chunk instead of within the sequence",
     {Op::rope_q, Op::rope_k},
     OpClass::rope,
     model::DiagnosisCode::chunk_start},
    {Fault::rope_pairing,
     "rope-pairing",
     "RoPE rotates rotate-half pairs (i, i + d/2) where the model needs interleaved pairs (2i, 2i + 1), or the "
     "reverse",
     "a checkpoint converted between Meta and Hugging Face layouts without permuting wq/wk",
     {Op::rope_q, Op::rope_k},
     OpClass::rope,
     model::DiagnosisCode::position_zero_exact},
    {Fault::rope_base,
     "rope-base",
     "RoPE angles use base x 100 (1e6 where the model says 1e4)",
     "rope_theta read from the wrong config key, or a default that does not fit the model",
     {Op::rope_q, Op::rope_k},
     OpClass::rope,
     model::DiagnosisCode::grows_with_position},
    {Fault::mask_kv_offset,
     "mask-kv-offset",
     "the causal mask is built for the chunk alone: a row attends to its own chunk's keys only",
     "a causal mask of [T, T] where it must be [T, n_past + T] (the KV offset forgotten)",
     {Op::attn},
     OpClass::attention,
     model::DiagnosisCode::chunk_start},
    {Fault::kv_stale_chunk,
     "kv-stale-chunk",
     "a prefill chunk's K/V rows are left as zeros in the cache after its attention",
     "a KV-cache write that goes to a scratch buffer, is skipped, or is overwritten before the next chunk",
     {Op::attn},
     OpClass::attention,
     model::DiagnosisCode::chunk_start},
    {Fault::gqa_head_map,
     "gqa-head-map",
     "query head h reads KV head h % n_kv_heads instead of h / (n_heads / n_kv_heads)",
     "grouped-query attention indexing KV heads round-robin instead of in blocks",
     {Op::attn},
     OpClass::attention,
     model::DiagnosisCode::some_heads},
    {Fault::softmax_no_max,
     "softmax-no-max",
     "softmax exponentiates the scores without subtracting the row max",
     "a naive softmax without the max trick: exp overflows (inf/inf = NaN) once a score passes ~88 in f32",
     {Op::attn},
     OpClass::attention,
     model::DiagnosisCode::nonfinite},
    {Fault::gemm_f16_accum,
     "gemm-f16-accum",
     "ffn_down accumulates its dot products in f16 (every partial sum rounded)",
     "an f16 GEMM path with half accumulators (f16 compute type on tensor cores) on the matrix with the longest K",
     {Op::ffn_down},
     OpClass::gemm,
     std::nullopt},
    {Fault::rmsnorm_eps,
     "rmsnorm-eps",
     "RMS norm divides by sqrt(mean(x^2)) + eps instead of sqrt(mean(x^2) + eps)",
     "LayerNorm-style epsilon placement carried over to RMSNorm",
     {Op::attn_norm, Op::ffn_norm},
     OpClass::norm,
     std::nullopt},
    {Fault::silu_approx,
     "silu-approx",
     "SiLU uses the hard sigmoid clamp(0.5 + x/4, 0, 1)",
     "a fast activation approximation that does not hold outside a small range",
     {Op::ffn_act},
     OpClass::activation,
     std::nullopt},
    {Fault::attn_scale,
     "attn-scale",
     "scores are scaled by 1/head_dim instead of 1/sqrt(head_dim)",
     "the muP scale 1/d used in a model trained with 1/sqrt(d), or sqrt applied twice",
     {Op::attn},
     OpClass::attention,
     model::DiagnosisCode::position_zero_exact},
    {Fault::decode_position,
     "decode-position",
     "decode steps rotate at position n_past - 1 instead of n_past",
     "the decode loop passing the last cached position instead of the new token's",
     {Op::rope_q, Op::rope_k},
     OpClass::rope,
     model::DiagnosisCode::decode_only},
    {Fault::batch_seq_leak,
     "batch-seq-leak",
     "in a ragged batch, a sequence's attention also sees the last 4 cache rows of the sequence before it in the "
     "pass (a single sequence is unaffected)",
     "a packed KV cache where a sequence's first visible row is computed a few rows too early, into its neighbour",
     {Op::attn},
     OpClass::attention,
     model::DiagnosisCode::some_sequences},
    {Fault::attn_scale_int,
     "attn-scale-int",
     "the score scale is 1 / int(sqrt(head_dim)) in integer arithmetic: 0, so every score is 0 and attention "
     "averages the values uniformly",
     "an integer division in the softmax scale (1 / (int)sqrt(d)), or a scale that is never set and stays 0",
     {Op::attn},
     OpClass::attention,
     model::DiagnosisCode::attention_uniform},
    {Fault::router_softmax_axis,
     "router-softmax-axis",
     "the chosen experts' weights take the softmax of each expert's logits over the pass's tokens instead of over the "
     "experts",
     "softmax(router_logits, dim=0) where dim=-1 was meant",
     {Op::moe_weights},
     OpClass::routing,
     std::nullopt},
    {Fault::topk_off_by_one,
     "topk-off-by-one",
     "the router's top-k starts one place late: the experts ranked 2 to k+1 run, the best one never",
     "a top-k slice argsort(-logits)[1:k+1] where [0:k] was meant",
     {Op::moe_ids},
     OpClass::routing,
     model::DiagnosisCode::routing_flip},
    {Fault::weights_unnormalised,
     "weights-unnormalised",
     "the chosen experts' weights are not renormalised to sum 1",
     "norm_topk_prob (Qwen3-MoE) or Mixtral's renormalisation dropped: each token's expert output shrinks",
     {Op::moe_weights},
     OpClass::routing,
     std::nullopt},
    {Fault::expert_index,
     "expert-index",
     "the chosen expert e runs with the weights of expert e+1 (the last with the first's)",
     "an expert's offset into the stacked weights computed from a 1-based id",
     {Op::moe_out},
     OpClass::experts,
     std::nullopt},
    {Fault::shared_gate_dropped,
     "shared-gate-dropped",
     "the shared expert's output is added without its sigmoid gate",
     "Qwen2-MoE's shared_expert_gate left out of a port: every token gets the whole shared expert",
     {Op::moe_shared},
     OpClass::experts,
     std::nullopt},
    {Fault::selection_bias_sign,
     "selection-bias-sign",
     "the router's selection bias is subtracted from the scores the choice is made on",
     "e_score_correction_bias applied with the wrong sign in a DeepSeek-V3-style (or ERNIE 4.5 MoE) router",
     {Op::moe_scores},
     OpClass::routing,
     std::nullopt},
    {Fault::group_limit_ignored,
     "group-limit-ignored",
     "the top-k takes any expert, not only those of the best topk_group groups",
     "n_group / topk_group dropped from a port of DeepSeek-V3's noaux_tc routing",
     {Op::moe_ids},
     OpClass::routing,
     model::DiagnosisCode::routing_flip},
    {Fault::sinks_dropped,
     "sinks-dropped",
     "each head's attention sink is left out of its softmax: the real keys' weights sum to 1",
     "gpt-oss's learned sinks (s_aux) dropped by an attention kernel that has no place for them",
     {Op::attn},
     OpClass::attention,
     std::nullopt},
    {Fault::swiglu_unclamped,
     "swiglu-unclamped",
     "the experts' clamped SwiGLU runs without its clamps (the gate's above swiglu_limit, up's on both sides)",
     "swiglu_limit left out of a port of gpt-oss's experts: their outliers pass unclamped",
     {Op::moe_out},
     OpClass::experts,
     std::nullopt},
    {Fault::chunk_boundary,
     "chunk-boundary-off-by-one",
     "a chunked layer's query also sees the last key of the chunk before its own",
     "a chunked-attention mask (Llama 4's attention_chunk_size) whose chunk starts one position early",
     {Op::attn},
     OpClass::attention,
     std::nullopt},
    {Fault::mla_rope_channels,
     "mla-rope-channels",
     "latent attention's q heads rotate their leading qk_rope_head_dim channels, not the trailing ones after "
     "the no-RoPE part",
     "a port of DeepSeek's latent attention that reuses a partial-rotary RoPE kernel (which rotates the leading "
     "channels) for q's RoPE part",
     {Op::rope_q},
     OpClass::rope,
     model::DiagnosisCode::position_zero_exact},
    {Fault::mscale_missing,
     "mscale-missing",
     "the scores are scaled by qk_head_dim^-1/2 without YaRN's mscale^2",
     "a port of DeepSeek-V3's attention that leaves out the softmax scale's yarn_get_mscale(factor, "
     "mscale_all_dim)^2",
     {Op::attn},
     OpClass::attention,
     model::DiagnosisCode::position_zero_exact},
    {Fault::indexer_relu_dropped,
     "indexer-relu-dropped",
     "DeepSeek-V3.2's indexer sums each head's weighted q.k without its ReLU: negative scores count, and it keeps "
     "other positions",
     "a port of DeepSeek Sparse Attention's indexer whose fused scoring kernel leaves out the ReLU between the "
     "heads' dot products and their weighted sum",
     {Op::idx_scores, Op::idx_ids},
     OpClass::routing,
     std::nullopt},
}};

// The faults planted through a shader's specialization constant, and its bit.
constexpr std::pair<Fault, std::uint32_t> kShaderBits[] = {
    {Fault::rmsnorm_eps, kFaultNormEpsOutsideSqrt},
    {Fault::gemm_f16_accum, kFaultGemmF16Accumulate},
    {Fault::silu_approx, kFaultSiluHardSigmoid},
    {Fault::topk_off_by_one, kFaultTopkSkipsBest},
    {Fault::router_softmax_axis, kFaultRouterTokenSoftmax},
    {Fault::weights_unnormalised, kFaultRouterUnnormalised},
    {Fault::expert_index, kFaultExpertNext},
    {Fault::shared_gate_dropped, kFaultSharedGateDropped},
    {Fault::selection_bias_sign, kFaultSelectionBiasSign},
    {Fault::group_limit_ignored, kFaultGroupLimitIgnored},
    {Fault::sinks_dropped, kFaultAttentionSinksDropped},
    {Fault::swiglu_unclamped, kFaultSwigluUnclamped},
    {Fault::chunk_boundary, kFaultAttentionChunkBoundary},
    {Fault::mask_kv_offset, kFaultAttentionChunkMask},
    {Fault::gqa_head_map, kFaultAttentionHeadModulo},
    {Fault::softmax_no_max, kFaultAttentionNoMax},
    {Fault::batch_seq_leak, kFaultAttentionBatchLeak},
    {Fault::indexer_relu_dropped, kFaultIndexerReluDropped},
};

std::string valid_names() {
  std::vector<std::string_view> names;
  for (const FaultInfo& f : kCatalogue) names.push_back(f.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

const FaultInfo& find_fault(std::string_view name) {
  for (const FaultInfo& f : kCatalogue)
    if (f.name == name) return f;
  throw UsageError(
      fmt::format("--inject: expected a fault name ({}; see `tapdiff faults`), found '{}'", valid_names(), name));
}

}  // namespace

std::span<const FaultInfo> fault_catalogue() { return kCatalogue; }

const FaultInfo& fault_info(Fault fault) { return kCatalogue[static_cast<std::size_t>(fault)]; }

bool FaultSet::active(Fault fault, int layer) const {
  const auto i = static_cast<std::size_t>(fault);
  return every_layer_[i] || std::find(layers_[i].begin(), layers_[i].end(), layer) != layers_[i].end();
}

bool FaultSet::planted(Fault fault) const {
  const auto i = static_cast<std::size_t>(fault);
  return every_layer_[i] || !layers_[i].empty();
}

bool FaultSet::empty() const {
  for (std::size_t i = 0; i < kFaultCount; ++i)
    if (every_layer_[i] || !layers_[i].empty()) return false;
  return true;
}

std::vector<PlantedFault> FaultSet::planted_in(Op op, int layer) const {
  std::vector<PlantedFault> out;
  for (const FaultInfo& f : kCatalogue) {
    if (!active(f.fault, layer) || std::find(f.ops.begin(), f.ops.end(), op) == f.ops.end()) continue;
    out.push_back({std::string(f.name),
                   every_layer_[static_cast<std::size_t>(f.fault)] ? std::nullopt : std::optional<int>(layer)});
  }
  return out;
}

std::uint32_t shader_fault_bits(const FaultSet& faults, Op op, int layer) {
  std::uint32_t bits = 0;
  for (const auto& [fault, bit] : kShaderBits) {
    const std::vector<Op>& ops = fault_info(fault).ops;
    if (faults.active(fault, layer) && std::find(ops.begin(), ops.end(), op) != ops.end()) bits |= bit;
  }
  return bits;
}

std::optional<float> planted_attention_scale(const FaultSet& faults, int layer, int head_dim) {
  if (faults.active(Fault::attn_scale_int, layer)) return static_cast<float>(1 / static_cast<int>(std::sqrt(head_dim)));
  if (faults.active(Fault::attn_scale, layer)) return static_cast<float>(1.0 / head_dim);
  if (faults.active(Fault::mscale_missing, layer)) return static_cast<float>(1.0 / std::sqrt(head_dim));
  return std::nullopt;
}

model::RopeStyle planted_rope_style(const FaultSet& faults, const model::ModelConfig& config, int layer) {
  return faults.active(Fault::rope_pairing, layer) ? model::flipped(config.rope_style) : config.rope_style;
}

FaultSet parse_faults(std::string_view spec, int n_layers) {
  FaultSet set;
  for (const std::string_view item : model::split_commas(spec)) {
    const std::size_t at = item.find('@');
    const FaultInfo& f = find_fault(item.substr(0, at));
    const auto i = static_cast<std::size_t>(f.fault);
    if (at == std::string_view::npos) {
      set.every_layer_[i] = true;
      continue;
    }
    const std::string_view digits = item.substr(at + 1);
    int layer = -1;
    const auto [rest, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), layer);
    if (ec != std::errc() || rest != digits.data() + digits.size() || digits.empty())
      throw UsageError(fmt::format("--inject: expected NAME or NAME@LAYER, found '{}'", item));
    if (layer < 0 || layer >= n_layers)
      throw UsageError(fmt::format("--inject {}: expected a layer in [0, {}) (the model has {} layers), found {}", item,
                                   n_layers, n_layers, layer));
    set.layers_[i].push_back(layer);
  }
  return set;
}

void require_faults_fit(const FaultSet& faults, const model::Graph& graph, const model::ModelConfig& config) {
  for (const FaultInfo& f : kCatalogue) {
    if (!faults.planted(f.fault)) continue;
    const bool runs = std::any_of(graph.steps().begin(), graph.steps().end(), [&](const model::Step& s) {
      return faults.active(f.fault, s.layer) && std::find(f.ops.begin(), f.ops.end(), s.op) != f.ops.end();
    });
    std::vector<std::string_view> ops;
    for (Op op : f.ops) ops.push_back(model::op_name(op));
    if (!runs)
      throw UsageError(fmt::format(
          "--inject {}: the fault is planted in {}, and this model computes none of them where it is planted", f.name,
          fmt::join(ops, ", ")));
    if (f.fault == Fault::silu_approx && config.block.activation != model::Activation::silu)
      throw UsageError(fmt::format("--inject {}: the fault is planted in silu, and this model's activation is {}",
                                   f.name, model::activation_name(config.block.activation)));
    if (f.fault == Fault::weights_unnormalised && !config.experts.normalize)
      throw UsageError(
          fmt::format("--inject {}: the fault skips the renormalisation of the chosen experts' "
                      "weights, and this model does not renormalise them",
                      f.name));
    if (f.fault == Fault::selection_bias_sign && !config.experts.selection_bias)
      throw UsageError(fmt::format(
          "--inject {}: the fault flips the router's selection bias, and this model's router has none", f.name));
    if (f.fault == Fault::group_limit_ignored && config.experts.groups == 1)
      throw UsageError(fmt::format(
          "--inject {}: the fault drops the limit to the best expert groups, and this model's router has no groups",
          f.name));
    if (f.fault == Fault::sinks_dropped && !config.block.attention_sinks)
      throw UsageError(
          fmt::format("--inject {}: the fault drops the attention sinks, and this model's attention has none", f.name));
    if (f.fault == Fault::swiglu_unclamped && config.block.activation != model::Activation::swiglu_oai)
      throw UsageError(
          fmt::format("--inject {}: the fault is planted in the clamped SwiGLU, and this model's "
                      "activation is {}",
                      f.name, model::activation_name(config.block.activation)));
    if (f.fault == Fault::chunk_boundary && config.attention_chunk == 0)
      throw UsageError(fmt::format(
          "--inject {}: the fault moves the start of a chunked layer's chunks, and this model has no chunked layers",
          f.name));
    if (f.fault == Fault::kv_stale_chunk) {
      bool writes = false;
      for (int l = 0; l < config.n_layers; ++l)
        writes = writes || (faults.active(f.fault, l) && !model::shares_kv(config, l));
      if (!writes)
        throw UsageError(fmt::format(
            "--inject {}: the fault leaves a layer's own cache rows unwritten, and where it is planted this model's "
            "layers attend over an earlier layer's cache",
            f.name));
    }
    if (f.fault == Fault::mla_rope_channels && !config.latent())
      throw UsageError(fmt::format(
          "--inject {}: the fault rotates latent attention's q at the wrong channels, and this model's attention "
          "is not latent",
          f.name));
    if (f.fault == Fault::mscale_missing &&
        (!config.latent() || model::attention_scale(config.block, config.head_dim) ==
                                 1.0 / std::sqrt(static_cast<double>(config.head_dim))))
      throw UsageError(fmt::format(
          "--inject {}: the fault drops latent attention's YaRN mscale from the scores' scale, and this model's "
          "scale has none",
          f.name));
    if (f.fault == Fault::shared_gate_dropped && !config.experts.shared_gate)
      throw UsageError(fmt::format(
          "--inject {}: the fault drops the shared expert's gate, and this model's shared expert has none", f.name));
  }
}

bool moves_rope_table(const FaultSet& faults, int layer) {
  for (Fault f : {Fault::rope_off_by_one, Fault::rope_chunk_reset, Fault::rope_base, Fault::decode_position,
                  Fault::mla_rope_channels})
    if (faults.active(f, layer)) return true;
  return false;
}

int rope_first_channel(const FaultSet& faults, const model::ModelConfig& config, int layer, bool query) {
  return config.latent() && query && !faults.active(Fault::mla_rope_channels, layer) ? config.mla.nope_dim : 0;
}

RopeTablePlan rope_table_plan(const FaultSet& faults, const model::ModelConfig& config, int layer,
                              const model::ChunkInfo& chunk, bool query) {
  const int head_dim = config.latent() && !query ? config.mla.rope_dim : model::head_dim(config, layer);
  RopeTablePlan plan{{head_dim, rope_first_channel(faults, config, layer, query) / 2},
                     chunk.first_pos,
                     model::rope_base(config, layer),
                     model::uses_sliding_rope(config, layer),
                     !model::uses_rope(config, layer),
                     query};
  if (faults.active(Fault::rope_chunk_reset, layer) && chunk.index > 0 && !chunk.decode) plan.first_pos = 0;
  if (faults.active(Fault::decode_position, layer) && chunk.decode) plan.first_pos -= 1;
  if (faults.active(Fault::rope_off_by_one, layer)) plan.first_pos += 1;
  if (faults.active(Fault::rope_base, layer)) plan.base *= kWrongBaseFactor;
  return plan;
}

}  // namespace tapdiff::gpu
