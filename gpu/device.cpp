#include "gpu/device.h"

#include <vector>

#include <fmt/core.h>

#include "gpu/device_coop2.h"
#include "gpu/instance.h"
#include "gpu/vk_error.h"
#include "model/errors.h"

namespace tapdiff::gpu {

std::vector<DeviceInfo> devices_of(const Instance& instance) {
  std::vector<DeviceInfo> devices;
  for (VkPhysicalDevice d : instance.physical_devices())
    devices.push_back(query_device(d, static_cast<int>(devices.size())));
  return devices;
}

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
  if (needs.float64 && !info.shader_float64)
    throw EnvironmentError(
        fmt::format("Vulkan device {}: --dtype llama.cpp needs the shaderFloat64 feature (norms summed in double, "
                    "as ggml sums them); the device does not offer it",
                    summary(info)));
}

namespace {

// Why the cooperative-matrix GEMM cannot run on this device in this mode; "" when it can.
std::string why_no_cooperative_matrix(const Instance& instance, const DeviceInfo& info, const DeviceNeeds& needs) {
  if (!needs.storage_16bit) return "the cooperative-matrix GEMM runs in the f16 mode only (--dtype f16)";
  if (!info.nv_cooperative_matrix)
    return fmt::format("{} does not offer VK_NV_cooperative_matrix in compute shaders", info.name);
  if (!info.shader_float16 || !info.vulkan_memory_model)
    return fmt::format("{} offers VK_NV_cooperative_matrix but not shaderFloat16 and vulkanMemoryModel", info.name);
  const CooperativeMatrixShapes shapes = query_cooperative_matrix_shapes(instance.handle(), info);
  if (!shapes.f16_16x16x16)
    return fmt::format(
        "{} does not list 16x16x16 subgroup cooperative matrices of f16 with both f32 and f16 sums (it lists: {})",
        info.name, shapes.listed.empty() ? "none" : shapes.listed);
  return "";
}

// The feature structs and extensions vkCreateDevice enables, chained from `v11`. The f32 kernels
// need no optional feature: weights are read as 32-bit words and unpacked in the shaders. The f16
// ones store activations as 16-bit values (arithmetic stays f32); the cooperative-matrix GEMMs also
// declare f16 values, cooperative matrices (VK_NV_cooperative_matrix; VK_KHR_cooperative_matrix with
// VK_NV_cooperative_matrix2 for the coop2 kernels) and the Vulkan memory model (which their loads and
// stores require). Without them the device is created exactly as before the GEMMs existed.
struct EnabledFeatures {
  EnabledFeatures(const DeviceNeeds& needs, bool cooperative_matrix, bool cooperative_matrix2, bool reductions,
                  bool pipeline_statistics, bool device_scope)
      : coop2(reductions) {
    v12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
    v12.shaderFloat16 = VK_TRUE;
    v12.vulkanMemoryModel = VK_TRUE;
    // The other kernels' atomics (moe_plan.comp) take Device scope, which the memory model allows
    // only with this feature on.
    v12.vulkanMemoryModelDeviceScope = device_scope ? VK_TRUE : VK_FALSE;
    v11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
    v11.storageBuffer16BitAccess = needs.storage_16bit ? VK_TRUE : VK_FALSE;
    if (cooperative_matrix) {
      coop.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV;
      coop.cooperativeMatrix = VK_TRUE;
      coop.pNext = v12.pNext;
      v12.pNext = &coop;
      extensions.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
    }
    if (cooperative_matrix2) {
      coop2.nv.pNext = v12.pNext;
      v12.pNext = &coop2.khr;
      extensions.push_back(kKhrCooperativeMatrixExtension);
      extensions.push_back(kNvCooperativeMatrix2Extension);
    }
    if (cooperative_matrix || cooperative_matrix2) v11.pNext = &v12;
    if (pipeline_statistics) {
      executables.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR;
      executables.pipelineExecutableInfo = VK_TRUE;
      executables.pNext = v11.pNext;
      v11.pNext = &executables;
      extensions.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
    }
  }
  EnabledFeatures(const EnabledFeatures&) = delete;  // the chain points into this object
  EnabledFeatures& operator=(const EnabledFeatures&) = delete;

  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executables{};
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coop{};
  CooperativeMatrix2Enabled coop2;
  VkPhysicalDeviceVulkan12Features v12{};
  VkPhysicalDeviceVulkan11Features v11{};
  std::vector<const char*> extensions;
};

}  // namespace

Device::Device(const Instance& instance, DeviceInfo info, const DeviceNeeds& needs) : info_(std::move(info)) {
  check_device_offers(info_, needs);
  cooperative_matrix_missing_ = why_no_cooperative_matrix(instance, info_, needs);
  // (its properties are not even queried while validating: the layer flags their struct too)
  const bool validating_coop2 = info_.nv_cooperative_matrix2 && instance.validation();
  if (needs.storage_16bit && !validating_coop2) coop2_shapes_ = cooperative_matrix2_shapes(instance.handle(), info_);
  cooperative_matrix2_missing_ =
      !needs.storage_16bit ? "matmul-coop2 runs in the f16 mode only (--dtype f16)"
      : validating_coop2
          ? "the Khronos validation layer of Debian 12 (1.3.239) predates VK_NV_cooperative_matrix2 and rejects its "
            "structs and SPIR-V, so matmul-coop2 is off while validating"
          : why_no_cooperative_matrix2(info_, coop2_shapes_, kCoop2Tile);
  cooperative_matrix2_wide_missing_ = !cooperative_matrix2_missing_.empty()
                                          ? cooperative_matrix2_missing_
                                          : why_no_cooperative_matrix2(info_, coop2_shapes_, kCoop2WideTile);
  vkGetPhysicalDeviceMemoryProperties(info_.handle, &memory_);
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue{};
  queue.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  queue.queueFamilyIndex = queue_family();
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;
  pipeline_statistics_ = needs.pipeline_statistics && info_.pipeline_statistics;
  const EnabledFeatures features(needs, cooperative_matrix(), cooperative_matrix2(),
                                 cooperative_matrix2() && info_.nv_cooperative_matrix2_reductions, pipeline_statistics_,
                                 info_.vulkan_memory_model_device_scope);
  VkPhysicalDeviceFeatures core{};
  core.shaderFloat64 = VK_TRUE;
  VkDeviceCreateInfo create{};
  create.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  create.pNext = &features.v11;
  if (needs.float64) create.pEnabledFeatures = &core;
  create.queueCreateInfoCount = 1;
  create.pQueueCreateInfos = &queue;
  create.enabledExtensionCount = static_cast<std::uint32_t>(features.extensions.size());
  create.ppEnabledExtensionNames = features.extensions.data();
  check(vkCreateDevice(info_.handle, &create, nullptr, &device_), "vkCreateDevice",
        [&] { return fmt::format("opening {}", summary(info_)); });
  vkGetDeviceQueue(device_, queue_family(), 0, &queue_);
}

Device::~Device() {
  if (device_ == VK_NULL_HANDLE) return;
  vkDeviceWaitIdle(device_);
  vkDestroyDevice(device_, nullptr);
}

std::string Device::attention_coop2_missing(std::uint32_t head_dim) const {
  return !cooperative_matrix2() ? cooperative_matrix2_missing_
                                : why_no_attention_coop2(info_, coop2_shapes_, kCoop2AttentionTile, head_dim);
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
