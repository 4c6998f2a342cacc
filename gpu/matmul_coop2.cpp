#include "gpu/matmul_coop2.h"

#include <bit>
#include <cstddef>
#include <tuple>

#include "gpu/coop2_module.h"
#include "gpu/shaders/push_constants.h"
#include "gpu/spirv_module.h"
#include "gpu/spirv_ops.h"
#include "model/errors.h"

namespace tapdiff::gpu {

namespace {

using namespace spirv;  // NOLINT(google-build-using-namespace): the opcodes and enumerants

// The MatmulPush members it reads (shaders/push_constants.h: 4-byte scalars, member i at offset 4 i).
enum Push : std::uint32_t {
  kRows = offsetof(MatmulPush, rows) / 4,
  kK = offsetof(MatmulPush, k) / 4,
  kN = offsetof(MatmulPush, n) / 4,
  kRowBytes = offsetof(MatmulPush, row_bytes) / 4,
  kHasBias = offsetof(MatmulPush, has_bias) / 4,
};

class Writer {
 public:
  Writer(const Coop2Tile& tile, bool f16_sums) : t_(tile), f16_sums_(f16_sums) {}

  std::vector<std::uint32_t> write() {
    header();
    types();
    interface();
    const Id add_bias = bias_function();
    main_function(add_bias);
    return m_.words(spirv::kVersion1_5);  // the instance asks for Vulkan 1.2: SPIR-V up to 1.5
  }

 private:
  void header() {
    spirv::coop2_header(m_, {kCapabilityPerElementOperations, kCapabilityCooperativeMatrixTensorAddressing,
                             kCapabilityTensorAddressing});
  }

  void types() {
    const spirv::Scalars s = spirv::scalar_types(m_);
    void_ = s.void_type, bool_ = s.bool_type, uint_ = s.uint_type, f16_ = s.f16, f32_ = s.f32;
    const Id scope = m_.u32(kScopeWorkgroup);
    auto matrix = [&](Id component, std::uint32_t rows, std::uint32_t cols, std::uint32_t use) {
      return m_.type(OpTypeCooperativeMatrixKHR, {component, scope, m_.u32(rows), m_.u32(cols), m_.u32(use)});
    };
    matrix_a_ = matrix(f16_, t_.rows, t_.k, kUseA);
    matrix_b_ = matrix(f16_, t_.k, t_.cols, kUseB);
    matrix_f32_ = matrix(f32_, t_.rows, t_.cols, kUseAccumulator);
    matrix_f16_ = matrix(f16_, t_.rows, t_.cols, kUseAccumulator);
    const Id f16_zero = m_.global(OpConstant, f16_, {0});
    zero_a_ = m_.global(OpConstantComposite, matrix_a_, {f16_zero});
    zero_b_ = m_.global(OpConstantComposite, matrix_b_, {f16_zero});
    zero_sums_ = f16_sums_ ? m_.global(OpConstantComposite, matrix_f16_, {f16_zero})
                           : m_.global(OpConstantComposite, matrix_f32_, {m_.global(OpConstant, f32_, {0})});
    layout_ = m_.type(OpTypeTensorLayoutNV, {m_.u32(2), m_.u32(kClampUndefined)});
    clamped_layout_ = m_.type(OpTypeTensorLayoutNV, {m_.u32(2), m_.u32(kClampConstant)});
    false_ = m_.global(OpConstantFalse, bool_, {});
  }

  // Bindings, push constants and the workgroup id.
  void interface() {
    const Id array16 = m_.type(OpTypeRuntimeArray, {f16_});
    const Id array32 = m_.type(OpTypeRuntimeArray, {f32_});
    m_.decorate(array16, {kDecorationArrayStride, 2});
    m_.decorate(array32, {kDecorationArrayStride, 4});
    ptr_f16_ = m_.type(OpTypePointer, {kStorageBuffer, f16_});
    ptr_f32_ = m_.type(OpTypePointer, {kStorageBuffer, f32_});
    const Id arrays[] = {array16, array16, array32, array16};
    buffers_ = spirv::storage_buffers(m_, arrays, 3);  // Y written
    push_ = spirv::push_constants(m_, {uint_, uint_, uint_, uint_, uint_});
    ptr_push_uint_ = m_.type(OpTypePointer, {kStoragePushConstant, uint_});
    const Id uvec3 = m_.type(OpTypeVector, {uint_, 3});
    workgroup_id_ = m_.global(OpVariable, m_.type(OpTypePointer, {kStorageInput, uvec3}), {kStorageInput});
    uvec3_ = uvec3;
    m_.decorate(workgroup_id_, {kDecorationBuiltIn, kBuiltInWorkgroupId});
  }

  Id push_constant(Push member) {
    return m_.op(OpLoad, uint_, {m_.op(OpAccessChain, ptr_push_uint_, {push_, m_.u32(member)})});
  }
  // float add_bias(uint row, uint col, float sum, uint n0): sum + bias[n0 + col].
  Id bias_function() {
    const Id type = m_.type(OpTypeFunction, {f32_, uint_, uint_, f32_, uint_});
    const Id function = m_.id();
    m_.code(OpFunction, {f32_, function, 0, type});
    m_.op(OpFunctionParameter, uint_, {});  // row
    const Id col = m_.op(OpFunctionParameter, uint_, {});
    const Id sum = m_.op(OpFunctionParameter, f32_, {});
    const Id n0 = m_.op(OpFunctionParameter, uint_, {});
    m_.label(m_.id());
    const Id at = m_.op(OpAccessChain, ptr_f32_, {buffers_[2], m_.u32(0), m_.op(OpIAdd, uint_, {n0, col})});
    m_.code(OpReturnValue, {m_.op(OpFAdd, f32_, {sum, m_.op(OpLoad, f32_, {at})})});
    m_.code(OpFunctionEnd, {});
    return function;
  }

  struct Layouts {
    Id a, b;
  };

  // The K loop, ending block `pre`: `unroll` slices a pass through `layouts`. Returns the loop's
  // merge block and the sums there.
  std::pair<Id, Id> k_loop(Id pre, Layouts layouts, Id layout_type, std::uint32_t unroll) {
    const Id head = m_.id(), body = m_.id(), next = m_.id(), merge = m_.id();
    const Id k = m_.id(), sums = m_.id(), k_next = m_.id(), sums_next = m_.id();
    const Id sums_type = f16_sums_ ? matrix_f16_ : matrix_f32_;
    m_.code(OpBranch, {head});
    m_.label(head);
    m_.def(OpPhi, uint_, k, {m_.u32(0), pre, k_next, next});
    m_.def(OpPhi, sums_type, sums, {zero_sums_, pre, sums_next, next});
    const Id more = m_.op(OpULessThan, bool_, {k, k_});
    m_.code(OpLoopMerge, {merge, next, 0});
    m_.code(OpBranchConditional, {more, body, merge});
    m_.label(body);
    Id running = sums;
    for (std::uint32_t u = 0; u < unroll; ++u) {
      const Id k0 = u == 0 ? k : m_.op(OpIAdd, uint_, {k, m_.u32(u * t_.k)});
      const Id slice_a = m_.op(OpTensorLayoutSliceNV, layout_type, {layouts.a, m0_, m_.u32(t_.rows), k0, m_.u32(t_.k)});
      const Id a = m_.op(OpCooperativeMatrixLoadTensorNV, matrix_a_, {x_, zero_a_, slice_a, 0, 0});
      const Id slice_b = m_.op(OpTensorLayoutSliceNV, layout_type, {layouts.b, n0_, m_.u32(t_.cols), k0, m_.u32(t_.k)});
      const Id b =
          m_.op(OpCooperativeMatrixLoadTensorNV, matrix_b_, {w_, zero_b_, slice_b, 0, kTensorAddressingView, view_});
      const Id result = u + 1 == unroll ? sums_next : m_.id();
      m_.def(OpCooperativeMatrixMulAddKHR, sums_type, result, {a, b, running});
      running = result;
    }
    m_.code(OpBranch, {next});
    m_.label(next);
    m_.def(OpIAdd, uint_, k_next, {k, m_.u32(unroll * t_.k)});
    m_.code(OpBranch, {head});
    m_.label(merge);
    return {merge, sums};
  }

  // Stores Y's tile: through `whole` (unclamped) when `inside`, else through `edge`, which writes
  // only inside Y. A clamped store checks every element, a cost the tiles inside Y do not pay
  // (gpu/README.md).
  void store(Id y, Id result, Id inside, Id whole, Id edge) {
    const Id whole_block = m_.id(), edge_block = m_.id(), stored = m_.id();
    m_.code(OpSelectionMerge, {stored, 0});
    m_.code(OpBranchConditional, {inside, whole_block, edge_block});
    for (const auto& [block, tensor, type] :
         {std::tuple{whole_block, whole, layout_}, std::tuple{edge_block, edge, clamped_layout_}}) {
      m_.label(block);
      const Id slice = m_.op(OpTensorLayoutSliceNV, type, {tensor, m0_, m_.u32(t_.rows), n0_, m_.u32(t_.cols)});
      m_.code(OpCooperativeMatrixStoreTensorNV, {y, result, slice, 0, 0});
      m_.code(OpBranch, {stored});
    }
    m_.label(stored);
  }

  void main_function(Id add_bias) {
    const Id type = m_.type(OpTypeFunction, {void_});
    const Id view_type = m_.type(OpTypeTensorViewNV, {m_.u32(2), false_, m_.u32(1), m_.u32(0)});
    const Id main = m_.id();
    m_.code(OpFunction, {void_, main, 0, type});
    m_.label(m_.id());
    const Id rows = push_constant(kRows), n = push_constant(kN);
    k_ = push_constant(kK);
    const Id eight_mask = m_.u32(~7u);  // the strides are multiples of 8 values: 16-byte reads
    const Id k_stride = m_.op(OpBitwiseAnd, uint_, {k_, eight_mask});
    const Id w_stride = m_.op(OpBitwiseAnd, uint_,
                              {m_.op(OpShiftRightLogical, uint_, {push_constant(kRowBytes), m_.u32(1)}), eight_mask});
    const Id y_stride = m_.op(OpBitwiseAnd, uint_, {n, eight_mask});
    const Id group = m_.op(OpLoad, uvec3_, {workgroup_id_});
    m0_ = m_.op(OpIMul, uint_, {m_.op(OpCompositeExtract, uint_, {group, 0}), m_.u32(t_.rows)});
    n0_ = m_.op(OpIMul, uint_, {m_.op(OpCompositeExtract, uint_, {group, 1}), m_.u32(t_.cols)});
    const Layouts inner{tensor_layout(m_, layout_, rows, k_, k_stride), tensor_layout(m_, layout_, n, k_, w_stride)};
    const Layouts edge{tensor_layout(m_, clamped_layout_, rows, k_, k_stride),
                       tensor_layout(m_, clamped_layout_, n, k_, w_stride)};
    const Id y_inside = tensor_layout(m_, layout_, rows, n, y_stride);
    const Id y_edge = tensor_layout(m_, clamped_layout_, rows, n, y_stride);
    view_ = m_.op(OpCreateTensorViewNV, view_type, {});
    x_ = m_.op(OpAccessChain, ptr_f16_, {buffers_[1], m_.u32(0), m_.u32(0)});
    w_ = m_.op(OpAccessChain, ptr_f16_, {buffers_[0], m_.u32(0), m_.u32(0)});
    const Id y = m_.op(OpAccessChain, ptr_f16_, {buffers_[3], m_.u32(0), m_.u32(0)});
    const std::uint32_t pass = t_.k * t_.unroll;
    const Id rows_inside = m_.op(OpULessThanEqual, bool_, {m_.op(OpIAdd, uint_, {m0_, m_.u32(t_.rows)}), rows});
    const Id cols_inside = m_.op(OpULessThanEqual, bool_, {m_.op(OpIAdd, uint_, {n0_, m_.u32(t_.cols)}), n});
    const Id whole_passes = m_.op(OpIEqual, bool_, {m_.op(OpBitwiseAnd, uint_, {k_, m_.u32(pass - 1)}), m_.u32(0)});
    const Id tile_inside = m_.op(OpLogicalAnd, bool_, {rows_inside, cols_inside});
    const Id inside = m_.op(OpLogicalAnd, bool_, {tile_inside, whole_passes});
    const Id fast = m_.id(), slow = m_.id(), after = m_.id();
    m_.code(OpSelectionMerge, {after, 0});
    m_.code(OpBranchConditional, {inside, fast, slow});
    m_.label(fast);
    const auto [fast_end, fast_sums] = k_loop(fast, inner, layout_, t_.unroll);
    m_.code(OpBranch, {after});
    m_.label(slow);
    const auto [slow_end, slow_sums] = k_loop(slow, edge, clamped_layout_, 1);
    m_.code(OpBranch, {after});
    m_.label(after);
    const Id sums_type = f16_sums_ ? matrix_f16_ : matrix_f32_;
    Id sums = m_.op(OpPhi, sums_type, {fast_sums, fast_end, slow_sums, slow_end});
    if (f16_sums_) sums = m_.op(OpFConvert, matrix_f32_, {sums});
    // + bias where there is one, then one rounding to f16: the conversion, ties to even with
    // subnormals kept (the module's execution modes), as round_f16 rounds
    const Id has_bias = m_.op(OpINotEqual, bool_, {push_constant(kHasBias), m_.u32(0)});
    const Id add = m_.id(), biased_end = m_.id();
    m_.code(OpSelectionMerge, {biased_end, 0});
    m_.code(OpBranchConditional, {has_bias, add, biased_end});
    m_.label(add);
    const Id biased = m_.op(OpCooperativeMatrixPerElementOpNV, matrix_f32_, {sums, add_bias, n0_});
    m_.code(OpBranch, {biased_end});
    m_.label(biased_end);
    const Id result = m_.op(OpFConvert, matrix_f16_, {m_.op(OpPhi, matrix_f32_, {biased, add, sums, after})});
    store(y, result, tile_inside, y_inside, y_edge);
    m_.code(OpReturn, {});
    m_.code(OpFunctionEnd, {});
    const Id interface[] = {workgroup_id_, buffers_[0], buffers_[1], buffers_[2], buffers_[3], push_};
    spirv::coop2_entry_point(m_, main, t_.invocations, interface);
  }

  Coop2Tile t_;
  bool f16_sums_;
  spirv::Module m_;
  Id void_ = 0, bool_ = 0, uint_ = 0, f16_ = 0, f32_ = 0, uvec3_ = 0, false_ = 0;
  Id matrix_a_ = 0, matrix_b_ = 0, matrix_f32_ = 0, matrix_f16_ = 0, zero_a_ = 0, zero_b_ = 0, zero_sums_ = 0;
  Id layout_ = 0, clamped_layout_ = 0, view_ = 0;
  Id ptr_f16_ = 0, ptr_f32_ = 0, ptr_push_uint_ = 0, push_ = 0, workgroup_id_ = 0;
  std::vector<Id> buffers_;  // W, X, bias, Y
  Id k_ = 0, m0_ = 0, n0_ = 0, x_ = 0, w_ = 0;
};

}  // namespace

std::vector<std::uint32_t> matmul_coop2_spirv(const Coop2Tile& tile, bool f16_sums) {
  const std::uint32_t pass = tile.k * tile.unroll;
  TAPDIFF_ASSERT(tile.rows % 16 == 0 && tile.cols % 16 == 0 && tile.k % 16 == 0 && std::has_single_bit(pass),
                 "matmul-coop2 tile {}x{}, k {} x {}", tile.rows, tile.cols, tile.k, tile.unroll);
  return Writer(tile, f16_sums).write();
}

}  // namespace tapdiff::gpu
