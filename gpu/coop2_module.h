#pragma once
// What the modules of the VK_NV_cooperative_matrix2 kernels (gpu/matmul_coop2.h,
// gpu/attention_coop2.h) share: their capabilities, extensions and memory model, their scalar
// types, their bindings and push constants, their tensor layouts, and their entry point.
#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

#include "gpu/spirv_module.h"

namespace tapdiff::gpu::spirv {

// The capabilities both kernels declare, then `more`; the extensions; the Vulkan memory model.
void coop2_header(Module& m, std::initializer_list<std::uint32_t> more);

// void, bool, 32-bit uint (the module's uint type), f16 and f32, declared in that order.
struct Scalars {
  Id void_type, bool_type, uint_type, f16, f32;
};
Scalars scalar_types(Module& m);

// Storage buffers at set 0, bindings 0, 1, ...: one per runtime-array type of `arrays`, each the
// one member of a Block struct, all but binding `written` NonWritable. Returns their variables.
std::vector<Id> storage_buffers(Module& m, std::span<const Id> arrays, std::uint32_t written);

// The push-constant block: a Block struct of `members` (4 bytes each, at offsets 0, 4, ...).
// Returns its variable.
Id push_constants(Module& m, std::initializer_list<Id> members);

// A 2-D tensor layout of `type`: dim0 x dim1 values, rows `stride` values apart.
Id tensor_layout(Module& m, Id type, Id dim0, Id dim1, Id stride);

// `main` as the compute entry point over the global variables `interface`, in workgroups of
// `invocations`, its f16 conversions rounding ties to even with subnormals kept (RoundingModeRTE
// 16, DenormPreserve 16): round_f16's rounding, declared rather than left to the driver.
void coop2_entry_point(Module& m, Id main, std::uint32_t invocations, std::span<const Id> interface);

}  // namespace tapdiff::gpu::spirv
