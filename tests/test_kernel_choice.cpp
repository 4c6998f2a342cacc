// The choice of kernel variants (gpu/kernel_choice.h) as a pure function of a device's profile:
// lavapipe, an H100 and an H200 as their drivers describe them (limits and features as `tapdiff
// devices` and vulkaninfo list them), in f32, f16 and llama.cpp's precision, for the shapes of an
// 8B model's products and attention. No GPU needed: these are the choices the engine makes there.
#include <array>

#include <gtest/gtest.h>

#include <string>

#include "gpu/kernel_choice.h"
#include "gpu/kernels.h"
#include "model/errors.h"

namespace tapdiff::testing {
namespace {

using gpu::Activations;
using gpu::AttentionShape;
using gpu::DeviceProfile;
using gpu::KernelChoice;
using model::DType;
using Gemm = KernelChoice::Gemm;
using Kind = KernelChoice::AttentionPlan::Kind;

constexpr int kHeadDim = 128, kGroup = 4;  // an 8B model's attention: 32 heads over 8 K/V heads

// Mesa's lavapipe (llvmpipe, LLVM 15, 256-bit vectors), as on the CI machines.
DeviceProfile lavapipe(Activations activations) {
  DeviceProfile p;
  p.info.name = "llvmpipe (LLVM 15.0.6, 256 bits)";
  p.info.subgroup_size = 8;
  p.info.subgroup_arithmetic = true;
  p.info.subgroup_shuffle_vote = true;
  p.info.max_workgroup_invocations = 1024;
  p.info.max_workgroup_size_x = 1024;
  p.info.max_shared_memory = 32768;
  p.info.max_workgroup_count[0] = p.info.max_workgroup_count[1] = p.info.max_workgroup_count[2] = 65535;
  p.activations = activations;
  const std::string why = activations == Activations::f16
                              ? p.info.name + " does not offer VK_NV_cooperative_matrix in compute shaders"
                              : "the cooperative-matrix GEMM runs in the f16 mode only (--dtype f16)";
  p.cooperative_matrix_missing = p.cooperative_matrix2_missing = p.cooperative_matrix2_wide_missing =
      p.attention_coop2_missing = why;
  return p;
}

// NVIDIA's Hopper cards (driver 580): both cooperative-matrix extensions, subgroups of 32, 48 KiB of
// shared memory per workgroup.
DeviceProfile hopper(const std::string& name, Activations activations) {
  DeviceProfile p;
  p.info.name = name;
  p.info.subgroup_size = 32;
  p.info.subgroup_arithmetic = true;
  p.info.subgroup_shuffle_vote = true;
  p.info.denorm_preserve_f16 = true;
  p.info.rounding_rte_f16 = true;
  p.info.max_workgroup_invocations = 1024;
  p.info.max_workgroup_size_x = 1024;
  p.info.max_shared_memory = 49152;
  p.info.max_workgroup_count[0] = 2147483647;
  p.info.max_workgroup_count[1] = p.info.max_workgroup_count[2] = 65535;
  p.activations = activations;
  if (activations != Activations::f16) {
    p.cooperative_matrix_missing = "the cooperative-matrix GEMM runs in the f16 mode only (--dtype f16)";
    p.cooperative_matrix2_missing = p.cooperative_matrix2_wide_missing = p.attention_coop2_missing =
        "matmul-coop2 runs in the f16 mode only (--dtype f16)";
  }
  return p;
}

KernelChoice choice(const DeviceProfile& p, const std::string& kernels = "", bool llama_cpp = false,
                    model::Block block = {}) {
  return KernelChoice(p, gpu::parse_kernel_overrides(kernels), std::array{gpu::HeadShape{kHeadDim, kGroup}}, block,
                      llama_cpp);
}

AttentionShape pass(int rows, int keys, float softcap = 0) {
  AttentionShape a;
  a.rows = rows, a.heads = 32, a.kv_heads = 8, a.head_dim = kHeadDim, a.keys = keys, a.softcap = softcap;
  return a;
}

std::string joined(const std::vector<gpu::KernelId>& ids) {
  std::string out;
  for (const gpu::KernelId& id : ids) out += (out.empty() ? "" : ", ") + gpu::to_string(id);
  return out;
}

// --kernels: each key's values set that override; anything else is refused with every key's values.
TEST(KernelChoice, KernelOverridesParseEveryKeysValues) {
  using O = gpu::KernelOverrides;
  const O o = gpu::parse_kernel_overrides(
      "matmul=coop2-128x256,matvec=shared,attention=two-pass,decode-attention=flash-split,experts=matvec,norm=apart");
  EXPECT_EQ(o.matmul, O::Matmul::coop2_wide);
  EXPECT_EQ(o.matvec, O::Matvec::shared);
  EXPECT_EQ(o.attention, O::Attention::two_pass);
  EXPECT_EQ(o.decode_attention, O::DecodeAttention::flash_split);
  EXPECT_EQ(o.experts, O::Experts::matvec);
  EXPECT_EQ(o.norm, O::Norm::apart);
  EXPECT_EQ(gpu::parse_kernel_overrides("matmul=coop-k16").matmul, O::Matmul::coop_k16);
  EXPECT_EQ(gpu::parse_kernel_overrides("matmul=coop2-128x128").matmul, O::Matmul::coop2_narrow);
  EXPECT_EQ(gpu::parse_kernel_overrides("attention=coop2,attention=auto").attention, O::Attention::automatic);
  for (const std::string bad : {"matmul=fast", "norm", "colour=red", "matmul=tiled,matvec=Shared"}) {
    try {
      gpu::parse_kernel_overrides(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(
                    "--kernels: expected matmul=auto|tiled|coop|coop-k16|coop2|coop2-128x128|coop2-128x256|matvec, "
                    "matvec=auto|subgroup|shared, attention=auto|coop2|coop|flash|two-pass, "
                    "decode-attention=auto|decode-split|flash-split, experts=auto|tiled|matvec, "
                    "norm=auto|fused|apart (comma-separated), found '"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(KernelChoice, HopperInF16RunsTheTensorCoreKernelsWhereTheyTakeTheShape) {
  for (const std::string name : {"NVIDIA H100 80GB HBM3", "NVIDIA H200"}) {
    const KernelChoice c = choice(hopper(name, Activations::f16));
    // A 2048-token prefill's products: 16 x 16 workgroups of 128 x 256, the wide tile; 64 rows make
    // 16 of them, too few: the 128 x 128 tile; block weights: matmul-coop; a fault: the narrow build.
    EXPECT_EQ(c.gemm(2048, 4096, DType::f16, true), Gemm::coop2_wide) << name;
    EXPECT_EQ(c.gemm(64, 4096, DType::f16, true), Gemm::coop2) << name;
    EXPECT_EQ(c.gemm(2048, 4096, DType::q8_0, true), Gemm::coop) << name;
    EXPECT_EQ(c.gemm(2048, 4100, DType::f16, false), Gemm::coop) << name;
    EXPECT_EQ(c.gemm(2048, 4096, DType::f16, true, gpu::kFaultGemmF16Accumulate), Gemm::coop2) << name;
    // Decode: the subgroup matrix-vector kernel, K split until a product has 8192 subgroups.
    EXPECT_EQ(c.gemm(1, 4096, DType::f16, true), Gemm::matvec) << name;
    EXPECT_EQ(c.matvec_shader(), gpu::Shader::matvec_subgroup) << name;
    EXPECT_EQ(c.matvec_split(4096, 4096), 2u) << name;
    EXPECT_EQ(c.matvec_split(1024, 14336), 4u) << name;
    EXPECT_EQ(c.matvec_split(14336, 4096), 1u) << name;
    EXPECT_EQ(joined(c.planned(model::OpClass::gemm, DType::f16)),
              "matmul-coop2-128x128.f16/f16, matmul-coop2-128x256.f16/f16, matmul-coop-128x128.f16/f16, "
              "matvec-subgroup.f16/f16")
        << name;
    // Attention: coop2 for prefill; attention-coop where a fault is planted or scores are capped;
    // the decode kernel over splits of 32 keys; a short chunk through flash's split-KV.
    EXPECT_EQ(c.attention(pass(2048, 2048)).kind, Kind::coop2) << name;
    EXPECT_EQ(c.attention(pass(2048, 2048), gpu::kFaultAttentionNoMax).kind, Kind::coop) << name;
    EXPECT_EQ(c.attention(pass(2048, 2048, 50.0f)).kind, Kind::coop) << name;
    const KernelChoice::AttentionPlan decode = c.attention(pass(1, 1000));
    EXPECT_EQ(decode.kind, Kind::decode) << name;
    EXPECT_EQ(decode.split_keys, 32u) << name;
    EXPECT_EQ(decode.splits, 32u) << name;
    EXPECT_EQ(c.attention(pass(2, 1000)).kind, Kind::split) << name;
    EXPECT_EQ(gpu::to_string(c.attention_kernel(Kind::coop2, kHeadDim)), "attention-coop2-64x16.f16") << name;
    EXPECT_EQ(c.flash_keys(), 32u) << name;
    EXPECT_TRUE(c.fuses_norms()) << name;
  }
}

TEST(KernelChoice, HopperInF32RunsTheTiledGemmAndFlash) {
  const KernelChoice c = choice(hopper("NVIDIA H100 80GB HBM3", Activations::f32));
  EXPECT_EQ(c.gemm(2048, 4096, DType::f16, true), Gemm::tiled);
  EXPECT_EQ(gpu::to_string(c.gemm_kernel(Gemm::tiled, DType::q4_k)), "matmul-tiled-64x64/q4_k");
  EXPECT_EQ(c.attention(pass(2048, 2048)).kind, Kind::flash);
  EXPECT_EQ(gpu::to_string(c.attention_kernel(Kind::flash, kHeadDim)), "attention-flash-32x32");
  EXPECT_EQ(joined(c.planned(model::OpClass::attention, DType::f32)),
            "attention-flash-32x32, attention-flash-split-32x32, attention-decode-split");
  // What f32 cannot run is a clear error when forced.
  try {
    choice(hopper("NVIDIA H100 80GB HBM3", Activations::f32), "matmul=coop");
    FAIL() << "matmul=coop in f32 mode was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--kernels matmul=coop: the cooperative-matrix GEMM runs in the f16 mode"),
              std::string::npos)
        << e.what();
  }
}

TEST(KernelChoice, LavapipeRunsTheScalarKernelsWithTheTilesItsSharedMemoryHolds) {
  for (const Activations a : {Activations::f32, Activations::f16}) {
    const KernelChoice c = choice(lavapipe(a));
    EXPECT_EQ(c.gemm(2048, 4096, DType::f16, true), Gemm::tiled);
    EXPECT_EQ(c.gemm(1, 4096, DType::f16, true), Gemm::matvec);
    EXPECT_EQ(c.matvec_shader(), gpu::Shader::matvec_subgroup);
    // 32 KiB of shared memory: flash's tiles of 16 keys at head_dim 128
    EXPECT_EQ(c.flash_keys(), 16u);
    EXPECT_EQ(c.attention(pass(2048, 2048)).kind, Kind::flash);
    EXPECT_EQ(c.attention(pass(1, 1000)).kind, Kind::decode);
    EXPECT_EQ(gpu::to_string(c.attention_kernel(Kind::flash, kHeadDim)),
              a == Activations::f16 ? "attention-flash-32x16.f16" : "attention-flash-32x16");
  }
  try {
    choice(lavapipe(Activations::f16), "matmul=coop");
    FAIL() << "matmul=coop on lavapipe was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("does not offer VK_NV_cooperative_matrix"), std::string::npos) << e.what();
  }
}

// A model whose layers' heads differ (Gemma 4's sliding and full layers): an attention variant runs
// only where it takes every layer's, and the planned kernels name each head width's.
TEST(KernelChoice, AttentionVariantsTakeEveryLayersHeads) {
  const DeviceProfile h200 = hopper("NVIDIA H200", Activations::f16);
  const std::array sliding_and_full{gpu::HeadShape{64, 2}, gpu::HeadShape{128, 16}};
  const KernelChoice both(h200, {}, sliding_and_full, model::Block{});
  EXPECT_EQ(both.attention(pass(2048, 2048)).kind, Kind::coop2);
  EXPECT_EQ(joined(both.planned(model::OpClass::attention, DType::f32)),
            "attention-coop2-64x32.f16, attention-coop2-64x16.f16, attention-flash-split-32x32.f16, "
            "attention-decode-split.f16");
  // a full layer of 24 channels a head: no cooperative-matrix attention (multiples of 16) in any layer
  const std::array narrow_full{gpu::HeadShape{64, 2}, gpu::HeadShape{24, 16}};
  const KernelChoice narrow(h200, {}, narrow_full, model::Block{});
  EXPECT_EQ(narrow.attention(pass(2048, 2048)).kind, Kind::flash);
  try {
    KernelChoice(h200, gpu::parse_kernel_overrides("attention=coop"), narrow_full, model::Block{});
    FAIL() << "attention=coop over a layer of head_dim 24 was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("head_dim a multiple of 16 up to 128, the model has 24"), std::string::npos)
        << e.what();
  }
  // a full layer wider than flash takes: two-pass attention in every layer
  const std::array wide_full{gpu::HeadShape{128, 2}, gpu::HeadShape{256, 16}};
  EXPECT_EQ(KernelChoice(h200, {}, wide_full, model::Block{}).attention(pass(2048, 2048)).kind, Kind::two_pass);
}

TEST(KernelChoice, LlamaCppPrecisionRunsTwoPassAttentionGgmlsNormEverywhereAndItsGeluTable) {
  for (const DeviceProfile& p : {lavapipe(Activations::f32), hopper("NVIDIA H200", Activations::f32)}) {
    const KernelChoice c = choice(p, "", true);
    EXPECT_EQ(c.attention(pass(2048, 2048)).kind, Kind::two_pass) << p.info.name;
    EXPECT_EQ(c.attention(pass(1, 1000)).kind, Kind::two_pass) << p.info.name;
    EXPECT_FALSE(c.fuses_norms()) << p.info.name;
    EXPECT_EQ(joined(c.planned(model::OpClass::norm, DType::f32)), "rms_norm-ggml") << p.info.name;
    EXPECT_EQ(joined(c.planned(model::OpClass::gemm, DType::q4_k)),
              "matmul-tiled-64x64/q4_k+llama.cpp-q8_k, matvec-subgroup/q4_k+llama.cpp-q8_k")
        << p.info.name;
    EXPECT_THROW(choice(p, "attention=flash", true), UsageError) << p.info.name;
    EXPECT_THROW(choice(p, "norm=fused", true), UsageError) << p.info.name;
    // GELU (tanh form) from llama.cpp's f16 table; SiLU as in f32
    model::Block gemma;
    gemma.activation = model::Activation::gelu_tanh;
    EXPECT_EQ(joined(choice(p, "", true, gemma).planned(model::OpClass::activation, DType::f32)),
              "gelu_tanh_mul+llama.cpp-f16-gelu-table")
        << p.info.name;
    EXPECT_EQ(joined(choice(p, "", false, gemma).planned(model::OpClass::activation, DType::f32)), "gelu_tanh_mul")
        << p.info.name;
    EXPECT_EQ(joined(c.planned(model::OpClass::activation, DType::f32)), "silu_mul") << p.info.name;
  }
}

}  // namespace
}  // namespace tapdiff::testing
