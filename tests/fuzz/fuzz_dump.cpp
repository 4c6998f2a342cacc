// libFuzzer target: a dump (in dump_text.h's form, written by libhdf5) through DumpReader (open,
// layout checks, metadata, provenance), then every tapped tensor read back in windows of rows.
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
  const auto path = fuzz::scratch_dir() / "dump.h5";
  fuzz::write_dump_text(path, text);
  fuzz::documented_errors_only([&] {
    // Unguarded: libhdf5 wrote the file just now, and a memory error of the reader must reach the
    // fuzzer rather than be caught in the guard's child process.
    const dumps::DumpReader reader(path.string(), dumps::DumpReader::Guard::none);
    // Windows of 64 rows, as the comparator reads: the first 16 and the last (one past it too).
    const std::int64_t windows = (reader.rows() + 63) / 64;
    for (const model::TensorId& id : reader.tensors()) {
      for (std::int64_t w = 0; w < std::min<std::int64_t>(windows, 16); ++w) (void)reader.read(id, w * 64, 64);
      (void)reader.read(id, std::max<std::int64_t>(windows - 1, 0) * 64, 64);
      (void)reader.read(id, reader.rows(), 64);
    }
  });
  return 0;
}
