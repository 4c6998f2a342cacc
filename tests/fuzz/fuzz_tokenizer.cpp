// libFuzzer target: a vocabulary (GGUF's tokenizer.ggml.* keys, in tokenizer_input.h's form)
// through the Tokenizer, which encodes every text of the input (every id it gives must be a token
// id), decodes the ids back, decodes ids outside the vocabulary (a UsageError), and makes the
// result valid UTF-8 for display.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/tokenizer_input.h"
#include "text/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tapdiff;
  const fuzz::TokenizerInput input = fuzz::parse_tokenizer_input({data, size});
  std::optional<text::Tokenizer> tokenizer;
  if (!fuzz::documented_errors_only([&] { tokenizer.emplace(input.vocab); })) return 0;
  for (const std::string& text : input.texts) {
    fuzz::documented_errors_only([&] {
      const std::vector<std::int32_t> ids = tokenizer->encode(text, input.vocab.add_bos);
      for (const std::int32_t id : ids) {
        if (id < 0 || id >= tokenizer->size()) {
          std::fprintf(stderr, "tapdiff fuzz: encode gave id %d outside the %d tokens\n", id, tokenizer->size());
          std::abort();
        }
      }
      (void)text::valid_utf8(tokenizer->decode(ids));
    });
  }
  for (const std::int32_t id : {-1, tokenizer->size()})
    fuzz::documented_errors_only([&] { (void)tokenizer->decode_token(id); });
  return 0;
}
