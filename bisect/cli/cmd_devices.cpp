// tapdiff devices: the Vulkan devices of this machine, what --device picks by default, and the
// features the GPU engine's kernels care about.
#include <fmt/core.h>

#include "bisect/cli/commands.h"
#include "gpu/vulkan_engine.h"

namespace tapdiff::cli {

void add_devices_command(CLI::App& app, CliContext& context) {
  CLI::App* cmd = app.add_subcommand("devices", "List the Vulkan devices (for --engine vulkan --device N|NAME)");
  cmd->callback([&context] {
    const std::vector<gpu::DeviceInfo> devices = gpu::list_devices();
    const gpu::DeviceInfo& chosen = gpu::select_device(devices, "");  // EnvironmentError when there are none
    for (const gpu::DeviceInfo& d : devices) fmt::print("{}", gpu::describe(d));
    fmt::print("default device: [{}] {}\n", chosen.index, chosen.name);
    context.exit_code = 0;
  });
}

}  // namespace tapdiff::cli
