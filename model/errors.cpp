#include "model/errors.h"

#include <cstdio>
#include <cstdlib>

namespace tapdiff {

void throw_format_error(const std::string& message) {
  std::string out;
  for (const char ch : message) {
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7F)
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(ch));
    else
      out += ch;
  }
  throw FormatError(out);
}

void assertion_failed(const char* expr, const char* file, int line, const std::string& what) {
  std::fprintf(stderr, "tapdiff: internal error: %s:%d: assertion '%s' failed: %s\n", file, line, expr, what.c_str());
  std::abort();
}

}  // namespace tapdiff
