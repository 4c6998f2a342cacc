#pragma once
// The kernel variants of each op class and how each is recorded: pipeline, bindings, push
// constants and grid. gpu/kernel_choice.h chooses the variant per call from the device's profile,
// the chunk's rows and the user's overrides; it is returned as a Kernel (gpu/kernel_id.h) so the
// engine can report which kernel ran.
//
// Variants (f32 arithmetic; DTYPE: the weights as stored on the device). With f16 activations
// (--dtype f16: shaders.h Activations) each name carries ".f16" after the variant, as in
// "matmul-tiled-64x64.f16/q8_0".
//   embedding   embed-gather/DTYPE
//               layer-input/DTYPE                  ple_input: after the product of its projection and
//                                                  its norm, the table's slice added (layer_input.comp)
//   norm        rms_norm-tree                      one workgroup per row
//               layer_norm-tree                    a LayerNorm model's: one workgroup per row, never fused
//               add+rms_norm-tree                  a norm whose input is a residual add's output,
//                                                  with that add (norm=auto|fused): the residual
//                                                  step runs both, the norm step records nothing
//   gemm        matmul-coop2-128x128.f16/f16       f16 mode, rows > 1, f16 weights, K and N multiples of
//                                                  8, tensor cores through VK_NV_cooperative_matrix2
//                                                  (gpu/matmul_coop2.h): where the device offers it
//                                                  (Device::cooperative_matrix2); other products run:
//               matmul-coop-128x128.f16/DTYPE      f16 mode, rows > 1, tensor cores: where the device
//                                                  offers VK_NV_cooperative_matrix (Device) in subgroups of 32
//               matmul-coop-128x128-k16.f16/DTYPE  the same with K slices of 16 (forced only)
//               matmul-tiled-64x64/DTYPE           rows > 1 otherwise (needs 256-invocation workgroups)
//               matvec-subgroup/DTYPE              rows == 1, subgroupAdd in compute shaders: 4 subgroups
//                                                  per workgroup, 1, 2 or 4 of them per output (K split
//                                                  where N alone gives fewer than 8192 subgroups)
//               matvec-shared/DTYPE                rows == 1, shared-memory tree otherwise
//   rope        rope-table                         host cos/sin table
//   attention   attention-coop2-64xBC.f16          f16 mode, passes of >= 16 rows per sequence, no fault
//                                                  planted: tensor cores through
//                                                  VK_NV_cooperative_matrix2 with its reductions
//                                                  (gpu/attention_coop2.h; BC = 16 keys per tile at
//                                                  head_dim > 64, else 32), head_dim a multiple of 16
//                                                  <= 128, where the device offers it; otherwise:
//               attention-coop-64x32.f16           f16 mode, passes of >= 16 rows per sequence, tensor
//                                                  cores: the flash kernel's tiles with both products
//                                                  on 16x16x16 matrices (64 pairs, 32 keys); where the
//                                                  GEMM's cooperative matrices run, with subgroup
//                                                  arithmetic, shuffle and vote and f16 subnormals
//                                                  kept; head_dim a multiple of 16 <= 128
//               attention-flash-32xBC              one workgroup per 32 (row, head) pairs of the heads
//                                                  of a GQA group, online softmax over tiles of BC = 32
//                                                  keys (16 where shared memory is short); head_dim a
//                                                  multiple of 4, at most 128
//               attention-flash-split-32xBC        the same for passes of < 16 rows per sequence (short
//                                                  chunks; decode steps where the next cannot run)
//                                                  over more than 32 positions: each
//                                                  workgroup takes a split of the keys, a second kernel
//                                                  merges the splits' softmax sums
//               attention-decode-split             decode steps (one row per sequence) over more than 32
//                                                  positions, where subgroup arithmetic runs: a
//                                                  workgroup of 32 per (row, K/V head, split of the
//                                                  keys), a key per invocation, the softmax in subgroup
//                                                  reductions; attention_combine merges the splits
//               attention-two-pass                 where flash cannot run (or forced): one workgroup per
//                                                  (row, head), every score computed twice
//   residual    add                                where no norm comes next (or norm=apart)
//               add+rms_norm-tree                  with the norm after it, as above
//   activation  silu_mul, gelu_mul, gelu_tanh_mul  the model's gated activation (gated_act.comp), or
//               relu2, gelu_tanh, ...              its plain one (the same shader, up unread)
//   q/k/v_proj  + clip                             after the product, where the model clips them (OLMo)
//   logits      + scale_softcap                    after the product, where the model scales or
//                                                  soft-caps its logits (Granite, Gemma 2)
//   routing     moe-route                          moe_ids and moe_weights: an invocation per row
//               index-topk                         idx_scores and idx_ids (DeepSeek-V3.2's indexer): a
//                                                  workgroup per row scores its positions, finds the
//                                                  k-th best bit by bit and keeps them in one ordered
//                                                  pass; the attention over them is attention-two-pass
//   experts     matmul-experts-tiled-64x64/DTYPE   moe_out, rows > 1: the (token, chosen expert) pairs
//                                                  grouped by expert (moe_plan.comp), each tile of up
//                                                  to 64 pairs of one expert through matmul_tiled.comp
//                                                  (EXPERTS) for gate, up and down; then the gated
//                                                  activation and the weighted sum of each token's
//                                                  pairs (+moe-sum)
//               matvec-experts-subgroup/DTYPE      one row (decode), or where the tiled kernel cannot
//               (matvec-experts-shared/DTYPE)      run: per pair by matvec.comp (EXPERTS)
//
// llama.cpp's precision (--dtype llama.cpp, f32 activations; formats/llama_cpp_precision.h): each
// product's input rounded to its weight's dot-product type first (round_dot.comp, named
// "+llama.cpp-DOT" after the product's variant; Q4_1 and Q5_1 products then add the Q8_1 sums'
// excess, q8_1_correction.comp), the norms as ggml's (rms_norm-ggml: squares summed in double), the
// attention two-pass with q and the probabilities rounded to f16 (attention-two-pass+llama.cpp-f16-kv;
// the engine rounds the KV cache rows to f16 as it appends them; q scaled first where llama.cpp's
// graph scales it, AttentionShape::scale_q_first), GELU from llama.cpp's f16 table
// (gelu_tanh_mul+llama.cpp-f16-gelu-table), every residual add apart.
//
// Faults (--inject, gpu/faults.h): rms_norm, matmul, attention and gated_act take a set of the
// kFault* bits below as specialization constant 2 of their shader (shaders/faults.glsl); 0 builds
// the clean pipeline, exactly as without faults.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "formats/llama_cpp_precision.h"
#include "gpu/device_weights.h"
#include "gpu/kernel_choice.h"
#include "gpu/memory.h"
#include "gpu/shaders.h"
#include "gpu/shaders/push_constants.h"
#include "model/config.h"
#include "model/ops.h"
#include "model/xielu.h"

namespace tapdiff::gpu {

class Pipelines;
class Stream;

// Bits of specialization constant 2, as shaders/faults.glsl names them.
inline constexpr std::uint32_t kFaultNormEpsOutsideSqrt = 1;       // rms_norm: x / (sqrt(mean(x^2)) + eps)
inline constexpr std::uint32_t kFaultGemmF16Accumulate = 1;        // matmul: f16 running sums (coop, coop2: f16 sums)
inline constexpr std::uint32_t kFaultSiluHardSigmoid = 1;          // gated_act: sigmoid ~ clamp(0.5 + x/4, 0, 1)
inline constexpr std::uint32_t kFaultAttentionChunkMask = 1;       // attention: keys of the row's own chunk only
inline constexpr std::uint32_t kFaultAttentionHeadModulo = 2;      // attention: KV head h % kv_heads
inline constexpr std::uint32_t kFaultAttentionNoMax = 4;           // attention: exp(s) without the row max
inline constexpr std::uint32_t kFaultAttentionBatchLeak = 8;       // attention: + the previous sequence's last rows
inline constexpr std::uint32_t kFaultTopkSkipsBest = 1;            // moe_topk: the experts ranked 2 .. k+1
inline constexpr std::uint32_t kFaultRouterTokenSoftmax = 1;       // moe_weights: softmax over the tokens
inline constexpr std::uint32_t kFaultRouterUnnormalised = 2;       // moe_weights: no renormalisation
inline constexpr std::uint32_t kFaultExpertNext = 2;               // matvec EXPERTS: expert e + 1's weights
inline constexpr std::uint32_t kFaultSharedGateDropped = 1;        // sigmoid_gate: the gate left out
inline constexpr std::uint32_t kFaultSelectionBiasSign = 1;        // moe_scores: the selection bias subtracted
inline constexpr std::uint32_t kFaultGroupLimitIgnored = 2;        // moe_topk: every expert group eligible
inline constexpr std::uint32_t kFaultAttentionSinksDropped = 16;   // attention, its combine: no sink term
inline constexpr std::uint32_t kFaultAttentionChunkBoundary = 32;  // attention: a chunk sees the key before it too
inline constexpr std::uint32_t kFaultSwigluUnclamped = 4;          // gated_act (moe_out): the clamped SwiGLU unclamped
inline constexpr std::uint32_t kFaultIndexerReluDropped = 1;       // index_topk: each head's q.k without the ReLU

class Kernels {
 public:
  // Records the variants `choice` picks, with pipelines of its profile's activations.
  Kernels(KernelChoice choice, Pipelines& pipelines);
  const KernelChoice& choice() const { return choice_; }

  // Each records one op (its barrier included) and returns the kernel that ran; `faults` is a set
  // of the kFault* bits of the op's kernel (0: the clean kernel).
  // tokens [rows] int32 -> out [rows, dim] = table rows * scale
  Kernel embed(Stream& s, const DeviceWeight& table, const Region& tokens, float scale, const Region& out, int rows);
  // A layer's per-layer input from x [rows, dim], its normed projection of the embedding: out =
  // (x + the tokens' rows of table, columns [first_col, first_col + dim), times table_scale) times
  // sum_scale (layer_input.comp); x may be out.
  Kernel layer_input(Stream& s, const DeviceWeight& table, const Region& tokens, const Region& x, int first_col,
                     float table_scale, float sum_scale, const Region& out, int rows, int dim);
  // x [rows, dim], w f32 [dim] -> out [rows, dim]
  Kernel rms_norm(Stream& s, const Region& x, const DeviceWeight& w, float eps, const Region& out, int rows,
                  std::uint32_t faults);
  // x [rows, dim], w and bias (where not null) f32 [dim] -> out [rows, dim], LayerNorm
  Kernel layer_norm(Stream& s, const Region& x, const DeviceWeight& w, const DeviceWeight* bias, float eps,
                    const Region& out, int rows, std::uint32_t faults);
  // sum = a + scale * b, then out = rms_norm(sum) as rms_norm() computes it, in one dispatch (the
  // same bits as add() then rms_norm()); all [rows, w.cols]
  Kernel add_rms_norm(Stream& s, const Region& a, const Region& b, float scale, const DeviceWeight& w, float eps,
                      const Region& sum, const Region& out, int rows, std::uint32_t faults);
  // llama.cpp's precision: out = x [rows, width] rounded to `type` as ggml converts a product's
  // input (round_dot.comp); for q8_1 also excess [rows, width / 32], what the stored block sums
  // exceed the rounded values' by (q8_1_correction's input).
  void round_to_dot_type(Stream& s, formats::DotType type, const Region& x, const Region& out, const Region& excess,
                         int rows, int width);
  // out [rows, w.rows] += the Q8_1 sums' excess [rows, w.cols / 32] times w's block minimums (Q4_1, Q5_1)
  void q8_1_correction(Stream& s, const Region& excess, const DeviceWeight& w, const Region& out, int rows);
  // x [rows, w.cols] -> out [rows, w.rows], + bias [w.rows] when given (f32)
  Kernel matmul(Stream& s, const Region& x, const DeviceWeight& w, const DeviceWeight* bias, const Region& out,
                int rows, std::uint32_t faults);
  // x [rows, width] rotated per head by the table [rows, head_dim / 2] of (cos, sin) -> out; the
  // rotary_dim channels of a head from rotary_first rotate, the others pass
  Kernel rope(Stream& s, const Region& x, const Region& table, const Region& out, int rows, int width, int head_dim,
              int rotary_dim, int rotary_first, model::RopeStyle style);
  // q [rows, heads * hd], k/v cache [cache rows, kv_heads * hd], row table [rows] of uint32 x 4
  // (cache row of the sequence's position 0, position, first position of the row's chunk, 0),
  // sinks [heads] (f32) where shape.sinks, else null, kept [rows, shape.kept] (the positions each
  // row sees) where shape.kept > 0, else null -> out [rows, heads * hd]; scratch: at least
  // attention_scratch_bytes(shape) bytes.
  Kernel attention(Stream& s, const AttentionShape& shape, float scale, const Region& q, const Region& k,
                   const Region& v, const Region& row_table, const Region* sinks, const Region* kept,
                   const Region& scratch, const Region& out, std::uint32_t faults);
  // DeepSeek-V3.2's indexer (shaders/index_topk.comp): q [rows, heads * head_dim] (idx_rope_q), its
  // key cache [cache rows, head_dim], w [rows, heads] (idx_weights), the attention's row table ->
  // out: the kept positions [rows, top_k] (idx_ids), or with `scores` their scores descending and
  // the best one not kept [rows, top_k + 1] (idx_scores); scratch: index_scratch_bytes.
  Kernel index_topk(Stream& s, const Region& q, const Region& keys, const Region& w, const Region& row_table,
                    const Region& scratch, const Region& out, int rows, int positions,
                    const model::SparseIndexer& indexer, bool scores, std::uint32_t faults);
  static std::uint64_t index_scratch_bytes(int rows, int positions);
  // The scratch memory attention() needs for a pass of this shape (0 for most).
  std::uint64_t attention_scratch_bytes(const AttentionShape& shape) const;
  // dst = src (a multiple of 4 bytes) as a compute dispatch (between dispatches, cheaper than a
  // transfer)
  void copy(Stream& s, const Region& src, const Region& dst);
  // out [rows, heads * width]: each head's channels from a, then b, then 0 (shaders/head_columns.comp;
  // b unread where push.b_cols is 0)
  Kernel head_columns(Stream& s, const Region& a, const Region& b, const ColumnsPush& push, const Region& out);
  // out = a + scale * b, and out = act(gate) * up with the model's activation, over n values
  Kernel add(Stream& s, const Region& a, const Region& b, float scale, const Region& out, std::int64_t n);
  // In llama.cpp's precision GELU (the tanh form) comes from `gelu_table`, llama.cpp's f16 table
  // widened to f32 [65536] (formats::llama_cpp_gelu_table; gelu_llama_cpp.comp).
  Kernel gated_activation(Stream& s, const Region& gate, const Region& up, const Region& out, std::int64_t n,
                          std::uint32_t faults, const Region* gelu_table = nullptr);
  // out = act(x) over n values: a plain FFN's activation (xielu with the layer's scalars; GELU
  // from llama.cpp's table under its precision)
  Kernel activation(Stream& s, const Region& x, const Region& out, std::int64_t n, std::uint32_t faults,
                    const model::Xielu& xielu = {}, const Region* gelu_table = nullptr);
  // x = x * scale, then cap * tanh(x / cap) where cap > 0, in place over n values
  Kernel scale_softcap(Stream& s, const Region& x, float scale, float cap, std::int64_t n);
  // x clamped to [-clip, clip], in place over n values (scale_softcap.comp)
  Kernel clip(Stream& s, const Region& x, float clip, std::int64_t n);

  // The mixture of experts (kernels_moe.cpp). logits [rows, experts] -> scores [rows, experts]:
  // the choice scores, sigmoid or softmax as experts.score says, + bias (f32 [experts]; null: none).
  Kernel moe_scores(Stream& s, const Region& logits, const DeviceWeight* bias, const Region& scores, int rows,
                    const model::Experts& experts, std::uint32_t faults);
  // scores [rows, experts] -> ids [rows, k]: the k largest ascending by id (within the best
  // groups where experts.groups > 1), as exact small integers of the activation type.
  Kernel moe_topk(Stream& s, const Region& scores, const Region& ids, int rows, const model::Experts& experts,
                  std::uint32_t faults);
  // logits [rows, experts], ids [rows, k] -> weights [rows, k]: the scores taken at ids,
  // renormalised and scaled as experts says, then each times its expert's of `scales` (f32
  // [experts]) where given.
  Kernel moe_weights(Stream& s, const Region& logits, const Region& ids, const DeviceWeight* scales,
                     const Region& weights, int rows, const model::Experts& experts, std::uint32_t faults);
  // The pairs of ids [pairs] grouped by expert in tiles (moe_plan.comp), for expert_matmul. Null
  // where moe_out runs per pair (one row, experts=matvec, or no tiled kernel on this device).
  struct ExpertPlan {
    Region tiles, sorted;  // (1 + 3 * expert_plan_tiles) and `pairs` uint32
  };
  std::optional<ExpertPlan> moe_plan(Stream& s, const Region& ids, const ExpertPlan& space, int rows, int k,
                                     int experts);
  // The most tiles a plan of `pairs` pairs of `experts` experts can have.
  static std::uint64_t expert_plan_tiles(std::uint64_t pairs, int experts);
  // Per (token, expert) pair p of `pairs` = rows * k: out [pairs, n] = x_p W_e^T with e = ids[p]
  // and W_e rows [e n, (e + 1) n) of the stacked w; x_p is row p / k of x where shared_input (each
  // token's row, for gate and up), else row p (down). With a plan, in its tiles; else per pair.
  Kernel expert_matmul(Stream& s, const Region& x, const DeviceWeight& w, int n, const Region& ids, int k,
                       bool shared_input, const Region& out, int pairs, const std::optional<ExpertPlan>& plan,
                       std::uint32_t faults);
  // out [rows, dim] = sum over j of weights[t, j] * y[t k + j] (y [rows * k, dim])
  // (every weight 1 where `unweighted`: they scaled the experts' inputs)
  Kernel moe_sum(Stream& s, const Region& y, const Region& weights, const Region& out, int rows, int dim, int k,
                 bool unweighted);
  // out [rows * k, dim]: pair p's row weights[p] * x[p / k] (x [rows, dim]): Llama 4's experts' inputs
  Kernel expert_input(Stream& s, const Region& x, const Region& weights, const Region& out, int rows, int dim, int k);
  // y [pairs, dim] += bias[ids[p] * dim ...] (bias [experts * dim]), in place: the experts' biases
  Kernel expert_bias(Stream& s, const Region& ids, const DeviceWeight& bias, const Region& y, int pairs, int dim,
                     int experts);
  // out [rows, dim] = sigmoid(logits[t]) * y[t] (logits [rows, 1]): a shared expert's gate (moe_sum.comp)
  Kernel sigmoid_gate(Stream& s, const Region& y, const Region& logits, const Region& out, int rows, int dim,
                      std::uint32_t faults);

  // matmul_coop.comp's probe build (bench/coop_ceiling.cpp, never the engine's): the grid and
  // bindings of matmul-coop-128x128 for x [rows, w.cols] -> out [rows, w.rows], its slice loop
  // without the parts that `probe` takes away (0: none; 1-4, the shader's PROBE_* levels).
  // EnvironmentError, saying why, where the cooperative-matrix GEMM cannot run.
  void matmul_coop_probe(Stream& s, const Region& x, const DeviceWeight& w, const Region& out, int rows,
                         std::uint32_t probe);

 private:
  struct Grid {
    std::uint32_t x = 0, y = 0;
  };
  Grid fold(std::uint64_t groups) const;                    // groups -> (x, y) within maxComputeWorkGroupCount
  std::uint64_t elementwise_groups(std::uint32_t n) const;  // add, gated_act: workgroups for n values
  // One group per output tile of a [rows, cols] matrix: x across the columns, y down the rows.
  static Grid tile_grid(std::uint32_t rows, std::uint32_t cols, std::uint32_t tile_rows, std::uint32_t tile_cols);
  // A tile GEMM's grid for Y [rows, cols], laid out as the variant says.
  static Grid gemm_grid(const GemmVariant& v, std::uint32_t rows, std::uint32_t cols);
  // Specialization constants: 0 dtype, 1 the workgroup size, 2 faults (only when not 0 or when
  // `more` follow), then `more` from constant 3 on.
  void dispatch(Stream& s, Shader shader, std::uint32_t dtype, std::initializer_list<Region> bindings, const void* push,
                std::uint32_t push_bytes, Grid grid, std::uint32_t faults = 0,
                std::initializer_list<std::uint32_t> more = {});
  using Gemm = KernelChoice::Gemm;
  using AttentionPlan = KernelChoice::AttentionPlan;
  Kernel named(std::string_view variant, std::optional<model::DType> weights = std::nullopt) const {
    return choice_.named(variant, weights);
  }

  KernelChoice choice_;
  Pipelines* pipelines_;
  std::uint32_t wg_;  // choice_.workgroup_size()
};

}  // namespace tapdiff::gpu
