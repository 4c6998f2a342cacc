#include "gpu/device_coop2.h"

#include <algorithm>
#include <array>
#include <initializer_list>
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

// Whether `shape` is workgroup-scope f16 * f16 + `sums` for workgroups of `invocations` whose
// granularity divides the products m x n x k.
bool fits(const Coop2Shape& shape, std::uint32_t sums, std::uint32_t invocations,
          std::initializer_list<std::array<std::uint32_t, 3>> products) {
  if (shape.scope != kScopeWorkgroup || shape.invocations != invocations || shape.a != kComponentF16 ||
      shape.b != kComponentF16 || shape.c != sums || shape.result != sums || shape.m == 0 || shape.n == 0 ||
      shape.k == 0)
    return false;
  return std::all_of(products.begin(), products.end(),
                     [&](const auto& p) { return p[0] % shape.m == 0 && p[1] % shape.n == 0 && p[2] % shape.k == 0; });
}

bool listed(const std::vector<Coop2Shape>& shapes, std::uint32_t sums, std::uint32_t invocations,
            std::initializer_list<std::array<std::uint32_t, 3>> products) {
  return std::any_of(shapes.begin(), shapes.end(), [&](const auto& s) { return fits(s, sums, invocations, products); });
}

// Why the device's workgroup-scope limits do not take `invocations` and `dimension`; "" when they do.
std::string limits_missing(const DeviceInfo& info, const char* kernel, std::uint32_t invocations,
                           std::uint32_t dimension) {
  const auto limits =
      extension_properties<CooperativeMatrix2Properties>(info.handle, CooperativeMatrix2Properties{}.sType);
  if (limits.cooperativeMatrixWorkgroupScopeMaxWorkgroupSize >= invocations &&
      limits.cooperativeMatrixFlexibleDimensionsMaxDimension >= dimension)
    return "";
  return fmt::format(
      "{} takes workgroup-scope matrices in workgroups of at most {} invocations and {} rows or columns; "
      "{} needs {} and {}",
      info.name, limits.cooperativeMatrixWorkgroupScopeMaxWorkgroupSize,
      limits.cooperativeMatrixFlexibleDimensionsMaxDimension, kernel, invocations, dimension);
}

}  // namespace

bool nv_cooperative_matrix2_usable(VkPhysicalDevice device) {
  const auto khr = extension_features<CooperativeMatrixFeaturesKHR>(device, CooperativeMatrixFeaturesKHR{}.sType);
  const auto nv = extension_features<CooperativeMatrix2FeaturesNV>(device, CooperativeMatrix2FeaturesNV{}.sType);
  return khr.cooperativeMatrix == VK_TRUE && nv.cooperativeMatrixWorkgroupScope == VK_TRUE &&
         nv.cooperativeMatrixFlexibleDimensions == VK_TRUE && nv.cooperativeMatrixPerElementOperations == VK_TRUE &&
         nv.cooperativeMatrixTensorAddressing == VK_TRUE;
}

bool nv_cooperative_matrix2_reductions(VkPhysicalDevice device) {
  const auto nv = extension_features<CooperativeMatrix2FeaturesNV>(device, CooperativeMatrix2FeaturesNV{}.sType);
  return nv.cooperativeMatrixReductions == VK_TRUE && nv.cooperativeMatrixConversions == VK_TRUE;
}

std::vector<Coop2Shape> cooperative_matrix2_shapes(VkInstance instance, const DeviceInfo& info) {
  const auto query = reinterpret_cast<QueryFlexibleDimensions>(
      vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV"));
  if (!info.nv_cooperative_matrix2 || query == nullptr) return {};
  std::uint32_t n = 0;
  check(query(info.handle, &n, nullptr), "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV");
  std::vector<FlexibleDimensions> listed(n);
  check(query(info.handle, &n, listed.data()), "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV");
  listed.resize(n);
  std::vector<Coop2Shape> shapes;
  for (const FlexibleDimensions& d : listed)
    shapes.push_back({d.MGranularity, d.NGranularity, d.KGranularity, d.AType, d.BType, d.CType, d.ResultType, d.scope,
                      d.workgroupInvocations});
  return shapes;
}

std::string why_no_cooperative_matrix2(const DeviceInfo& info, const std::vector<Coop2Shape>& shapes,
                                       const Coop2Tile& tile) {
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
  if (auto why = limits_missing(info, "matmul-coop2", tile.invocations, std::max({tile.rows, tile.cols, tile.k}));
      !why.empty())
    return why;
  const std::array<std::uint32_t, 3> product{tile.rows, tile.cols, tile.k};
  if (!listed(shapes, kComponentF32, tile.invocations, {product}) ||
      !listed(shapes, kComponentF16, tile.invocations, {product}))
    return fmt::format(
        "{} does not list workgroup-scope f16 matrices with f32 and f16 sums for workgroups of {} whose "
        "granularity divides {}x{}x{}",
        info.name, tile.invocations, tile.rows, tile.cols, tile.k);
  return "";
}

std::string why_no_attention_coop2(const DeviceInfo& info, const std::vector<Coop2Shape>& shapes,
                                   const Coop2AttentionTile& tile, std::uint32_t hd) {
  if (!info.nv_cooperative_matrix2_reductions)
    return fmt::format("{} offers {} without its reductions and conversions", info.name,
                       kNvCooperativeMatrix2Extension);
  const std::uint32_t keys = coop2_attention_keys(hd);
  if (auto why = limits_missing(info, "attention-coop2", tile.invocations, std::max({tile.rows, keys, hd}));
      !why.empty())
    return why;
  // S = q K^T, O += P V and the row sums P 1
  if (!listed(shapes, kComponentF32, tile.invocations,
              {{tile.rows, keys, hd}, {tile.rows, hd, keys}, {tile.rows, keys, keys}}))
    return fmt::format(
        "{} does not list workgroup-scope f16 matrices with f32 sums for workgroups of {} whose granularity "
        "divides {}x{}x{} and {}x{}x{}",
        info.name, tile.invocations, tile.rows, keys, hd, tile.rows, hd, keys);
  return "";
}

CooperativeMatrix2Enabled::CooperativeMatrix2Enabled(bool reductions) {
  khr.pNext = &nv;
  khr.cooperativeMatrix = VK_TRUE;
  nv.cooperativeMatrixWorkgroupScope = VK_TRUE;
  nv.cooperativeMatrixFlexibleDimensions = VK_TRUE;
  nv.cooperativeMatrixPerElementOperations = VK_TRUE;
  nv.cooperativeMatrixTensorAddressing = VK_TRUE;
  nv.cooperativeMatrixReductions = reductions ? VK_TRUE : VK_FALSE;
  nv.cooperativeMatrixConversions = reductions ? VK_TRUE : VK_FALSE;
}

}  // namespace tapdiff::gpu
