#pragma once
// What the driver says about each compiled kernel of a Vulkan engine (registers, code size, ...:
// VK_KHR_pipeline_executable_properties), as a Markdown section.
#include <string>
#include <vector>

#include "gpu/vulkan_engine.h"

namespace tapdiff::bench {

// A table of the engine's kernels (one row each, one column per statistic the driver names), or a
// line saying the device does not offer them. `variant` names the engine as the tables do.
std::string pipeline_statistics_section(const gpu::VulkanEngine& engine, const std::string& variant);
// The same table for pipelines made outside an engine, on the device named `device`.
std::string pipeline_statistics_section(const std::vector<gpu::PipelineStatistics>& rows, const std::string& device,
                                        const std::string& variant);

}  // namespace tapdiff::bench
