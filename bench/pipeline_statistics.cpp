#include "bench/pipeline_statistics.h"

#include <algorithm>
#include <vector>

#include <fmt/core.h>

namespace tapdiff::bench {

std::string pipeline_statistics_section(const std::vector<gpu::PipelineStatistics>& rows, const std::string& device,
                                        const std::string& variant) {
  if (rows.empty())
    return fmt::format("Kernel statistics: {} does not offer VK_KHR_pipeline_executable_properties\n", device);
  std::vector<std::string> names;  // every statistic any kernel has, in the driver's order
  for (const gpu::PipelineStatistics& r : rows)
    for (const auto& [name, value] : r.values)
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  std::string s = fmt::format(
      "Kernel statistics as the driver reports them (VK_KHR_pipeline_executable_properties), every pipeline `{}` "
      "made: the shader's build, then its specialization constants (0 weight dtype, 1 workgroup size, 2 faults, 3.. "
      "the kernel's own)\n\n| kernel |",
      variant);
  for (const std::string& n : names) s += fmt::format(" {} |", n);
  s += "\n|---|";
  for (std::size_t i = 0; i < names.size(); ++i) s += "---|";
  s += "\n";
  for (const gpu::PipelineStatistics& r : rows) {
    s += fmt::format("| {} |", r.kernel);
    for (const std::string& n : names) {
      const auto it = std::find_if(r.values.begin(), r.values.end(), [&](const auto& v) { return v.first == n; });
      s += fmt::format(" {} |", it == r.values.end() ? "-" : it->second);
    }
    s += "\n";
  }
  return s;
}

}  // namespace tapdiff::bench
