#pragma once
// Where a model comes from on the command line: a GGUF file, a Hugging Face folder, or
// `synth:SHAPE[:DTYPE]`, a built-in synthetic model written once into a cache folder (the
// embedded default: no download).
#include <filesystem>
#include <memory>
#include <string>

#include "formats/load_model.h"
#include "model/weights.h"

namespace CLI {
class App;
}

namespace tapdiff::cli {

inline constexpr const char* kDefaultModel = "synth:tiny";

// The path the spec names; for synth: specs, the cached GGUF (written if absent).
std::filesystem::path resolve_model_path(const std::string& spec);
// The model, with a warning on stderr for every tensor holding NaN or infinity.
std::unique_ptr<model::Model> open_model(const std::string& spec, const formats::LoadOptions& options = {});
// --context N: what a model file leaves to the run that loads it (formats::LoadOptions).
void add_load_options(CLI::App& cmd, formats::LoadOptions& options);

// A warning on stderr when a run of `positions` positions goes past the model's context length.
void warn_past_context(const model::Model& model, std::size_t positions);

}  // namespace tapdiff::cli
