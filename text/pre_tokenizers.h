#pragma once
// The pre-tokenizers of byte-level BPE vocabularies: how text is split into words before the
// merges. Each is a list of split patterns (text/split_regex.h), applied in order, each cutting
// every piece of the one before into its matches and the text between them (Hugging Face
// tokenizers' Split "isolated"). The GGUF names (tokenizer.ggml.pre) are llama.cpp's, with the
// patterns llama.cpp runs for them (llama-vocab.cpp); a tokenizer.json brings its own.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "text/split_regex.h"

namespace tapdiff::text {

struct PreTokenizer {
  std::string_view family;                     // llama.cpp's pre-tokenizer type: "gpt2", "llama3", "tekken", ...
  std::span<const std::string_view> patterns;  // applied in order
  bool ignore_merges;  // a word that is itself a piece is that one token (llama.cpp's, for llama3)
  bool add_bos;        // llama.cpp's default when tokenizer.ggml.add_bos_token is not given
};

// The pre-tokenizer tokenizer.ggml.pre names, as llama.cpp maps the name to a type; nullptr for a
// name tapdiff does not implement, and for "" (llama.cpp then falls back to "default" with a warning).
const PreTokenizer* find_pre_tokenizer(std::string_view name);

// Who runs the patterns: Hugging Face tokenizers reads the text as it is; llama.cpp runs a pattern
// without \p{..} through std::wregex with every non-ASCII White_Space character replaced by U+000B
// (std::wregex's \s knows ASCII only), which changes what a class of literal ranges matches
// (deepseek-llm's U+0800-U+4E00 holds U+2009 and U+3000).
enum class SplitDialect : std::uint8_t { tokenizers, llama_cpp };

// Compiled split patterns.
class WordSplitter {
 public:
  // FormatError naming `where` and the pattern when one is outside text/split_regex.h's syntax.
  WordSplitter(std::span<const std::string> patterns, std::string_view where);
  WordSplitter(std::span<const std::string_view> patterns, std::string_view where, SplitDialect dialect);
  // The words of text, covering it exactly, in order.
  std::vector<std::string_view> split(std::string_view text) const;

 private:
  std::vector<SplitRegex> regexes_;
  std::vector<bool> white_space_as_vt_;  // per pattern: non-ASCII white space reads as U+000B
};

}  // namespace tapdiff::text
