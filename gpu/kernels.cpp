#include "gpu/kernels.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <span>
#include <utility>

#include <fmt/core.h>

#include "gpu/attention_coop2.h"
#include "gpu/device.h"
#include "gpu/dispatch_math.h"
#include "gpu/matmul_coop2.h"
#include "gpu/pipelines.h"
#include "gpu/stream.h"
#include "model/comma_list.h"
#include "model/errors.h"

namespace tapdiff::gpu {
namespace {

// Push-constant blocks, laid out as the shaders declare them (std430 scalars).
struct EmbedPush {
  std::uint32_t rows, dim, row_bytes;
  float scale;
};
struct NormPush {
  std::uint32_t rows, dim;
  float eps, residual_scale;
};
struct MatmulPush {
  std::uint32_t rows, k, n, row_bytes, has_bias;
};
struct RopePush {
  std::uint32_t rows, width, head_dim, rotate_half, rotary_dim;
};
struct AttentionPush {
  std::uint32_t rows, heads, group, head_dim, window, q_stride, kv_stride;
  float scale;
  std::uint32_t split_keys, splits;  // attention_flash.comp with SPLIT only
  float softcap;                     // all but attention-coop2
};
struct CombinePush {
  std::uint32_t rows, heads, head_dim, splits;
};
struct CountPush {
  std::uint32_t n;
};
struct RoundDotPush {
  std::uint32_t units, type;
};
struct Q81CorrectionPush {
  std::uint32_t rows, n, blocks, row_bytes, block_bytes;
};
struct AddPush {
  std::uint32_t n;
  float scale;
};
struct ActivationPush {
  std::uint32_t n, activation;
};
struct ScaleSoftcapPush {
  std::uint32_t n;
  float scale, cap;
};

constexpr std::uint32_t kTile = 64;           // matmul_tiled.comp: BM = BN
constexpr std::uint32_t kTiledThreads = 256;  // matmul_tiled.comp: local_size_x
constexpr std::uint32_t kTiledShared = 8192;  // matmul_tiled.comp: xs + ws bytes
// matmul_coop.comp's tile (COOP_*): subgroups along T and N, 16 x 16 fragments per subgroup along
// T and N, the K slice and the padding of a staged row in halves.
constexpr std::uint32_t kCoopSubgroupsM = 2, kCoopSubgroupsN = 4, kCoopFragsM = 4, kCoopFragsN = 2;
constexpr std::uint32_t kCoopSlice = 32, kCoopPad = 8;
// The subgroup size it is laid out for, its tile (BM x BN) and its workgroup size.
constexpr std::uint32_t kCoopSubgroup = 32;
constexpr std::uint32_t kCoopRows = kCoopSubgroupsM * kCoopFragsM * 16;
constexpr std::uint32_t kCoopCols = kCoopSubgroupsN * kCoopFragsN * 16;
constexpr std::uint32_t kCoopSubgroups = kCoopSubgroupsM * kCoopSubgroupsN;
constexpr std::uint32_t kCoopThreads = kCoopSubgroup * kCoopSubgroups;
// Bytes of shared memory: two staged slices of f16, or one 16 x 16 f32 fragment per subgroup (the
// slices of 32, the larger build).
constexpr std::uint32_t kCoopShared =
    std::max(2 * (kCoopRows + kCoopCols) * (kCoopSlice + kCoopPad) * 2, kCoopSubgroups * 16 * 16 * 4);
constexpr std::uint32_t kMatvecSubgroups = 4;  // matvec.comp SUBGROUP: subgroups per workgroup at most
// matvec.comp SUBGROUP splits K over more subgroups per output until a product has this many
// subgroups (an H100 keeps 132 x 64 subgroups of 32 resident), or each has one pass over K.
constexpr std::uint64_t kMatvecTargetSubgroups = 8192;
constexpr std::uint32_t kAttentionChannels = 4;   // attention.comp: CHANNELS
constexpr std::uint32_t kMaxHeadDim = 256;        // attention.comp: MAX_HEAD_DIM
constexpr std::uint32_t kFlashThreads = 128;      // attention_flash.comp: local_size_x
constexpr std::uint32_t kFlashRows = 32;          // attention_flash.comp: BR
constexpr std::uint32_t kFlashMaxHeadDim = 128;   // attention_flash.comp: OUT_COLS <= 2
constexpr std::uint32_t kCoopAttentionRows = 64;  // attention_coop.comp: BR, 4 subgroups of 16 ...
constexpr std::uint32_t kCoopAttentionKeys = 32;  // ... and BC
constexpr std::uint32_t kDecodeKeys = 32;         // attention_decode.comp: LANES, keys per tile ...
constexpr std::uint32_t kDecodeMaxPack = 16;      // ... and MAX_PACK, heads per K/V head at most
constexpr int kFlashMinRowsPerSequence = 16;      // fewer rows per sequence: split the keys
constexpr std::uint32_t kSplitMinKeys = 32;       // positions per split at least ...
constexpr std::uint32_t kMaxSplits = 64;          // ... and splits at most (attention_combine.comp: MAX_SPLITS)

std::uint32_t floor_pow2(std::uint32_t v) {
  std::uint32_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

// Why matmul_coop.comp cannot run on this device in this mode; "" when it can. The kernel is laid
// out for 4 subgroups of 32 (the subgroup size of every device that offers the NV extension).
std::string coop_missing(const Device& device) {
  if (!device.cooperative_matrix()) return device.cooperative_matrix_missing();
  const DeviceInfo& d = device.info();
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
std::string attention_coop_missing(const Device& device, const std::string& gemm_missing, std::uint32_t hd) {
  if (!gemm_missing.empty()) return gemm_missing;
  const DeviceInfo& d = device.info();
  if (!d.subgroup_arithmetic || !d.subgroup_shuffle_vote)
    return fmt::format("{} has no subgroup arithmetic, shuffle and vote in compute shaders", d.name);
  if (!d.denorm_preserve_f16)
    return fmt::format("{} cannot keep f16 subnormals in shaders (shaderDenormPreserveFloat16)", d.name);
  if (hd % 16 != 0 || hd > kFlashMaxHeadDim)
    return fmt::format("the cooperative-matrix attention takes head_dim a multiple of 16 up to {}, the model has {}",
                       kFlashMaxHeadDim, hd);
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
  if (!flash_missing.empty()) return flash_missing;  // the same head_dim rule
  if (!d.subgroup_arithmetic) return fmt::format("{} has no subgroup arithmetic in compute shaders", d.name);
  if (group > kDecodeMaxPack)
    return fmt::format("the decode attention takes up to {} heads per K/V head, the model has {}", kDecodeMaxPack,
                       group);
  if (d.max_shared_memory < decode_shared_bytes(hd, group))
    return fmt::format("{} has {} bytes of shared memory; the decode attention needs {} for {} heads per K/V head",
                       d.name, d.max_shared_memory, decode_shared_bytes(hd, group), group);
  return "";
}

void add_once(std::vector<std::string>& names, std::string name) {
  if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(std::move(name));
}

// The split-KV partials of a pass: (m, l, sums[head_dim]) f32 per row, head and split.
std::uint64_t partial_bytes(const AttentionShape& a, std::uint32_t splits) {
  return static_cast<std::uint64_t>(a.rows) * static_cast<std::uint64_t>(a.heads) * splits *
         (static_cast<std::uint64_t>(a.head_dim) + 2) * 4;
}

}  // namespace

KernelOverrides parse_kernel_overrides(const std::string& text) {
  KernelOverrides o;
  for (const std::string_view item : model::split_commas(text)) {
    const std::size_t eq = item.find('=');
    const std::string_view key = item.substr(0, eq), value = eq == std::string_view::npos ? "" : item.substr(eq + 1);
    if (key == "matmul" &&
        (value == "auto" || value == "tiled" || value == "coop" || value == "coop-k16" || value == "coop2" ||
         value == "coop2-128x128" || value == "coop2-128x256" || value == "matvec")) {
      o.matmul = value == "tiled"           ? KernelOverrides::Matmul::tiled
                 : value == "coop"          ? KernelOverrides::Matmul::coop
                 : value == "coop-k16"      ? KernelOverrides::Matmul::coop_k16
                 : value == "coop2"         ? KernelOverrides::Matmul::coop2
                 : value == "coop2-128x128" ? KernelOverrides::Matmul::coop2_narrow
                 : value == "coop2-128x256" ? KernelOverrides::Matmul::coop2_wide
                 : value == "matvec"        ? KernelOverrides::Matmul::matvec
                                            : KernelOverrides::Matmul::automatic;
    } else if (key == "matvec" && (value == "auto" || value == "subgroup" || value == "shared")) {
      o.matvec = value == "subgroup" ? KernelOverrides::Matvec::subgroup
                 : value == "shared" ? KernelOverrides::Matvec::shared
                                     : KernelOverrides::Matvec::automatic;
    } else if (key == "attention" &&
               (value == "auto" || value == "coop2" || value == "coop" || value == "flash" || value == "two-pass")) {
      o.attention = value == "coop2"      ? KernelOverrides::Attention::coop2
                    : value == "coop"     ? KernelOverrides::Attention::coop
                    : value == "flash"    ? KernelOverrides::Attention::flash
                    : value == "two-pass" ? KernelOverrides::Attention::two_pass
                                          : KernelOverrides::Attention::automatic;
    } else if (key == "norm" && (value == "auto" || value == "fused" || value == "apart")) {
      o.norm = value == "fused"   ? KernelOverrides::Norm::fused
               : value == "apart" ? KernelOverrides::Norm::apart
                                  : KernelOverrides::Norm::automatic;
    } else if (key == "experts" && (value == "auto" || value == "tiled" || value == "matvec")) {
      o.experts = value == "tiled"    ? KernelOverrides::Experts::tiled
                  : value == "matvec" ? KernelOverrides::Experts::matvec
                                      : KernelOverrides::Experts::automatic;
    } else if (key == "decode-attention" && (value == "auto" || value == "decode-split" || value == "flash-split")) {
      o.decode_attention = value == "decode-split"  ? KernelOverrides::DecodeAttention::decode_split
                           : value == "flash-split" ? KernelOverrides::DecodeAttention::flash_split
                                                    : KernelOverrides::DecodeAttention::automatic;
    } else {
      throw UsageError(
          fmt::format("--kernels: expected matmul=auto|tiled|coop|coop-k16|coop2|coop2-128x128|coop2-128x256|matvec, "
                      "matvec=auto|subgroup|shared, "
                      "attention=auto|coop2|coop|flash|two-pass, decode-attention=auto|decode-split|flash-split, "
                      "experts=auto|tiled|matvec or norm=auto|fused|apart "
                      "(comma-separated), found '{}'",
                      item));
    }
  }
  return o;
}

Kernels::Kernels(const Device& device, Pipelines& pipelines, const KernelOverrides& overrides, int head_dim, int group,
                 const model::Block& block, bool llama_cpp)
    : device_(&device),
      pipelines_(&pipelines),
      overrides_(overrides),
      activation_(block.activation),
      attention_softcap_(static_cast<float>(block.attention_softcap)),
      head_dim_(head_dim),
      llama_cpp_(llama_cpp) {
  TAPDIFF_ASSERT(!llama_cpp || pipelines.activations() == Activations::f32,
                 "llama.cpp's precision with f16 activations");
  if (llama_cpp && ((overrides.attention != KernelOverrides::Attention::automatic &&
                     overrides.attention != KernelOverrides::Attention::two_pass) ||
                    overrides.decode_attention != KernelOverrides::DecodeAttention::automatic ||
                    overrides.norm == KernelOverrides::Norm::fused))
    throw UsageError(
        "--kernels: under --dtype llama.cpp the attention runs attention-two-pass (its probabilities are rounded to "
        "f16 "
        "once their sum is known, as llama.cpp's are) and every norm rms_norm-ggml apart from the residual add: "
        "expected attention=auto|two-pass, decode-attention=auto and norm=auto|apart");
  const DeviceInfo& d = device.info();
  wg_ = floor_pow2(std::min({256u, d.max_workgroup_invocations, d.max_workgroup_size_x}));
  attention_wg_ = std::min(64u, wg_);
  const std::uint32_t subgroup = std::max(1u, d.subgroup_size);
  matvec_subgroups_ = std::clamp(wg_ / subgroup, 1u, kMatvecSubgroups);
  matvec_wg_ = std::min(wg_, matvec_subgroups_ * subgroup);
  tiled_ok_ = d.max_workgroup_invocations >= kTiledThreads && d.max_workgroup_size_x >= kTiledThreads &&
              d.max_shared_memory >= kTiledShared;
  coop_missing_ = coop_missing(device);
  // matmul-coop's too: it runs the products matmul-coop2 does not take
  coop2_missing_ = !coop_missing_.empty() ? coop_missing_ : device.cooperative_matrix2_missing();
  coop2_wide_missing_ = !coop2_missing_.empty() ? coop2_missing_ : device.cooperative_matrix2_wide_missing();
  const auto hd = static_cast<std::uint32_t>(head_dim);
  flash_keys_ = flash_shared_bytes(hd, 32) <= d.max_shared_memory ? 32 : 16;
  if (hd % 4 != 0 || hd > kFlashMaxHeadDim)
    flash_missing_ = fmt::format("the flash attention kernel takes head_dim a multiple of 4 up to {}, the model has {}",
                                 kFlashMaxHeadDim, head_dim);
  else if (d.max_workgroup_invocations < kFlashThreads || d.max_workgroup_size_x < kFlashThreads ||
           d.max_shared_memory < flash_shared_bytes(hd, flash_keys_))
    flash_missing_ = fmt::format("{} cannot run {}-invocation workgroups with {} bytes of shared memory", d.name,
                                 kFlashThreads, flash_shared_bytes(hd, flash_keys_));
  attention_coop_missing_ = pipelines.activations() == Activations::f16
                                ? attention_coop_missing(device, coop_missing_, hd)
                                : "the cooperative-matrix attention runs in the f16 mode only (--dtype f16)";
  attention_coop2_missing_ =
      pipelines.activations() != Activations::f16
          ? "the VK_NV_cooperative_matrix2 attention runs in the f16 mode only (--dtype f16)"
      : hd % 16 != 0 || hd > kCoop2AttentionMaxHeadDim
          ? fmt::format(
                "the VK_NV_cooperative_matrix2 attention takes head_dim a multiple of 16 up to {}, the model has {}",
                kCoop2AttentionMaxHeadDim, head_dim)
          : device.attention_coop2_missing(hd);
  decode_missing_ = decode_missing(d, flash_missing_, hd, static_cast<std::uint32_t>(std::max(group, 1)));
  // A forced variant this device or mode cannot run: why not.
  const std::string tiled_missing = tiled_ok_ ? "" : fmt::format("{} cannot run 256-invocation workgroups", d.name);
  const std::string subgroup_missing =
      d.subgroup_arithmetic ? "" : fmt::format("{} has no subgroup arithmetic in compute shaders", d.name);
  using M = KernelOverrides::Matmul;
  using A = KernelOverrides::Attention;
  using D = KernelOverrides::DecodeAttention;
  struct Forced {
    bool forced;
    const char* what;
    const std::string& missing;
  };
  if (overrides.attention == A::coop2 && block.attention_softcap > 0)
    throw UsageError(
        "--kernels attention=coop2: attention-coop2 computes no soft-cap, and this model caps its attention scores "
        "(attn_logit_softcapping): attention=coop, flash or two-pass compute it");
  for (const Forced& f : {
           Forced{overrides.matmul == M::tiled, "matmul=tiled", tiled_missing},
           Forced{overrides.experts == KernelOverrides::Experts::tiled, "experts=tiled", tiled_missing},
           Forced{overrides.matmul == M::coop, "matmul=coop", coop_missing_},
           Forced{overrides.matmul == M::coop_k16, "matmul=coop-k16", coop_missing_},
           Forced{overrides.matmul == M::coop2, "matmul=coop2", coop2_missing_},
           Forced{overrides.matmul == M::coop2_narrow, "matmul=coop2-128x128", coop2_missing_},
           Forced{overrides.matmul == M::coop2_wide, "matmul=coop2-128x256", coop2_wide_missing_},
           Forced{overrides.matvec == KernelOverrides::Matvec::subgroup, "matvec=subgroup", subgroup_missing},
           Forced{overrides.attention == A::flash, "attention=flash", flash_missing_},
           Forced{overrides.attention == A::coop2, "attention=coop2", attention_coop2_missing_},
           Forced{overrides.attention == A::coop, "attention=coop", attention_coop_missing_},
           Forced{overrides.decode_attention == D::decode_split, "decode-attention=decode-split", decode_missing_},
           Forced{overrides.decode_attention == D::flash_split, "decode-attention=flash-split", flash_missing_},
       })
    if (f.forced && !f.missing.empty()) throw UsageError(fmt::format("--kernels {}: {}", f.what, f.missing));
}

std::uint32_t Kernels::local_size(Shader shader) const {
  switch (shader) {
    case Shader::attention: return attention_wg_;
    case Shader::matvec_subgroup:
    case Shader::matvec_experts_subgroup: return matvec_wg_;
    default: return wg_;
  }
}

Kernels::Grid Kernels::coop_grid(std::uint32_t rows, std::uint32_t cols) {
  const Grid tiles = tile_grid(rows, cols, kCoopRows, kCoopCols);
  return {tiles.y, tiles.x};
}

Kernels::Grid Kernels::fold(std::uint64_t groups) const {
  const std::uint64_t max_x = device_->info().max_workgroup_count[0];
  const std::uint64_t x = std::min(groups, max_x);
  const std::uint64_t y = x == 0 ? 0 : ceil_div(groups, x);
  TAPDIFF_ASSERT(y <= device_->info().max_workgroup_count[1], "{} workgroups exceed the device's grid", groups);
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
  std::array<std::uint32_t, 5> spec = {dtype, local_size(shader), faults};
  TAPDIFF_ASSERT(more.size() <= spec.size() - 3, "{} more specialization constants", more.size());
  std::copy(more.begin(), more.end(), spec.begin() + 3);
  // Constant 2 only with a fault or more constants: the clean pipelines of the kernels without
  // more constants are made exactly as they were before faults.
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

std::string Kernels::embed(Stream& s, const DeviceWeight& table, const Region& tokens, float scale, const Region& out,
                           int rows) {
  const EmbedPush push{u32(rows), u32(table.cols), table.row_bytes, scale};
  dispatch(s, Shader::embed, dtype_code(table.dtype), {table.region, tokens, out}, &push, sizeof push,
           fold(ceil_div(static_cast<std::uint64_t>(rows) * push.dim, wg_)));
  return named("embed-gather", table.dtype);
}

std::string Kernels::rms_norm(Stream& s, const Region& x, const DeviceWeight& w, float eps, const Region& out, int rows,
                              std::uint32_t faults) {
  TAPDIFF_ASSERT(w.dtype == model::DType::f32, "norm weight {} as {}", w.name, model::dtype_name(w.dtype));
  const NormPush push{u32(rows), u32(w.cols), eps, 1.0f};
  if (llama_cpp_) {
    TAPDIFF_ASSERT(faults == 0, "a fault planted in rms_norm-ggml");
    dispatch(s, Shader::rms_norm_ggml, 0, {x, w.region, out}, &push, sizeof push,
             fold(static_cast<std::uint64_t>(rows)));
    return named("rms_norm-ggml");
  }
  dispatch(s, Shader::rms_norm, 0, {x, w.region, out}, &push, sizeof push, fold(static_cast<std::uint64_t>(rows)),
           faults);
  return named("rms_norm-tree");
}

std::string Kernels::add_rms_norm(Stream& s, const Region& a, const Region& b, float scale, const DeviceWeight& w,
                                  float eps, const Region& sum, const Region& out, int rows, std::uint32_t faults) {
  TAPDIFF_ASSERT(w.dtype == model::DType::f32, "norm weight {} as {}", w.name, model::dtype_name(w.dtype));
  const NormPush push{u32(rows), u32(w.cols), eps, scale};
  dispatch(s, Shader::add_rms_norm, 0, {a, b, w.region, sum, out}, &push, sizeof push,
           fold(static_cast<std::uint64_t>(rows)), faults);
  return named("add+rms_norm-tree");
}

Kernels::Gemm Kernels::gemm_variant(int rows, std::uint32_t n, model::DType weights, bool aligned) const {
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

std::uint32_t Kernels::matvec_split(std::uint32_t n, std::uint32_t k) const {
  const std::uint64_t passes = k / (8ull * std::max(1u, device_->info().subgroup_size));  // of one subgroup over K
  std::uint32_t split = 1;
  while (split * 2 <= matvec_subgroups_ && split * 2 <= passes &&
         static_cast<std::uint64_t>(n) * split < kMatvecTargetSubgroups)
    split *= 2;
  return split;
}

Shader Kernels::matvec_shader() const {
  switch (overrides_.matvec) {
    case KernelOverrides::Matvec::subgroup: return Shader::matvec_subgroup;
    case KernelOverrides::Matvec::shared: return Shader::matvec_shared;
    case KernelOverrides::Matvec::automatic:
      return device_->info().subgroup_arithmetic ? Shader::matvec_subgroup : Shader::matvec_shared;
  }
  return Shader::matvec_shared;
}

std::string Kernels::matmul(Stream& s, const Region& x, const DeviceWeight& w, const DeviceWeight* bias,
                            const Region& out, int rows, std::uint32_t faults) {
  TAPDIFF_ASSERT(bias == nullptr || bias->dtype == model::DType::f32, "bias {} as {}", bias->name,
                 model::dtype_name(bias->dtype));
  const MatmulPush push{u32(rows), u32(w.cols), u32(w.rows), w.row_bytes, bias != nullptr ? 1u : 0u};
  // Without a bias the weights stand in for the unused binding (never read).
  const Region& b = bias != nullptr ? bias->region : w.region;
  const std::initializer_list<Region> bindings = {w.region, x, b, out};
  const bool aligned = push.k % 8 == 0 && push.n % 8 == 0 && push.row_bytes % 16 == 0;
  Gemm gemm = gemm_variant(rows, push.n, w.dtype, aligned);
  if (gemm == Gemm::coop2_wide && faults != 0) gemm = Gemm::coop2;  // the fault's build has the 128 x 128 tile
  switch (gemm) {
    case Gemm::tiled:
      dispatch(s, Shader::matmul_tiled, dtype_code(w.dtype), bindings, &push, sizeof push,
               tile_grid(push.rows, push.n, kTile, kTile), faults);
      break;
    case Gemm::coop:
    case Gemm::coop_k16:
      dispatch(s, gemm == Gemm::coop ? Shader::matmul_coop : Shader::matmul_coop_k16, dtype_code(w.dtype), bindings,
               &push, sizeof push, coop_grid(push.rows, push.n), faults);
      break;
    case Gemm::coop2:
    case Gemm::coop2_wide: {  // row tiles along x, as coop_grid; its one fault is a 128 x 128 build of its own
      const Coop2Tile& tile = coop2_tile(gemm);
      const Shader shader = gemm == Gemm::coop2_wide                  ? Shader::matmul_coop2_wide
                            : (faults & kFaultGemmF16Accumulate) != 0 ? Shader::matmul_coop2_fault
                                                                      : Shader::matmul_coop2;
      const Grid tiles = tile_grid(push.rows, push.n, tile.rows, tile.cols);
      dispatch(s, shader, 0, bindings, &push, sizeof push, {tiles.y, tiles.x});
      break;
    }
    case Gemm::matvec:
      if (matvec_shader() == Shader::matvec_subgroup) {
        const std::uint32_t split = matvec_split(push.n, push.k), outputs = matvec_subgroups_ / split;
        dispatch(s, Shader::matvec_subgroup, dtype_code(w.dtype), bindings, &push, sizeof push,
                 fold(static_cast<std::uint64_t>(rows) * ceil_div(push.n, outputs)), faults, {outputs, split});
      } else
        dispatch(s, Shader::matvec_shared, dtype_code(w.dtype), bindings, &push, sizeof push,
                 fold(static_cast<std::uint64_t>(rows) * push.n), faults);
      break;
  }
  return gemm_name(gemm, w.dtype);
}

void Kernels::matmul_coop_probe(Stream& s, const Region& x, const DeviceWeight& w, const Region& out, int rows,
                                std::uint32_t probe) {
  if (!coop_missing_.empty()) throw EnvironmentError(fmt::format("the cooperative-matrix GEMM: {}", coop_missing_));
  const MatmulPush push{u32(rows), u32(w.cols), u32(w.rows), w.row_bytes, 0u};
  dispatch(s, Shader::matmul_coop_probe, dtype_code(w.dtype), {w.region, x, w.region, out}, &push, sizeof push,
           coop_grid(push.rows, push.n), 0, {probe});
}

const Coop2Tile& Kernels::coop2_tile(Gemm gemm) { return gemm == Gemm::coop2_wide ? kCoop2WideTile : kCoop2Tile; }

std::string Kernels::gemm_name(Gemm gemm, model::DType weights) const {
  switch (gemm) {
    case Gemm::tiled: return named("matmul-tiled-64x64", weights);
    case Gemm::coop: return named(fmt::format("matmul-coop-{}x{}", kCoopRows, kCoopCols), weights);
    case Gemm::coop_k16: return named(fmt::format("matmul-coop-{}x{}-k16", kCoopRows, kCoopCols), weights);
    case Gemm::coop2:
    case Gemm::coop2_wide: {
      const Coop2Tile& tile = coop2_tile(gemm);
      return named(fmt::format("matmul-coop2-{}x{}", tile.rows, tile.cols), weights);
    }
    case Gemm::matvec: break;
  }
  return named(matvec_shader() == Shader::matvec_subgroup ? "matvec-subgroup" : "matvec-shared", weights);
}

std::string Kernels::rope(Stream& s, const Region& x, const Region& table, const Region& out, int rows, int width,
                          int head_dim, int rotary_dim, model::RopeStyle style) {
  const RopePush push{u32(rows), u32(width), u32(head_dim), style == model::RopeStyle::rotate_half ? 1u : 0u,
                      u32(rotary_dim)};
  const std::uint32_t pairs_per_invocation = head_dim % 8 == 0 && rotary_dim == head_dim ? 4 : 1;  // rope.comp
  dispatch(s, Shader::rope, 0, {x, table, out}, &push, sizeof push,
           fold(ceil_div(static_cast<std::uint64_t>(rows) * push.width / 2 / pairs_per_invocation, wg_)));
  return named("rope-table");
}

std::string Kernels::attention(Stream& s, const AttentionShape& a, float scale, const Region& q, const Region& k,
                               const Region& v, const Region& row_table, const Region& scratch, const Region& out,
                               std::uint32_t faults) {
  TAPDIFF_ASSERT(a.head_dim <= max_head_dim(), "head_dim {} in the attention kernel", a.head_dim);
  const AttentionPlan plan = plan_attention(a);
  const AttentionPush push{u32(a.rows),
                           u32(a.heads),
                           u32(a.heads / a.kv_heads),
                           u32(a.head_dim),
                           u32(a.window),
                           u32(a.heads * a.head_dim),
                           u32(a.kv_heads * a.head_dim),
                           scale,
                           plan.split_keys,
                           plan.splits,
                           a.softcap};
  // attention_flash.comp: tiles of 32 (row, head) pairs of the heads of one GQA group (of one head
  // with gqa-head-map planted, whose heads do not share K/V in groups); attention_decode.comp: one
  // row and such a pack of heads per workgroup.
  const std::uint32_t pack = (faults & kFaultAttentionHeadModulo) != 0 ? 1 : push.group;
  const std::uint64_t units = push.heads / pack;
  const std::uint64_t tiles = ceil_div(static_cast<std::uint64_t>(push.rows) * pack, kFlashRows) * units;
  using Kind = AttentionPlan::Kind;
  // attention-coop2 has no faults: attention_coop.comp (or flash) runs a planted one
  Kind kind = plan.kind;
  if (kind == Kind::coop2 && faults != 0) kind = attention_coop_missing_.empty() ? Kind::coop : Kind::flash;
  switch (kind) {
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
      dispatch(s, Shader::attention_flash, 0, {q, k, v, row_table, out}, &push, sizeof push, fold(tiles), faults,
               {push.head_dim, flash_keys_});
      break;
    case Kind::split:
    case Kind::decode: {
      const std::uint64_t bytes = partial_bytes(a, plan.splits);
      TAPDIFF_ASSERT(scratch.size >= bytes, "attention scratch of {} bytes for {}", scratch.size, bytes);
      const Region partial = scratch.sub(0, bytes);
      if (plan.kind == Kind::split)
        dispatch(s, Shader::attention_split, 0, {q, k, v, row_table, partial}, &push, sizeof push,
                 fold(tiles * plan.splits), faults, {push.head_dim, flash_keys_});
      else
        dispatch(s, Shader::attention_decode, 0, {q, k, v, row_table, partial}, &push, sizeof push,
                 fold(push.rows * units * plan.splits), faults, {push.head_dim, pack});
      const CombinePush combine{push.rows, push.heads, push.head_dim, plan.splits};
      dispatch(s, Shader::attention_combine, 0, {partial, out}, &combine, sizeof combine,
               fold(static_cast<std::uint64_t>(push.rows) * push.heads));
      break;
    }
    case Kind::two_pass:
      dispatch(s, llama_cpp_ ? Shader::attention_llama_cpp : Shader::attention, 0, {q, k, v, row_table, out}, &push,
               sizeof push, fold(static_cast<std::uint64_t>(a.rows) * push.heads), faults);
      break;
  }
  return attention_name(kind);
}

Kernels::AttentionPlan Kernels::plan_attention(const AttentionShape& a) const {
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
  // two-pass or decode-attention to flash-split. llama.cpp's precision runs two-pass only.
  // attention-coop2 has no soft-cap: attention-coop takes a soft-capped model's passes instead.
  if (llama_cpp_) return {};
  const bool coop2_wanted = overrides_.attention == Override::coop2 ||
                            (overrides_.attention == Override::automatic && attention_coop2_missing_.empty());
  const bool coop2 = coop2_wanted && a.softcap == 0;
  const bool coop = coop2 || (coop2_wanted && attention_coop_missing_.empty()) ||
                    overrides_.attention == Override::coop ||
                    (overrides_.attention == Override::automatic && attention_coop_missing_.empty());
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

std::uint64_t Kernels::attention_scratch_bytes(const AttentionShape& a) const {
  const AttentionPlan plan = plan_attention(a);
  return plan.kind == AttentionPlan::Kind::split || plan.kind == AttentionPlan::Kind::decode
             ? partial_bytes(a, plan.splits)
             : 0;
}

std::string Kernels::attention_name(AttentionPlan::Kind kind) const {
  switch (kind) {
    case AttentionPlan::Kind::coop2:
      return named(fmt::format("attention-coop2-{}x{}", kCoop2AttentionTile.rows,
                               coop2_attention_keys(static_cast<std::uint32_t>(head_dim_))));
    case AttentionPlan::Kind::coop:
      return named(fmt::format("attention-coop-{}x{}", kCoopAttentionRows, kCoopAttentionKeys));
    case AttentionPlan::Kind::flash: return named(fmt::format("attention-flash-{}x{}", kFlashRows, flash_keys_));
    case AttentionPlan::Kind::split: return named(fmt::format("attention-flash-split-{}x{}", kFlashRows, flash_keys_));
    case AttentionPlan::Kind::decode: return named("attention-decode-split");
    case AttentionPlan::Kind::two_pass: break;
  }
  return named(llama_cpp_ ? "attention-two-pass+llama.cpp-f16-kv" : "attention-two-pass");
}

std::string Kernels::dot_suffix(model::DType weights) const {
  const model::DotType type = model::dot_type(weights);
  return llama_cpp_ && type != model::DotType::f32 ? fmt::format("+llama.cpp-{}", model::dot_type_name(type)) : "";
}

std::string Kernels::round_to_dot_type(Stream& s, model::DotType type, const Region& x, const Region& out,
                                       const Region& excess, int rows, int width) {
  TAPDIFF_ASSERT(llama_cpp_ && type != model::DotType::f32, "round_dot to {}", model::dot_type_name(type));
  const std::uint32_t block = type == model::DotType::q8_k                                  ? 256
                              : type == model::DotType::f16 || type == model::DotType::bf16 ? 1
                                                                                            : 32;
  TAPDIFF_ASSERT(width % block == 0, "rows of {} values are no whole blocks of {}", width, block);
  const std::uint64_t values = static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(width);
  const RoundDotPush push{u32(static_cast<std::int64_t>(values / block)), static_cast<std::uint32_t>(type)};
  dispatch(s, Shader::round_dot, 0, {x, out, excess}, &push, sizeof push, fold(ceil_div(push.units, wg_)));
  return fmt::format("+llama.cpp-{}", model::dot_type_name(type));
}

void Kernels::q8_1_correction(Stream& s, const Region& excess, const DeviceWeight& w, const Region& out, int rows) {
  TAPDIFF_ASSERT(w.dtype == model::DType::q4_1 || w.dtype == model::DType::q5_1, "{}: a Q8_1 correction of {} weights",
                 w.name, model::dtype_name(w.dtype));
  const Q81CorrectionPush push{u32(rows), u32(w.rows), u32(w.cols / 32), w.row_bytes,
                               static_cast<std::uint32_t>(model::block_bytes(w.dtype))};
  dispatch(s, Shader::q8_1_correction, 0, {excess, w.region, out}, &push, sizeof push,
           fold(ceil_div(static_cast<std::uint64_t>(push.rows) * push.n, wg_)));
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

std::string Kernels::add(Stream& s, const Region& a, const Region& b, float scale, const Region& out, std::int64_t n) {
  const AddPush push{u32(n), scale};
  dispatch(s, Shader::add, 0, {a, b, out}, &push, sizeof push, fold(elementwise_groups(push.n)));
  return named("add");
}

std::string Kernels::gated_activation(Stream& s, const Region& gate, const Region& up, const Region& out,
                                      std::int64_t n, std::uint32_t faults) {
  const ActivationPush push{u32(n), static_cast<std::uint32_t>(activation_)};
  dispatch(s, Shader::gated_act, 0, {gate, up, out}, &push, sizeof push, fold(elementwise_groups(push.n)), faults);
  return named(gated_activation_name(activation_));
}

std::string Kernels::scale_softcap(Stream& s, const Region& x, float scale, float cap, std::int64_t n) {
  const ScaleSoftcapPush push{u32(n), scale, cap};
  dispatch(s, Shader::scale_softcap, 0, {x}, &push, sizeof push, fold(ceil_div(static_cast<std::uint64_t>(n), wg_)));
  return named("scale_softcap");
}

std::string gated_activation_name(model::Activation act) { return fmt::format("{}_mul", model::activation_name(act)); }

std::string Kernels::named(std::string_view variant, std::optional<model::DType> weights) const {
  const std::string_view activations = pipelines_->activations() == Activations::f16 ? ".f16" : "";
  return weights ? fmt::format("{}{}/{}", variant, activations, model::dtype_name(*weights))
                 : fmt::format("{}{}", variant, activations);
}

int Kernels::max_head_dim() const {
  return static_cast<int>(std::min(kMaxHeadDim, kAttentionChannels * attention_wg_));
}

std::vector<std::string> Kernels::planned(model::OpClass cls, model::DType weight_dtype) const {
  switch (cls) {
    case model::OpClass::embedding: return {named("embed-gather", weight_dtype)};
    case model::OpClass::norm:
      if (llama_cpp_) return {named("rms_norm-ggml")};
      if (fuses_norms()) return {named("add+rms_norm-tree"), named("rms_norm-tree")};
      return {named("rms_norm-tree")};
    case model::OpClass::gemm: {
      // prefill's variant (of aligned shapes, of large aligned products, then of the others), then decode's
      std::vector<std::string> names;
      constexpr int kLarge = 1 << 20;
      for (const auto& [rows, aligned] :
           {std::pair{2, true}, std::pair{kLarge, true}, std::pair{2, false}, std::pair{1, true}})
        add_once(names,
                 gemm_name(gemm_variant(rows, rows == kLarge ? kLarge : 8, weight_dtype, aligned), weight_dtype) +
                     dot_suffix(weight_dtype));
      return names;
    }
    case model::OpClass::rope: return {named("rope-table")};
    case model::OpClass::attention: {
      // prefill's, a short chunk's past 32 positions, then decode's, each once
      std::vector<std::string> names;
      AttentionShape shape;
      shape.softcap = attention_softcap_;
      for (const auto& [rows, keys] :
           {std::pair{kFlashMinRowsPerSequence, 1}, std::pair{2, 1000}, std::pair{1, 1000}}) {
        shape.rows = rows, shape.keys = keys;
        add_once(names, attention_name(plan_attention(shape).kind));
      }
      return names;
    }
    case model::OpClass::residual:
      if (fuses_norms()) return {named("add+rms_norm-tree")};
      return {named("add")};
    case model::OpClass::activation: return {named(gated_activation_name(activation_))};
    case model::OpClass::routing: return {named("moe-route")};
    case model::OpClass::experts: {  // prefill's, then decode's
      const std::string rest = "+" + named(gated_activation_name(activation_)) + "+" + named("moe-sum");
      std::vector<std::string> names;
      if (tiled_ok_ && overrides_.experts != KernelOverrides::Experts::matvec)
        names.push_back(named("matmul-experts-tiled-64x64", weight_dtype) + rest);
      if (overrides_.experts != KernelOverrides::Experts::tiled)
        names.push_back(named(expert_matmul_name(), weight_dtype) + rest);
      return names;
    }
  }
  return {};
}

}  // namespace tapdiff::gpu
