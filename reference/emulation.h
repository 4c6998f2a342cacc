#pragma once
// What the reference rounds, besides its own f32 arithmetic, to emulate an engine of each
// precision (model/precision.def): one row per precision (emulation.cpp), read by the engine.
#include "model/precision.h"
#include "model/weights.h"
#include "reference/rounding.h"

namespace tapdiff::reference {

struct Roundings {
  // Op outputs, teacher-forced values, norm weights, the embedding and output matrices at load.
  Storage stored = Storage::f32;
  // The layers' weight matrices (attention, FFN, experts; not the router) at load.
  Storage matrices = Storage::f32;
  // A layer product's input before it multiplies (beyond `stored`).
  Storage activations = Storage::f32;
  // Each product's input converted to its weight type's dot-product type, as ggml-cpu does
  // (formats/llama_cpp_precision.h), the embedding and output matrices' products included.
  bool llama_cpp_dot_types = false;
  // The layers' products add into f16 sums: each run of 16 products summed in f32 (one tensor-core
  // MMA's depth), then added to the output's f16 sum, rounded; the attention keeps f32 sums.
  bool f16_sums = false;
  // Products of at least this many rows (llama.cpp's Vulkan mat-mat kernels, as a device with f16
  // arithmetic and neither cooperative matrices nor integer dot products runs them) take their
  // weights (dequantized) and activations as f16 values and add the products one at a time into
  // f16 sums, F32 weights into f32 sums; products of fewer rows (its mat-vec kernels) compute in
  // f32. 0: none.
  int f16_tile_rows = 0;
  // The attention of chunks of 2 rows or more takes Q and the probabilities as f16 values and adds
  // the probabilities times V one at a time into f16 sums (llama.cpp's Vulkan mat-mat kernels);
  // one row computes in f32.
  bool f16_tile_attention = false;
  // K and V rows entering the cache (beyond `stored`).
  Storage kv = Storage::f32;
  // llama.cpp's CPU graph: RoPE angles stepped in f32, RMSNorm and GELU as ggml-cpu computes them,
  // its attention scale, the attention's Q and probabilities rounded to f16 for their products.
  bool ggml_steps = false;
  // The emulation holds llama.cpp's graphs: a model it does not (formats/llama_cpp_precision.h,
  // require_llama_cpp_precision) is refused.
  bool llama_cpp_graph = false;
};

// The roundings that emulate an engine computing in p; nothing for f64 and f32.
Roundings roundings(model::Precision p);

// A product of a layer's own matrices (attention, FFN, experts; not the router): those `matrices`,
// `activations` and `f16_sums` are about.
bool is_layer_product(model::WeightKind kind);

// What a weight of that kind is rounded to at load.
Storage weight_storage(const Roundings& r, model::WeightKind kind);

}  // namespace tapdiff::reference
