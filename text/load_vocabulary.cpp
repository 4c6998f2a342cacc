#include "text/load_vocabulary.h"

#include <filesystem>

#include "formats/gguf_reader.h"
#include "text/gguf_vocabulary.h"
#include "text/hf_tokenizer.h"

namespace tapdiff::text {

std::optional<Vocabulary> load_vocabulary(const model::Model& m) {
  if (std::filesystem::is_directory(m.path())) return hf_vocabulary(m.path(), m.config());
  return gguf_vocabulary(formats::GgufFile(m.path()), m.config());
}

}  // namespace tapdiff::text
