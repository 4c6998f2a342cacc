#include "formats/gguf_keys.h"

#include <limits>

#include <fmt/format.h>

#include "model/errors.h"

namespace tapdiff::formats {

using namespace model;

int int_key(const GgufFile& f, const std::string& key, std::optional<int> fallback) {
  const auto v = f.get_int(key);
  if (!v && !fallback)
    throw_format_error(fmt::format("{}: missing metadata key '{}' (expected an integer)", f.path().string(), key));
  if (!v) return *fallback;
  if (*v < 0 || *v > std::numeric_limits<int>::max())
    throw_format_error(fmt::format("{}: metadata '{}': expected an integer in [0, {}], found {}", f.path().string(),
                                   key, std::numeric_limits<int>::max(), *v));
  return static_cast<int>(*v);
}

double float_key(const GgufFile& f, const std::string& key, double fallback) {
  return f.get_float(key).value_or(fallback);
}

void read_gguf_experts(const GgufFile& f, const std::string& prefix, ModelConfig& c, std::string_view ffn_key) {
  Experts& e = c.experts;
  e.count = int_key(f, prefix + "expert_count", 0);
  e.active = int_key(f, prefix + "expert_used_count", 0);
  if (e.count == 0) return void(e.active = 0);
  e.normalize = true;
  e.ffn_dim =
      ffn_key.empty() ? c.ffn_dim : int_key(f, prefix + std::string(ffn_key), e.active > 0 ? c.ffn_dim / e.active : 0);
}

}  // namespace tapdiff::formats
