#pragma once
// A read-only memory mapping of a whole file (RAII).
#include <cstddef>
#include <filesystem>
#include <span>

namespace tapdiff::model {

class MappedFile {
 public:
  explicit MappedFile(const std::filesystem::path& path);  // EnvironmentError if it cannot be opened
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::span<const std::byte> bytes() const { return {data_, size_}; }
  std::size_t size() const { return size_; }

 private:
  std::filesystem::path path_;
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace tapdiff::model
