#include "gpu/shaders.h"

#include <array>
#include <vector>

#include "gpu/attention_coop2.h"
#include "gpu/matmul_coop2.h"
#include "model/errors.h"

namespace tapdiff::gpu {
namespace {

// Every build's `const uint32_t ID_spv[]` / `ID_f16_spv[]` (glslangValidator --vn; gpu/CMakeLists.txt).
#include "shader_builds.h"

// matmul-coop2's words: f32 sums, or f16 sums (its fault); the wide tile's.
std::span<const std::uint32_t> coop2_words(bool f16_sums) {
  static const std::vector<std::uint32_t> clean = matmul_coop2_spirv(kCoop2Tile, false);
  static const std::vector<std::uint32_t> fault = matmul_coop2_spirv(kCoop2Tile, true);
  return f16_sums ? fault : clean;
}
std::span<const std::uint32_t> coop2_wide_words() {
  static const std::vector<std::uint32_t> words = matmul_coop2_spirv(kCoop2WideTile, false);
  return words;
}

std::span<const std::uint32_t> attention_coop2_words() {
  static const std::vector<std::uint32_t> words = attention_coop2_spirv(kCoop2AttentionTile);
  return words;
}

// The words of the shaders tapdiff writes (TAPDIFF_WRITTEN in shaders.def).
std::span<const std::uint32_t> written_words(Shader shader) {
  switch (shader) {
    case Shader::matmul_coop2: return coop2_words(false);
    case Shader::matmul_coop2_fault: return coop2_words(true);
    case Shader::matmul_coop2_wide: return coop2_wide_words();
    case Shader::attention_coop2: return attention_coop2_words();
    default: break;
  }
  TAPDIFF_ASSERT(false, "shader {} is not written by tapdiff", static_cast<int>(shader));
  return {};
}

// A line's entry in the table of f32 activations (F32_builds) and of f16 (F16_builds).
#define TAPDIFF_F32_both(id, bindings, outputs) \
  ShaderCode { #id, id##_spv, bindings, outputs }
#define TAPDIFF_F32_f32(id, bindings, outputs) \
  ShaderCode { #id, id##_spv, bindings, outputs }
#define TAPDIFF_F32_words(id, bindings, outputs) \
  ShaderCode { #id, id##_spv, bindings, outputs }
#define TAPDIFF_F32_f16(id, bindings, outputs) \
  ShaderCode { #id, {}, bindings, outputs }
#define TAPDIFF_F16_both(id, bindings, outputs) \
  ShaderCode { #id "_f16", id##_f16_spv, bindings, outputs }
#define TAPDIFF_F16_f16(id, bindings, outputs) \
  ShaderCode { #id "_f16", id##_f16_spv, bindings, outputs }
#define TAPDIFF_F16_words(id, bindings, outputs) \
  ShaderCode { #id, id##_spv, bindings, outputs }
#define TAPDIFF_F16_f32(id, bindings, outputs) \
  ShaderCode { #id "_f16", {}, bindings, outputs }

#define TAPDIFF_BF16_both(id, bindings, outputs) \
  ShaderCode { #id "_bf16", id##_bf16_spv, bindings, outputs }
#define TAPDIFF_BF16_words(id, bindings, outputs) \
  ShaderCode { #id, id##_spv, bindings, outputs }
#define TAPDIFF_BF16_f32(id, bindings, outputs) \
  ShaderCode { #id "_bf16", {}, bindings, outputs }
#define TAPDIFF_BF16_f16(id, bindings, outputs) \
  ShaderCode { #id "_bf16", {}, bindings, outputs }

using ShaderTable = std::array<std::array<ShaderCode, kShaderCount>, 3>;  // by Activations

// In the order of the Shader enum: f32 activations, then f16. Made on the first call (the written
// kernels' words are written then), not at the start of every process.
const ShaderTable& shader_table() {
  static const ShaderTable table = {{
      {{
#define TAPDIFF_SHADER(id, source, builds, bindings, outputs, defines) TAPDIFF_F32_##builds(id, bindings, outputs),
#define TAPDIFF_WRITTEN(id, bindings, outputs) ShaderCode{#id, {}, bindings, outputs},
#include "gpu/shaders/shaders.def"
#undef TAPDIFF_SHADER
#undef TAPDIFF_WRITTEN
      }},
      {{
#define TAPDIFF_SHADER(id, source, builds, bindings, outputs, defines) TAPDIFF_F16_##builds(id, bindings, outputs),
#define TAPDIFF_WRITTEN(id, bindings, outputs) ShaderCode{#id "_f16", written_words(Shader::id), bindings, outputs},
#include "gpu/shaders/shaders.def"
#undef TAPDIFF_SHADER
#undef TAPDIFF_WRITTEN
      }},
      {{
#define TAPDIFF_SHADER(id, source, builds, bindings, outputs, defines) TAPDIFF_BF16_##builds(id, bindings, outputs),
#define TAPDIFF_WRITTEN(id, bindings, outputs) ShaderCode{#id "_bf16", {}, bindings, outputs},
#include "gpu/shaders/shaders.def"
#undef TAPDIFF_SHADER
#undef TAPDIFF_WRITTEN
      }},
  }};
  return table;
}

}  // namespace

const ShaderCode& shader_code(Shader shader, Activations activations) {
  const ShaderCode& code = shader_table()[static_cast<std::size_t>(activations)][static_cast<std::size_t>(shader)];
  TAPDIFF_ASSERT(!code.spirv.empty(), "shader {} has no build for these activations", code.name);
  return code;
}

}  // namespace tapdiff::gpu
