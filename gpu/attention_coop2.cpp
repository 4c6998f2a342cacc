#include "gpu/attention_coop2.h"

#include <bit>
#include <cstddef>
#include <functional>
#include <map>
#include <tuple>

#include "gpu/coop2_module.h"
#include "gpu/shaders/push_constants.h"
#include "gpu/spirv_module.h"
#include "gpu/spirv_ops.h"
#include "model/errors.h"

namespace tapdiff::gpu {

namespace {

using namespace spirv;  // NOLINT(google-build-using-namespace): the opcodes and enumerants

// The AttentionPush members it reads (shaders/push_constants.h: 4-byte scalars, member i at offset 4 i).
enum Push : std::uint32_t {
  kRows = offsetof(AttentionPush, rows) / 4,
  kHeads = offsetof(AttentionPush, heads) / 4,
  kGroup = offsetof(AttentionPush, group) / 4,
  kHeadDim = offsetof(AttentionPush, head_dim) / 4,
  kWindow = offsetof(AttentionPush, window) / 4,
  kQStride = offsetof(AttentionPush, q_stride) / 4,
  kKvStride = offsetof(AttentionPush, kv_stride) / 4,
  kScale = offsetof(AttentionPush, scale) / 4,
  kSplitKeys = offsetof(AttentionPush, split_keys) / 4,
  kSplits = offsetof(AttentionPush, splits) / 4,
};
// Bindings: q, the K and V caches, the row table, out.
enum Binding : std::uint32_t { kQuery, kKeys, kValues, kRowTable, kOut, kBindings };
// Shared words over the pairs' visible ranges [first, end): the smallest first and the largest end
// (the union: the cache rows the tiles scan), the largest first and the smallest end (the
// intersection: a tile inside it is seen whole by every pair and takes no mask).
enum Bound : std::uint32_t { kFirst, kEnd, kLatestFirst, kEarliestEnd, kBounds };

constexpr std::uint32_t kChunk = 8;  // f16 values per 16-byte chunk (uvec4)
constexpr std::uint32_t kNegInf = 0xFF800000u;
constexpr std::uint32_t kHiBits = 0xFFFFE000u;  // an f32's sign, exponent and 10 mantissa bits
constexpr float kLog2e = 1.4426950408889634f;

class Writer {
 public:
  explicit Writer(const Coop2AttentionTile& tile) : t_(tile) {}

  std::vector<std::uint32_t> write() {
    header();
    types();
    interface();
    functions();
    main_function();
    return m_.words(kVersion1_5);  // the instance asks for Vulkan 1.2: SPIR-V up to 1.5
  }

 private:
  void header() {
    coop2_header(m_, {kCapabilityCooperativeMatrixReductions, kCapabilityCooperativeMatrixConversions,
                      kCapabilityPerElementOperations, kCapabilityCooperativeMatrixTensorAddressing,
                      kCapabilityTensorAddressing});
    glsl_ = m_.id();
    std::vector<std::uint32_t> import{glsl_};
    const auto name = string_words("GLSL.std.450");
    import.insert(import.end(), name.begin(), name.end());
    m_.add(Section::imports, OpExtInstImport, import);
  }

  void types() {
    const Scalars s = scalar_types(m_);
    void_ = s.void_type, bool_ = s.bool_type, uint_ = s.uint_type, f16_ = s.f16, f32_ = s.f32;
    uvec2_ = m_.type(OpTypeVector, {uint_, 2});
    uvec3_ = m_.type(OpTypeVector, {uint_, 3});
    uvec4_ = m_.type(OpTypeVector, {uint_, 4});
    hd_ = m_.global(OpSpecConstant, uint_, {64});
    m_.decorate(hd_, {kDecorationSpecId, 3});
    bc_ = m_.global(OpSpecConstant, uint_, {16});
    m_.decorate(bc_, {kDecorationSpecId, 4});
    const Id scope = m_.u32(kScopeWorkgroup);
    auto matrix = [&](Id component, Id rows, Id cols, std::uint32_t use) {
      return m_.type(OpTypeCooperativeMatrixKHR, {component, scope, rows, cols, m_.u32(use)});
    };
    const Id br = m_.u32(t_.rows), bc = bc_;
    q_type_ = matrix(f16_, br, hd_, kUseA);
    kt_type_ = matrix(f16_, hd_, bc, kUseB);
    v_type_ = matrix(f16_, bc, hd_, kUseB);
    s_type_ = matrix(f32_, br, bc, kUseAccumulator);
    p_type_ = matrix(f16_, br, bc, kUseA);
    o_type_ = matrix(f32_, br, hd_, kUseAccumulator);
    out_type_ = matrix(f16_, br, hd_, kUseAccumulator);
    ones_type_ = matrix(f16_, bc, bc, kUseB);
    f16_zero_ = m_.global(OpConstant, f16_, {0});
    f32_zero_ = m_.global(OpConstant, f32_, {0});
    neg_inf_ = m_.global(OpConstant, f32_, {kNegInf});
    layout_type_ = m_.type(OpTypeTensorLayoutNV, {m_.u32(2), m_.u32(kClampConstant)});
    fast_layout_type_ = m_.type(OpTypeTensorLayoutNV, {m_.u32(2), m_.u32(kClampUndefined)});
    view_type_ = m_.type(OpTypeTensorViewNV, {m_.u32(2), m_.global(OpConstantFalse, bool_, {}), m_.u32(1), m_.u32(0)});
  }

  Id variable(std::uint32_t storage, Id type) {
    return m_.global(OpVariable, m_.type(OpTypePointer, {storage, type}), {storage});
  }

  // Bindings, push constants, built-ins and shared memory.
  void interface() {
    const Id chunks = m_.type(OpTypeRuntimeArray, {uvec4_});
    const Id halves = m_.type(OpTypeRuntimeArray, {f16_});
    m_.decorate(chunks, {kDecorationArrayStride, 16});
    m_.decorate(halves, {kDecorationArrayStride, 2});
    const Id arrays[kBindings] = {chunks, halves, halves, chunks, chunks};
    buffers_ = storage_buffers(m_, arrays, kOut);
    ptr_chunk_ = m_.type(OpTypePointer, {kStorageBuffer, uvec4_});
    ptr_f16_ = m_.type(OpTypePointer, {kStorageBuffer, f16_});
    push_ = push_constants(m_, {uint_, uint_, uint_, uint_, uint_, uint_, uint_, f32_, uint_, uint_});
    ptr_push_uint_ = m_.type(OpTypePointer, {kStoragePushConstant, uint_});
    ptr_push_f32_ = m_.type(OpTypePointer, {kStoragePushConstant, f32_});
    const std::pair<Id*, std::uint32_t> builtins[] = {{&workgroup_id_, kBuiltInWorkgroupId},
                                                      {&workgroups_, kBuiltInNumWorkgroups},
                                                      {&local_id_, kBuiltInLocalInvocationId}};
    const Id ptr_input = m_.type(OpTypePointer, {kStorageInput, uvec3_});
    for (const auto& [var, builtin] : builtins) {
      *var = m_.global(OpVariable, ptr_input, {kStorageInput});
      m_.decorate(*var, {kDecorationBuiltIn, builtin});
    }
    // q of the pairs, then their out: rows x HD f16 as chunks (room for HD up to the maximum)
    staged_ = variable(kStorageWorkgroup,
                       m_.type(OpTypeArray, {uvec4_, m_.u32(t_.rows * kCoop2AttentionMaxHeadDim / kChunk)}));
    visible_ = variable(kStorageWorkgroup, m_.type(OpTypeArray, {uvec2_, m_.u32(t_.rows)}));
    bounds_ = variable(kStorageWorkgroup, m_.type(OpTypeArray, {uint_, m_.u32(kBounds)}));
    ptr_shared_chunk_ = m_.type(OpTypePointer, {kStorageWorkgroup, uvec4_});
    ptr_shared_uvec2_ = m_.type(OpTypePointer, {kStorageWorkgroup, uvec2_});
    ptr_shared_uint_ = m_.type(OpTypePointer, {kStorageWorkgroup, uint_});
  }

  // --- function bodies -------------------------------------------------------------------------

  Id op(Op opcode, Id type, std::initializer_list<std::uint32_t> operands) { return m_.op(opcode, type, operands); }
  Id iadd(Id a, Id b) { return op(OpIAdd, uint_, {a, b}); }
  Id imul(Id a, Id b) { return op(OpIMul, uint_, {a, b}); }
  Id udiv(Id a, Id b) { return op(OpUDiv, uint_, {a, b}); }
  Id less(Id a, Id b) { return op(OpULessThan, bool_, {a, b}); }
  Id both(Id a, Id b) { return op(OpLogicalAnd, bool_, {a, b}); }
  Id select(Id type, Id condition, Id yes, Id no) { return op(OpSelect, type, {condition, yes, no}); }
  Id u32(std::uint32_t value) { return m_.u32(value); }
  Id push_uint(Push member) { return op(OpLoad, uint_, {op(OpAccessChain, ptr_push_uint_, {push_, u32(member)})}); }
  Id invocation_x(Id builtin) { return op(OpCompositeExtract, uint_, {op(OpLoad, uvec3_, {builtin}), 0}); }
  // Shared memory is read and written by other invocations across barriers: non-private accesses.
  Id load_shared(Id type, Id pointer) { return op(OpLoad, type, {pointer, kMemoryAccessNonPrivatePointer}); }
  void store_shared(Id pointer, Id value) { m_.code(OpStore, {pointer, value, kMemoryAccessNonPrivatePointer}); }
  Id bound(Bound b) { return op(OpAccessChain, ptr_shared_uint_, {bounds_, u32(b)}); }
  void barrier() {
    m_.code(OpControlBarrier,
            {u32(kScopeWorkgroup), u32(kScopeWorkgroup), u32(kSemanticsAcquireRelease | kSemanticsWorkgroupMemory)});
  }

  // if (condition) body();
  void if_then(Id condition, const std::function<void()>& body) {
    const Id then = m_.id(), merge = m_.id();
    m_.code(OpSelectionMerge, {merge, 0});
    m_.code(OpBranchConditional, {condition, then, merge});
    block(then);
    body();
    m_.code(OpBranch, {merge});
    block(merge);
  }

  // for (i = from; i < end; i += step) body(i);
  void strided_loop(Id from, Id end, std::uint32_t step, const std::function<void(Id)>& body) {
    const Id pre = current_, head = m_.id(), loop_body = m_.id(), next = m_.id(), merge = m_.id();
    const Id i = m_.id(), i_next = m_.id();
    m_.code(OpBranch, {head});
    block(head);
    m_.def(OpPhi, uint_, i, {from, pre, i_next, next});
    const Id more = less(i, end);
    m_.code(OpLoopMerge, {merge, next, 0});
    m_.code(OpBranchConditional, {more, loop_body, merge});
    block(loop_body);
    body(i);
    m_.code(OpBranch, {next});
    block(next);
    m_.def(OpIAdd, uint_, i_next, {i, u32(step)});
    m_.code(OpBranch, {head});
    block(merge);
  }

  // Starts block `id`, remembered as the current one (for phis of the loops that follow).
  Id block(Id id) { return current_ = m_.label(id); }

  // Begins a function of this signature (its type declared once); `values` are its parameters.
  Id function(Id result, std::initializer_list<Id> parameters, std::vector<Id>& values) {
    std::vector<std::uint32_t> signature{result};
    signature.insert(signature.end(), parameters);
    auto [known, added] = function_types_.try_emplace(signature, 0);
    if (added) {
      known->second = m_.id();
      std::vector<std::uint32_t> operands{known->second};
      operands.insert(operands.end(), signature.begin(), signature.end());
      m_.add(Section::globals, OpTypeFunction, operands);
    }
    const Id type = known->second;
    const Id fn = m_.id();
    m_.code(OpFunction, {result, fn, 0, type});
    values.clear();
    for (Id p : parameters) values.push_back(m_.op(OpFunctionParameter, p, {}));
    block(m_.id());
    return fn;
  }
  void end_function(Id value) {
    m_.code(OpReturnValue, {value});
    m_.code(OpFunctionEnd, {});
  }
  Id glsl(std::uint32_t instruction, std::initializer_list<std::uint32_t> operands) {
    std::vector<std::uint32_t> all{f32_, m_.id(), glsl_, instruction};
    all.insert(all.end(), operands);
    m_.add(Section::functions, OpExtInst, all);
    return all[1];
  }

  // The per-element and combining functions the main function's matrix operations call.
  void functions() {
    std::vector<Id> v;
    // float mask(uint row, uint col, float s, uint k0, float scale2): s scale2 where pair `row`
    // sees cache row k0 + col, else -inf
    mask_ = function(f32_, {uint_, uint_, f32_, uint_, f32_}, v);
    {
      const Id key = iadd(v[3], v[1]);
      const Id range = load_shared(uvec2_, op(OpAccessChain, ptr_shared_uvec2_, {visible_, v[0]}));
      const Id first = op(OpCompositeExtract, uint_, {range, 0}), end = op(OpCompositeExtract, uint_, {range, 1});
      const Id seen = both(op(OpUGreaterThanEqual, bool_, {key, first}), less(key, end));
      end_function(select(f32_, seen, op(OpFMul, f32_, {v[2], v[4]}), neg_inf_));
    }
    // float max2(float a, float b): the row reductions' combiner
    max2_ = function(f32_, {f32_, f32_}, v);
    end_function(glsl(kGlslFMax, {v[0], v[1]}));
    // float max_of(uint row, uint col, float x, float m): max(x, m)
    max_of_ = function(f32_, {uint_, uint_, f32_, f32_}, v);
    end_function(glsl(kGlslFMax, {v[2], v[3]}));
    // float exp_from(uint row, uint col, float x, float m): exp2(x - m), 0 while m is -inf
    exp_from_ = function(f32_, {uint_, uint_, f32_, f32_}, v);
    {
      const Id none = op(OpFOrdEqual, bool_, {v[3], neg_inf_});
      end_function(select(f32_, none, f32_zero_, glsl(kGlslExp2, {op(OpFSub, f32_, {v[2], v[3]})})));
    }
    // float high_part(uint row, uint col, float p): p cut to 11 significant bits (an f16 value)
    high_part_ = function(f32_, {uint_, uint_, f32_}, v);
    end_function(op(OpBitcast, f32_, {op(OpBitwiseAnd, uint_, {op(OpBitcast, uint_, {v[2]}), u32(kHiBits)})}));
  }

  void main_function() {
    const Id main = m_.id();
    m_.code(OpFunction, {void_, main, 0, m_.type(OpTypeFunction, {void_})});
    block(m_.id());
    const Id lid = invocation_x(local_id_);
    const Id group_id = op(OpLoad, uvec3_, {workgroup_id_});
    const Id g = iadd(imul(op(OpCompositeExtract, uint_, {group_id, 1}), invocation_x(workgroups_)),
                      op(OpCompositeExtract, uint_, {group_id, 0}));
    const Id rows = push_uint(kRows), pack = push_uint(kGroup), window = push_uint(kWindow);
    const Id q_stride = push_uint(kQStride), kv_stride = push_uint(kKvStride);
    const Id scale = op(OpLoad, f32_, {op(OpAccessChain, ptr_push_f32_, {push_, u32(kScale)})});
    const Id br = u32(t_.rows);
    // take_tile(): `pack` heads side by side, the last tiles first
    const Id units = udiv(push_uint(kHeads), pack);
    const Id tiles = udiv(iadd(imul(rows, pack), u32(t_.rows - 1)), br);
    {
      const Id in_grid = less(g, imul(tiles, units)), go = m_.id(), done = m_.id();
      m_.code(OpSelectionMerge, {go, 0});
      m_.code(OpBranchConditional, {in_grid, go, done});
      block(done);
      m_.code(OpReturn, {});
      block(go);
    }
    const Id from_last = udiv(g, units);
    unit_ = op(OpISub, uint_, {g, imul(from_last, units)});
    p0_ = imul(op(OpISub, uint_, {op(OpISub, uint_, {tiles, u32(1)}), from_last}), br);
    pack_ = pack;
    rows_ = rows;
    q_stride_ = q_stride;
    const Id kv_col = imul(unit_, hd_);
    const Id chunks_per_row = op(OpShiftRightLogical, uint_, {hd_, u32(3)});
    const Id all_chunks = imul(br, chunks_per_row);

    if_then(op(OpIEqual, bool_, {lid, u32(0)}), [&] {
      store_shared(bound(kFirst), u32(~0u));
      store_shared(bound(kEnd), u32(0));
      store_shared(bound(kLatestFirst), u32(0));
      store_shared(bound(kEarliestEnd), u32(~0u));
    });
    barrier();
    // q of the pairs, chunk by chunk (pairs past the last row as zeros)
    strided_loop(lid, all_chunks, t_.invocations, [&](Id i) {
      const auto [live, at] = pair_chunk(i, chunks_per_row);
      const Id chunk = op(OpLoad, uvec4_, {op(OpAccessChain, ptr_chunk_, {buffers_[kQuery], u32(0), at})});
      const Id zero = op(OpCompositeConstruct, uvec4_, {u32(0), u32(0), u32(0), u32(0)});
      store_shared(op(OpAccessChain, ptr_shared_chunk_, {staged_, i}), select(uvec4_, live, chunk, zero));
    });
    // each pair's visible cache rows [first, end): causal, within the window; the bounds
    {
      const Id row_ok = less(lid, br);
      const Id t = udiv(iadd(p0_, lid), pack);
      const Id live = both(row_ok, less(t, rows));
      const Id info =
          op(OpLoad, uvec4_,
             {op(OpAccessChain, ptr_chunk_, {buffers_[kRowTable], u32(0), select(uint_, live, t, u32(0))})});
      const Id base = op(OpCompositeExtract, uint_, {info, 0});
      const Id after = iadd(op(OpCompositeExtract, uint_, {info, 1}), u32(1));  // pos + 1
      const Id windowed = both(op(OpINotEqual, bool_, {window, u32(0)}), op(OpUGreaterThan, bool_, {after, window}));
      const Id lo = select(uint_, windowed, op(OpISub, uint_, {after, window}), u32(0));
      const Id first = select(uint_, live, iadd(base, lo), u32(0));
      const Id end = select(uint_, live, iadd(base, after), u32(0));
      if_then(row_ok, [&] {
        store_shared(op(OpAccessChain, ptr_shared_uvec2_, {visible_, lid}),
                     op(OpCompositeConstruct, uvec2_, {first, end}));
      });
      auto atomic = [&](Op opcode, Bound b, Id value, Id identity) {
        op(opcode, uint_, {bound(b), u32(kScopeWorkgroup), u32(0), select(uint_, live, value, identity)});
      };
      atomic(OpAtomicUMin, kFirst, first, u32(~0u));
      atomic(OpAtomicUMax, kEnd, end, u32(0));
      atomic(OpAtomicUMax, kLatestFirst, first, u32(0));
      atomic(OpAtomicUMin, kEarliestEnd, end, u32(~0u));
    }
    barrier();
    const Id k_first = load_shared(uint_, bound(kFirst)), key_end = load_shared(uint_, bound(kEnd));
    const Id latest_first = load_shared(uint_, bound(kLatestFirst));
    const Id earliest_end = load_shared(uint_, bound(kEarliestEnd));
    const Id staged0 = op(OpAccessChain, ptr_shared_chunk_, {staged_, u32(0)});
    const Id q = op(OpCooperativeMatrixLoadKHR, q_type_,
                    {staged0, u32(kLayoutRowMajor), chunks_per_row, kMemoryAccessNonPrivatePointer});

    // K and V rows past the last one any pair sees read as zeros; strides of whole 16-byte chunks
    const Id chunk_stride = op(OpBitwiseAnd, uint_, {kv_stride, u32(~7u)});
    const Id layout = tensor_layout(m_, layout_type_, key_end, kv_stride, chunk_stride);
    const Id fast_layout = tensor_layout(m_, fast_layout_type_, key_end, kv_stride, chunk_stride);
    in_.ones = op(OpCompositeConstruct, ones_type_, {m_.global(OpConstant, f16_, {0x3C00})});  // f16 1.0
    in_.view = op(OpCreateTensorViewNV, view_type_, {});
    in_.k_cache = op(OpAccessChain, ptr_f16_, {buffers_[kKeys], u32(0), u32(0)});
    in_.v_cache = op(OpAccessChain, ptr_f16_, {buffers_[kValues], u32(0), u32(0)});
    in_.zero_kt = op(OpCompositeConstruct, kt_type_, {f16_zero_});
    in_.zero_v = op(OpCompositeConstruct, v_type_, {f16_zero_});
    in_.zero_s = op(OpCompositeConstruct, s_type_, {f32_zero_});
    in_.scale2 = op(OpFMul, f32_, {scale, m_.global(OpConstant, f32_, {std::bit_cast<std::uint32_t>(kLog2e)})});
    in_.q = q, in_.kv_col = kv_col, in_.key_end = key_end, in_.layout = layout, in_.fast_layout = fast_layout;

    // The tiles of keys from k_first on, in three runs: those some pair does not wholly see before
    // the first that every pair sees whole (a window's start), the whole ones (no mask, no edge),
    // then the rest (the diagonal, up to the last row any pair sees). Tiles stay on k_first's grid.
    const Id bc = bc_;
    const Id whole_start = iadd(
        k_first,
        imul(udiv(iadd(op(OpISub, uint_, {select(uint_, less(k_first, latest_first), latest_first, k_first), k_first}),
                       op(OpISub, uint_, {bc, u32(1)})),
                  bc),
             bc));
    const Id whole_tiles = select(uint_, less(whole_start, earliest_end),
                                  udiv(op(OpISub, uint_, {earliest_end, whole_start}), bc), u32(0));
    const Id whole_end = iadd(whole_start, imul(whole_tiles, bc));
    Softmax state{op(OpCompositeConstruct, s_type_, {neg_inf_}), in_.zero_s,
                  op(OpCompositeConstruct, o_type_, {f32_zero_})};
    state = key_loop(k_first, whole_start, state, true);
    state = key_loop(whole_start, whole_end, state, false);
    state = key_loop(whole_end, key_end, state, true);
    const Id o = state.o, l = state.l;

    // out = O / l, one rounding to f16, staged where q was, then each pair's chunks to its row
    const Id l_rows = op(OpCooperativeMatrixReduceNV, o_type_, {l, kReduceRow, max2_});
    const Id out = op(OpFConvert, out_type_, {op(OpFDiv, o_type_, {o, l_rows})});
    barrier();
    m_.code(OpCooperativeMatrixStoreKHR,
            {staged0, out, u32(kLayoutRowMajor), chunks_per_row, kMemoryAccessNonPrivatePointer});
    barrier();
    strided_loop(lid, all_chunks, t_.invocations, [&](Id i) {
      const std::pair<Id, Id> live_at = pair_chunk(i, chunks_per_row);  // clang 14 cannot capture a structured binding
      const Id live = live_at.first, at = live_at.second;
      if_then(live, [&] {
        const Id chunk = load_shared(uvec4_, op(OpAccessChain, ptr_shared_chunk_, {staged_, i}));
        m_.code(OpStore, {op(OpAccessChain, ptr_chunk_, {buffers_[kOut], u32(0), at}), chunk});
      });
    });
    m_.code(OpReturn, {});
    m_.code(OpFunctionEnd, {});

    const Id interface[] = {workgroup_id_,
                            workgroups_,
                            local_id_,
                            push_,
                            staged_,
                            visible_,
                            bounds_,
                            buffers_[kQuery],
                            buffers_[kKeys],
                            buffers_[kValues],
                            buffers_[kRowTable],
                            buffers_[kOut]};
    coop2_entry_point(m_, main, t_.invocations, interface);
  }

  // The running row max m, row sum l and sums of p v of the pairs.
  struct Softmax {
    Id m, l, o;
  };

  // The tiles of keys k0 = from, from + BC, ... while k0 < end, from the state `in`. `masked`: each
  // tile's scores through the mask function, and K and V through the clamped layout where the tile
  // runs past key_end; otherwise the tiles are seen whole by every pair and lie inside key_end.
  Softmax key_loop(Id from, Id end, const Softmax& in, bool masked) {
    const Id pre = current_, head = m_.id(), body = m_.id(), next = m_.id(), merge = m_.id();
    const Id k0 = m_.id(), m = m_.id(), l = m_.id(), o = m_.id();
    const Id k_next = m_.id(), m_next = m_.id(), l_next = m_.id(), o_next = m_.id();
    m_.code(OpBranch, {head});
    block(head);
    m_.def(OpPhi, uint_, k0, {from, pre, k_next, next});
    m_.def(OpPhi, s_type_, m, {in.m, pre, m_next, next});
    m_.def(OpPhi, s_type_, l, {in.l, pre, l_next, next});
    m_.def(OpPhi, o_type_, o, {in.o, pre, o_next, next});
    const Id more = less(k0, end);
    m_.code(OpLoopMerge, {merge, next, 0});
    m_.code(OpBranchConditional, {more, body, merge});
    block(body);
    auto load = [&](Id type_of_layout, Id with) -> std::pair<Id, Id> {
      const Id slice = op(OpTensorLayoutSliceNV, type_of_layout, {with, k0, bc_, in_.kv_col, hd_});
      return {op(OpCooperativeMatrixLoadTensorNV, kt_type_,
                 {in_.k_cache, in_.zero_kt, slice, 0, kTensorAddressingView, in_.view}),
              op(OpCooperativeMatrixLoadTensorNV, v_type_, {in_.v_cache, in_.zero_v, slice, 0, 0})};
    };
    Id kt = 0, v = 0;
    if (masked) {
      // through the unclamped layout where the tile ends at or before key_end, else through the
      // clamped one (which reads zeros past it)
      const Id inside = op(OpULessThanEqual, bool_, {iadd(k0, bc_), in_.key_end});
      const Id fast = m_.id(), edge = m_.id(), loaded = m_.id();
      m_.code(OpSelectionMerge, {loaded, 0});
      m_.code(OpBranchConditional, {inside, fast, edge});
      block(fast);
      const auto [kt_fast, v_fast] = load(fast_layout_type_, in_.fast_layout);
      m_.code(OpBranch, {loaded});
      block(edge);
      const auto [kt_edge, v_edge] = load(layout_type_, in_.layout);
      m_.code(OpBranch, {loaded});
      block(loaded);
      kt = op(OpPhi, kt_type_, {kt_fast, fast, kt_edge, edge});
      v = op(OpPhi, v_type_, {v_fast, fast, v_edge, edge});
    } else {
      std::tie(kt, v) = load(fast_layout_type_, in_.fast_layout);
    }
    const Id s = op(OpCooperativeMatrixMulAddKHR, s_type_, {in_.q, kt, in_.zero_s});
    // s' = s scale2, -inf where the pair does not see the key
    const Id scores = masked ? op(OpCooperativeMatrixPerElementOpNV, s_type_, {s, mask_, k0, in_.scale2})
                             : op(OpMatrixTimesScalar, s_type_, {s, in_.scale2});
    // the online softmax
    const Id tile_max = op(OpCooperativeMatrixReduceNV, s_type_, {scores, kReduceRow, max2_});
    m_.def(OpCooperativeMatrixPerElementOpNV, s_type_, m_next, {tile_max, max_of_, m});
    const Id p = op(OpCooperativeMatrixPerElementOpNV, s_type_, {scores, exp_from_, m_next});
    const Id a = op(OpCooperativeMatrixPerElementOpNV, s_type_, {m, exp_from_, m_next});
    // P as f16 hi + lo
    const Id p_hi = op(OpCooperativeMatrixPerElementOpNV, s_type_, {p, high_part_});
    const Id p_lo = op(OpFSub, s_type_, {p, p_hi});
    const Id a_hi = op(OpFConvert, p_type_, {p_hi}), a_lo = op(OpFConvert, p_type_, {p_lo});
    // the row sums of p on the tensor cores: (hi + lo) times a matrix of ones
    const Id p_sum = op(OpCooperativeMatrixMulAddKHR, s_type_,
                        {a_lo, in_.ones, op(OpCooperativeMatrixMulAddKHR, s_type_, {a_hi, in_.ones, in_.zero_s})});
    m_.def(OpFAdd, s_type_, l_next, {op(OpFMul, s_type_, {l, a}), p_sum});
    const Id a_rows = op(OpCooperativeMatrixReduceNV, o_type_, {a, kReduceRow, max2_});
    const Id o_scaled = op(OpFMul, o_type_, {o, a_rows});
    const Id o_hi = op(OpCooperativeMatrixMulAddKHR, o_type_, {a_hi, v, o_scaled});
    m_.def(OpCooperativeMatrixMulAddKHR, o_type_, o_next, {a_lo, v, o_hi});
    m_.code(OpBranch, {next});
    block(next);
    m_.def(OpIAdd, uint_, k_next, {k0, bc_});
    m_.code(OpBranch, {head});
    block(merge);
    return {m, l, o};
  }

  // Chunk i of the staged pairs (pair i / chunks_per_row): whether its query row exists, and the
  // index of that chunk in q or out (index 0 where it does not, so the read stays in the buffer).
  std::pair<Id, Id> pair_chunk(Id i, Id chunks_per_row) {
    const Id r = udiv(i, chunks_per_row);
    const Id c = op(OpISub, uint_, {i, imul(r, chunks_per_row)});
    const Id pair = iadd(p0_, r);
    const Id t = udiv(pair, pack_);
    const Id head = iadd(imul(unit_, pack_), op(OpISub, uint_, {pair, imul(t, pack_)}));
    const Id live = less(t, rows_);
    const Id element = iadd(imul(t, q_stride_), imul(head, hd_));
    const Id at = iadd(op(OpShiftRightLogical, uint_, {element, u32(3)}), c);
    return {live, select(uint_, live, at, u32(0))};
  }

  Coop2AttentionTile t_;
  Module m_;
  Id current_ = 0, glsl_ = 0;
  Id void_ = 0, bool_ = 0, uint_ = 0, f16_ = 0, f32_ = 0, uvec2_ = 0, uvec3_ = 0, uvec4_ = 0, hd_ = 0, bc_ = 0;
  Id q_type_ = 0, kt_type_ = 0, v_type_ = 0, s_type_ = 0, p_type_ = 0, o_type_ = 0, out_type_ = 0, ones_type_ = 0;
  Id f16_zero_ = 0, f32_zero_ = 0, neg_inf_ = 0, layout_type_ = 0, fast_layout_type_ = 0, view_type_ = 0;
  std::vector<Id> buffers_;  // by Binding
  Id push_ = 0, workgroup_id_ = 0, workgroups_ = 0, local_id_ = 0;
  Id staged_ = 0, visible_ = 0, bounds_ = 0;
  Id ptr_chunk_ = 0, ptr_f16_ = 0, ptr_push_uint_ = 0, ptr_push_f32_ = 0;
  Id ptr_shared_chunk_ = 0, ptr_shared_uvec2_ = 0, ptr_shared_uint_ = 0;
  std::map<std::vector<std::uint32_t>, Id> function_types_;
  Id mask_ = 0, max2_ = 0, max_of_ = 0, exp_from_ = 0, high_part_ = 0;
  Id unit_ = 0, p0_ = 0, pack_ = 0, rows_ = 0, q_stride_ = 0;
  // What key_loop reads: q, the K/V caches (their first column of the pairs' head, layouts, view
  // and end), the zero matrices, the ones, the score scale.
  struct LoopInputs {
    Id q = 0, kv_col = 0, key_end = 0, layout = 0, fast_layout = 0, view = 0, k_cache = 0, v_cache = 0;
    Id zero_kt = 0, zero_v = 0, zero_s = 0, ones = 0, scale2 = 0;
  } in_;
};

}  // namespace

std::vector<std::uint32_t> attention_coop2_spirv(const Coop2AttentionTile& tile) {
  TAPDIFF_ASSERT(tile.rows % 16 == 0 && tile.invocations > 0, "attention-coop2 tile of {} pairs, {} invocations",
                 tile.rows, tile.invocations);
  return Writer(tile).write();
}

}  // namespace tapdiff::gpu
