#include "gpu/device_coop2.h"

#include <algorithm>
#include <vector>

#include <fmt/core.h>

#include "gpu/vk_error.h"

namespace tapdiff::gpu {

namespace {

// VkCooperativeMatrixFlexibleDimensionsPropertiesNV and VkPhysicalDeviceCooperativeMatrix2PropertiesNV.
struct FlexibleDimensions {
  VkStructureType sType = static_cast<VkStructureType>(1000593001);
  void* pNext = nullptr;
  std::uint32_t MGranularity = 0, NGranularity = 0, KGranularity = 0;
  std::uint32_t AType = 0, BType = 0, CType = 0, ResultType = 0;
  VkBool32 saturatingAccumulation = VK_FALSE;
  std::uint32_t scope = 0;
  std::uint32_t workgroupInvocations = 0;
};
struct CooperativeMatrix2Properties {
  VkStructureType sType = static_cast<VkStructureType>(1000593002);
  void* pNext = nullptr;
  std::uint32_t cooperativeMatrixWorkgroupScopeMaxWorkgroupSize = 0;
  std::uint32_t cooperativeMatrixFlexibleDimensionsMaxDimension = 0;
  std::uint32_t cooperativeMatrixWorkgroupScopeReservedSharedMemory = 0;
};
using QueryFlexibleDimensions = VkResult(VKAPI_PTR*)(VkPhysicalDevice, std::uint32_t*, FlexibleDimensions*);

constexpr std::uint32_t kComponentF16 = 0, kComponentF32 = 1, kScopeWorkgroup = 2;

std::vector<FlexibleDimensions> flexible_dimensions(VkInstance instance, const DeviceInfo& info) {
  const auto query = reinterpret_cast<QueryFlexibleDimensions>(
      vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV"));
  if (query == nullptr) return {};
  std::uint32_t n = 0;
  check(query(info.handle, &n, nullptr), "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV");
  std::vector<FlexibleDimensions> shapes(n);
  check(query(info.handle, &n, shapes.data()), "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV");
  shapes.resize(n);
  return shapes;
}

// Whether `shape` is workgroup-scope f16 * f16 + `sums` for the tile's workgroups and divides it.
bool fits(const FlexibleDimensions& shape, std::uint32_t sums, const Coop2Tile& tile) {
  return shape.scope == kScopeWorkgroup && shape.workgroupInvocations == tile.invocations &&
         shape.AType == kComponentF16 && shape.BType == kComponentF16 && shape.CType == sums &&
         shape.ResultType == sums && shape.MGranularity > 0 && shape.NGranularity > 0 && shape.KGranularity > 0 &&
         tile.rows % shape.MGranularity == 0 && tile.cols % shape.NGranularity == 0 && tile.k % shape.KGranularity == 0;
}

}  // namespace

bool nv_cooperative_matrix2_usable(VkPhysicalDevice device) {
  const auto khr = extension_features<CooperativeMatrixFeaturesKHR>(device, CooperativeMatrixFeaturesKHR{}.sType);
  const auto nv = extension_features<CooperativeMatrix2FeaturesNV>(device, CooperativeMatrix2FeaturesNV{}.sType);
  return khr.cooperativeMatrix == VK_TRUE && nv.cooperativeMatrixWorkgroupScope == VK_TRUE &&
         nv.cooperativeMatrixFlexibleDimensions == VK_TRUE && nv.cooperativeMatrixPerElementOperations == VK_TRUE &&
         nv.cooperativeMatrixTensorAddressing == VK_TRUE;
}

std::string why_no_cooperative_matrix2(VkInstance instance, const DeviceInfo& info, const Coop2Tile& tile) {
  if (!info.nv_cooperative_matrix2)
    return fmt::format(
        "{} does not offer {} with {} (workgroup scope, flexible dimensions, per-element operations "
        "and tensor addressing) in compute shaders",
        info.name, kNvCooperativeMatrix2Extension, kKhrCooperativeMatrixExtension);
  if (!info.shader_float16 || !info.vulkan_memory_model || !info.storage_buffer_16bit || !info.rounding_rte_f16 ||
      !info.denorm_preserve_f16)
    return fmt::format(
        "{} offers {} but not shaderFloat16, storageBuffer16BitAccess, vulkanMemoryModel, "
        "shaderRoundingModeRTEFloat16 and shaderDenormPreserveFloat16",
        info.name, kNvCooperativeMatrix2Extension);
  const auto limits =
      extension_properties<CooperativeMatrix2Properties>(info.handle, CooperativeMatrix2Properties{}.sType);
  if (limits.cooperativeMatrixWorkgroupScopeMaxWorkgroupSize < tile.invocations ||
      limits.cooperativeMatrixFlexibleDimensionsMaxDimension < std::max({tile.rows, tile.cols, tile.k}))
    return fmt::format(
        "{} takes workgroup-scope matrices in workgroups of at most {} invocations and {} rows or columns; "
        "matmul-coop2 needs {} and {}",
        info.name, limits.cooperativeMatrixWorkgroupScopeMaxWorkgroupSize,
        limits.cooperativeMatrixFlexibleDimensionsMaxDimension, tile.invocations,
        std::max({tile.rows, tile.cols, tile.k}));
  const auto shapes = flexible_dimensions(instance, info);
  const auto listed = [&](std::uint32_t sums) {
    return std::any_of(shapes.begin(), shapes.end(), [&](const auto& s) { return fits(s, sums, tile); });
  };
  if (!listed(kComponentF32) || !listed(kComponentF16))
    return fmt::format(
        "{} does not list workgroup-scope f16 matrices with f32 and f16 sums for workgroups of {} whose "
        "granularity divides {}x{}x{}",
        info.name, tile.invocations, tile.rows, tile.cols, tile.k);
  return "";
}

CooperativeMatrix2Enabled::CooperativeMatrix2Enabled() {
  khr.pNext = &nv;
  khr.cooperativeMatrix = VK_TRUE;
  nv.cooperativeMatrixWorkgroupScope = VK_TRUE;
  nv.cooperativeMatrixFlexibleDimensions = VK_TRUE;
  nv.cooperativeMatrixPerElementOperations = VK_TRUE;
  nv.cooperativeMatrixTensorAddressing = VK_TRUE;
}

}  // namespace tapdiff::gpu
