#pragma once
// The Vulkan engine as the tests run it: with the Khronos validation layer on, and a check that
// the layer reported nothing.
#include <filesystem>
#include <memory>

#include "formats/synth.h"
#include "gpu/faults.h"
#include "gpu/vulkan_engine.h"
#include "model/weights.h"

namespace tapdiff::testing {

// The validation layer is on whatever TAPDIFF_VK_VALIDATION says; the other options as given.
std::unique_ptr<gpu::VulkanEngine> validated_vulkan_engine(const model::Model& m,
                                                           gpu::VulkanEngineOptions options = {});

// Fails the test on any validation message, and when the layer is off.
void expect_clean(const gpu::VulkanEngine& engine);

// The synth model a planted fault is tested in: synth:tiny; synth:tiny-moe for a fault of the
// mixture of experts, as Qwen2-MoE (a gated shared expert) for the shared expert's and as GLM-4.5
// (a grouped sigmoid router with a selection bias) for that router's; synth:tiny-mla for latent
// attention's.
formats::SynthOptions fault_synth_model(const gpu::FaultInfo& fault);
// (chunk-boundary-off-by-one's: every layer attending in chunks of 6, its attention_chunk, which synth
// cannot write, since llama.cpp fixes Llama 4's chunks at 8192 positions; latent attention's: the
// scores' scale of a YaRN-scaled DeepSeek, which synth does not write either: load_fault_model
// applies them.)
// (indexer-relu-dropped's: DeepSeek-V3.2's sparse attention, which no GGUF holds: write_sparse_model.)
// That model from the synth file written of `options`, with the chunks and scale they ask for.
std::unique_ptr<model::Model> load_fault_model(const std::filesystem::path& synth_file,
                                               const formats::SynthOptions& options);

// A DeepSeek-V3.2 Hugging Face folder (deepseek_v32: latent attention with a sparse attention's
// indexer of 4 heads of 16 channels keeping 12 positions, dense layers) of `layers` layers and a
// vocabulary of 512, its weights seeded random (norms near 1, their biases and the matrices' scale
// as a trained model's). Returns the folder.
std::filesystem::path write_sparse_model(const std::filesystem::path& folder, int layers);

}  // namespace tapdiff::testing
