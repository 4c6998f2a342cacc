#include "model/output_file.h"

#include <fstream>

#include <fmt/core.h>

#include "model/errors.h"

namespace tapdiff::model {

void write_file(const std::filesystem::path& path, std::string_view what, std::span<const std::string_view> pieces) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw EnvironmentError(fmt::format("{} {}: cannot create the file", what, path.string()));
  for (const std::string_view piece : pieces) out.write(piece.data(), static_cast<std::streamsize>(piece.size()));
  if (!out.flush()) throw EnvironmentError(fmt::format("{} {}: cannot write the file", what, path.string()));
}

void write_text(const std::filesystem::path& path, std::string_view what, std::string_view text) {
  write_file(path, what, std::span<const std::string_view>(&text, 1));
}

}  // namespace tapdiff::model
