#include "model/printable.h"

#include <fmt/format.h>

namespace tapdiff::model {

std::string printable(std::string_view name, std::size_t max_bytes) {
  std::string out;
  const std::string_view shown = name.substr(0, max_bytes);
  for (const char c : shown) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (byte < 0x20 || byte == 0x7f)
      out += fmt::format("\\x{:02x}", byte);
    else
      out += c;
  }
  if (shown.size() < name.size()) out += fmt::format("...({} bytes)", name.size());
  return out;
}

}  // namespace tapdiff::model
