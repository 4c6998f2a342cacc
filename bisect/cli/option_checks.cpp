#include "bisect/cli/option_checks.h"

#include <charconv>
#include <cmath>
#include <string>

namespace tapdiff::cli {
namespace {

CLI::Validator finite_at_least(bool allow_zero) {
  const std::string expected = allow_zero ? "a finite number >= 0" : "a finite number > 0";
  return CLI::Validator(
      [allow_zero, expected](std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value) || !std::isfinite(value) || value < 0 ||
            (!allow_zero && value == 0))
          return "expected " + expected + ", found '" + text + "'";
        return "";
      },
      allow_zero ? "FINITE>=0" : "FINITE>0");
}

}  // namespace

const CLI::Validator& finite_positive() {
  static const CLI::Validator validator = finite_at_least(false);
  return validator;
}

const CLI::Validator& finite_non_negative() {
  static const CLI::Validator validator = finite_at_least(true);
  return validator;
}

std::optional<std::int64_t> parse_integer(std::string_view text) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace tapdiff::cli
