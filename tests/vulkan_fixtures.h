#pragma once
// The Vulkan engine as the tests run it: with the Khronos validation layer on, and a check that
// the layer reported nothing.
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
// (a grouped sigmoid router with a selection bias) for that router's.
formats::SynthOptions fault_synth_model(const gpu::FaultInfo& fault);

}  // namespace tapdiff::testing
