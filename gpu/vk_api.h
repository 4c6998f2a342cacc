#pragma once
// The Vulkan entry points tapdiff uses, loaded at run time from the system loader
// (libvulkan.so.1) rather than linked: a machine without Vulkan still runs the reference engine,
// and asking for the GPU engine there is a clear EnvironmentError, not a failure to start.
//
// Each entry point is a function pointer in tapdiff::gpu named like the C function, so code in
// this namespace reads as plain Vulkan. Core (1.0-1.2) functions come from the loader's exported
// trampolines, which dispatch to whichever instance or device the handle belongs to.
#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vulkan/vulkan.h>

// X(name) for every core function used; add a line here to use another one.
#define TAPDIFF_VK_CORE_FUNCTIONS(X)          \
  X(vkGetInstanceProcAddr)                    \
  X(vkEnumerateInstanceVersion)               \
  X(vkEnumerateInstanceLayerProperties)       \
  X(vkEnumerateInstanceExtensionProperties)   \
  X(vkCreateInstance)                         \
  X(vkDestroyInstance)                        \
  X(vkEnumeratePhysicalDevices)               \
  X(vkGetPhysicalDeviceProperties)            \
  X(vkGetPhysicalDeviceProperties2)           \
  X(vkGetPhysicalDeviceFeatures2)             \
  X(vkGetPhysicalDeviceMemoryProperties)      \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkEnumerateDeviceExtensionProperties)     \
  X(vkCreateDevice)                           \
  X(vkGetDeviceProcAddr)                      \
  X(vkDestroyDevice)                          \
  X(vkDeviceWaitIdle)                         \
  X(vkGetDeviceQueue)                         \
  X(vkQueueSubmit)                            \
  X(vkCreateBuffer)                           \
  X(vkDestroyBuffer)                          \
  X(vkGetBufferMemoryRequirements)            \
  X(vkAllocateMemory)                         \
  X(vkFreeMemory)                             \
  X(vkBindBufferMemory)                       \
  X(vkMapMemory)                              \
  X(vkUnmapMemory)                            \
  X(vkCreateShaderModule)                     \
  X(vkDestroyShaderModule)                    \
  X(vkCreateDescriptorSetLayout)              \
  X(vkDestroyDescriptorSetLayout)             \
  X(vkCreatePipelineLayout)                   \
  X(vkDestroyPipelineLayout)                  \
  X(vkCreateComputePipelines)                 \
  X(vkDestroyPipeline)                        \
  X(vkCreateDescriptorPool)                   \
  X(vkDestroyDescriptorPool)                  \
  X(vkResetDescriptorPool)                    \
  X(vkAllocateDescriptorSets)                 \
  X(vkUpdateDescriptorSets)                   \
  X(vkCreateCommandPool)                      \
  X(vkDestroyCommandPool)                     \
  X(vkResetCommandPool)                       \
  X(vkAllocateCommandBuffers)                 \
  X(vkBeginCommandBuffer)                     \
  X(vkEndCommandBuffer)                       \
  X(vkCmdBindPipeline)                        \
  X(vkCmdBindDescriptorSets)                  \
  X(vkCmdPushConstants)                       \
  X(vkCmdDispatch)                            \
  X(vkCmdPipelineBarrier)                     \
  X(vkCmdCopyBuffer)                          \
  X(vkCmdFillBuffer)                          \
  X(vkCreateQueryPool)                        \
  X(vkDestroyQueryPool)                       \
  X(vkCmdResetQueryPool)                      \
  X(vkCmdWriteTimestamp)                      \
  X(vkGetQueryPoolResults)                    \
  X(vkCreateFence)                            \
  X(vkDestroyFence)                           \
  X(vkResetFences)                            \
  X(vkWaitForFences)

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define TAPDIFF_VK_LSAN_GUARD 1
#else
#define TAPDIFF_VK_LSAN_GUARD 0
#endif

namespace tapdiff::gpu {

#if TAPDIFF_VK_LSAN_GUARD
// Sanitizer builds: what drivers and layers allocate inside a call and keep for the life of the
// process (one-time initialization, caches) is not ours to free, and LeakSanitizer cannot even
// name it once the loader has unloaded the driver. So each entry point is a thunk that calls the
// loader's function with leak tracking off on this thread; everything else ASan checks as usual.
namespace vk_loaded {
#define TAPDIFF_VK_DECLARE(name) inline PFN_##name name = nullptr;
TAPDIFF_VK_CORE_FUNCTIONS(TAPDIFF_VK_DECLARE)
#undef TAPDIFF_VK_DECLARE
}  // namespace vk_loaded

template <auto& Loaded, typename Fn>
struct LeakUntracked;
template <auto& Loaded, typename R, typename... A>
struct LeakUntracked<Loaded, R (*)(A...)> {
  static R call(A... args) {
    const __lsan::ScopedDisabler untracked;
    return Loaded(args...);
  }
};
#define TAPDIFF_VK_DECLARE(name) inline PFN_##name name = &LeakUntracked<vk_loaded::name, PFN_##name>::call;
TAPDIFF_VK_CORE_FUNCTIONS(TAPDIFF_VK_DECLARE)
#undef TAPDIFF_VK_DECLARE
#define TAPDIFF_VK_SLOT(name) vk_loaded::name
#else
#define TAPDIFF_VK_DECLARE(name) inline PFN_##name name = nullptr;
TAPDIFF_VK_CORE_FUNCTIONS(TAPDIFF_VK_DECLARE)
#undef TAPDIFF_VK_DECLARE
#define TAPDIFF_VK_SLOT(name) name
#endif

// Loads the loader and every core entry point once per process (thread-safe). EnvironmentError,
// every time it is called, when the loader is absent or too old to export them.
void load_vulkan();

// For a device that stopped answering (a fence wait timed out): every vkDestroy*, vkFree* and
// vkReset* entry point becomes a no-op, so unwinding never frees or recycles what the device may
// still read or write. The objects leak; the process is about to report the error and exit.
void abandon_device_objects();

}  // namespace tapdiff::gpu
