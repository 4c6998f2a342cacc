#pragma once
// Where a Vulkan engine's device time goes, op by op (device timestamps after every op,
// VulkanEngine::set_profiling): the prefill of a prompt and the decode steps after it, for each
// kernel variant side by side, as a Markdown section.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gpu/vulkan_engine.h"
#include "model/graph.h"
#include "model/weights.h"

namespace tapdiff::bench {

struct ProfiledEngine {
  std::string name;  // the variant, as the tables name it
  gpu::VulkanEngine* engine = nullptr;
};

// One profiled prefill of `prompt` and one profiled run of the prompt then `decode_steps` steps
// per engine (profiling is switched off again after).
std::string op_profile_section(std::span<const ProfiledEngine> engines, const model::Graph& graph,
                               const model::Model& m, const std::vector<std::int32_t>& prompt, int decode_steps);

}  // namespace tapdiff::bench
