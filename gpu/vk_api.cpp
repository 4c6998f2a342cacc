#include "gpu/vk_api.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

#include <fmt/core.h>

#include "model/errors.h"

namespace tapdiff::gpu {
namespace {

// The outcome of the one load attempt: empty on success, else why it failed.
std::string load_once() {
  void* lib = nullptr;
  std::string tried;
  for (const char* name : {"libvulkan.so.1", "libvulkan.so"}) {
    lib = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) break;
    const char* why = ::dlerror();
    tried += fmt::format("{}{}: {}", tried.empty() ? "" : "; ", name, why != nullptr ? why : "not found");
  }
  if (lib == nullptr)
    return fmt::format(
        "the Vulkan loader is not installed ({}); install libvulkan1 and a Vulkan driver (on a machine without a GPU, "
        "mesa-vulkan-drivers provides the CPU device lavapipe)",
        tried);
  std::string missing;
#define TAPDIFF_VK_LOAD(fn)                                            \
  TAPDIFF_VK_SLOT(fn) = reinterpret_cast<PFN_##fn>(::dlsym(lib, #fn)); \
  if (TAPDIFF_VK_SLOT(fn) == nullptr) missing += fmt::format("{}{}", missing.empty() ? "" : ", ", #fn);
  TAPDIFF_VK_CORE_FUNCTIONS(TAPDIFF_VK_LOAD)
#undef TAPDIFF_VK_LOAD
  if (!missing.empty())
    return fmt::format(
        "the Vulkan loader is too old: Vulkan 1.2 entry points are missing ({}); install a newer libvulkan1", missing);
  return {};
}

}  // namespace

void load_vulkan() {
  static std::once_flag once;
  static std::string failure;
  std::call_once(once, [] { failure = load_once(); });
  if (!failure.empty()) throw EnvironmentError("Vulkan: " + failure);
}

void abandon_device_objects() {
  const auto noop = [](auto...) {};
  const auto noop_result = [](auto...) { return VK_SUCCESS; };
  vkResetDescriptorPool = noop_result, vkResetCommandPool = noop_result, vkResetFences = noop_result;
  vkDestroyInstance = noop, vkDestroyDevice = noop, vkDestroyBuffer = noop, vkFreeMemory = noop;
  vkDestroyShaderModule = noop, vkDestroyDescriptorSetLayout = noop, vkDestroyPipelineLayout = noop;
  vkDestroyPipeline = noop, vkDestroyDescriptorPool = noop, vkDestroyCommandPool = noop, vkDestroyFence = noop;
  vkDestroyQueryPool = noop;
}

}  // namespace tapdiff::gpu
