#include "text/gguf_vocabulary.h"

#include <fmt/format.h>

#include "model/errors.h"
#include "text/pre_tokenizers.h"

namespace tapdiff::text {

// tokenizer.ggml.*, or nullopt when the file has no token list.
std::optional<Vocabulary> gguf_vocabulary(const formats::GgufFile& f, const model::ModelConfig& c) {
  auto tokens = f.get_string_array("tokenizer.ggml.tokens");
  if (!tokens) return std::nullopt;
  Vocabulary v;
  v.source = f.path().string();
  v.model = f.get_string("tokenizer.ggml.model").value_or("llama");
  v.tokens = std::move(*tokens);
  const std::vector<float> scores = f.get_float_array("tokenizer.ggml.scores").value_or(std::vector<float>{});
  v.scores.assign(scores.begin(), scores.end());
  v.types = f.get_int_array("tokenizer.ggml.token_type").value_or(std::vector<std::int32_t>{});
  v.merges = f.get_string_array("tokenizer.ggml.merges").value_or(std::vector<std::string>{});
  v.pre = f.get_string("tokenizer.ggml.pre").value_or("");
  v.bos = c.bos_token;
  v.eos = c.eos_token;
  v.unk = formats::gguf_token_id(f, "tokenizer.ggml.unknown_token_id");
  // Without the key, llama.cpp's default: a BOS for SentencePiece vocabularies and the Llama 3
  // family's, none for other byte-level BPE ones.
  const PreTokenizer* pre = v.model == "gpt2" ? find_pre_tokenizer(v.pre) : nullptr;
  v.add_bos =
      f.get_bool("tokenizer.ggml.add_bos_token").value_or(v.model != "gpt2" || (pre != nullptr && pre->add_bos));
  v.space_prefix = f.get_bool("tokenizer.ggml.add_space_prefix").value_or(v.model == "llama")
                       ? SpacePrefix::every_fragment
                       : SpacePrefix::none;
  v.add_eos = f.get_bool("tokenizer.ggml.add_eos_token").value_or(false);
  auto check = [&](std::size_t n, std::string_view what) {
    if (n != 0 && n != v.tokens.size())
      throw_format_error(fmt::format("{}: {}: expected {} entries (one per token), found {}", f.path().string(), what,
                                     v.tokens.size(), n));
  };
  check(v.scores.size(), "tokenizer.ggml.scores");
  check(v.types.size(), "tokenizer.ggml.token_type");
  if (v.tokens.size() != static_cast<std::size_t>(c.vocab))
    throw_format_error(
        fmt::format("{}: tokenizer.ggml.tokens: expected {} tokens (the rows of token_embd.weight), "
                    "found {}",
                    f.path().string(), c.vocab, v.tokens.size()));
  return v;
}

}  // namespace tapdiff::text
