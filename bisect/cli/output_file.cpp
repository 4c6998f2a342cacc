#include "bisect/cli/output_file.h"

#include <fstream>

#include <fmt/core.h>

#include "model/errors.h"

namespace tapdiff::cli {

void write_text(const std::string& path, const std::string& option, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw EnvironmentError(fmt::format("{} {}: cannot create the file", option, path));
  out << text;
  if (!out.flush()) throw EnvironmentError(fmt::format("{} {}: cannot write the file", option, path));
}

}  // namespace tapdiff::cli
