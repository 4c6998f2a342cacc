#pragma once
// The op and op-class enums, generated from ops.def: the one place op names come from.
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tapdiff::model {

enum class OpClass : std::uint8_t { embedding, norm, gemm, rope, attention, residual, activation, routing, experts };
inline constexpr int kOpClassCount = 9;

enum class Op : std::uint8_t {
#define TAPDIFF_OP(name, cls) name,
#include "model/ops.def"
#undef TAPDIFF_OP
};

inline constexpr std::array<Op, 0
#define TAPDIFF_OP(name, cls) +1
#include "model/ops.def"
#undef TAPDIFF_OP
                            >
    kAllOps = {
#define TAPDIFF_OP(name, cls) Op::name,
#include "model/ops.def"
#undef TAPDIFF_OP
};
inline constexpr int kOpCount = static_cast<int>(kAllOps.size());

std::string_view op_name(Op op);
OpClass op_class(Op op);
std::string_view op_class_name(OpClass cls);
std::optional<Op> op_from_name(std::string_view name);
std::optional<OpClass> op_class_from_name(std::string_view name);
// An op whose values are discrete choices, compared exactly: moe_ids (expert ids), idx_ids (kept positions).
bool is_choice(Op op);

}  // namespace tapdiff::model
