#pragma once
// VK_NV_cooperative_matrix2 (with VK_KHR_cooperative_matrix, which it builds on) for matmul-coop2
// (gpu/matmul_coop2.h): whether a device's features are on, whether it lists the workgroup-scope
// matrices the kernel declares, and the feature structs that enable them. Debian 12's Vulkan
// headers (1.3.239) predate both extensions, so their structs are declared here, as the registry
// defines them.
#include <string>

#include "gpu/device_info.h"
#include "gpu/matmul_coop2.h"

namespace tapdiff::gpu {

inline constexpr const char* kKhrCooperativeMatrixExtension = "VK_KHR_cooperative_matrix";
inline constexpr const char* kNvCooperativeMatrix2Extension = "VK_NV_cooperative_matrix2";

struct CooperativeMatrixFeaturesKHR {
  VkStructureType sType = static_cast<VkStructureType>(1000506000);
  void* pNext = nullptr;
  VkBool32 cooperativeMatrix = VK_FALSE;
  VkBool32 cooperativeMatrixRobustBufferAccess = VK_FALSE;
};

struct CooperativeMatrix2FeaturesNV {
  VkStructureType sType = static_cast<VkStructureType>(1000593000);
  void* pNext = nullptr;
  VkBool32 cooperativeMatrixWorkgroupScope = VK_FALSE;
  VkBool32 cooperativeMatrixFlexibleDimensions = VK_FALSE;
  VkBool32 cooperativeMatrixReductions = VK_FALSE;
  VkBool32 cooperativeMatrixConversions = VK_FALSE;
  VkBool32 cooperativeMatrixPerElementOperations = VK_FALSE;
  VkBool32 cooperativeMatrixTensorAddressing = VK_FALSE;
  VkBool32 cooperativeMatrixBlockLoads = VK_FALSE;
};

// Whether a device with both extensions has the features matmul-coop2 declares on: workgroup
// scope, flexible dimensions, per-element operations and tensor addressing.
bool nv_cooperative_matrix2_usable(VkPhysicalDevice device);

// Why matmul-coop2 with `tile` cannot run on this device; "" when it can. It needs the features
// above, shaderFloat16, the Vulkan memory model, f16 rounding ties to even and f16 subnormals kept
// as the shader asks (float controls), and a listed workgroup-scope shape of f16 A and
// B, with f32 sums and with f16 sums (the gemm-f16-accum fault), for workgroups of the tile's
// invocations, whose granularity divides the tile. The query is an extension entry point, which the
// loader gives only through an instance.
std::string why_no_cooperative_matrix2(VkInstance instance, const DeviceInfo& info, const Coop2Tile& tile);

// The structs vkCreateDevice chains to enable what matmul-coop2 declares.
struct CooperativeMatrix2Enabled {
  CooperativeMatrix2Enabled();
  CooperativeMatrix2Enabled(const CooperativeMatrix2Enabled&) = delete;  // khr points at nv
  CooperativeMatrix2Enabled& operator=(const CooperativeMatrix2Enabled&) = delete;
  CooperativeMatrixFeaturesKHR khr;
  CooperativeMatrix2FeaturesNV nv;
};

}  // namespace tapdiff::gpu
