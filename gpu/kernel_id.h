#pragma once
// What ran for an op on the Vulkan engine, as a value: the kernels in the order they ran (a fused
// residual add and norm is one kernel; a mixture of experts three: the experts' products, their
// activation, the weighted sum), each a variant in an activation type over a weight type with the
// roundings of llama.cpp's precision it applies, and the faults planted in the op. Printed once
// (to_string), where dumps and reports name it:
//   "matmul-tiled-64x64.f16/q4_0+llama.cpp-q8_1+inject:rope-off-by-one@3"
#include <compare>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpu/shaders.h"
#include "model/dtype.h"

namespace tapdiff::gpu {

struct Kernel {
  std::string variant;  // "matmul-tiled-64x64", "add+rms_norm-tree", "attention-flash-32x32"
  Activations activations = Activations::f32;
  std::optional<model::DType> weights = std::nullopt;  // the weights' storage, for an op that reads a matrix or table
  // What it rounds as llama.cpp does: "llama.cpp-q8_1" (the input's dot type), "llama.cpp-f16-kv",
  // "llama.cpp-f16-gelu-table".
  std::vector<std::string> roundings = {};
  bool operator==(const Kernel&) const = default;
};

// A fault planted by --inject: at every layer, or at one.
struct PlantedFault {
  std::string name;
  std::optional<int> layer;
  bool operator==(const PlantedFault&) const = default;
};

struct KernelId {
  KernelId() = default;
  KernelId(Kernel k) : kernels{std::move(k)} {}  // NOLINT(google-explicit-constructor): one kernel is an op's id
  explicit KernelId(std::vector<Kernel> ks, std::vector<PlantedFault> fs = {})
      : kernels(std::move(ks)), faults(std::move(fs)) {}
  std::vector<Kernel> kernels;
  std::vector<PlantedFault> faults;
  bool operator==(const KernelId&) const = default;
};

// "variant[.f16|.bf16][/weights][+rounding...]"
std::string to_string(const Kernel& k);
// Its kernels joined by '+', then "+inject:NAME[@LAYER]" for each fault.
std::string to_string(const KernelId& id);

}  // namespace tapdiff::gpu
