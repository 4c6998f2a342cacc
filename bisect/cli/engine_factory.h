#pragma once
// The one place that names engine classes: builds an engine from command-line words.
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "model/engine.h"
#include "model/weights.h"

namespace tapdiff::cli {

struct EngineChoice {
  std::string name = "ref";   // ref | vulkan
  std::string dtype = "f32";  // a precision (model/precision.h): ref, every one; vulkan: all but f64
  int threads = 0;            // CPU threads, 0 = all
  std::string device;         // vulkan: "" (prefer a discrete GPU), an index, or a name substring
  std::string kernels;        // vulkan: kernel overrides, e.g. "matmul=matvec,matvec=shared"
  int max_context = 0;        // vulkan: KV-cache limit in positions, 0 = grow as needed
  std::string inject;         // vulkan: faults to plant, "NAME[@LAYER][,...]" (gpu/faults.h)
};

// The reference engine in a dtype (the truth in f64, a calibration floor in B's dtype).
EngineChoice reference_choice(const std::string& dtype, int threads);

// Adds --device, --kernels, --max-context and --inject (the Vulkan engine's options) to a command.
void add_vulkan_options(CLI::App& cmd, EngineChoice& choice);

// UsageError for an unknown engine, a dtype the engine does not support, or --inject for an engine
// other than vulkan; EnvironmentError when the Vulkan engine has no usable device.
std::unique_ptr<model::Engine> make_engine(const EngineChoice& choice, const model::Model& model);

}  // namespace tapdiff::cli
