// libFuzzer target: a model.safetensors file through the raw reader (SafetensorsFile: every
// tensor's bytes must lie inside the mapped file) and, next to a fixed config.json
// (fuzz_support.h, kTinyHf), through load_model, then every weight row dequantized.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "formats/load_model.h"
#include "formats/safetensors_reader.h"
#include "model/mapped_file.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using namespace tapdiff;

void check_inside(const formats::SafetensorsFile& file, std::span<const std::byte> mapped) {
  for (const formats::SafetensorsTensor& t : file.tensors()) {
    const bool inside = t.bytes.empty() || (t.bytes.data() >= mapped.data() &&
                                            t.bytes.data() + t.bytes.size() <= mapped.data() + mapped.size());
    if (!inside) {
      std::fprintf(stderr, "tapdiff fuzz: tensor '%s' points outside the file\n", t.name.c_str());
      std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::filesystem::path& folder = fuzz::tiny_hf_folder();
  const auto path = fuzz::write_file(folder / "model.safetensors", {data, size});
  const bool parsed = fuzz::documented_errors_only([&] {
    formats::SafetensorsFile file(path);
    (void)file.metadata().size();
    const std::unique_ptr<model::MappedFile> mapping = file.release_mapping();
    check_inside(file, mapping->bytes());
  });
  if (!parsed) return 0;
  fuzz::documented_errors_only([&] { fuzz::read_all_weights(*formats::load_model(folder)); });
  return 0;
}
