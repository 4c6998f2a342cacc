#pragma once
// The pre-tokenizers of byte-level BPE vocabularies: how text is split into words before the
// merges, named by GGUF tokenizer.ggml.pre as llama.cpp's converter writes it. Each family is one
// pattern, split by hand with Unicode's classes (\p{L}, \p{N}, \s: model/unicode_classes.h):
//   gpt2:   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   llama3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
//           \s*[\r\n]+|\s+(?!\S)|\s+
//   qwen2:  llama3's with \p{N} (one digit a word) for \p{N}{1,3}
// The words cover the text exactly, in order.
#include <string_view>
#include <vector>

namespace tapdiff::model {

using WordSplit = std::vector<std::string_view> (*)(std::string_view text);

struct PreTokenizer {
  std::string_view family;  // "gpt2", "llama3", "qwen2"
  WordSplit split;
  bool ignore_merges;  // a word that is itself a piece is that one token (llama.cpp's, for llama3)
  bool add_bos;        // llama.cpp's default when tokenizer.ggml.add_bos_token is not given
};

// The pre-tokenizer tokenizer.ggml.pre names, as llama.cpp maps the name to a family; nullptr for
// a name tapdiff does not implement ("default", the name llama.cpp reads when none is given, too).
const PreTokenizer* find_pre_tokenizer(std::string_view name);

std::vector<std::string_view> gpt2_words(std::string_view text);
std::vector<std::string_view> llama3_words(std::string_view text);
std::vector<std::string_view> qwen2_words(std::string_view text);

}  // namespace tapdiff::model
