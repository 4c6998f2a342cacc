#include "gpu/device_info.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>

#include <fmt/core.h>

#include "gpu/device_coop2.h"
#include "gpu/vk_error.h"
#include "model/errors.h"

namespace tapdiff::gpu {
namespace {

std::vector<std::string> device_extensions(VkPhysicalDevice device) {
  std::uint32_t n = 0;
  check(vkEnumerateDeviceExtensionProperties(device, nullptr, &n, nullptr), "vkEnumerateDeviceExtensionProperties");
  std::vector<VkExtensionProperties> props(n);
  check(vkEnumerateDeviceExtensionProperties(device, nullptr, &n, props.data()),
        "vkEnumerateDeviceExtensionProperties");
  std::vector<std::string> names;
  for (const auto& p : props) names.emplace_back(p.extensionName);
  return names;
}

void query_properties(VkPhysicalDevice device, DeviceInfo& info) {
  VkPhysicalDeviceFloatControlsProperties float_controls{};
  float_controls.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES;
  VkPhysicalDeviceDriverProperties driver{};
  driver.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES;
  driver.pNext = &float_controls;
  VkPhysicalDeviceMaintenance3Properties maintenance3{};
  maintenance3.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES;
  maintenance3.pNext = info.api_version >= VK_API_VERSION_1_2 ? &driver : nullptr;
  VkPhysicalDeviceSubgroupProperties subgroup{};
  subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
  subgroup.pNext = &maintenance3;
  VkPhysicalDeviceProperties2 props{};
  props.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  props.pNext = &subgroup;
  vkGetPhysicalDeviceProperties2(device, &props);
  const VkPhysicalDeviceLimits& l = props.properties.limits;
  info.name = props.properties.deviceName;
  info.type = props.properties.deviceType;
  info.driver = info.api_version >= VK_API_VERSION_1_2
                    ? fmt::format("{}, {}", driver.driverName, driver.driverInfo)
                    : fmt::format("driver version {:#x}", props.properties.driverVersion);
  info.subgroup_size = subgroup.subgroupSize;
  info.subgroup_arithmetic = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0 &&
                             (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) != 0;
  info.subgroup_shuffle_vote =
      (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0 &&
      (subgroup.supportedOperations & (VK_SUBGROUP_FEATURE_SHUFFLE_BIT | VK_SUBGROUP_FEATURE_VOTE_BIT)) ==
          (VK_SUBGROUP_FEATURE_SHUFFLE_BIT | VK_SUBGROUP_FEATURE_VOTE_BIT);
  info.denorm_preserve_f16 = info.api_version >= VK_API_VERSION_1_2 && float_controls.shaderDenormPreserveFloat16;
  info.rounding_rte_f16 = info.api_version >= VK_API_VERSION_1_2 && float_controls.shaderRoundingModeRTEFloat16;
  info.max_memory_allocation_size = maintenance3.maxMemoryAllocationSize;
  info.max_storage_buffer_range = l.maxStorageBufferRange;
  info.min_storage_buffer_offset_alignment = l.minStorageBufferOffsetAlignment;
  info.max_workgroup_invocations = l.maxComputeWorkGroupInvocations;
  info.max_workgroup_size_x = l.maxComputeWorkGroupSize[0];
  std::copy_n(l.maxComputeWorkGroupCount, 3, info.max_workgroup_count);
  info.max_shared_memory = l.maxComputeSharedMemorySize;
  info.max_push_constants = l.maxPushConstantsSize;
  info.timestamp_period_ns = l.timestampPeriod;
}

void query_features(VkPhysicalDevice device, DeviceInfo& info) {
  if (info.api_version < VK_API_VERSION_1_2) return;  // the 1.2 feature structs are not defined there
  VkPhysicalDeviceVulkan12Features v12{};
  v12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  VkPhysicalDeviceVulkan11Features v11{};
  v11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
  v11.pNext = &v12;
  VkPhysicalDeviceFeatures2 features{};
  features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  features.pNext = &v11;
  vkGetPhysicalDeviceFeatures2(device, &features);
  info.shader_float16 = v12.shaderFloat16 == VK_TRUE;
  info.shader_float64 = features.features.shaderFloat64 == VK_TRUE;
  info.shader_int8 = v12.shaderInt8 == VK_TRUE;
  info.storage_buffer_8bit = v12.storageBuffer8BitAccess == VK_TRUE;
  info.storage_buffer_16bit = v11.storageBuffer16BitAccess == VK_TRUE;
  info.vulkan_memory_model = v12.vulkanMemoryModel == VK_TRUE;
  info.vulkan_memory_model_device_scope = v12.vulkanMemoryModelDeviceScope == VK_TRUE;
}

// The feature and the shader stages of VK_NV_cooperative_matrix; their structs may only be chained
// where the device has the extension.
bool nv_cooperative_matrix_usable(VkPhysicalDevice device) {
  const auto features = extension_features<VkPhysicalDeviceCooperativeMatrixFeaturesNV>(
      device, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV);
  const auto props = extension_properties<VkPhysicalDeviceCooperativeMatrixPropertiesNV>(
      device, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_NV);
  return features.cooperativeMatrix == VK_TRUE &&
         (props.cooperativeMatrixSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0;
}

// The feature of VK_KHR_pipeline_executable_properties (chained only where the device has it).
bool pipeline_executable_info(VkPhysicalDevice device) {
  return extension_features<VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR>(
             device, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR)
             .pipelineExecutableInfo == VK_TRUE;
}

std::string_view component_name(VkComponentTypeNV type) {
  switch (type) {
    case VK_COMPONENT_TYPE_FLOAT16_NV: return "f16";
    case VK_COMPONENT_TYPE_FLOAT32_NV: return "f32";
    case VK_COMPONENT_TYPE_FLOAT64_NV: return "f64";
    case VK_COMPONENT_TYPE_SINT8_NV: return "s8";
    case VK_COMPONENT_TYPE_SINT32_NV: return "s32";
    case VK_COMPONENT_TYPE_UINT8_NV: return "u8";
    case VK_COMPONENT_TYPE_UINT32_NV: return "u32";
    default: return "other";
  }
}

// Whether p is the kernel's 16x16x16 f16 multiply with `sums` as C and result type.
bool is_f16_16x16x16(const VkCooperativeMatrixPropertiesNV& p, VkComponentTypeNV sums) {
  return p.MSize == 16 && p.NSize == 16 && p.KSize == 16 && p.scope == VK_SCOPE_SUBGROUP_NV &&
         p.AType == VK_COMPONENT_TYPE_FLOAT16_NV && p.BType == VK_COMPONENT_TYPE_FLOAT16_NV && p.CType == sums &&
         p.DType == sums;
}

void query_memory_and_queues(VkPhysicalDevice device, DeviceInfo& info) {
  VkPhysicalDeviceMemoryProperties memory{};
  vkGetPhysicalDeviceMemoryProperties(device, &memory);
  for (std::uint32_t h = 0; h < memory.memoryHeapCount; ++h)
    info.heaps.push_back(
        {memory.memoryHeaps[h].size, (memory.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) != 0});
  std::uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(device, &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vkGetPhysicalDeviceQueueFamilyProperties(device, &n, families.data());
  // Prefer a family with compute and graphics (the "universal" queue, fastest on most drivers),
  // else any with compute.
  for (std::uint32_t f = 0; f < n; ++f) {
    const VkQueueFlags flags = families[f].queueFlags;
    if ((flags & VK_QUEUE_COMPUTE_BIT) == 0) continue;
    if (info.compute_queue_family < 0 || (flags & VK_QUEUE_GRAPHICS_BIT) != 0)
      info.compute_queue_family = static_cast<int>(f);
    if ((flags & VK_QUEUE_GRAPHICS_BIT) != 0) break;
  }
  if (info.compute_queue_family >= 0)
    info.timestamp_valid_bits = families[static_cast<std::size_t>(info.compute_queue_family)].timestampValidBits;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string device_list(const std::vector<DeviceInfo>& devices) {
  std::string out;
  for (const auto& d : devices) out += fmt::format("{}[{}] {}", out.empty() ? "" : ", ", d.index, summary(d));
  return out;
}

int type_rank(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 3;
    default: return 4;
  }
}

}  // namespace

std::string_view device_type_name(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
    default: return "other";
  }
}

std::string version_string(std::uint32_t v) {
  return fmt::format("{}.{}.{}", VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v), VK_API_VERSION_PATCH(v));
}

DeviceInfo query_device(VkPhysicalDevice device, int index) {
  DeviceInfo info;
  info.index = index;
  info.handle = device;
  VkPhysicalDeviceProperties props{};
  vkGetPhysicalDeviceProperties(device, &props);
  info.api_version = props.apiVersion;
  query_properties(device, info);
  query_features(device, info);
  query_memory_and_queues(device, info);
  bool khr_cooperative_matrix = false, nv_cooperative_matrix2 = false;
  for (const std::string& e : device_extensions(device)) {
    khr_cooperative_matrix = khr_cooperative_matrix || e == kKhrCooperativeMatrixExtension;
    nv_cooperative_matrix2 = nv_cooperative_matrix2 || e == kNvCooperativeMatrix2Extension;
    if (e == kKhrCooperativeMatrixExtension || e == VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME)
      info.cooperative_matrix = true;
    if (e == VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME && info.api_version >= VK_API_VERSION_1_2)
      info.nv_cooperative_matrix = nv_cooperative_matrix_usable(device);
    if (e == VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME) info.push_descriptor = true;
    if (e == VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME)
      info.pipeline_statistics = pipeline_executable_info(device);
  }
  if (khr_cooperative_matrix && nv_cooperative_matrix2 && info.api_version >= VK_API_VERSION_1_2) {
    info.nv_cooperative_matrix2 = nv_cooperative_matrix2_usable(device);
    info.nv_cooperative_matrix2_reductions = info.nv_cooperative_matrix2 && nv_cooperative_matrix2_reductions(device);
  }
  return info;
}

CooperativeMatrixShapes query_cooperative_matrix_shapes(VkInstance instance, const DeviceInfo& info) {
  CooperativeMatrixShapes shapes;
  if (!info.nv_cooperative_matrix) return shapes;
  const auto query = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
      vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
  TAPDIFF_ASSERT(query != nullptr, "{} offers VK_NV_cooperative_matrix without its entry point", info.name);
  std::uint32_t n = 0;
  check(query(info.handle, &n, nullptr), "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV");
  std::vector<VkCooperativeMatrixPropertiesNV> props(n);
  for (auto& p : props) p.sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV;
  check(query(info.handle, &n, props.data()), "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV");
  bool f32_sums = false, f16_sums = false;
  for (const auto& p : props) {
    f32_sums = f32_sums || is_f16_16x16x16(p, VK_COMPONENT_TYPE_FLOAT32_NV);
    f16_sums = f16_sums || is_f16_16x16x16(p, VK_COMPONENT_TYPE_FLOAT16_NV);
    shapes.listed += fmt::format("{}{}x{}x{} {}*{}+{}{}", shapes.listed.empty() ? "" : ", ", p.MSize, p.NSize, p.KSize,
                                 component_name(p.AType), component_name(p.BType), component_name(p.CType),
                                 p.scope == VK_SCOPE_SUBGROUP_NV ? "" : " (not subgroup scope)");
  }
  shapes.f16_16x16x16 = f32_sums && f16_sums;
  return shapes;
}

std::string summary(const DeviceInfo& d) {
  return fmt::format("{} ({}, {}, Vulkan {})", d.name, device_type_name(d.type), d.driver,
                     version_string(d.api_version));
}

std::string describe(const DeviceInfo& d) {
  auto yes = [](bool b) { return b ? "yes" : "no"; };
  std::string heaps;
  for (std::size_t h = 0; h < d.heaps.size(); ++h)
    heaps += fmt::format("{}heap {}: {}{}", h > 0 ? ", " : "", h, format_bytes(static_cast<double>(d.heaps[h].size)),
                         d.heaps[h].device_local ? " device-local" : "");
  std::string out = fmt::format("[{}] {}\n", d.index, d.name);
  out += fmt::format("    type {}, driver {}, Vulkan {}\n", device_type_name(d.type), d.driver,
                     version_string(d.api_version));
  out += fmt::format("    subgroup size {} (arithmetic in compute: {}), compute queue: {}\n", d.subgroup_size,
                     yes(d.subgroup_arithmetic), d.compute_queue_family >= 0 ? "yes" : "no");
  out += fmt::format("    memory {}\n", heaps);
  out += fmt::format(
      "    shaderFloat16 {}, shaderFloat64 {}, storageBuffer16BitAccess {}, shaderInt8 {}, storageBuffer8BitAccess {}, "
      "cooperative matrix {} (VK_NV_cooperative_matrix2 {}), kernel statistics {}\n",
      yes(d.shader_float16), yes(d.shader_float64), yes(d.storage_buffer_16bit), yes(d.shader_int8),
      yes(d.storage_buffer_8bit), yes(d.cooperative_matrix), yes(d.nv_cooperative_matrix2), yes(d.pipeline_statistics));
  out += fmt::format("    max storage buffer range {}, shared memory {}, workgroup invocations {}\n",
                     format_bytes(static_cast<double>(d.max_storage_buffer_range)),
                     format_bytes(static_cast<double>(d.max_shared_memory)), d.max_workgroup_invocations);
  return out;
}

const DeviceInfo& select_device(const std::vector<DeviceInfo>& devices, const std::string& request) {
  if (devices.empty())
    throw EnvironmentError(
        "Vulkan: no Vulkan device found (the loader is installed but reports no driver; install a GPU driver, or "
        "mesa-vulkan-drivers for the CPU device lavapipe)");
  if (request.empty()) {
    return *std::min_element(devices.begin(), devices.end(), [](const DeviceInfo& a, const DeviceInfo& b) {
      return type_rank(a.type) < type_rank(b.type);  // stable on ties: the lowest index wins
    });
  }
  int index = -1;
  const auto [end, ec] = std::from_chars(request.data(), request.data() + request.size(), index);
  if (ec == std::errc() && end == request.data() + request.size()) {
    if (index >= 0 && index < static_cast<int>(devices.size())) return devices[static_cast<std::size_t>(index)];
    throw UsageError(fmt::format("--device {}: there is no Vulkan device {}; found {}: {}", request, index,
                                 devices.size(), device_list(devices)));
  }
  for (const auto& d : devices)
    if (lower(d.name).find(lower(request)) != std::string::npos) return d;
  throw UsageError(fmt::format("--device {}: no Vulkan device's name contains '{}'; found {}: {}", request, request,
                               devices.size(), device_list(devices)));
}

}  // namespace tapdiff::gpu
