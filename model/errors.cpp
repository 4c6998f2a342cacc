#include "model/errors.h"

#include <cstdio>
#include <cstdlib>

namespace tapdiff {

void assertion_failed(const char* expr, const char* file, int line, const std::string& what) {
  std::fprintf(stderr, "tapdiff: internal error: %s:%d: assertion '%s' failed: %s\n", file, line, expr, what.c_str());
  std::abort();
}

}  // namespace tapdiff
