#include "gpu/device.h"

#include <fmt/core.h>

#include "gpu/instance.h"
#include "gpu/vk_error.h"
#include "model/errors.h"

namespace tapdiff::gpu {

void check_device_offers(const DeviceInfo& info, const DeviceNeeds& needs) {
  if (info.api_version < VK_API_VERSION_1_2)
    throw EnvironmentError(fmt::format("Vulkan device {}: tapdiff needs Vulkan 1.2, the device offers {}",
                                       summary(info), version_string(info.api_version)));
  if (info.compute_queue_family < 0)
    throw EnvironmentError(
        fmt::format("Vulkan device {}: tapdiff needs a compute queue, the device has none", summary(info)));
  if (needs.storage_16bit && !info.storage_buffer_16bit)
    throw EnvironmentError(
        fmt::format("Vulkan device {}: --dtype f16 needs the storageBuffer16BitAccess feature (f16 activation "
                    "buffers); the device does not offer it (use --dtype f32)",
                    summary(info)));
}

Device::Device(const Instance&, DeviceInfo info, const DeviceNeeds& needs) : info_(std::move(info)) {
  check_device_offers(info_, needs);
  vkGetPhysicalDeviceMemoryProperties(info_.handle, &memory_);
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue{};
  queue.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  queue.queueFamilyIndex = queue_family();
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;
  // The f32 kernels need no optional feature: weights are read as 32-bit words and unpacked in
  // the shaders. The f16 ones store activations as 16-bit values (arithmetic stays f32).
  VkPhysicalDeviceVulkan11Features v11{};
  v11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
  v11.storageBuffer16BitAccess = needs.storage_16bit ? VK_TRUE : VK_FALSE;
  VkDeviceCreateInfo create{};
  create.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  create.pNext = &v11;
  create.queueCreateInfoCount = 1;
  create.pQueueCreateInfos = &queue;
  check(vkCreateDevice(info_.handle, &create, nullptr, &device_), "vkCreateDevice",
        [&] { return fmt::format("opening {}", summary(info_)); });
  vkGetDeviceQueue(device_, queue_family(), 0, &queue_);
}

Device::~Device() {
  if (device_ == VK_NULL_HANDLE) return;
  vkDeviceWaitIdle(device_);
  vkDestroyDevice(device_, nullptr);
}

int Device::memory_type(std::uint32_t type_bits, VkMemoryPropertyFlags required,
                        VkMemoryPropertyFlags preferred) const {
  int fallback = -1;
  for (std::uint32_t i = 0; i < memory_.memoryTypeCount; ++i) {
    if ((type_bits & (1u << i)) == 0) continue;
    const VkMemoryPropertyFlags flags = memory_.memoryTypes[i].propertyFlags;
    if ((flags & required) != required) continue;
    if ((flags & preferred) == preferred) return static_cast<int>(i);
    if (fallback < 0) fallback = static_cast<int>(i);
  }
  return fallback;
}

std::uint64_t Device::heap_size(int memory_type) const {
  return memory_.memoryHeaps[memory_.memoryTypes[memory_type].heapIndex].size;
}

}  // namespace tapdiff::gpu
