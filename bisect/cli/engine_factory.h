#pragma once
// The one place that names engine classes: builds an engine from command-line words.
#include <memory>
#include <string>

#include "model/engine.h"
#include "model/weights.h"

namespace tapdiff::cli {

struct EngineChoice {
  std::string name = "ref";   // ref | vulkan
  std::string dtype = "f32";  // ref: f32 | f64
  int threads = 0;            // CPU threads, 0 = all
};

// UsageError for an unknown engine or a dtype the engine does not support.
std::unique_ptr<model::Engine> make_engine(const EngineChoice& choice, const model::Model& model);

}  // namespace tapdiff::cli
