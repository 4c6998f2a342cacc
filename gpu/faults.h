#pragma once
// The fault catalogue of `--inject`: realistic bugs planted in the real code paths of the Vulkan
// engine (a specialization constant that takes a branch in a shader, or the engine's bookkeeping
// of RoPE positions, the KV cache and the attention scale), never an edit of the outputs. Each
// entry says what goes wrong, the bug it mirrors, the op(s) where it first shows and the
// diagnosis tapdiff should give, so `tapdiff faults`, the tests and docs/faults.md share one list.
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/kernel_id.h"
#include "gpu/rope_table.h"
#include "model/block.h"
#include "model/diagnosis_code.h"
#include "model/engine.h"
#include "model/graph.h"
#include "model/ops.h"

namespace tapdiff::gpu {

enum class Fault : std::uint8_t {
  rope_off_by_one,
  rope_chunk_reset,
  rope_pairing,
  rope_base,
  mask_kv_offset,
  kv_stale_chunk,
  gqa_head_map,
  softmax_no_max,
  gemm_f16_accum,
  rmsnorm_eps,
  silu_approx,
  attn_scale,
  decode_position,
  batch_seq_leak,
  attn_scale_int,
  router_softmax_axis,
  topk_off_by_one,
  weights_unnormalised,
  expert_index,
  shared_gate_dropped,
  selection_bias_sign,
  group_limit_ignored,
  sinks_dropped,
  swiglu_unclamped,
  chunk_boundary,
  mla_rope_channels,
  mscale_missing,
  indexer_relu_dropped,
};
inline constexpr int kFaultCount = 28;

struct FaultInfo {
  Fault fault;
  std::string_view name;       // as --inject spells it: "rope-off-by-one"
  std::string_view effect;     // what goes wrong
  std::string_view mirrors;    // the real-world bug it stands for
  std::vector<model::Op> ops;  // where it first shows, in graph order (the first is the first to differ)
  model::OpClass op_class;     // the class of those ops
  std::optional<model::DiagnosisCode> diagnosis;  // the code bisect/judge/diagnosis.h should give, where one applies
};

// Every fault, in the order of the Fault enum.
std::span<const FaultInfo> fault_catalogue();
const FaultInfo& fault_info(Fault fault);

// Faults planted per layer: a fault named alone applies at every layer.
class FaultSet {
 public:
  bool active(Fault fault, int layer) const;
  bool planted(Fault fault) const;  // active at some layer
  bool empty() const;
  // Each fault active at `layer` that shows first in `op` (fault_info's ops), as --inject named it
  // (with its layer, or none for every layer): the faults of the op's KernelId. Empty if none.
  std::vector<PlantedFault> planted_in(model::Op op, int layer) const;

 private:
  friend FaultSet parse_faults(std::string_view spec, int n_layers);

  std::array<bool, kFaultCount> every_layer_{};
  std::array<std::vector<int>, kFaultCount> layers_;
};

// The specialization bits (kFault*, kernels.h) that plant the faults active at `layer` in the kernel
// of op: the faults that live in a shader's branch and show first in that op.
std::uint32_t shader_fault_bits(const FaultSet& faults, model::Op op, int layer);

// The attention scale attn-scale, attn-scale-int or mscale-missing plants at the layer (1/head_dim,
// 1 / int(sqrt(head_dim)) in integer arithmetic: 0 for any head_dim > 1, or 1/sqrt(head_dim));
// nullopt where none is.
std::optional<float> planted_attention_scale(const FaultSet& faults, int layer, int head_dim);

// The pairing RoPE rotates at the layer: the model's, or the other one where rope-pairing is planted.
model::RopeStyle planted_rope_style(const FaultSet& faults, const model::ModelConfig& config, int layer);

// "NAME[@LAYER][,NAME[@LAYER]...]"; "" plants nothing. UsageError for an unknown name (listing the
// valid ones), a malformed item, or a layer outside [0, n_layers).
FaultSet parse_faults(std::string_view spec, int n_layers);

// UsageError for a planted fault that this model would never run: none of its ops is in the
// model's graph at a layer it is planted at (rmsnorm-eps in a block without pre-norms, a RoPE fault
// at a SmolLM3 layer without RoPE), or its code path is not the model's
// (silu-approx in a model whose activation is not silu, weights-unnormalised in a mixture that
// does not renormalise). A fault that changes nothing must not pass for a clean run.
void require_faults_fit(const FaultSet& faults, const model::Graph& graph, const model::ModelConfig& config);

// The first position, the base and the scaling (the sliding layers' own or not) of the RoPE table a
// layer uses in a chunk, after the faults that live in the table (rope-off-by-one,
// rope-chunk-reset, rope-base, decode-position).
struct RopeTablePlan {
  // The layer's head (model::head_dim; latent attention's keys: their shared part), the pairs of
  // q's no-RoPE channels passing first in latent attention
  RopeRowLayout row;
  int first_pos = 0;
  double base = 0;
  bool sliding_rope = false;  // model::uses_sliding_rope
  bool still = false;         // a layer that does not rotate (model::uses_rope false): its q only scaled
  bool query = false;         // q's, with the query temperature (model::query_frequencies)
  friend bool operator==(const RopeTablePlan&, const RopeTablePlan&) = default;
};
// q's (query) or k's: where latent attention rotates the keys' shared part alone (head_dim its
// rope_dim) and each q head's channels from rope_first_channel.
RopeTablePlan rope_table_plan(const FaultSet& faults, const model::ModelConfig& config, int layer,
                              const model::ChunkInfo& chunk, bool query);
// The first channel of a head that RoPE rotates: latent attention's q's after its no-RoPE ones
// (the leading ones where mla-rope-channels is planted), else 0.
int rope_first_channel(const FaultSet& faults, const model::ModelConfig& config, int layer, bool query);
// Whether any of those faults, or mla-rope-channels, is planted at the layer (its plan may differ
// from the model's).
bool moves_rope_table(const FaultSet& faults, int layer);

}  // namespace tapdiff::gpu
