#pragma once
// The vocabulary of a GGUF file: its tokenizer.ggml.* keys, as llama.cpp's llama_vocab reads them.
#include <optional>

#include "formats/gguf_reader.h"
#include "model/config.h"
#include "text/vocabulary.h"

namespace tapdiff::text {

// tokenizer.ggml.*, or nullopt when the file has no token list; FormatError naming the file where
// the lists disagree with each other or with the model's vocab size.
std::optional<Vocabulary> gguf_vocabulary(const formats::GgufFile& f, const model::ModelConfig& c);

}  // namespace tapdiff::text
