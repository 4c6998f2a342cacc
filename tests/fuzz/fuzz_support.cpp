#include "tests/fuzz/fuzz_support.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "model/dtype.h"

namespace tapdiff::fuzz {
namespace {

class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tapdiff-fuzz-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::perror("tapdiff fuzz: mkdtemp");
      std::abort();
    }
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace

const std::filesystem::path& scratch_dir() {
  static const ScratchDir dir;
  return dir.path();
}

model::ModelConfig tiny_dump_config() {
  model::ModelConfig c;
  c.n_layers = 1, c.dim = 16, c.n_heads = 2, c.n_kv_heads = 1, c.head_dim = 8, c.ffn_dim = 32, c.vocab = 16;
  return c;
}

const std::filesystem::path& tiny_hf_folder() {
  static const std::filesystem::path folder = [] {
    std::filesystem::path f = scratch_dir() / "hf";
    std::filesystem::create_directory(f);
    testing::write_hf_folder(f, testing::tiny_hf(kTinyHf));
    return f;
  }();
  return folder;
}

std::filesystem::path write_file(const std::filesystem::path& path, std::span<const std::uint8_t> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    std::fprintf(stderr, "tapdiff fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
  return path;
}

void read_all_weights(const model::Model& model) {
  const model::ModelConfig& c = model.config();
  std::vector<float> row;
  for (int k = 0; k <= static_cast<int>(model::WeightKind::output); ++k) {
    const auto kind = static_cast<model::WeightKind>(k);
    const int first = model::is_per_layer(kind) ? 0 : -1;
    const int last = model::is_per_layer(kind) ? c.n_layers - 1 : -1;
    for (int layer = first; layer <= last; ++layer) {
      const model::WeightTensor* w = model.find(kind, layer);
      if (w == nullptr) continue;
      std::size_t needed = 0;
      if (w->rows < 0 || w->cols < 0 ||
          __builtin_mul_overflow(static_cast<std::size_t>(w->rows), model::row_bytes(w->dtype, w->cols), &needed) ||
          w->bytes.size() < needed) {
        std::fprintf(stderr, "tapdiff fuzz: weight '%s' of shape [%lld, %lld] has %zu bytes: too few\n",
                     w->name.c_str(), static_cast<long long>(w->rows), static_cast<long long>(w->cols),
                     w->bytes.size());
        std::abort();
      }
      row.resize(static_cast<std::size_t>(w->cols));
      for (std::int64_t r = 0; r < w->rows; ++r) model::dequantize_row(w->dtype, w->row(r), row.data(), w->cols);
    }
  }
}

}  // namespace tapdiff::fuzz
