// libFuzzer target: a dump (in dump_text.h's form, written by libhdf5) through DumpReader (open,
// layout checks, metadata, provenance), then every tapped tensor read back in windows of rows,
// as the comparator reads them.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "dumps/dump_reader.h"
#include "tests/fuzz/dump_text.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tapdiff;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // A known issue, fixed separately: fuzz_support.h, json_nests_deeper_than.
  if (fuzz::json_nests_deeper_than(text, fuzz::kJsonDepthSkipped)) return -1;
  const auto path = fuzz::scratch_dir() / "dump.h5";
  fuzz::write_dump_text(path, text);
  fuzz::documented_errors_only([&] {
    const dumps::DumpReader reader(path.string());
    for (const model::TensorId& id : reader.tensors())
      for (std::int64_t first = 0; first < std::max<std::int64_t>(reader.rows(), 1); first += 64)
        (void)reader.read(id, first, 64);
  });
  return 0;
}
