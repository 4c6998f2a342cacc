#include "bisect/compare/precision_evidence.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <optional>

#include <fmt/core.h>

#include "model/half_float.h"

namespace tapdiff::bisect {
namespace {

constexpr std::int64_t kRowsRead = 64;      // of each op, from its first row
constexpr std::int64_t kValuesNeeded = 64;  // non-zero finite values of one op, to be evidence
constexpr std::size_t kOpsRead = 8;         // computed ops looked at, at most

// Which narrow types hold every non-zero finite value of an op's rows.
struct Fit {
  std::int64_t values = 0;
  bool bf16 = true, f16 = true, f32 = true;
};

void fit_value(double v, Fit& fit) {
  if (!std::isfinite(v) || v == 0) return;
  ++fit.values;
  const auto f = static_cast<float>(v);
  if (static_cast<double>(f) != v) {
    fit.f32 = fit.f16 = fit.bf16 = false;
    return;
  }
  fit.bf16 = fit.bf16 && (std::bit_cast<std::uint32_t>(f) & 0xFFFFu) == 0;
  fit.f16 = fit.f16 && model::widen_f16(model::narrow_f16(f)) == f;
}

Fit fit_of(const dumps::DumpReader& b, const model::TensorId& id) {
  const model::HostTensor rows = b.read(id, 0, kRowsRead).to(model::Scalar::f64);
  Fit fit;
  for (double v : rows.f64()) fit_value(v, fit);
  return fit;
}

// A dump read through llama.cpp's names: its Vulkan backend (on a device without cooperative
// matrices) keeps f16 sums in the products of prefill chunks, whose outputs are then all f16
// values; its CPU backend's are f32 values.
PrecisionOfB llama_cpp_backend(const dumps::DumpReader& b) {
  using From = PrecisionOfB::From;
  for (const model::TensorId& id : b.tensors()) {
    if (model::op_class(id.op) != model::OpClass::gemm) continue;
    const Fit fit = fit_of(b, id);
    if (fit.values < kValuesNeeded) continue;
    if (fit.f16)
      return {model::Precision::llama_cpp_vulkan, From::inferred,
              fmt::format("read through llama.cpp's names, and every one of {} values of B's {} is an f16 value: "
                          "llama.cpp's Vulkan backend, whose products keep f16 sums",
                          fit.values, model::to_string(id))};
    return {model::Precision::llama_cpp, From::inferred,
            fmt::format("read through llama.cpp's names, and B's {} holds values no f16 holds: llama.cpp's CPU "
                        "backend (its Vulkan backend with F32 weights too keeps f32 sums: give --b-precision "
                        "llama.cpp-vulkan for it)",
                        model::to_string(id))};
  }
  return {model::Precision::llama_cpp, From::inferred,
          "read through llama.cpp's names: llama.cpp's CPU backend (no product of B holds enough values to tell its "
          "Vulkan backend apart: give --b-precision llama.cpp-vulkan for it)"};
}

model::Precision stored_in(const dumps::DumpReader& b, const model::TensorId& id) {
  return model::parse_precision(b.storage_dtype(id)).value_or(model::Precision::f32);
}

// The finest type any tap of b is stored in: a tap stored coarser shows its storage's rounding, not
// the arithmetic of B.
model::Precision finest_storage(const dumps::DumpReader& b) {
  model::Precision finest = model::Precision::bf16;  // the coarsest type a tap is stored in
  for (const model::TensorId& id : b.tensors()) {
    const model::Precision p = stored_in(b, id);
    if (model::coarsest({p, finest}) == finest) finest = p;
  }
  return finest;
}

}  // namespace

PrecisionOfB infer_precision(const dumps::DumpReader& b) {
  using From = PrecisionOfB::From;
  if (b.import_map() == "llama.cpp") return llama_cpp_backend(b);
  std::size_t looked = 0;
  std::optional<model::TensorId> first_f32;  // the first op whose values say f32
  const model::Precision finest = finest_storage(b);
  for (const model::TensorId& id : b.tensors()) {
    if (id.op == model::Op::embed || model::is_choice(id.op) || stored_in(b, id) != finest) continue;
    const Fit fit = fit_of(b, id);
    if (fit.values < kValuesNeeded) continue;
    const auto said = [&](model::Precision p, const char* type) {
      return PrecisionOfB{
          p, From::inferred,
          fmt::format("every one of {} values of B's {} is {} value", fit.values, model::to_string(id), type)};
    };
    if (fit.bf16) return said(model::Precision::bf16, "a bf16");
    if (fit.f16) return said(model::Precision::f16, "an f16");
    if (!fit.f32)
      return {model::Precision::f64, From::inferred,
              fmt::format("B's {} holds values no f32 holds", model::to_string(id))};
    if (!first_f32) first_f32 = id;
    if (++looked == kOpsRead) break;
  }
  if (first_f32)
    return {model::Precision::f32, From::inferred,
            fmt::format("B's {} and the next {} computed ops hold values no f16 or bf16 holds",
                        model::to_string(*first_f32), looked - 1)};
  return {model::Precision::f32, From::unknown,
          fmt::format("no computed op of B holds {} non-zero values in its first {} rows", kValuesNeeded, kRowsRead)};
}

PrecisionOfB precision_of(const dumps::DumpReader& b) {
  if (const auto stated = model::parse_precision(b.metadata().compute_dtype))
    return {*stated, PrecisionOfB::From::stated, ""};
  return infer_precision(b);
}

}  // namespace tapdiff::bisect
