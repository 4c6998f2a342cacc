#pragma once
// What a physical device is and offers, as `tapdiff devices` lists it and as kernel selection
// reads it; and the choice of a device for `--device N|NAME`.
#include <cstdint>
#include <string>
#include <vector>

#include "gpu/vk_api.h"

namespace tapdiff::gpu {

struct MemoryHeap {
  std::uint64_t size = 0;
  bool device_local = false;
};

struct DeviceInfo {
  int index = 0;  // position in vkEnumeratePhysicalDevices order, what --device N names
  VkPhysicalDevice handle = VK_NULL_HANDLE;
  std::string name;
  VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  std::string driver;  // driver name and info ("llvmpipe, Mesa 22.3.6 (LLVM 15.0.6)")
  std::uint32_t api_version = 0;
  std::vector<MemoryHeap> heaps;
  int compute_queue_family = -1;  // -1: none
  // Device timestamps on that queue (Stream::mark): bits that count (0: none) and ns per tick.
  std::uint32_t timestamp_valid_bits = 0;
  float timestamp_period_ns = 0;

  // Subgroups (core 1.1 properties).
  std::uint32_t subgroup_size = 0;
  bool subgroup_arithmetic = false;    // subgroupAdd etc. in compute shaders
  bool subgroup_shuffle_vote = false;  // subgroupShuffleXor and subgroupAny in compute shaders
  bool denorm_preserve_f16 = false;    // shaders may keep f16 subnormals (DenormPreserve 16)
  bool rounding_rte_f16 = false;       // shaders may ask for ties-to-even f16 rounding (RoundingModeRTE 16)

  // Features that later precision modes and kernels need (queried only for Vulkan >= 1.2 devices).
  bool shader_float16 = false;
  bool shader_float64 = false;  // doubles in shaders (core 1.0 feature)
  bool storage_buffer_16bit = false;
  bool shader_int8 = false;
  bool storage_buffer_8bit = false;
  bool vulkan_memory_model = false;
  bool vulkan_memory_model_device_scope = false;  // Device scope under the memory model (atomics' default)
  bool cooperative_matrix = false;                // VK_KHR_cooperative_matrix or VK_NV_cooperative_matrix
  bool nv_cooperative_matrix = false;             // VK_NV_cooperative_matrix, its feature on, in compute shaders
  // VK_NV_cooperative_matrix2 with VK_KHR_cooperative_matrix, the features matmul-coop2 declares on
  // (gpu/device_coop2.h)
  bool nv_cooperative_matrix2 = false;
  // ... and its reductions and conversions on too (what attention-coop2 declares besides)
  bool nv_cooperative_matrix2_reductions = false;
  bool push_descriptor = false;      // VK_KHR_push_descriptor
  bool pipeline_statistics = false;  // VK_KHR_pipeline_executable_properties, pipelineExecutableInfo on

  // Limits the engine sizes its buffers and dispatches by.
  std::uint64_t max_storage_buffer_range = 0;
  std::uint64_t min_storage_buffer_offset_alignment = 0;
  std::uint64_t max_memory_allocation_size = 0;
  std::uint32_t max_workgroup_invocations = 0;
  std::uint32_t max_workgroup_size_x = 0;
  std::uint32_t max_workgroup_count[3] = {0, 0, 0};
  std::uint32_t max_shared_memory = 0;
  std::uint32_t max_push_constants = 0;
};

std::string_view device_type_name(VkPhysicalDeviceType type);  // "discrete GPU", "CPU", ...
std::string version_string(std::uint32_t api_version);         // "1.3.230"

DeviceInfo query_device(VkPhysicalDevice device, int index);

// An extension's feature struct of type `Features` (sType `type`), as the device fills it; chained
// only where the device has the extension.
template <typename Features>
Features extension_features(VkPhysicalDevice device, VkStructureType type) {
  Features features{};
  features.sType = type;
  VkPhysicalDeviceFeatures2 features2{};
  features2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  features2.pNext = &features;
  vkGetPhysicalDeviceFeatures2(device, &features2);
  return features;
}

// Likewise an extension's properties struct of type `Properties`.
template <typename Properties>
Properties extension_properties(VkPhysicalDevice device, VkStructureType type) {
  Properties properties{};
  properties.sType = type;
  VkPhysicalDeviceProperties2 properties2{};
  properties2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  properties2.pNext = &properties;
  vkGetPhysicalDeviceProperties2(device, &properties2);
  return properties;
}

// The VK_NV_cooperative_matrix shapes the cooperative-matrix GEMM (shaders/matmul_coop.comp) uses.
struct CooperativeMatrixShapes {
  // 16x16x16 at subgroup scope, f16 A and B, listed with f32 C and result (the kernel's sums) and
  // with f16 C and result (its gemm-f16-accum fault).
  bool f16_16x16x16 = false;
  std::string listed;  // every shape the device lists, for messages: "16x8x16 f16*f16+f32, ..."
};

// What a device with nv_cooperative_matrix lists (nothing for one without). The query is an
// extension entry point, which the loader gives only through an instance.
CooperativeMatrixShapes query_cooperative_matrix_shapes(VkInstance instance, const DeviceInfo& info);

// Several lines describing a device for `tapdiff devices`.
std::string describe(const DeviceInfo& info);
// One line: "llvmpipe (LLVM 15.0.6, 256 bits) (CPU, llvmpipe, Mesa 22.3.6, Vulkan 1.3.230)".
std::string summary(const DeviceInfo& info);

// The device a request names: "" prefers a discrete GPU, then an integrated one, then any;
// "N" is an index; anything else a case-insensitive substring of the name. UsageError when the
// request matches none (the message lists the devices), EnvironmentError when there are none.
const DeviceInfo& select_device(const std::vector<DeviceInfo>& devices, const std::string& request);

}  // namespace tapdiff::gpu
