// libFuzzer target: an outside engine's dump (.npz, stored or deflated, or safetensors; the bytes
// tell which, and name the file so) through ImportedDump with vLLM's map (plain names, a split, a sum and q/k channels
// reordered) for a fixed tiny model, then every row of every tap read.
#include <cstddef>
#include <cstdint>

#include "dumps/imported_dump.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tapdiff;
  static const model::ModelConfig config = fuzz::tiny_dump_config();
  static const dumps::ImportOptions options = [] {
    dumps::ImportOptions o;
    o.map = dumps::preset_map("vllm");
    o.model_config = model::to_json(config);
    return o;
  }();
  // Named by its first bytes, as an engine would name it: a zip as .npz, anything else as .safetensors.
  const bool zip = size >= 2 && data[0] == 'P' && data[1] == 'K';
  const auto path = fuzz::write_file(fuzz::scratch_dir() / (zip ? "dump.npz" : "dump.safetensors"), {data, size});
  fuzz::documented_errors_only([&] {
    const dumps::ImportedDump dump(path, options, config);
    for (const model::TensorId& id : dump.tensors()) (void)dump.read(id, 0, dump.rows());
  });
  return 0;
}
