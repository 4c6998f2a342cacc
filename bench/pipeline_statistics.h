#pragma once
// What the driver says about each compiled kernel (registers, code size, ...:
// VK_KHR_pipeline_executable_properties), as a Markdown section.
#include <string>
#include <vector>

#include "gpu/pipelines.h"

namespace tapdiff::bench {

// A table of the kernels (one row each, one column per statistic the driver names), or a line
// saying that `device` does not offer them (`rows` empty). `variant` names the engine or program
// as the tables do.
std::string pipeline_statistics_section(const std::vector<gpu::PipelineStatistics>& rows, const std::string& device,
                                        const std::string& variant);

}  // namespace tapdiff::bench
