// libFuzzer target: a Hugging Face tokenizer.json (text/hf_tokenizer.h) read for a model of 512
// tokens, then, when it gives a vocabulary, the Tokenizer built from it (its split patterns
// compiled) encoding three fixed texts (every id must be a token id) and decoding them.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "tests/fuzz/fuzz_support.h"
#include "text/hf_tokenizer.h"
#include "text/tokenizer.h"
#include "text/vocabulary.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tapdiff;
  static const std::filesystem::path folder = [] {
    const auto f = fuzz::scratch_dir() / "tokenizer_json";
    std::filesystem::create_directories(f);
    return f;
  }();
  fuzz::write_file(folder / "tokenizer.json", {data, size});
  model::ModelConfig config;
  config.vocab = 512;
  std::optional<text::Vocabulary> vocab;
  std::optional<text::Tokenizer> tokenizer;
  if (!fuzz::documented_errors_only([&] { vocab = text::hf_vocabulary(folder, config); }) || !vocab) return 0;
  if (!fuzz::documented_errors_only([&] { tokenizer.emplace(*vocab); })) return 0;
  for (const char* text : {"Hello world's 12345!\n\n  x", "caf\xC3\xA9 \xE2\x80\x89\xE6\x97\xA5 \xF0\x9F\x98\x80",
                           "<|endoftext|>it's<|end|>"}) {
    fuzz::documented_errors_only([&] {
      const std::vector<std::int32_t> ids = tokenizer->encode(text, true);
      for (const std::int32_t id : ids) {
        if (id < 0 || id >= tokenizer->size()) {
          std::fprintf(stderr, "tapdiff fuzz: encode gave id %d outside the %d tokens\n", id, tokenizer->size());
          std::abort();
        }
      }
      (void)text::valid_utf8(tokenizer->decode(ids));
    });
  }
  return 0;
}
