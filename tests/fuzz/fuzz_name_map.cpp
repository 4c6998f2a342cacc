// libFuzzer target: a TOML name map (docs/import.md) through map_from_toml, then the names of a
// tiny model's taps resolved by it, as an import resolves each array name.
#include <cstddef>
#include <cstdint>

#include "dumps/name_map.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using namespace tapdiff;

model::ModelConfig tiny_config() {
  model::ModelConfig c;
  c.n_layers = 2, c.dim = 16, c.n_heads = 2, c.n_kv_heads = 1, c.head_dim = 8, c.ffn_dim = 32, c.vocab = 16;
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const model::ModelConfig config = tiny_config();
  const auto path = fuzz::write_file(fuzz::scratch_dir() / "map.toml", {data, size});
  fuzz::documented_errors_only([&] {
    const dumps::NameMap map = dumps::map_from_toml(path);
    for (const char* name : {"model.embed_tokens", "model.layers.0.self_attn.q_proj", "blk.1.q", "x.1.y",
                             "model.layers.1.mlp.down_proj", "lm_head", "model.norm", "a.{L}.b"})
      (void)dumps::resolve(map, name, config);
  });
  return 0;
}
