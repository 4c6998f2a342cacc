#include "gpu/kernel_id.h"

#include <fmt/format.h>

namespace tapdiff::gpu {

std::string to_string(const Kernel& k) {
  std::string out = k.variant;
  if (k.activations == Activations::f16) out += ".f16";
  if (k.activations == Activations::bf16) out += ".bf16";
  if (k.weights) out += fmt::format("/{}", model::dtype_name(*k.weights));
  for (const std::string& r : k.roundings) out += "+" + r;
  return out;
}

std::string to_string(const KernelId& id) {
  std::string out;
  for (const Kernel& k : id.kernels) out += (out.empty() ? "" : "+") + to_string(k);
  for (const PlantedFault& f : id.faults)
    out += f.layer ? fmt::format("+inject:{}@{}", f.name, *f.layer) : fmt::format("+inject:{}", f.name);
  return out;
}

}  // namespace tapdiff::gpu
