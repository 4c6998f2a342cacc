#pragma once
// VK_NV_cooperative_matrix2 (with VK_KHR_cooperative_matrix, which it builds on) for matmul-coop2
// and attention-coop2 (gpu/matmul_coop2.h, gpu/attention_coop2.h): whether a device's features are
// on, whether it lists the workgroup-scope matrices the kernels declare, and the feature structs
// that enable them. Debian 12's Vulkan
// headers (1.3.239) predate both extensions, so their structs are declared here, as the registry
// defines them.
#include <cstdint>
#include <string>
#include <vector>

#include "gpu/attention_coop2.h"
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

// Whether its reductions and conversions are on too (attention-coop2).
bool nv_cooperative_matrix2_reductions(VkPhysicalDevice device);

// A shape the device lists for flexible-dimension cooperative matrices: the granularity of M, N
// and K, the component types (VkComponentTypeKHR) of A, B, C and the result, the scope and the
// workgroup size it holds for.
struct Coop2Shape {
  std::uint32_t m = 0, n = 0, k = 0;
  std::uint32_t a = 0, b = 0, c = 0, result = 0;
  std::uint32_t scope = 0, invocations = 0;
};
// The listed shapes (none where the device lacks the extension). The query is an extension entry
// point, which the loader gives only through an instance.
std::vector<Coop2Shape> cooperative_matrix2_shapes(VkInstance instance, const DeviceInfo& info);

// Why matmul-coop2 with `tile` cannot run on this device; "" when it can. It needs the features
// above, shaderFloat16, the Vulkan memory model, f16 rounding ties to even and f16 subnormals kept
// as the shader asks (float controls), and a listed workgroup-scope shape of f16 A and
// B, with f32 sums and with f16 sums (the gemm-f16-accum fault), for workgroups of the tile's
// invocations, whose granularity divides the tile.
std::string why_no_cooperative_matrix2(const DeviceInfo& info, const std::vector<Coop2Shape>& shapes,
                                       const Coop2Tile& tile);

// Why attention-coop2 with `tile` cannot run for head_dim `hd` on a device where matmul-coop2 can;
// "" when it can: the reductions and conversions, and a listed workgroup-scope shape of f16 A and B
// with f32 sums for the tile's invocations whose granularity divides its products (tile rows x keys
// x hd, tile rows x hd x keys, tile rows x keys x keys; keys = coop2_attention_keys(hd)).
std::string why_no_attention_coop2(const DeviceInfo& info, const std::vector<Coop2Shape>& shapes,
                                   const Coop2AttentionTile& tile, std::uint32_t hd);

// The structs vkCreateDevice chains to enable what matmul-coop2 declares, and attention-coop2's
// reductions and conversions where the device has them.
struct CooperativeMatrix2Enabled {
  explicit CooperativeMatrix2Enabled(bool reductions);
  CooperativeMatrix2Enabled(const CooperativeMatrix2Enabled&) = delete;  // khr points at nv
  CooperativeMatrix2Enabled& operator=(const CooperativeMatrix2Enabled&) = delete;
  CooperativeMatrixFeaturesKHR khr;
  CooperativeMatrix2FeaturesNV nv;
};

}  // namespace tapdiff::gpu
