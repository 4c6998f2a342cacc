#pragma once
// Which kernel variant runs each op on a device: a pure function of the device's profile
// (gpu/device_profile.h), the mode (f32, f16 or llama.cpp's precision), the model (head_dim, GQA
// group, activation, soft-cap) and the user's --kernels overrides. gpu/kernels.h records the
// variants chosen here; tests/test_kernel_choice.cpp checks the choices on the profiles of
// lavapipe, an H100 and an H200 without a GPU. The variants and when each runs: gpu/kernels.h and
// gpu/README.md.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "formats/llama_cpp_precision.h"
#include "gpu/device_profile.h"
#include "gpu/gemm_variants.h"
#include "gpu/kernel_id.h"
#include "gpu/shaders.h"
#include "model/config.h"
#include "model/dtype.h"
#include "model/ops.h"

namespace tapdiff::gpu {

// What --kernels may force (its keys and values are one table in kernel_choice.cpp):
// "matmul=auto|tiled|coop|coop-k16|coop2|coop2-128x128|coop2-128x256|matvec,matvec=auto|subgroup|shared,
// attention=auto|coop2|coop|flash|two-pass,decode-attention=auto|decode-split|flash-split,
// experts=auto|tiled|matvec,norm=auto|fused|apart"
// (experts: moe_out's products, grouped by expert in tiles or per pair; norm=apart: every residual
// add and norm in a dispatch of its own; decode-attention: the kernel of decode steps over
// more than 32 positions; with auto, attention=two-pass takes them too). matmul=coop2 runs the
// products whose shape it takes (f16 weights, K and N multiples of 8) on matmul-coop2 (its tile
// chosen by the product's size, as auto does; coop2-128x128 and coop2-128x256 force one), the
// others on matmul-coop; each op's kernel name says which ran. attention=coop2 runs attention-coop-64x32
// where a fault is planted (attention-coop2 has no faults).
struct KernelOverrides {
  enum class Matmul : std::uint8_t {
    automatic,
    tiled,
    coop,
    coop_k16,
    coop2,
    coop2_narrow,  // coop2-128x128
    coop2_wide,    // coop2-128x256
    matvec
  } matmul = Matmul::automatic;
  enum class Matvec : std::uint8_t { automatic, subgroup, shared } matvec = Matvec::automatic;
  enum class Attention : std::uint8_t { automatic, coop2, coop, flash, two_pass } attention = Attention::automatic;
  enum class DecodeAttention : std::uint8_t {
    automatic,
    decode_split,
    flash_split
  } decode_attention = DecodeAttention::automatic;
  enum class Norm : std::uint8_t { automatic, fused, apart } norm = Norm::automatic;
  enum class Experts : std::uint8_t { automatic, tiled, matvec } experts = Experts::automatic;
};
// UsageError naming the bad key or value and the choices.
KernelOverrides parse_kernel_overrides(const std::string& text);

// The attention of one pass: `rows` queries, each at its own position over its own sequence's
// cache rows (the row table of Kernels::attention).
struct AttentionShape {
  int rows = 0;
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  int window = 0;      // 0: none
  int sequences = 1;   // of a ragged batch, whose rows these are
  int keys = 0;        // the most positions a row attends over: the largest position + 1
  float softcap = 0;   // scores = softcap * tanh(score / softcap) where > 0 (Gemma 2)
  bool sinks = false;  // a sink logit per head in each softmax's denominator (gpt-oss)
  // llama.cpp's precision, where its graph scales q before the attention (formats::llama_cpp_scales_q_first):
  // q times the scale, then rounded to f16, the scores not scaled again
  bool scale_q_first = false;
  int chunk = 0;  // > 0: a row sees its own chunk of this many positions only (Llama 4's chunked layers)
  int kept = 0;   // > 0: a row sees only the positions its indexer kept, this many at most (attention-two-pass)
};

// A layer's heads as the attention kernels see them: channels per head, query heads per K/V head.
struct HeadShape {
  int head_dim = 0;
  int group = 1;
  friend bool operator==(const HeadShape&, const HeadShape&) = default;
};

class KernelChoice {
 public:
  // UsageError when an override asks for a variant the device cannot run for a model of these
  // heads (each layer's, model::attention_shape; an attention variant runs only where it takes
  // every one of them), or one llama.cpp's precision does not run; from `block`, the model's gated
  // activation and attention soft-cap.
  KernelChoice(DeviceProfile profile, const KernelOverrides& overrides, std::span<const HeadShape> heads,
               const model::Block& block, bool llama_cpp = false);

  using Gemm = gpu::Gemm;  // gpu/gemm_variants.h
  // For Y[rows, N] of weights stored as `weights`; `aligned`: K and N are multiples of 8 and W's
  // rows of 16 bytes (what matmul-coop2 takes besides f16 weights); `faults`: the kFault* bits
  // planted in the product (gpu/kernels.h).
  Gemm gemm(int rows, std::uint32_t n, model::DType weights, bool aligned, std::uint32_t faults = 0) const;
  Shader matvec_shader() const;
  // matvec-subgroup's subgroups per output (a power of two dividing matvec_subgroups()) for Y[1, n], K = k.
  std::uint32_t matvec_split(std::uint32_t n, std::uint32_t k) const;
  struct AttentionPlan {
    enum class Kind : std::uint8_t { two_pass, flash, split, coop, coop2, decode } kind = Kind::two_pass;
    std::uint32_t splits = 1, split_keys = 0;  // split, decode: workgroups per (tile, head), positions each
  };
  AttentionPlan attention(const AttentionShape& a, std::uint32_t faults = 0) const;
  // Whether moe_out's products of a pass of `rows` rows over `experts` experts run grouped in tiles.
  bool experts_tiled(int rows, int experts) const;
  // Whether a residual add runs with the norm after it (add_rms_norm): norm=auto or fused, not in
  // llama.cpp's precision.
  bool fuses_norms() const { return overrides_.norm != KernelOverrides::Norm::apart && !llama_cpp_ && !layer_norm_; }
  bool llama_cpp() const { return llama_cpp_; }

  // A variant as it runs here: in the device's activation type, over `weights` for the ops with weights.
  Kernel named(std::string_view variant, std::optional<model::DType> weights = std::nullopt) const;
  // A product's kernel; in llama.cpp's precision, with the rounding "llama.cpp-DOT" where its input
  // is rounded to the weights' dot type first (Engine::product, Kernels::round_to_dot_type).
  Kernel gemm_kernel(Gemm gemm, model::DType weights) const;
  Kernel attention_kernel(AttentionPlan::Kind kind, int head_dim) const;
  std::string expert_matmul_variant() const;
  // The activation's: activation_kernel_name's, rounding as "llama.cpp-f16-gelu-table" where
  // llama.cpp's precision computes GELU by its table (Kernels::gated_activation).
  Kernel activation_kernel() const;
  // The kernels an op class may run on this device with these overrides (all row counts).
  std::vector<KernelId> planned(model::OpClass cls, model::DType weight_dtype) const;
  // moe_shared's: a product's variants, then the activation and, where the expert has a gate, its sigmoid.
  std::vector<KernelId> planned_shared_expert(model::DType weight_dtype, bool gated) const;
  // moe_out's: the experts' variants, with their biases' kernel before the sum where they have biases.
  std::vector<KernelId> planned_mixture(model::DType weight_dtype, const model::Experts& experts) const;

  // The largest head_dim the attention kernel takes on this device.
  int max_head_dim() const;
  // A shader's workgroup size: specialization constant 1.
  std::uint32_t local_size(Shader shader) const;
  std::uint32_t workgroup_size() const { return wg_; }  // of the 1-D kernels: a power of two <= 256
  std::uint32_t matvec_subgroups() const { return matvec_subgroups_; }
  std::uint32_t flash_keys() const { return flash_keys_; }  // attention_flash.comp's BC for the model's head_dim
  const DeviceProfile& profile() const { return profile_; }
  const KernelOverrides& overrides() const { return overrides_; }
  model::Activation activation() const { return activation_; }
  const model::SwigluClamp& swiglu() const { return swiglu_; }  // the clamped SwiGLU's constants
  bool gelu_by_table() const { return gelu_by_table_; }         // llama.cpp's precision, GELU: from llama.cpp's table
  const std::string& coop_missing() const { return coop_missing_; }  // why matmul-coop cannot run; "" when it can

 private:
  Gemm gemm_without_faults(int rows, std::uint32_t n, model::DType weights, bool aligned) const;
  AttentionPlan attention_without_faults(const AttentionShape& a) const;

  DeviceProfile profile_;
  KernelOverrides overrides_;
  model::Activation activation_;
  model::SwigluClamp swiglu_;
  bool gated_;                           // the FFN's activation multiplies by up (model::Ffn::gated)
  bool layer_norm_;                      // the model's norms are LayerNorms (layer_norm.comp, never fused)
  bool gelu_by_table_;                   // llama.cpp's precision computes the activation from its f16 table
  float attention_softcap_;              // the model's; each call's AttentionShape::softcap carries it to the kernel
  bool attention_sinks_;                 // likewise AttentionShape::sinks
  std::uint32_t wg_;                     // workgroup size of the 1-D kernels: a power of two <= 256
  std::uint32_t attention_wg_;           // attention's: 64 or less
  std::uint32_t matvec_subgroups_;       // matvec-subgroup's subgroups per workgroup ...
  std::uint32_t matvec_wg_;              // ... and its workgroup size
  bool tiled_ok_;                        // the device runs 256-invocation workgroups with 8 KiB shared
  std::vector<int> head_dims_;           // the model's, ascending
  std::uint32_t flash_keys_;             // attention_flash.comp's BC for the widest head on this device
  std::string flash_missing_;            // why it cannot run here; "" when it can
  std::string attention_coop_missing_;   // why attention_coop.comp cannot run here; "" when it can
  std::string attention_coop2_missing_;  // likewise attention-coop2
  std::string decode_missing_;           // likewise attention_decode.comp
  std::string coop_missing_;             // why the cooperative-matrix GEMM cannot run here; "" when it can
  std::string coop2_missing_;            // likewise matmul-coop2
  std::string coop2_wide_missing_;       // ... and its wide tile
  bool llama_cpp_;                       // llama.cpp's precision: its norm and attention, roundings before products
};

// The name an activation's kernel reports: gated, "silu_mul", "gelu_mul", "gelu_tanh_mul", ...;
// plain, the activation's own ("relu2").
std::string activation_kernel_name(model::Activation act, bool gated = true);

}  // namespace tapdiff::gpu
