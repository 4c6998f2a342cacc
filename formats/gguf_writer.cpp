#include "formats/gguf_writer.h"

#include <fmt/format.h>

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "formats/gguf_reader.h"
#include "model/errors.h"
#include "model/input_file.h"

namespace tapdiff::formats {

using namespace model;

namespace {

using gguf::ValueType;
constexpr std::uint64_t kAlignment = gguf::kDefaultAlignment;

std::uint64_t align_up(std::uint64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

// Little-endian encoders appending to a byte buffer (the host is little-endian, as GGUF).
template <class T>
void put(std::vector<std::byte>& out, T v) {
  const auto* p = reinterpret_cast<const std::byte*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}

void put_string(std::vector<std::byte>& out, const std::string& s) {
  put<std::uint64_t>(out, s.size());
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  out.insert(out.end(), p, p + s.size());
}

void put_key(std::vector<std::byte>& out, const std::string& key, ValueType type) {
  put_string(out, key);
  put<std::uint32_t>(out, static_cast<std::uint32_t>(type));
}

void put_array_head(std::vector<std::byte>& out, const std::string& key, ValueType element, std::size_t n) {
  put_key(out, key, ValueType::array);
  put<std::uint32_t>(out, static_cast<std::uint32_t>(element));
  put<std::uint64_t>(out, n);
}

}  // namespace

GgufWriter::GgufWriter(std::filesystem::path path) : path_(std::move(path)) {
  const std::string kind = describe_path_kind(path_);
  if (kind != "no such file" && kind != "a regular file")
    throw UsageError(fmt::format("{}: expected a new path or a regular file to write the GGUF file to, found {}",
                                 path_.string(), kind));
  std::string name = path_.string() + ".partial-XXXXXX";
  const int fd = ::mkstemp(name.data());
  if (fd < 0)
    throw EnvironmentError(
        fmt::format("{}: cannot create the file {}: {}", path_.string(), name, std::strerror(errno)));
  partial_ = name;
  file_ = ::fdopen(fd, "wb");
  if (file_ == nullptr) {
    const int err = errno;
    ::close(fd);
    discard_partial();
    throw EnvironmentError(fmt::format("{}: cannot write {}: {}", path_.string(), name, std::strerror(err)));
  }
}

// An unfinished file is incomplete: its partial file is closed and removed; path_ is never touched.
GgufWriter::~GgufWriter() {
  if (file_ != nullptr) std::fclose(file_);
  if (!finished_) discard_partial();
}

void GgufWriter::discard_partial() {
  std::error_code ec;
  std::filesystem::remove(partial_, ec);
}

void GgufWriter::add_string(const std::string& key, const std::string& value) {
  TAPDIFF_ASSERT(!header_written_, "metadata '{}' added after tensor data", key);
  put_key(kv_, key, ValueType::string);
  put_string(kv_, value);
  ++kv_count_;
}

void GgufWriter::add_u32(const std::string& key, std::uint32_t value) {
  TAPDIFF_ASSERT(!header_written_, "metadata '{}' added after tensor data", key);
  put_key(kv_, key, ValueType::u32);
  put(kv_, value);
  ++kv_count_;
}

void GgufWriter::add_i32(const std::string& key, std::int32_t value) {
  TAPDIFF_ASSERT(!header_written_, "metadata '{}' added after tensor data", key);
  put_key(kv_, key, ValueType::i32);
  put(kv_, value);
  ++kv_count_;
}

void GgufWriter::add_f32(const std::string& key, float value) {
  TAPDIFF_ASSERT(!header_written_, "metadata '{}' added after tensor data", key);
  put_key(kv_, key, ValueType::f32);
  put(kv_, value);
  ++kv_count_;
}

void GgufWriter::add_bool(const std::string& key, bool value) {
  TAPDIFF_ASSERT(!header_written_, "metadata '{}' added after tensor data", key);
  put_key(kv_, key, ValueType::boolean);
  put<std::uint8_t>(kv_, value ? 1 : 0);
  ++kv_count_;
}

void GgufWriter::add_string_array(const std::string& key, const std::vector<std::string>& values) {
  TAPDIFF_ASSERT(!header_written_, "metadata '{}' added after tensor data", key);
  put_array_head(kv_, key, ValueType::string, values.size());
  for (const std::string& v : values) put_string(kv_, v);
  ++kv_count_;
}

void GgufWriter::add_f32_array(const std::string& key, const std::vector<float>& values) {
  TAPDIFF_ASSERT(!header_written_, "metadata '{}' added after tensor data", key);
  put_array_head(kv_, key, ValueType::f32, values.size());
  for (float v : values) put(kv_, v);
  ++kv_count_;
}

void GgufWriter::add_i32_array(const std::string& key, const std::vector<std::int32_t>& values) {
  TAPDIFF_ASSERT(!header_written_, "metadata '{}' added after tensor data", key);
  put_array_head(kv_, key, ValueType::i32, values.size());
  for (std::int32_t v : values) put(kv_, v);
  ++kv_count_;
}

// UsageError when the row length does not fit the type's blocks (a user-chosen shape in synth).
void GgufWriter::add_tensor(const std::string& name, DType dtype, std::vector<std::int64_t> ne) {
  TAPDIFF_ASSERT(!header_written_, "tensor '{}' declared after tensor data", name);
  TAPDIFF_ASSERT(!ne.empty() && ne.size() <= 4, "tensor '{}' with {} dimensions", name, ne.size());
  for (std::int64_t n : ne) TAPDIFF_ASSERT(n >= 0, "tensor '{}' with a negative dimension", name);
  if (ne[0] % block_size(dtype) != 0)
    throw UsageError(fmt::format("{}: tensor '{}': a {} row needs a multiple of {} elements, found {}", path_.string(),
                                 name, dtype_name(dtype), block_size(dtype), ne[0]));
  std::uint64_t bytes = row_bytes(dtype, ne[0]);
  for (std::size_t d = 1; d < ne.size(); ++d) bytes *= static_cast<std::uint64_t>(ne[d]);
  const std::uint64_t offset = tensors_.empty() ? 0 : align_up(tensors_.back().offset + tensors_.back().bytes);
  tensors_.push_back(TensorInfo{name, dtype, std::move(ne), offset, bytes});
}

// Header: magic, version 3, tensor count, metadata count, metadata, tensor infos, padding to 32.
void GgufWriter::write_header() {
  std::vector<std::byte> head;
  head.reserve(kv_.size() + 64 * tensors_.size() + 64);
  put<std::uint32_t>(head, 0x46554747u);  // "GGUF" little-endian
  put<std::uint32_t>(head, 3);
  put<std::uint64_t>(head, tensors_.size());
  put<std::uint64_t>(head, kv_count_);
  head.insert(head.end(), kv_.begin(), kv_.end());
  for (const TensorInfo& t : tensors_) {
    put_string(head, t.name);
    put<std::uint32_t>(head, static_cast<std::uint32_t>(t.ne.size()));
    for (std::int64_t n : t.ne) put<std::uint64_t>(head, static_cast<std::uint64_t>(n));
    put<std::uint32_t>(head, gguf::ggml_type(t.dtype));
    put<std::uint64_t>(head, t.offset);
  }
  head.resize(align_up(head.size()));
  if (std::fwrite(head.data(), 1, head.size(), file_) != head.size())
    throw EnvironmentError(fmt::format("{}: cannot write the header: {}", path_.string(), std::strerror(errno)));
  header_written_ = true;
}

// Each tensor's data is followed by zero padding to the next multiple of 32.
void GgufWriter::write_tensor_data(std::span<const std::byte> bytes) {
  TAPDIFF_ASSERT(!finished_ && next_tensor_ < tensors_.size(), "tensor data beyond the {} declared tensors",
                 tensors_.size());
  const TensorInfo& t = tensors_[next_tensor_];
  TAPDIFF_ASSERT(bytes.size() == t.bytes, "tensor '{}': {} bytes given, {} declared", t.name, bytes.size(), t.bytes);
  if (!header_written_) write_header();
  static constexpr std::byte kZeros[kAlignment] = {};
  const std::size_t pad = static_cast<std::size_t>(align_up(t.bytes) - t.bytes);
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size() || std::fwrite(kZeros, 1, pad, file_) != pad)
    throw EnvironmentError(
        fmt::format("{}: cannot write tensor '{}': {}", path_.string(), t.name, std::strerror(errno)));
  ++next_tensor_;
}

void GgufWriter::finish() {
  TAPDIFF_ASSERT(!finished_, "finish() called twice");
  if (!header_written_) write_header();
  TAPDIFF_ASSERT(next_tensor_ == tensors_.size(), "{} of {} tensors written", next_tensor_, tensors_.size());
  const bool ok = std::fflush(file_) == 0 && !std::ferror(file_) && ::fsync(::fileno(file_)) == 0;
  const int err = errno;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!ok || !closed)
    throw EnvironmentError(fmt::format("{}: cannot finish writing {}: {}", path_.string(), partial_.string(),
                                       std::strerror(ok ? errno : err)));
  std::error_code ec;
  std::filesystem::rename(partial_, path_, ec);
  if (ec)
    throw EnvironmentError(
        fmt::format("{}: cannot rename {} to it: {}", path_.string(), partial_.string(), ec.message()));
  finished_ = true;
}

}  // namespace tapdiff::formats
