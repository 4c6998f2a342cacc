// load_model(): picks the reader by what the path is.
#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <array>

#include "formats/gguf_reader.h"
#include "formats/safetensors_reader.h"
#include "model/errors.h"
#include "model/input_file.h"
#include "model/weights.h"

namespace tapdiff::formats {

using namespace model;

namespace {

// What a file that is neither GGUF nor a folder starts with, for the error message.
std::string describe_start(const std::filesystem::path& path) {
  const int fd = open_regular_file(path, "");
  std::array<char, 4> head{};
  const ssize_t got = ::read(fd, head.data(), head.size());
  ::close(fd);
  const auto n = static_cast<std::size_t>(std::max<ssize_t>(got, 0));
  if (n == 0) return "an empty file";
  std::string shown;
  for (std::size_t i = 0; i < n; ++i) {
    const auto ch = static_cast<unsigned char>(head[i]);
    shown += ch >= 0x20 && ch < 0x7F && ch != '\\' && ch != '\'' ? std::string(1, static_cast<char>(ch))
                                                                 : fmt::format("\\x{:02x}", ch);
  }
  return fmt::format("a file starting with '{}'", shown);
}

}  // namespace

std::unique_ptr<Model> load_model(const std::filesystem::path& path, const LoadOptions& options) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status))
    throw UsageError(
        fmt::format("{}: no such file or folder (expected a GGUF file or a Hugging Face folder)", path.string()));
  if (std::filesystem::is_directory(status)) {
    if (!std::filesystem::exists(path / "config.json"))
      throw FormatError(
          fmt::format("{}: expected a GGUF file (magic 'GGUF') or a Hugging Face folder with "
                      "config.json, found a folder without config.json",
                      path.string()));
    return read_safetensors(path);
  }
  const std::string found = describe_start(path);
  if (found == "a file starting with 'GGUF'") return read_gguf(path, options);
  throw FormatError(
      fmt::format("{}: expected a GGUF file (magic 'GGUF') or a Hugging Face folder with config.json, found {}",
                  path.string(), found));
}

}  // namespace tapdiff::formats
