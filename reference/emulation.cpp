#include "reference/emulation.h"

namespace tapdiff::reference {

Roundings roundings(model::Precision p) {
  using model::Precision;
  switch (p) {
    case Precision::f64:
    case Precision::f32: return {};
    case Precision::f16: return {.stored = Storage::f16, .matrices = Storage::f16};
    case Precision::f16_acc16: return {.stored = Storage::f16, .matrices = Storage::f16, .f16_sums = true};
    case Precision::bf16: return {.stored = Storage::bf16, .matrices = Storage::bf16};
    case Precision::fp8_e4m3:
    case Precision::fp8_e5m2: {
      const Storage fp8 = p == Precision::fp8_e4m3 ? Storage::fp8_e4m3 : Storage::fp8_e5m2;
      return {.stored = Storage::bf16, .matrices = fp8, .activations = fp8, .kv = fp8};
    }
    case Precision::llama_cpp:
      return {.llama_cpp_dot_types = true, .kv = Storage::f16, .ggml_steps = true, .llama_cpp_graph = true};
    case Precision::llama_cpp_vulkan:
      return {.f16_tile_rows = 9, .f16_tile_attention = true, .kv = Storage::f16, .llama_cpp_graph = true};
  }
  return {};
}

bool is_layer_product(model::WeightKind kind) {
  return !model::is_vector(kind) && model::is_per_layer(kind) && kind != model::WeightKind::moe_router;
}

Storage weight_storage(const Roundings& r, model::WeightKind kind) {
  return is_layer_product(kind) ? r.matrices : r.stored;
}

}  // namespace tapdiff::reference
