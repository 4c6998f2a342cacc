#pragma once
// Compute pipelines made from the embedded SPIR-V of one activation type (shaders.h), cached by
// (shader, specialization constants),
// and descriptor sets of storage buffers from pools that are reset after each submit.
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gpu/memory.h"
#include "gpu/shaders.h"

namespace tapdiff::gpu {

class Device;

// What the driver reports about one compiled kernel (VK_KHR_pipeline_executable_properties):
// statistics by name ("Register Count": "128"), in the driver's order.
struct PipelineStatistics {
  std::string kernel;  // the shader's build and its specialization constants: "matmul_coop_f16 1,256"
  std::vector<std::pair<std::string, std::string>> values;
};

struct Pipeline {
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
};

class Pipelines {
 public:
  Pipelines(const Device& device, Activations activations) : device_(&device), activations_(activations) {}
  ~Pipelines();
  Pipelines(const Pipelines&) = delete;
  Pipelines& operator=(const Pipelines&) = delete;

  // The pipeline of `shader` with specialization constant i = spec[i], made on first use. The
  // reference stays valid for the life of this object.
  const Pipeline& get(Shader shader, std::span<const std::uint32_t> spec);
  std::size_t size() const { return pipelines_.size(); }
  // The driver's statistics of every pipeline made so far, where the device captures them
  // (Device::pipeline_statistics); empty otherwise.
  std::vector<PipelineStatistics> statistics() const;
  Activations activations() const { return activations_; }

 private:
  struct Layout {
    VkDescriptorSetLayout set = VK_NULL_HANDLE;
    VkPipelineLayout pipeline = VK_NULL_HANDLE;
  };
  const Layout& layout(std::uint32_t bindings);
  VkShaderModule module(Shader shader);

  const Device* device_;
  Activations activations_;
  std::map<std::uint32_t, Layout> layouts_;  // by number of storage-buffer bindings
  std::map<Shader, VkShaderModule> modules_;
  std::map<std::pair<Shader, std::vector<std::uint32_t>>, Pipeline> pipelines_;
};

// Descriptor sets for one submit at a time: allocate() takes sets from a list of pools (a new
// pool when all are full); reset() returns them all once the submit that used them completed.
class DescriptorSets {
 public:
  explicit DescriptorSets(const Device& device) : device_(&device) {}
  ~DescriptorSets();
  DescriptorSets(const DescriptorSets&) = delete;
  DescriptorSets& operator=(const DescriptorSets&) = delete;

  // A set of `layout` with regions[i] bound as the storage buffer of binding i.
  VkDescriptorSet allocate(VkDescriptorSetLayout layout, std::span<const Region> regions);
  void reset();

 private:
  VkDescriptorPool new_pool();

  const Device* device_;
  std::vector<VkDescriptorPool> pools_;
  std::size_t current_ = 0;
};

}  // namespace tapdiff::gpu
