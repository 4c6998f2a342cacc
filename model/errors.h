#pragma once
// Exceptions for bad input and the environment, and an assert macro for broken invariants.
// Messages name the thing (file, tensor, option), what was expected and what was found.
#include <stdexcept>
#include <string>

#include <fmt/core.h>

namespace tapdiff {

// A file that cannot be used as given: wrong magic, truncated, inconsistent with its config.
class FormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A request the user made that cannot be honoured (unknown option value, missing file).
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The environment failed us: I/O error, Vulkan, HDF5.
class EnvironmentError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws FormatError(message) with control characters (from names and strings in a corrupt file)
// escaped as \xNN, so that every message stays one line.
[[noreturn]] void throw_format_error(const std::string& message);

[[noreturn]] void assertion_failed(const char* expr, const char* file, int line, const std::string& what);

}  // namespace tapdiff

#define TAPDIFF_ASSERT(cond, ...)                                                                  \
  do {                                                                                             \
    if (!(cond)) ::tapdiff::assertion_failed(#cond, __FILE__, __LINE__, fmt::format(__VA_ARGS__)); \
  } while (0)
