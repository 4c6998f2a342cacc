#pragma once
// Writing files the user names (reports, a repro's case): created or truncated, written whole.
#include <filesystem>
#include <span>
#include <string_view>

namespace tapdiff::model {

// Writes pieces, in order, as the whole content of the file at path. EnvironmentError
// "<what> <path>: cannot create the file" when it cannot be opened, "<what> <path>: cannot write
// the file" when a write fails.
void write_file(const std::filesystem::path& path, std::string_view what, std::span<const std::string_view> pieces);

// The same with one piece.
void write_text(const std::filesystem::path& path, std::string_view what, std::string_view text);

}  // namespace tapdiff::model
