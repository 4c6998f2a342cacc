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
  std::string dtype = "f32";  // ref: f32 | f64; vulkan: f32
  int threads = 0;            // CPU threads, 0 = all
  std::string device;         // vulkan: "" (prefer a discrete GPU), an index, or a name substring
  std::string kernels;        // vulkan: kernel overrides, e.g. "matmul=matvec,matvec=shared"
  int max_context = 0;        // vulkan: KV-cache limit in positions, 0 = grow as needed
};

// Adds --device, --kernels and --max-context (the Vulkan engine's options) to a command.
void add_vulkan_options(CLI::App& cmd, EngineChoice& choice);

// UsageError for an unknown engine or a dtype the engine does not support; EnvironmentError when
// the Vulkan engine has no usable device.
std::unique_ptr<model::Engine> make_engine(const EngineChoice& choice, const model::Model& model);

}  // namespace tapdiff::cli
