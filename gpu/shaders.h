#pragma once
// The compute shaders embedded in the binary (SPIR-V compiled from shaders/*.comp at build time),
// each in two builds: f32 activations and f16 activations (shaders/activations.glsl); and
// matmul-coop2 and attention-coop2, whose SPIR-V gpu/matmul_coop2.h and gpu/attention_coop2.h write
// the first time the process asks for a shader.
#include <cstdint>
#include <span>
#include <string_view>

namespace tapdiff::gpu {

enum class Shader : std::uint8_t {
  embed,                    // embed.comp
  rms_norm,                 // rms_norm.comp
  add_rms_norm,             // rms_norm.comp with ADD_FIRST: a residual add and the norm of its sum
  matmul_tiled,             // matmul_tiled.comp
  matmul_coop,              // matmul_coop.comp (f16 activations only)
  matmul_coop_k16,          // matmul_coop.comp with COOP_BK=16 (f16 activations only)
  matmul_coop_probe,        // matmul_coop.comp with COOP_PROBE (f16 only; benchmarks, not the engine)
  matmul_coop2,             // gpu/matmul_coop2.h, written as SPIR-V (f16 activations only)
  matmul_coop2_fault,       // the same with f16 sums: its gemm-f16-accum fault
  matmul_coop2_wide,        // the same with kCoop2WideTile (no fault build: a fault runs the one above)
  matvec_subgroup,          // matvec.comp with SUBGROUP
  matvec_shared,            // matvec.comp
  rope,                     // rope.comp
  attention,                // attention.comp
  attention_flash,          // attention_flash.comp
  attention_split,          // attention_flash.comp with SPLIT
  attention_combine,        // attention_combine.comp
  attention_coop,           // attention_coop.comp (f16 activations only)
  attention_decode,         // attention_decode.comp
  attention_coop2,          // gpu/attention_coop2.h, written as SPIR-V (f16 activations only)
  copy,                     // copy.comp
  add,                      // add.comp
  gated_act,                // gated_act.comp
  scale_softcap,            // scale_softcap.comp
  matvec_experts_subgroup,  // matvec.comp with SUBGROUP and EXPERTS
  matvec_experts_shared,    // matvec.comp with EXPERTS
  moe_topk,                 // moe_route.comp
  moe_weights,              // moe_route.comp with WEIGHTS
  moe_sum,                  // moe_sum.comp
  moe_plan,                 // moe_plan.comp
  matmul_tiled_experts,     // matmul_tiled.comp with EXPERTS
  round_dot,                // round_dot.comp (f32 activations only, as the three below)
  q8_1_correction,          // q8_1_correction.comp
  rms_norm_ggml,            // rms_norm_ggml.comp
  attention_llama_cpp,      // attention.comp with LLAMA_CPP
};

// How activation buffers (op outputs, the KV cache) store their elements: --dtype f32 or f16.
enum class Activations : std::uint8_t { f32, f16 };

inline std::uint32_t activation_bytes(Activations a) { return a == Activations::f16 ? 2 : 4; }

struct ShaderCode {
  std::string_view name;
  std::span<const std::uint32_t> spirv;  // empty: no build for this activation type
  std::uint32_t bindings;                // storage buffers 0 .. bindings-1: inputs first, the outputs last
  std::uint32_t outputs = 1;             // how many of the last bindings the shader writes
};

// Asserts that the shader has a build for `activations`.
const ShaderCode& shader_code(Shader shader, Activations activations);

// Bytes of the push-constant range every pipeline layout declares (each shader uses a prefix).
inline constexpr std::uint32_t kPushConstantBytes = 64;

}  // namespace tapdiff::gpu
