#pragma once
// Streams a GGUF v3 file: metadata and tensor descriptions first, then tensor data one tensor at
// a time, so a model larger than memory can be written. Used by `tapdiff synth` and the tests.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "model/dtype.h"

namespace tapdiff::formats {

class GgufWriter {
 public:
  // Writes path.partial-XXXXXX beside path and renames it to path in finish(); a writer destroyed
  // before finish() removes its partial file and leaves path as it was. UsageError when path
  // exists and is not a regular file (a directory, a device); EnvironmentError if the partial file
  // cannot be created.
  explicit GgufWriter(std::filesystem::path path);
  ~GgufWriter();
  GgufWriter(const GgufWriter&) = delete;
  GgufWriter& operator=(const GgufWriter&) = delete;

  // Metadata, before the first write_tensor_data().
  void add_string(const std::string& key, const std::string& value);
  void add_u32(const std::string& key, std::uint32_t value);
  void add_i32(const std::string& key, std::int32_t value);
  void add_f32(const std::string& key, float value);
  void add_bool(const std::string& key, bool value);
  void add_string_array(const std::string& key, const std::vector<std::string>& values);
  void add_f32_array(const std::string& key, const std::vector<float>& values);
  void add_i32_array(const std::string& key, const std::vector<std::int32_t>& values);

  // Declares a tensor: GGUF shape order, ne[0] = the contiguous dimension (cols), then rows.
  void add_tensor(const std::string& name, model::DType dtype, std::vector<std::int64_t> ne);

  // Writes the data of the next declared tensor, in declaration order; bytes.size() must equal
  // the declared tensor's size. The header is written before the first call.
  void write_tensor_data(std::span<const std::byte> bytes);
  // Writes the header if no tensor data was written yet, checks all tensors were written, closes
  // and renames the file to its path.
  void finish();

 private:
  struct Pending;
  void write_header();
  void discard_partial();
  std::filesystem::path path_;
  std::filesystem::path partial_;  // written here, renamed to path_ by finish()
  std::FILE* file_ = nullptr;
  std::vector<std::byte> kv_;  // encoded key/value pairs
  std::uint64_t kv_count_ = 0;
  struct TensorInfo {
    std::string name;
    model::DType dtype;
    std::vector<std::int64_t> ne;
    std::uint64_t offset;
    std::uint64_t bytes;
  };
  std::vector<TensorInfo> tensors_;
  std::size_t next_tensor_ = 0;
  bool header_written_ = false;
  bool finished_ = false;
};

}  // namespace tapdiff::formats
