#pragma once
// Validators for numeric options that CLI11's own let through: its PositiveNumber accepts NaN
// ("nan > 0" is false, so nothing fails) and infinity; and a strict integer parser for option
// values that hold several numbers (ranges).
#include <cstdint>
#include <optional>
#include <string_view>

#include <CLI/CLI.hpp>

namespace tapdiff::cli {

// A finite number > 0.
const CLI::Validator& finite_positive();
// A finite number >= 0.
const CLI::Validator& finite_non_negative();

// The integer that is the whole of text, or nullopt (no sign other than '-', no spaces, no overflow).
std::optional<std::int64_t> parse_integer(std::string_view text);

}  // namespace tapdiff::cli
