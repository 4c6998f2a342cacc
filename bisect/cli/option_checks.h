#pragma once
// Validators for numeric options that CLI11's own let through: its PositiveNumber accepts NaN
// ("nan > 0" is false, so nothing fails) and infinity.
#include <CLI/CLI.hpp>

namespace tapdiff::cli {

// A finite number > 0.
const CLI::Validator& finite_positive();
// A finite number >= 0.
const CLI::Validator& finite_non_negative();

}  // namespace tapdiff::cli
