#pragma once
// Reads a model file into a model::Model: a GGUF file or a Hugging Face folder, picked by what the
// path is (formats/gguf_reader.h, formats/safetensors_reader.h).
#include <filesystem>
#include <memory>

#include "model/weights.h"

namespace tapdiff::formats {

// Loads a GGUF file or a Hugging Face folder (config.json + *.safetensors); FormatError on bad input.
// What a model file leaves to the run that loads it.
struct LoadOptions {
  // The context size the model runs with (llama.cpp's n_ctx, -c): a GGUF's LongRoPE takes its long
  // factors when it exceeds rope.scaling.original_context_length (0: not given).
  int context_size = 0;
};

std::unique_ptr<model::Model> load_model(const std::filesystem::path& path, const LoadOptions& options = {});

}  // namespace tapdiff::formats
