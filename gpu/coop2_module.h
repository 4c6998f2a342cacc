#pragma once
// What the modules of the VK_NV_cooperative_matrix2 kernels (gpu/matmul_coop2.h,
// gpu/attention_coop2.h) share: their capabilities, extensions and memory model, their scalar
// types, and their entry point.
#include <cstdint>
#include <initializer_list>
#include <span>

#include "gpu/spirv_module.h"

namespace tapdiff::gpu::spirv {

// The capabilities both kernels declare, then `more`; the extensions; the Vulkan memory model.
void coop2_header(Module& m, std::initializer_list<std::uint32_t> more);

// void, bool, 32-bit uint (the module's uint type), f16 and f32, declared in that order.
struct Scalars {
  Id void_type, bool_type, uint_type, f16, f32;
};
Scalars scalar_types(Module& m);

// `main` as the compute entry point over the global variables `interface`, in workgroups of
// `invocations`, its f16 conversions rounding ties to even with subnormals kept (RoundingModeRTE
// 16, DenormPreserve 16): round_f16's rounding, declared rather than left to the driver.
void coop2_entry_point(Module& m, Id main, std::uint32_t invocations, std::span<const Id> interface);

}  // namespace tapdiff::gpu::spirv
