#pragma once
// Where a model comes from on the command line: a GGUF file, a Hugging Face folder, or
// `synth:SHAPE[:DTYPE]`, a built-in synthetic model written once into a cache folder (the
// embedded default: no download).
#include <filesystem>
#include <memory>
#include <string>

#include "model/weights.h"

namespace tapdiff::cli {

inline constexpr const char* kDefaultModel = "synth:tiny";

// The path the spec names; for synth: specs, the cached GGUF (written if absent).
std::filesystem::path resolve_model_path(const std::string& spec);
std::unique_ptr<model::Model> open_model(const std::string& spec);

}  // namespace tapdiff::cli
