// libFuzzer target: a Hugging Face config.json, next to a fixed model.safetensors
// (fuzz_support.h, kTinyHf), through load_model (hf_config, validate, the weights' shapes
// against the config), then every weight row dequantized.
#include <cstddef>
#include <cstdint>

#include "formats/load_model.h"
#include "model/weights.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tapdiff;
  const std::filesystem::path& folder = fuzz::tiny_hf_folder();
  fuzz::write_file(folder / "config.json", {data, size});
  fuzz::documented_errors_only([&] { fuzz::read_all_weights(*formats::load_model(folder)); });
  return 0;
}
