#pragma once
// A Hugging Face folder's tokenizer.json as transformers 5.x's AutoTokenizer runs it. AutoTokenizer
// does not always run the file as written: by tokenizer_config.json's `tokenizer_class` (or
// config.json's), config.json's `model_type` and a few fixed lists, it picks a class
// (transformers/models/auto/tokenization_auto.py, AutoTokenizer.from_pretrained). The generic one
// (TokenizersBackend, PreTrainedTokenizerFast's name in 5.x) runs the file; a model family's own
// class keeps the file's vocabulary, merges, post-processor and added tokens and builds its own
// normalizer, pre-tokenizer and model options. tapdiff follows TokenizersBackend, LlamaTokenizer,
// GemmaTokenizer and Qwen2Tokenizer; any other class is refused for text, naming it (token ids
// still work).
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tapdiff::text {

// What transformers makes of the folder beyond tokenizer.json itself.
struct TransformersTokenizer {
  std::string refusal;                  // "" or why text cannot be encoded the way transformers does
  bool special_tokens_as_text = false;  // tokenizer_config.json split_special_tokens: no special token is read in text
};

// Rewrites `tokenizer_json` (the parsed text of folder/tokenizer.json) as the class AutoTokenizer
// picks builds it, with the special tokens tokenizer_config.json names (or the class's defaults)
// among its added tokens. A refusal names a class tapdiff does not follow, with what chose it; the
// vocabulary and merges are then as the file has them, the rest may be rewritten. FormatError
// naming the file for a tokenizer_config.json or config.json that is not JSON or holds a key of
// the wrong type.
TransformersTokenizer as_transformers_builds_it(const std::filesystem::path& folder,
                                                std::string_view tokenizer_json_text, nlohmann::json& tokenizer_json);

}  // namespace tapdiff::text
