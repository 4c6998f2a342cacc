#pragma once
// The vocabulary of a loaded model, read from its own file: a GGUF's tokenizer.ggml.* keys or a
// Hugging Face folder's tokenizer.json.
#include <optional>

#include "model/weights.h"
#include "text/vocabulary.h"

namespace tapdiff::text {

// nullopt when the file carries none; FormatError naming the file when it is malformed.
std::optional<Vocabulary> load_vocabulary(const model::Model& m);

}  // namespace tapdiff::text
