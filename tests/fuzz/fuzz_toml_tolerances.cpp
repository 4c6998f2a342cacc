// libFuzzer target: a tolerance file (docs/tolerances.md) through Tolerances::from_file, then a
// lookup of every op at a few layers and in every precision, each bound described as reports do.
#include <cstddef>
#include <cstdint>

#include "bisect/compare/tolerances.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tapdiff;
  const auto path = fuzz::write_file(fuzz::scratch_dir() / "tolerances.toml", {data, size});
  fuzz::documented_errors_only([&] {
    const bisect::Tolerances tolerances = bisect::Tolerances::from_file(path.string());
    for (const model::Op op : model::kAllOps)
      for (const int layer : {-1, 0, 3, 1 << 30})
        for (const model::Precision precision : model::kAllPrecisions)
          (void)bisect::describe(tolerances.lookup({op, layer}, precision).bound);
  });
  return 0;
}
