// libFuzzer target: a GGUF file through the raw reader (GgufFile, every metadata value rendered as
// `tapdiff inspect` lists it) and through load_model (config, weights, vocabulary), then every
// weight row dequantized and, when the file carries a vocabulary, a Tokenizer built from it that
// encodes and decodes a few strings.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "formats/gguf_reader.h"
#include "formats/load_model.h"
#include "tests/fuzz/fuzz_support.h"
#include "text/load_vocabulary.h"
#include "text/tokenizer.h"
#include "text/vocabulary.h"

namespace {

using namespace tapdiff;

void use_vocabulary(const text::Vocabulary& vocab) {
  const text::Tokenizer tokenizer(vocab);
  constexpr std::array<std::string_view, 3> kTexts = {"Hello world", " 12 it's\n\xE2\x96\x81x", "\xFF\xC3"};
  for (std::string_view text : kTexts) (void)tokenizer.decode(tokenizer.encode(text, true));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = fuzz::write_file(fuzz::scratch_dir() / "model.gguf", {data, size});
  const bool parsed = fuzz::documented_errors_only([&] {
    const formats::GgufFile file(path);
    for (const auto& [key, value] : file.metadata()) (void)value.to_string();
  });
  if (!parsed) return 0;
  fuzz::documented_errors_only([&] {
    const auto loaded = formats::load_model(path);
    fuzz::read_all_weights(*loaded);
    if (const auto vocabulary = text::load_vocabulary(*loaded)) use_vocabulary(*vocabulary);
  });
  return 0;
}
