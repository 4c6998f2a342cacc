#include "gpu/kernel_choice.h"

#include <algorithm>
#include <type_traits>
#include <utility>

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "formats/llama_cpp_precision.h"
#include "gpu/attention_coop2.h"
#include "gpu/dispatch_math.h"
#include "gpu/kernel_shapes.h"
#include "gpu/matmul_coop2.h"
#include "model/comma_list.h"
#include "model/errors.h"

namespace tapdiff::gpu {
namespace {

std::uint32_t floor_pow2(std::uint32_t v) {
  std::uint32_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

// Why matmul_coop.comp cannot run on this device in this mode; "" when it can. The kernel is laid
// out for 4 subgroups of 32 (the subgroup size of every device that offers the NV extension).
std::string why_no_coop_gemm(const DeviceProfile& device) {
  if (!device.cooperative_matrix_missing.empty()) return device.cooperative_matrix_missing;
  const DeviceInfo& d = device.info;
  if (d.subgroup_size != kCoopSubgroup)
    return fmt::format("{} runs subgroups of {}; the cooperative-matrix GEMM is laid out for {}", d.name,
                       d.subgroup_size, kCoopSubgroup);
  if (d.max_workgroup_invocations < kCoopThreads || d.max_workgroup_size_x < kCoopThreads ||
      d.max_shared_memory < kCoopShared)
    return fmt::format("{} cannot run {}-invocation workgroups with {} bytes of shared memory", d.name, kCoopThreads,
                       kCoopShared);
  return "";
}

// attention_flash.comp's shared memory for head_dim hd and bc keys per tile, as it declares it:
// q and K/V tiles of vec4 rows padded by one, scores, then per row alpha, visible, next_from.
std::uint32_t flash_shared_bytes(std::uint32_t hd, std::uint32_t bc) {
  const std::uint32_t stride = hd / 4 + 1;
  return (kFlashRows + bc) * stride * 16 + kFlashRows * (bc + 1) * 4 + kFlashRows * (4 + 16 + 4) + 4;
}

// attention_coop.comp's shared memory for head_dim hd, as it declares it: K and V tiles of 16-byte
// chunks padded by one; per subgroup its 16 rows of f32 scores, or of P hi and lo, padded; then per
// row a scale, visible, next_from and row_end.
std::uint32_t attention_coop_shared_bytes(std::uint32_t hd) {
  const std::uint32_t subgroup_chunks = 2 * 16 * (kCoopAttentionKeys / 8 + 1);  // P hi and lo (the scores: fewer)
  return 2 * kCoopAttentionKeys * (hd / 8 + 1) * 16 + 4 * subgroup_chunks * 16 + kCoopAttentionRows * (4 + 16 + 4 + 4);
}

// Why attention_coop.comp cannot run on this device with this head_dim; "" when it can.
std::string attention_coop_missing(const DeviceInfo& d, const std::string& gemm_missing, std::uint32_t hd) {
  if (!gemm_missing.empty()) return gemm_missing;
  if (!d.subgroup_arithmetic || !d.subgroup_shuffle_vote)
    return fmt::format("{} has no subgroup arithmetic, shuffle and vote in compute shaders", d.name);
  if (!d.denorm_preserve_f16)
    return fmt::format("{} cannot keep f16 subnormals in shaders (shaderDenormPreserveFloat16)", d.name);
  if (hd % 16 != 0 || hd > kCoopAttentionMaxHeadDim)
    return fmt::format("the cooperative-matrix attention takes head_dim a multiple of 16 up to {}, the model has {}",
                       kCoopAttentionMaxHeadDim, hd);
  if (d.max_shared_memory < attention_coop_shared_bytes(hd))
    return fmt::format("{} has {} bytes of shared memory; the cooperative-matrix attention needs {}", d.name,
                       d.max_shared_memory, attention_coop_shared_bytes(hd));
  return "";
}

// attention_decode.comp's shared memory for head_dim hd and `pack` heads, as it declares it: q,
// p per key, the key groups' sums, the per-subgroup reduction values.
std::uint32_t decode_shared_bytes(std::uint32_t hd, std::uint32_t pack) {
  const std::uint32_t hd4 = hd / 4, key_groups = kDecodeKeys / hd4;
  return pack * hd4 * 16 + pack * kDecodeKeys * 4 + key_groups * pack * hd4 * 16 + kDecodeKeys * 4;
}

// Why attention_decode.comp cannot run on this device for this head_dim and GQA group; "" when it can.
std::string decode_missing(const DeviceInfo& d, const std::string& flash_missing, std::uint32_t hd,
                           std::uint32_t group) {
  if (!flash_missing.empty()) return flash_missing;  // its split-KV runs there otherwise
  if (hd > kDecodeMaxHeadDim)
    return fmt::format("the decode attention takes head_dim up to {}, the model has {}", kDecodeMaxHeadDim, hd);
  if (!d.subgroup_arithmetic) return fmt::format("{} has no subgroup arithmetic in compute shaders", d.name);
  if (group > kDecodeMaxPack)
    return fmt::format("the decode attention takes up to {} heads per K/V head, the model has {}", kDecodeMaxPack,
                       group);
  if (d.max_shared_memory < decode_shared_bytes(hd, group))
    return fmt::format("{} has {} bytes of shared memory; the decode attention needs {} for {} heads per K/V head",
                       d.name, d.max_shared_memory, decode_shared_bytes(hd, group), group);
  return "";
}

void add_once(std::vector<KernelId>& ids, KernelId id) {
  if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(std::move(id));
}

// What --kernels takes: each key's values, in the order of its enum's values.
struct OverrideKey {
  std::string_view key;
  std::vector<std::string_view> values;
  void (*set)(KernelOverrides& o, std::size_t value);
};

template <auto member>
void set_override(KernelOverrides& o, std::size_t value) {
  o.*member = static_cast<std::remove_reference_t<decltype(o.*member)>>(value);
}

const std::vector<OverrideKey>& override_keys() {
  using O = KernelOverrides;
  static const std::vector<OverrideKey> keys = {
      {"matmul",
       {"auto", "tiled", "coop", "coop-k16", "coop2", "coop2-128x128", "coop2-128x256", "matvec"},
       set_override<&O::matmul>},
      {"matvec", {"auto", "subgroup", "shared"}, set_override<&O::matvec>},
      {"attention", {"auto", "coop2", "coop", "flash", "two-pass"}, set_override<&O::attention>},
      {"decode-attention", {"auto", "decode-split", "flash-split"}, set_override<&O::decode_attention>},
      {"experts", {"auto", "tiled", "matvec"}, set_override<&O::experts>},
      {"norm", {"auto", "fused", "apart"}, set_override<&O::norm>},
  };
  return keys;
}

// "key=value" as --kernels spells the value of that key's enum.
template <typename E>
std::string spelled(std::string_view key, E value) {
  for (const OverrideKey& k : override_keys())
    if (k.key == key) return fmt::format("{}={}", key, k.values.at(static_cast<std::size_t>(value)));
  TAPDIFF_ASSERT(false, "--kernels has no key {}", key);
  return {};
}

}  // namespace

KernelOverrides parse_kernel_overrides(const std::string& text) {
  KernelOverrides o;
  for (const std::string_view item : model::split_commas(text)) {
    const std::size_t eq = item.find('=');
    const std::string_view key = item.substr(0, eq), value = eq == std::string_view::npos ? "" : item.substr(eq + 1);
    const auto& keys = override_keys();
    const auto k = std::find_if(keys.begin(), keys.end(), [&](const OverrideKey& each) { return each.key == key; });
    const auto v = k == keys.end() ? std::vector<std::string_view>::const_iterator{}
                                   : std::find(k->values.begin(), k->values.end(), value);
    if (k == keys.end() || v == k->values.end()) {
      std::vector<std::string> expected;
      for (const OverrideKey& each : keys)
        expected.push_back(fmt::format("{}={}", each.key, fmt::join(each.values, "|")));
      throw UsageError(
          fmt::format("--kernels: expected {} (comma-separated), found '{}'", fmt::join(expected, ", "), item));
    }
    k->set(o, static_cast<std::size_t>(v - k->values.begin()));
  }
  return o;
}

KernelChoice::KernelChoice(DeviceProfile profile, const KernelOverrides& overrides, std::span<const HeadShape> heads,
                           const model::Block& block, bool llama_cpp)
    : profile_(std::move(profile)),
      overrides_(overrides),
      activation_(block.activation),
      swiglu_(block.swiglu),
      gated_(block.ffn == model::Ffn::gated),
      layer_norm_(block.norm == model::NormKind::layer),
      gelu_by_table_(llama_cpp && formats::llama_cpp_gelu_by_table(block)),
      attention_softcap_(static_cast<float>(block.attention_softcap)),
      attention_sinks_(block.attention_sinks),
      llama_cpp_(llama_cpp) {
  TAPDIFF_ASSERT(!llama_cpp || profile_.activations == Activations::f32, "llama.cpp's precision with f16 activations");
  if (llama_cpp && ((overrides.attention != KernelOverrides::Attention::automatic &&
                     overrides.attention != KernelOverrides::Attention::two_pass) ||
                    overrides.decode_attention != KernelOverrides::DecodeAttention::automatic ||
                    overrides.norm == KernelOverrides::Norm::fused))
    throw UsageError(
        "--kernels: under --dtype llama.cpp the attention runs attention-two-pass (its probabilities are rounded "
        "to f16 once their sum is known, as llama.cpp's are) and every norm rms_norm-ggml apart from the residual "
        "add: expected attention=auto|two-pass, decode-attention=auto and norm=auto|apart");
  if (layer_norm_ && overrides.norm == KernelOverrides::Norm::fused)
    throw UsageError(
        "--kernels norm=fused: this model's norms are LayerNorms, which run apart from the residual add "
        "(layer_norm-tree): expected norm=auto|apart");
  const DeviceInfo& d = profile_.info;
  wg_ = floor_pow2(std::min({256u, d.max_workgroup_invocations, d.max_workgroup_size_x}));
  attention_wg_ = std::min(64u, wg_);
  const std::uint32_t subgroup = std::max(1u, d.subgroup_size);
  matvec_subgroups_ = std::clamp(wg_ / subgroup, 1u, kMatvecSubgroups);
  matvec_wg_ = std::min(wg_, matvec_subgroups_ * subgroup);
  tiled_ok_ = d.max_workgroup_invocations >= kTiledThreads && d.max_workgroup_size_x >= kTiledThreads &&
              d.max_shared_memory >= kTiledShared;
  coop_missing_ = why_no_coop_gemm(profile_);
  // matmul-coop's too: it runs the products matmul-coop2 does not take
  coop2_missing_ = !coop_missing_.empty() ? coop_missing_ : profile_.cooperative_matrix2_missing;
  coop2_wide_missing_ = !coop2_missing_.empty() ? coop2_missing_ : profile_.cooperative_matrix2_wide_missing;
  TAPDIFF_ASSERT(!heads.empty(), "a model without attention heads");
  for (const HeadShape& h : heads) head_dims_.push_back(h.head_dim);
  std::sort(head_dims_.begin(), head_dims_.end());
  head_dims_.erase(std::unique(head_dims_.begin(), head_dims_.end()), head_dims_.end());
  const auto widest = static_cast<std::uint32_t>(head_dims_.back());
  flash_keys_ = flash_shared_bytes(widest, 32) <= d.max_shared_memory ? 32 : 16;
  // Each variant's reason not to run, for the first of the model's heads it cannot take.
  const auto first_missing = [&](const auto& why) {
    for (const HeadShape& h : heads)
      if (std::string missing = why(static_cast<std::uint32_t>(h.head_dim), static_cast<std::uint32_t>(h.group));
          !missing.empty())
        return missing;
    return std::string();
  };
  flash_missing_ = first_missing([&](std::uint32_t hd, std::uint32_t) -> std::string {
    if (hd % 4 != 0 || hd > kFlashMaxHeadDim)
      return fmt::format("the flash attention kernel takes head_dim a multiple of 4 up to {}, the model has {}",
                         kFlashMaxHeadDim, hd);
    if (d.max_workgroup_invocations < kFlashThreads || d.max_workgroup_size_x < kFlashThreads ||
        d.max_shared_memory < flash_shared_bytes(hd, flash_keys_))
      return fmt::format("{} cannot run {}-invocation workgroups with {} bytes of shared memory", d.name, kFlashThreads,
                         flash_shared_bytes(hd, flash_keys_));
    return "";
  });
  attention_coop_missing_ =
      profile_.activations == Activations::f16
          ? first_missing([&](std::uint32_t hd, std::uint32_t) { return attention_coop_missing(d, coop_missing_, hd); })
          : "the cooperative-matrix attention runs in the f16 mode only (--dtype f16)";
  attention_coop2_missing_ = profile_.activations != Activations::f16
                                 ? "the VK_NV_cooperative_matrix2 attention runs in the f16 mode only (--dtype f16)"
                                 : first_missing([&](std::uint32_t hd, std::uint32_t) -> std::string {
                                     if (hd % 16 != 0 || hd > kCoop2AttentionMaxHeadDim)
                                       return fmt::format(
                                           "the VK_NV_cooperative_matrix2 attention takes head_dim a multiple of 16 up "
                                           "to {}, the model has {}",
                                           kCoop2AttentionMaxHeadDim, hd);
                                     return profile_.attention_coop2_missing;
                                   });
  decode_missing_ = first_missing([&](std::uint32_t hd, std::uint32_t group) {
    return decode_missing(d, flash_missing_, hd, std::max(group, 1u));
  });
  // A forced variant this device or mode cannot run: why not.
  const std::string tiled_missing = tiled_ok_ ? "" : fmt::format("{} cannot run 256-invocation workgroups", d.name);
  const std::string subgroup_missing =
      d.subgroup_arithmetic ? "" : fmt::format("{} has no subgroup arithmetic in compute shaders", d.name);
  using M = KernelOverrides::Matmul;
  using A = KernelOverrides::Attention;
  using D = KernelOverrides::DecodeAttention;
  using E = KernelOverrides::Experts;
  using V = KernelOverrides::Matvec;
  struct Forced {
    bool forced;
    std::string what;
    const std::string& missing;
  };
  if ((overrides.attention == A::coop2 || overrides.attention == A::coop) && block.attention_sinks)
    throw UsageError(fmt::format(
        "--kernels attention={}: the cooperative-matrix attention has no sinks, and this model's softmax has them "
        "(attention sinks): attention=flash or two-pass compute them",
        overrides.attention == A::coop2 ? "coop2" : "coop"));
  if (overrides.attention == A::coop2 && block.attention_softcap > 0)
    throw UsageError(
        "--kernels attention=coop2: attention-coop2 computes no soft-cap, and this model caps its attention scores "
        "(attn_logit_softcapping): attention=coop, flash or two-pass compute it");
  for (const Forced& f : {
           Forced{overrides.matmul == M::tiled, spelled("matmul", M::tiled), tiled_missing},
           Forced{overrides.experts == E::tiled, spelled("experts", E::tiled), tiled_missing},
           Forced{overrides.matmul == M::coop, spelled("matmul", M::coop), coop_missing_},
           Forced{overrides.matmul == M::coop_k16, spelled("matmul", M::coop_k16), coop_missing_},
           Forced{overrides.matmul == M::coop2, spelled("matmul", M::coop2), coop2_missing_},
           Forced{overrides.matmul == M::coop2_narrow, spelled("matmul", M::coop2_narrow), coop2_missing_},
           Forced{overrides.matmul == M::coop2_wide, spelled("matmul", M::coop2_wide), coop2_wide_missing_},
           Forced{overrides.matvec == V::subgroup, spelled("matvec", V::subgroup), subgroup_missing},
           Forced{overrides.attention == A::flash, spelled("attention", A::flash), flash_missing_},
           Forced{overrides.attention == A::coop2, spelled("attention", A::coop2), attention_coop2_missing_},
           Forced{overrides.attention == A::coop, spelled("attention", A::coop), attention_coop_missing_},
           Forced{overrides.decode_attention == D::decode_split, spelled("decode-attention", D::decode_split),
                  decode_missing_},
           Forced{overrides.decode_attention == D::flash_split, spelled("decode-attention", D::flash_split),
                  flash_missing_},
       })
    if (f.forced && !f.missing.empty()) throw UsageError(fmt::format("--kernels {}: {}", f.what, f.missing));
}

std::uint32_t KernelChoice::local_size(Shader shader) const {
  switch (shader) {
    case Shader::attention: return attention_wg_;
    case Shader::matvec_subgroup:
    case Shader::matvec_experts_subgroup: return matvec_wg_;
    default: return wg_;
  }
}

KernelChoice::Gemm KernelChoice::gemm(int rows, std::uint32_t n, model::DType weights, bool aligned,
                                      std::uint32_t faults) const {
  const Gemm chosen = gemm_without_faults(rows, n, weights, aligned);
  return chosen == Gemm::coop2_wide && faults != 0 ? Gemm::coop2 : chosen;  // the fault's build has the 128 x 128 tile
}

KernelChoice::Gemm KernelChoice::gemm_without_faults(int rows, std::uint32_t n, model::DType weights,
                                                     bool aligned) const {
  const bool coop2 = coop2_missing_.empty() && weights == model::DType::f16 && aligned;
  const bool wide = coop2 && coop2_wide_missing_.empty();
  // matmul-coop2's tile: the wide one where the product makes enough workgroups of it
  const auto wide_tiles = ceil_div(static_cast<std::uint64_t>(std::max(rows, 1)), kCoop2WideTile.rows) *
                          ceil_div(static_cast<std::uint64_t>(n), kCoop2WideTile.cols);
  const Gemm coop2_tile = wide && wide_tiles >= kCoop2WideMinWorkgroups ? Gemm::coop2_wide : Gemm::coop2;
  switch (overrides_.matmul) {
    case KernelOverrides::Matmul::tiled: return Gemm::tiled;
    case KernelOverrides::Matmul::coop: return Gemm::coop;
    case KernelOverrides::Matmul::coop_k16: return Gemm::coop_k16;
    case KernelOverrides::Matmul::coop2: return coop2 ? coop2_tile : Gemm::coop;
    case KernelOverrides::Matmul::coop2_narrow: return coop2 ? Gemm::coop2 : Gemm::coop;
    case KernelOverrides::Matmul::coop2_wide: return wide ? Gemm::coop2_wide : Gemm::coop;
    case KernelOverrides::Matmul::matvec: return Gemm::matvec;
    case KernelOverrides::Matmul::automatic:
      if (rows <= 1) return Gemm::matvec;
      if (coop2) return coop2_tile;
      return coop_missing_.empty() ? Gemm::coop : tiled_ok_ ? Gemm::tiled : Gemm::matvec;
  }
  return Gemm::matvec;
}

std::uint32_t KernelChoice::matvec_split(std::uint32_t n, std::uint32_t k) const {
  const std::uint64_t passes = k / (8ull * std::max(1u, profile_.info.subgroup_size));  // of one subgroup over K
  std::uint32_t split = 1;
  while (split * 2 <= matvec_subgroups_ && split * 2 <= passes &&
         static_cast<std::uint64_t>(n) * split < kMatvecTargetSubgroups)
    split *= 2;
  return split;
}

Shader KernelChoice::matvec_shader() const {
  switch (overrides_.matvec) {
    case KernelOverrides::Matvec::subgroup: return Shader::matvec_subgroup;
    case KernelOverrides::Matvec::shared: return Shader::matvec_shared;
    case KernelOverrides::Matvec::automatic:
      return profile_.info.subgroup_arithmetic ? Shader::matvec_subgroup : Shader::matvec_shared;
  }
  return Shader::matvec_shared;
}

Kernel KernelChoice::gemm_kernel(Gemm gemm, model::DType weights) const {
  Kernel k = named(gemm != Gemm::matvec                         ? gemm_variant(gemm).label()
                   : matvec_shader() == Shader::matvec_subgroup ? "matvec-subgroup"
                                                                : "matvec-shared",
                   weights);
  if (const formats::DotType type = formats::dot_type(weights); llama_cpp_ && type != formats::DotType::f32)
    k.roundings.push_back(fmt::format("llama.cpp-{}", formats::dot_type_name(type)));
  return k;
}

KernelChoice::AttentionPlan KernelChoice::attention(const AttentionShape& a, std::uint32_t faults) const {
  AttentionPlan plan = attention_without_faults(a);
  // attention-coop2 has no faults: attention_coop.comp (or flash) runs a planted one
  if (plan.kind == AttentionPlan::Kind::coop2 && faults != 0)
    plan.kind = attention_coop_missing_.empty() ? AttentionPlan::Kind::coop : AttentionPlan::Kind::flash;
  return plan;
}

KernelChoice::AttentionPlan KernelChoice::attention_without_faults(const AttentionShape& a) const {
  using Kind = AttentionPlan::Kind;
  using Override = KernelOverrides::Attention;
  using Decode = KernelOverrides::DecodeAttention;
  // The keys of a pass of few rows in splits of a multiple of `tile` positions, at least
  // kSplitMinKeys, at most kMaxSplits of them.
  const auto keys = static_cast<std::uint32_t>(std::max(a.keys, 1));
  const auto split_plan = [keys](Kind kind, std::uint32_t tile) {
    const auto split_keys = static_cast<std::uint32_t>(
        ceil_div(std::max<std::uint64_t>(kSplitMinKeys, ceil_div(keys, kMaxSplits)), tile) * tile);
    return AttentionPlan{kind, static_cast<std::uint32_t>(ceil_div(keys, split_keys)), split_keys};
  };
  // The cooperative-matrix kernels take the passes flash would run in one piece; short chunks keep
  // flash's split-KV; decode steps take attention_decode.comp unless attention is forced to
  // two-pass or decode-attention to flash-split. llama.cpp's precision runs two-pass only, as
  // does a sparse attention (its rows' kept positions).
  // attention-coop2 has no soft-cap and no chunks: attention-coop takes a soft-capped model's
  // passes, and a chunked layer's, instead. Neither has sinks: flash takes the passes of a model with them.
  if (llama_cpp_ || a.kept > 0) return {};
  const bool coop2_wanted = overrides_.attention == Override::coop2 ||
                            (overrides_.attention == Override::automatic && attention_coop2_missing_.empty());
  const bool coop2 = coop2_wanted && a.softcap == 0 && !a.sinks && a.chunk == 0;
  const bool coop = !a.sinks && (coop2 || (coop2_wanted && attention_coop_missing_.empty()) ||
                                 overrides_.attention == Override::coop ||
                                 (overrides_.attention == Override::automatic && attention_coop_missing_.empty()));
  const bool decode_step = a.rows <= a.sequences;  // one row per sequence
  const bool flash = coop || overrides_.attention == Override::flash ||
                     (overrides_.attention == Override::automatic && flash_missing_.empty()) ||
                     (decode_step && overrides_.decode_attention == Decode::flash_split);
  if (decode_step && (overrides_.decode_attention == Decode::decode_split ||
                      (overrides_.decode_attention == Decode::automatic && overrides_.attention != Override::two_pass &&
                       flash && decode_missing_.empty())))
    return split_plan(Kind::decode, kDecodeKeys);
  if (!flash) return {};
  const Kind whole = coop2 ? Kind::coop2 : coop ? Kind::coop : Kind::flash;
  if (a.rows >= kFlashMinRowsPerSequence * a.sequences) return {whole};
  const AttentionPlan split = split_plan(Kind::split, flash_keys_);
  return split.splits <= 1 ? AttentionPlan{whole} : split;
}

Kernel KernelChoice::attention_kernel(AttentionPlan::Kind kind, int head_dim) const {
  switch (kind) {
    case AttentionPlan::Kind::coop2:
      return named(fmt::format("attention-coop2-{}x{}", kCoop2AttentionTile.rows,
                               coop2_attention_keys(static_cast<std::uint32_t>(head_dim))));
    case AttentionPlan::Kind::coop:
      return named(fmt::format("attention-coop-{}x{}", kCoopAttentionRows, kCoopAttentionKeys));
    case AttentionPlan::Kind::flash: return named(fmt::format("attention-flash-{}x{}", kFlashRows, flash_keys_));
    case AttentionPlan::Kind::split: return named(fmt::format("attention-flash-split-{}x{}", kFlashRows, flash_keys_));
    case AttentionPlan::Kind::decode: return named("attention-decode-split");
    case AttentionPlan::Kind::two_pass: break;
  }
  Kernel two_pass = named("attention-two-pass");
  if (llama_cpp_) two_pass.roundings.emplace_back("llama.cpp-f16-kv");
  return two_pass;
}

std::string activation_kernel_name(model::Activation act, bool gated) {
  return gated ? fmt::format("{}_mul", model::activation_name(act)) : std::string(model::activation_name(act));
}

Kernel KernelChoice::activation_kernel() const {
  Kernel k = named(activation_kernel_name(activation_, gated_));
  if (gelu_by_table_) k.roundings.emplace_back("llama.cpp-f16-gelu-table");
  return k;
}

Kernel KernelChoice::named(std::string_view variant, std::optional<model::DType> weights) const {
  return Kernel{std::string(variant), profile_.activations, weights};
}

int KernelChoice::max_head_dim() const {
  return static_cast<int>(std::min(kMaxHeadDim, kAttentionChannels * attention_wg_));
}

std::vector<KernelId> KernelChoice::planned(model::OpClass cls, model::DType weight_dtype) const {
  switch (cls) {
    case model::OpClass::embedding: return {named("embed-gather", weight_dtype)};
    case model::OpClass::norm:
      if (llama_cpp_) return {named(layer_norm_ ? "layer_norm-ggml" : "rms_norm-ggml")};
      if (layer_norm_) return {named("layer_norm-tree")};
      if (fuses_norms()) return {named("add+rms_norm-tree"), named("rms_norm-tree")};
      return {named("rms_norm-tree")};
    case model::OpClass::gemm: {
      // prefill's variant (of aligned shapes, of large aligned products, then of the others), then decode's
      std::vector<KernelId> ids;
      constexpr int kLarge = 1 << 20;
      for (const auto& [rows, aligned] :
           {std::pair{2, true}, std::pair{kLarge, true}, std::pair{2, false}, std::pair{1, true}})
        add_once(ids, gemm_kernel(gemm(rows, rows == kLarge ? kLarge : 8, weight_dtype, aligned), weight_dtype));
      return ids;
    }
    case model::OpClass::rope: return {named("rope-table")};
    case model::OpClass::attention: {
      // prefill's, a short chunk's past 32 positions, then decode's, each once
      std::vector<KernelId> ids;
      AttentionShape shape;
      shape.softcap = attention_softcap_;
      shape.sinks = attention_sinks_;
      for (const auto& [rows, keys] :
           {std::pair{kFlashMinRowsPerSequence, 1}, std::pair{2, 1000}, std::pair{1, 1000}}) {
        shape.rows = rows, shape.keys = keys;
        for (int head_dim : head_dims_) add_once(ids, attention_kernel(attention(shape).kind, head_dim));
      }
      return ids;
    }
    case model::OpClass::residual:
      if (fuses_norms()) return {named("add+rms_norm-tree")};
      return {named("add")};
    case model::OpClass::activation: return {activation_kernel()};
    case model::OpClass::routing: return {named("moe-route")};
    case model::OpClass::experts: {  // prefill's, then decode's
      const auto experts = [&](std::string_view matmul) {
        return KernelId({named(matmul, weight_dtype), named(activation_kernel_name(activation_)), named("moe-sum")});
      };
      std::vector<KernelId> ids;
      if (tiled_ok_ && overrides_.experts != KernelOverrides::Experts::matvec)
        ids.push_back(experts("matmul-experts-tiled-64x64"));
      if (overrides_.experts != KernelOverrides::Experts::tiled) ids.push_back(experts(expert_matmul_variant()));
      return ids;
    }
  }
  return {};
}

std::vector<KernelId> KernelChoice::planned_mixture(model::DType weight_dtype, const model::Experts& experts) const {
  std::vector<KernelId> ids = planned(model::OpClass::experts, weight_dtype);
  for (KernelId& id : ids) {
    if (experts.biases) id.kernels.insert(id.kernels.end() - 1, named("expert-bias"));
    if (experts.weights_scale_input) {
      id.kernels.insert(id.kernels.end() - 1, named("expert-input"));
      id.kernels.back() = named("moe-sum-unweighted");
    }
  }
  return ids;
}

std::vector<KernelId> KernelChoice::planned_shared_expert(model::DType weight_dtype, bool gated) const {
  std::vector<KernelId> ids = planned(model::OpClass::gemm, weight_dtype);
  for (KernelId& id : ids) {
    id.kernels.push_back(activation_kernel());
    if (gated) id.kernels.push_back(named("sigmoid-gate"));
  }
  return ids;
}

bool KernelChoice::experts_tiled(int rows, int experts) const {
  const bool tiled = overrides_.experts == KernelOverrides::Experts::tiled ||
                     (overrides_.experts == KernelOverrides::Experts::automatic && rows > 1);
  return tiled && tiled_ok_ && experts <= kMaxPlanExperts;
}

std::string KernelChoice::expert_matmul_variant() const {
  return matvec_shader() == Shader::matvec_subgroup ? "matvec-experts-subgroup" : "matvec-experts-shared";
}

}  // namespace tapdiff::gpu
