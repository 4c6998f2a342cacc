#pragma once
// Opening files the user names (models, shards, prompts, tolerance files): only regular files are
// read, and opening never blocks (a FIFO or a device is refused, not waited on).
#include <filesystem>
#include <string>
#include <string_view>

namespace tapdiff::model {

// What a path names, for messages: "a regular file", "a directory", "a FIFO", "no such file", ...
std::string describe_path_kind(const std::filesystem::path& path);

// A read-only descriptor of the regular file at path (O_CLOEXEC), to be closed by the caller.
// UsageError "<what> <path>: expected a regular file, found <kind>" for a missing path, a directory,
// a FIFO, a socket or a device; EnvironmentError when a regular file cannot be opened (permissions).
int open_regular_file(const std::filesystem::path& path, std::string_view what);

// The whole content of the regular file at path, with the same errors as open_regular_file.
std::string read_regular_file(const std::filesystem::path& path, std::string_view what);

}  // namespace tapdiff::model
