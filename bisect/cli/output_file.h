#pragma once
// Writing a command's output files (--json, --junit, --html).
#include <string>

namespace tapdiff::cli {

// Writes text to path; EnvironmentError naming the option and the path when it cannot be created
// or written whole.
void write_text(const std::string& path, const std::string& option, const std::string& text);

}  // namespace tapdiff::cli
