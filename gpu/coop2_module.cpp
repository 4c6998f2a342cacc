#include "gpu/coop2_module.h"

#include <vector>

#include "gpu/spirv_ops.h"

namespace tapdiff::gpu::spirv {

void coop2_header(Module& m, std::initializer_list<std::uint32_t> more) {
  for (std::uint32_t c :
       {kCapabilityShader, kCapabilityFloat16, kCapabilityStorageBuffer16BitAccess, kCapabilityVulkanMemoryModel,
        kCapabilityDenormPreserve, kCapabilityRoundingModeRTE, kCapabilityCooperativeMatrixKHR})
    m.add(Section::capabilities, OpCapability, {c});
  for (std::uint32_t c : more) m.add(Section::capabilities, OpCapability, {c});
  for (const char* e : {"SPV_KHR_cooperative_matrix", "SPV_NV_cooperative_matrix2", "SPV_NV_tensor_addressing"})
    m.add(Section::extensions, OpExtension, string_words(e));
  m.add(Section::memory_model, OpMemoryModel, {kAddressingLogical, kMemoryModelVulkan});
}

Scalars scalar_types(Module& m) {
  Scalars s{};
  s.void_type = m.type(OpTypeVoid, {});
  s.bool_type = m.type(OpTypeBool, {});
  s.uint_type = m.type(OpTypeInt, {32, 0});
  m.set_uint_type(s.uint_type);
  s.f16 = m.type(OpTypeFloat, {16});
  s.f32 = m.type(OpTypeFloat, {32});
  return s;
}

std::vector<Id> storage_buffers(Module& m, std::span<const Id> arrays, std::uint32_t written) {
  std::vector<Id> buffers;
  for (const Id array : arrays) {
    const auto binding = static_cast<std::uint32_t>(buffers.size());
    const Id block = m.type(OpTypeStruct, {array});
    m.decorate(block, {kDecorationBlock});
    m.add(Section::decorations, OpMemberDecorate, {block, 0, kDecorationOffset, 0});
    const Id buffer = m.global(OpVariable, m.type(OpTypePointer, {kStorageBuffer, block}), {kStorageBuffer});
    m.decorate(buffer, {kDecorationDescriptorSet, 0});
    m.decorate(buffer, {kDecorationBinding, binding});
    if (binding != written) m.decorate(buffer, {kDecorationNonWritable});
    buffers.push_back(buffer);
  }
  return buffers;
}

Id push_constants(Module& m, std::initializer_list<Id> members) {
  const Id block = m.type(OpTypeStruct, members);
  m.decorate(block, {kDecorationBlock});
  for (std::uint32_t i = 0; i < members.size(); ++i)
    m.add(Section::decorations, OpMemberDecorate, {block, i, kDecorationOffset, 4 * i});
  return m.global(OpVariable, m.type(OpTypePointer, {kStoragePushConstant, block}), {kStoragePushConstant});
}

Id tensor_layout(Module& m, Id type, Id dim0, Id dim1, Id stride) {
  const Id made = m.op(OpCreateTensorLayoutNV, type, {});
  const Id sized = m.op(OpTensorLayoutSetDimensionNV, type, {made, dim0, dim1});
  return m.op(OpTensorLayoutSetStrideNV, type, {sized, stride, m.u32(1)});
}

void coop2_entry_point(Module& m, Id main, std::uint32_t invocations, std::span<const Id> interface) {
  std::vector<std::uint32_t> entry{kExecutionModelGLCompute, main};
  const auto name = string_words("main");
  entry.insert(entry.end(), name.begin(), name.end());
  entry.insert(entry.end(), interface.begin(), interface.end());
  m.add(Section::entry_points, OpEntryPoint, entry);
  m.add(Section::execution_modes, OpExecutionMode, {main, kExecutionModeLocalSize, invocations, 1, 1});
  m.add(Section::execution_modes, OpExecutionMode, {main, kExecutionModeRoundingModeRTE, 16});
  m.add(Section::execution_modes, OpExecutionMode, {main, kExecutionModeDenormPreserve, 16});
}

}  // namespace tapdiff::gpu::spirv
