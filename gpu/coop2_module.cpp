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
