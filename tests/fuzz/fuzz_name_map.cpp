// libFuzzer target: a TOML name map (docs/import.md) through map_from_toml, then the names of a
// tiny model's taps resolved by it, as an import resolves each array name.
#include <cstddef>
#include <cstdint>

#include "dumps/name_map.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tapdiff;
  static const model::ModelConfig config = fuzz::tiny_dump_config();
  const auto path = fuzz::write_file(fuzz::scratch_dir() / "map.toml", {data, size});
  fuzz::documented_errors_only([&] {
    const dumps::NameMap map = dumps::map_from_toml(path);
    for (const char* name : {"model.embed_tokens", "model.layers.0.self_attn.q_proj", "blk.0.q", "x.1.y",
                             "model.layers.1.mlp.down_proj", "lm_head", "model.norm", "a.{L}.b"})
      (void)dumps::resolve(map, name, config);
  });
  return 0;
}
