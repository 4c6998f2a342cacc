#pragma once
// The reference as an engine of another precision computes (S = float): the math of ops.h with
// that engine's roundings (emulation.h: one row per precision) at the op boundaries, and, for
// llama.cpp, its own steps where they differ from the math (llama_cpp_rounding.h: ggml's norms,
// GELU table, RoPE angles, attention scale; the dot-product types of its products; its Vulkan
// backend's f16 tiles).
#include <cstdint>
#include <memory>

#include "reference/ops.h"

namespace tapdiff::reference {

// precision: one the reference emulates (not f64 or f32).
std::unique_ptr<Ops<float>> make_emulated_ops(const model::Model& model, WeightStore<float>& weights,
                                              model::Precision precision, std::uint64_t weight_budget);

}  // namespace tapdiff::reference
