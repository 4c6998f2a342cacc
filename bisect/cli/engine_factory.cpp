#include "bisect/cli/engine_factory.h"

#include <fmt/core.h>

#include "model/errors.h"
#include "reference/cpu_engine.h"

namespace tapdiff::cli {

std::unique_ptr<model::Engine> make_engine(const EngineChoice& choice, const model::Model& m) {
  if (choice.name == "ref") {
    reference::CpuEngineOptions options;
    options.threads = choice.threads;
    if (choice.dtype == "f32")
      options.scalar = model::Scalar::f32;
    else if (choice.dtype == "f64")
      options.scalar = model::Scalar::f64;
    else
      throw UsageError(fmt::format("--dtype {}: the ref engine computes in f32 or f64", choice.dtype));
    return reference::make_cpu_engine(m, options);
  }
  throw UsageError(fmt::format("--engine {}: expected ref (the Vulkan engine is not built yet)", choice.name));
}

}  // namespace tapdiff::cli
