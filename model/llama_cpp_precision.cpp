#include "model/llama_cpp_precision.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "model/errors.h"
#include "model/weights.h"

namespace tapdiff::model {

DotType dot_type(DType weights) {
  switch (weights) {
    case DType::f32: return DotType::f32;
    case DType::f16: return DotType::f16;
    case DType::bf16: return DotType::bf16;
    case DType::q8_0:
    case DType::q4_0:
    case DType::q5_0:
    case DType::iq4_nl: return DotType::q8_0;
    case DType::q4_1:
    case DType::q5_1: return DotType::q8_1;
    case DType::q2_k:
    case DType::q3_k:
    case DType::q4_k:
    case DType::q5_k:
    case DType::q6_k:
    case DType::iq4_xs: return DotType::q8_k;
  }
  TAPDIFF_ASSERT(false, "weight type {} has no dot-product type", static_cast<int>(weights));
  return DotType::f32;
}

const char* dot_type_name(DotType t) {
  switch (t) {
    case DotType::f32: return "f32";
    case DotType::f16: return "f16";
    case DotType::bf16: return "bf16";
    case DotType::q8_0: return "q8_0";
    case DotType::q8_1: return "q8_1";
    case DotType::q8_k: return "q8_k";
  }
  return "?";
}

void require_llama_cpp_precision(const Model& m) {
  if (m.config().experts.count > 0)
    throw UsageError(
        fmt::format("{}: the llama.cpp emulation does not round a mixture of experts' products "
                    "(--dtype llama.cpp is for dense models)",
                    m.path().string()));
  Block block = m.config().block;
  block.qkv_bias = block.o_bias = block.mlp_bias = false;
  if (block != Block{})
    throw UsageError(
        fmt::format("{}: the llama.cpp emulation is held to llama.cpp on Llama-family blocks only; "
                    "this model's block ({}) is not (docs/llama-cpp.md)",
                    m.path().string(), to_json(m.config().block).dump()));
}

}  // namespace tapdiff::model
