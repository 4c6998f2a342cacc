#include "bisect/cli/engine_factory.h"

#include <fmt/core.h>

#include "gpu/vulkan_engine.h"
#include "model/errors.h"
#include "model/precision.h"
#include "reference/cpu_engine.h"

namespace tapdiff::cli {

void add_vulkan_options(CLI::App& cmd, EngineChoice& choice) {
  cmd.add_option("--device", choice.device, "Vulkan device: index or name substring (see `tapdiff devices`)");
  cmd.add_option("--kernels", choice.kernels,
                 "Vulkan kernel overrides: matmul=auto|tiled|coop|coop-k16|coop2|coop2-128x128|coop2-128x256|matvec,"
                 "matvec=auto|subgroup|shared,"
                 "attention=auto|coop2|coop|flash|two-pass,decode-attention=auto|decode-split|flash-split,"
                 "norm=auto|fused|apart,experts=auto|tiled|matvec");
  cmd.add_option("--max-context", choice.max_context, "Vulkan KV-cache limit in positions (0 = grow as needed)")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--inject", choice.inject,
                 "Plant faults in the vulkan engine: NAME[@LAYER][,...]; see `tapdiff faults`");
}

EngineChoice reference_choice(const std::string& dtype, int threads) {
  EngineChoice choice;
  choice.dtype = dtype;
  choice.threads = threads;
  return choice;
}

std::unique_ptr<model::Engine> make_engine(const EngineChoice& choice, const model::Model& m) {
  if (choice.name != "vulkan" && !choice.inject.empty())
    throw UsageError(
        fmt::format("--inject {}: expected --engine vulkan (faults live in its kernels), found --engine {}",
                    choice.inject, choice.name));
  const std::optional<model::Precision> precision = model::parse_precision(choice.dtype);
  if (choice.name == "ref") {
    if (!precision)
      throw UsageError(
          fmt::format("--dtype {}: expected a precision of the ref engine: {} (f64 and f32 compute in "
                      "it; the others are f32 arithmetic rounded as such an engine rounds)",
                      choice.dtype, model::precision_names()));
    reference::CpuEngineOptions options;
    options.threads = choice.threads;
    options.precision = *precision;
    return reference::make_cpu_engine(m, options);
  }
  if (choice.name == "vulkan") {
    using model::Precision;
    if (!precision || (precision != Precision::f32 && precision != Precision::f16 && precision != Precision::bf16 &&
                       precision != Precision::llama_cpp))
      throw UsageError(
          fmt::format("--dtype {}: the vulkan engine computes in f32, f16 or bf16 (f16 or bf16 weights and "
                      "activations, f32 accumulation) or llama.cpp (f32 rounded where llama.cpp's CPU backend rounds)",
                      choice.dtype));
    gpu::VulkanEngineOptions options;
    options.f16 = precision == model::Precision::f16;
    options.bf16 = precision == model::Precision::bf16;
    options.llama_cpp = precision == model::Precision::llama_cpp;
    options.device = choice.device;
    options.kernels = choice.kernels;
    options.max_context = choice.max_context;
    options.inject = choice.inject;
    options.print_validation = true;  // TAPDIFF_VK_VALIDATION=1 turns the layer on
    return gpu::make_vulkan_engine(m, options);
  }
  throw UsageError(fmt::format("--engine {}: expected ref or vulkan", choice.name));
}

}  // namespace tapdiff::cli
