#include "model/ops.h"

namespace tapdiff::model {
namespace {

constexpr std::array<std::string_view, kOpCount> kOpNames = {
#define TAPDIFF_OP(name, cls) #name,
#include "model/ops.def"
#undef TAPDIFF_OP
};

constexpr std::array<OpClass, kOpCount> kOpClasses = {
#define TAPDIFF_OP(name, cls) OpClass::cls,
#include "model/ops.def"
#undef TAPDIFF_OP
};

constexpr std::array<std::string_view, kOpClassCount> kClassNames = {
    "embedding", "norm", "gemm", "rope", "attention", "residual", "activation", "routing", "experts"};
static_assert(static_cast<int>(OpClass::experts) + 1 == kOpClassCount);

}  // namespace

std::string_view op_name(Op op) { return kOpNames[static_cast<std::size_t>(op)]; }
OpClass op_class(Op op) { return kOpClasses[static_cast<std::size_t>(op)]; }
std::string_view op_class_name(OpClass cls) { return kClassNames[static_cast<std::size_t>(cls)]; }

bool is_choice(Op op) { return op == Op::moe_ids || op == Op::idx_ids; }

std::optional<Op> op_from_name(std::string_view name) {
  for (Op op : kAllOps)
    if (op_name(op) == name) return op;
  return std::nullopt;
}

std::optional<OpClass> op_class_from_name(std::string_view name) {
  for (int i = 0; i < kOpClassCount; ++i)
    if (kClassNames[static_cast<std::size_t>(i)] == name) return static_cast<OpClass>(i);
  return std::nullopt;
}

}  // namespace tapdiff::model
