#include "gpu/pipelines.h"

#include <fmt/core.h>

#include "gpu/device.h"
#include "gpu/vk_error.h"
#include "model/errors.h"

namespace tapdiff::gpu {
namespace {

constexpr std::uint32_t kMaxBindings = 8;
constexpr std::uint32_t kSetsPerPool = 256;

std::string statistic_value(const VkPipelineExecutableStatisticKHR& s) {
  switch (s.format) {
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: return s.value.b32 == VK_TRUE ? "yes" : "no";
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: return fmt::format("{}", s.value.i64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: return fmt::format("{}", s.value.u64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: return fmt::format("{:g}", s.value.f64);
    default: return "?";
  }
}

}  // namespace

Pipelines::~Pipelines() {
  const VkDevice d = device_->handle();
  for (auto& [key, p] : pipelines_) vkDestroyPipeline(d, p.pipeline, nullptr);
  for (auto& [shader, m] : modules_) vkDestroyShaderModule(d, m, nullptr);
  for (auto& [n, l] : layouts_) {
    vkDestroyPipelineLayout(d, l.pipeline, nullptr);
    vkDestroyDescriptorSetLayout(d, l.set, nullptr);
  }
}

const Pipelines::Layout& Pipelines::layout(std::uint32_t bindings) {
  if (auto it = layouts_.find(bindings); it != layouts_.end()) return it->second;
  TAPDIFF_ASSERT(bindings <= kMaxBindings, "{} bindings", bindings);
  VkDescriptorSetLayoutBinding b[kMaxBindings]{};
  for (std::uint32_t i = 0; i < bindings; ++i) {
    b[i].binding = i;
    b[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    b[i].descriptorCount = 1;
    b[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  Layout l;
  VkDescriptorSetLayoutCreateInfo set{};
  set.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
  set.bindingCount = bindings;
  set.pBindings = b;
  check(vkCreateDescriptorSetLayout(device_->handle(), &set, nullptr, &l.set), "vkCreateDescriptorSetLayout");
  const VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushConstantBytes};
  VkPipelineLayoutCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  info.setLayoutCount = 1;
  info.pSetLayouts = &l.set;
  info.pushConstantRangeCount = 1;
  info.pPushConstantRanges = &push;
  const VkResult r = vkCreatePipelineLayout(device_->handle(), &info, nullptr, &l.pipeline);
  if (r != VK_SUCCESS) vkDestroyDescriptorSetLayout(device_->handle(), l.set, nullptr);
  check(r, "vkCreatePipelineLayout");
  return layouts_.emplace(bindings, l).first->second;
}

VkShaderModule Pipelines::module(Shader shader) {
  if (auto it = modules_.find(shader); it != modules_.end()) return it->second;
  const ShaderCode& code = shader_code(shader, activations_);
  VkShaderModuleCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
  info.codeSize = code.spirv.size_bytes();
  info.pCode = code.spirv.data();
  VkShaderModule m = VK_NULL_HANDLE;
  check(vkCreateShaderModule(device_->handle(), &info, nullptr, &m), "vkCreateShaderModule",
        [&] { return fmt::format("loading shader {}", code.name); });
  return modules_.emplace(shader, m).first->second;
}

const Pipeline& Pipelines::get(Shader shader, std::span<const std::uint32_t> spec) {
  auto key = std::make_pair(shader, std::vector<std::uint32_t>(spec.begin(), spec.end()));
  if (auto it = pipelines_.find(key); it != pipelines_.end()) return it->second;
  const ShaderCode& code = shader_code(shader, activations_);
  const Layout& l = layout(code.bindings);
  std::vector<VkSpecializationMapEntry> entries(spec.size());
  for (std::uint32_t i = 0; i < spec.size(); ++i) entries[i] = {i, i * 4u, 4u};
  const VkSpecializationInfo specialization{static_cast<std::uint32_t>(entries.size()), entries.data(),
                                            spec.size_bytes(), spec.data()};
  VkComputePipelineCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = module(shader);
  info.stage.pName = "main";
  info.stage.pSpecializationInfo = &specialization;
  info.layout = l.pipeline;
  if (device_->pipeline_statistics()) info.flags = VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  Pipeline p{VK_NULL_HANDLE, l.pipeline, l.set};
  check(vkCreateComputePipelines(device_->handle(), VK_NULL_HANDLE, 1, &info, nullptr, &p.pipeline),
        "vkCreateComputePipelines", [&] { return fmt::format("building the {} kernel", code.name); });
  return pipelines_.emplace(std::move(key), p).first->second;
}

std::vector<PipelineStatistics> Pipelines::statistics() const {
  std::vector<PipelineStatistics> result;
  if (!device_->pipeline_statistics()) return result;
  const VkDevice d = device_->handle();
  const auto properties = reinterpret_cast<PFN_vkGetPipelineExecutablePropertiesKHR>(
      vkGetDeviceProcAddr(d, "vkGetPipelineExecutablePropertiesKHR"));
  const auto statistics = reinterpret_cast<PFN_vkGetPipelineExecutableStatisticsKHR>(
      vkGetDeviceProcAddr(d, "vkGetPipelineExecutableStatisticsKHR"));
  TAPDIFF_ASSERT(properties != nullptr && statistics != nullptr,
                 "VK_KHR_pipeline_executable_properties enabled without its entry points");
  for (const auto& [key, p] : pipelines_) {
    PipelineStatistics row;
    row.kernel = std::string(shader_code(key.first, activations_).name);
    for (std::size_t i = 0; i < key.second.size(); ++i)
      row.kernel += fmt::format("{}{}", i == 0 ? " " : ",", key.second[i]);
    VkPipelineInfoKHR pipeline{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR, nullptr, p.pipeline};
    std::uint32_t executables = 0;
    check(properties(d, &pipeline, &executables, nullptr), "vkGetPipelineExecutablePropertiesKHR");
    for (std::uint32_t e = 0; e < executables; ++e) {
      VkPipelineExecutableInfoKHR executable{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR, nullptr, p.pipeline, e};
      std::uint32_t count = 0;
      check(statistics(d, &executable, &count, nullptr), "vkGetPipelineExecutableStatisticsKHR");
      std::vector<VkPipelineExecutableStatisticKHR> values(count);
      for (auto& v : values) v.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR;
      check(statistics(d, &executable, &count, values.data()), "vkGetPipelineExecutableStatisticsKHR");
      for (std::uint32_t i = 0; i < count; ++i) row.values.emplace_back(values[i].name, statistic_value(values[i]));
    }
    result.push_back(std::move(row));
  }
  return result;
}

DescriptorSets::~DescriptorSets() {
  for (VkDescriptorPool p : pools_) vkDestroyDescriptorPool(device_->handle(), p, nullptr);
}

VkDescriptorPool DescriptorSets::new_pool() {
  const VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kSetsPerPool * kMaxBindings};
  VkDescriptorPoolCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
  info.maxSets = kSetsPerPool;
  info.poolSizeCount = 1;
  info.pPoolSizes = &size;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  check(vkCreateDescriptorPool(device_->handle(), &info, nullptr, &pool), "vkCreateDescriptorPool");
  pools_.push_back(pool);
  return pool;
}

VkDescriptorSet DescriptorSets::allocate(VkDescriptorSetLayout layout, std::span<const Region> regions) {
  VkDescriptorSet set = VK_NULL_HANDLE;
  for (;; ++current_) {
    const bool fresh = current_ >= pools_.size();
    const VkDescriptorPool pool = fresh ? new_pool() : pools_[current_];
    VkDescriptorSetAllocateInfo info{};
    info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
    info.descriptorPool = pool;
    info.descriptorSetCount = 1;
    info.pSetLayouts = &layout;
    const VkResult r = vkAllocateDescriptorSets(device_->handle(), &info, &set);
    if (r == VK_SUCCESS) break;
    // A full pool: go on with the next one (a fresh pool that fails is a real error).
    const bool full = r == VK_ERROR_OUT_OF_POOL_MEMORY || r == VK_ERROR_FRAGMENTED_POOL;
    if (!full || fresh) check(r, "vkAllocateDescriptorSets");
  }
  VkDescriptorBufferInfo buffers[kMaxBindings]{};
  VkWriteDescriptorSet writes[kMaxBindings]{};
  for (std::uint32_t i = 0; i < regions.size(); ++i) {
    buffers[i] = {regions[i].buffer, regions[i].offset, regions[i].size};
    writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    writes[i].dstSet = set;
    writes[i].dstBinding = i;
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &buffers[i];
  }
  vkUpdateDescriptorSets(device_->handle(), static_cast<std::uint32_t>(regions.size()), writes, 0, nullptr);
  return set;
}

void DescriptorSets::reset() {
  for (VkDescriptorPool p : pools_) check(vkResetDescriptorPool(device_->handle(), p, 0), "vkResetDescriptorPool");
  current_ = 0;
}

}  // namespace tapdiff::gpu
