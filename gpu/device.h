#pragma once
// The logical device with one compute queue, and the choice of memory types.
#include <cstdint>
#include <string>
#include <vector>

#include "gpu/device_coop2.h"
#include "gpu/device_info.h"

namespace tapdiff::gpu {

class Instance;

// Optional device features the engine's kernels use.
struct DeviceNeeds {
  // storageBuffer16BitAccess: f16 activation buffers (--dtype f16). Also what the f16 mode's
  // cooperative-matrix GEMM needs, where the device offers it (Device::cooperative_matrix).
  bool storage_16bit = false;
  // VK_KHR_pipeline_executable_properties where the device offers it: the driver's statistics of
  // each compiled kernel (Pipelines::statistics), for benchmarks. Pipelines are then created with
  // VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR.
  bool pipeline_statistics = false;
  // shaderFloat64: the llama.cpp precision's kernels (--dtype llama.cpp) sum a norm's squares in
  // double, as ggml does, and take f32 divisions and square roots correctly rounded through double.
  bool float64 = false;
};

// The instance's physical devices, described, in the order --device N counts them.
std::vector<DeviceInfo> devices_of(const Instance& instance);

// EnvironmentError when the device lacks Vulkan 1.2, a compute queue or a feature of `needs`,
// naming the device, what was needed (and what for) and what it offers.
void check_device_offers(const DeviceInfo& info, const DeviceNeeds& needs);

class Device {
 public:
  // Opens the device with the features of `needs` enabled; check_device_offers' errors first.
  Device(const Instance& instance, DeviceInfo info, const DeviceNeeds& needs = {});
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  VkDevice handle() const { return device_; }
  VkQueue queue() const { return queue_; }
  std::uint32_t queue_family() const { return static_cast<std::uint32_t>(info_.compute_queue_family); }
  const DeviceInfo& info() const { return info_; }
  // Whether VK_NV_cooperative_matrix is enabled with shaderFloat16 and the Vulkan memory model, all
  // that shaders/matmul_coop.comp declares: in f16 mode, on a device that offers them and lists the
  // kernel's matrix shapes. Otherwise why not, a phrase for messages (empty when enabled).
  bool cooperative_matrix() const { return cooperative_matrix_missing_.empty(); }
  const std::string& cooperative_matrix_missing() const { return cooperative_matrix_missing_; }
  // Likewise VK_NV_cooperative_matrix2 with what matmul-coop2 declares (gpu/device_coop2.h).
  bool cooperative_matrix2() const { return cooperative_matrix2_missing_.empty(); }
  const std::string& cooperative_matrix2_missing() const { return cooperative_matrix2_missing_; }
  // ... and with matmul-coop2's wide tile (kCoop2WideTile).
  const std::string& cooperative_matrix2_wide_missing() const { return cooperative_matrix2_wide_missing_; }
  // Why attention-coop2 cannot run for head_dim `head_dim` here (its reductions and conversions
  // enabled with the rest, its shapes listed); "" when it can.
  std::string attention_coop2_missing(std::uint32_t head_dim) const;
  // Whether pipelines capture the driver's statistics (DeviceNeeds::pipeline_statistics, offered).
  bool pipeline_statistics() const { return pipeline_statistics_; }

  // Index of a memory type allowed by type_bits with every `required` flag, preferring one that
  // also has every `preferred` flag; -1 when none has the required flags.
  int memory_type(std::uint32_t type_bits, VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred) const;
  // The heap of a memory type, for messages.
  std::uint64_t heap_size(int memory_type) const;

 private:
  DeviceInfo info_;
  std::string cooperative_matrix_missing_;
  std::string cooperative_matrix2_missing_;
  std::string cooperative_matrix2_wide_missing_;
  std::vector<Coop2Shape> coop2_shapes_;  // listed by the device (none while validating)
  bool pipeline_statistics_ = false;
  VkPhysicalDeviceMemoryProperties memory_{};
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
};

}  // namespace tapdiff::gpu
