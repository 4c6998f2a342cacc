#pragma once
// The compute shaders embedded in the binary, one line each in gpu/shaders/shaders.def: SPIR-V
// compiled from shaders/*.comp at build time, in a build for f32 activations, f16 activations
// (shaders/activations.glsl) or both; and matmul-coop2 and attention-coop2, whose SPIR-V
// gpu/matmul_coop2.h and gpu/attention_coop2.h write the first time the process asks for a shader.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace tapdiff::gpu {

// The shaders of gpu/shaders/shaders.def, in its order.
enum class Shader : std::uint8_t {
#define TAPDIFF_SHADER(id, source, builds, bindings, outputs, defines) id,
#define TAPDIFF_WRITTEN(id, bindings, outputs) id,
#include "gpu/shaders/shaders.def"
#undef TAPDIFF_SHADER
#undef TAPDIFF_WRITTEN
};

inline constexpr std::size_t kShaderCount = 0
#define TAPDIFF_SHADER(id, source, builds, bindings, outputs, defines) +1
#define TAPDIFF_WRITTEN(id, bindings, outputs) +1
#include "gpu/shaders/shaders.def"
#undef TAPDIFF_SHADER
#undef TAPDIFF_WRITTEN
    ;

// How activation buffers (op outputs, the KV cache) store their elements: --dtype f32, f16, or bf16
// (bf16 values held in f32 words: the arithmetic of a device without bf16, with bf16's rounding).
enum class Activations : std::uint8_t { f32, f16, bf16 };

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
