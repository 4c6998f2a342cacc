#pragma once
// Reads GGUF v2/v3 files: a raw view (GgufFile: metadata and tensor descriptions, data
// memory-mapped) and the Model built from it (read_gguf).
// Every read is checked against the file size; a corrupt or unsupported file gives a one-line
// FormatError naming the file, what was expected and what was found.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "formats/load_model.h"
#include "model/dtype.h"
#include "model/weights.h"

namespace tapdiff::model {
class MappedFile;
}  // namespace tapdiff::model

namespace tapdiff::formats {

namespace gguf {
// Metadata value type ids of the GGUF format.
enum class ValueType : std::uint32_t {
  u8 = 0,
  i8 = 1,
  u16 = 2,
  i16 = 3,
  u32 = 4,
  i32 = 5,
  f32 = 6,
  boolean = 7,
  string = 8,
  array = 9,
  u64 = 10,
  i64 = 11,
  f64 = 12,
};
std::string_view value_type_name(ValueType t);

constexpr std::uint32_t kDefaultAlignment = 32;
// The ggml type id of a DType (F32 0, F16 1, Q4_0 2, ..., IQ4_XS 23, BF16 30), and back (nullopt
// for the types tapdiff does not read).
std::uint32_t ggml_type(model::DType t);
std::optional<model::DType> dtype_from_ggml_type(std::uint32_t id);
std::string ggml_type_name(std::uint32_t id);  // "Q4_K", "IQ2_XXS", or "unknown type 99"
std::string readable_ggml_types();             // the names of the types tapdiff reads, for messages
}  // namespace gguf

// One metadata value. Integers keep their sign class (std::uint64_t or std::int64_t), floats
// widen to double; `type` says what the file stored. An array keeps its element type and items.
struct GgufValue {
  gguf::ValueType type = gguf::ValueType::u32;
  gguf::ValueType element_type = gguf::ValueType::u32;  // arrays only
  std::variant<std::uint64_t, std::int64_t, double, bool, std::string, std::vector<GgufValue>> value;

  bool is_integer() const;
  bool is_float() const { return type == gguf::ValueType::f32 || type == gguf::ValueType::f64; }
  const std::vector<GgufValue>* array() const { return std::get_if<std::vector<GgufValue>>(&value); }
  // A short rendering for listings: scalars in full, arrays as "[type x N] first items ...".
  std::string to_string(std::size_t max_items = 8) const;
};

struct GgufTensorInfo {
  std::string name;
  std::vector<std::int64_t> ne;  // GGUF order: ne[0] is the contiguous dimension
  model::DType dtype = model::DType::f32;
  std::uint64_t offset = 0;          // from the start of the data section
  std::span<const std::byte> bytes;  // the tensor's data inside the mapping
};

class GgufFile {
 public:
  // Maps and parses `path`: FormatError for a bad file, EnvironmentError if it cannot be read.
  explicit GgufFile(const std::filesystem::path& path);
  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::uint32_t version() const { return version_; }
  std::uint32_t alignment() const { return alignment_; }
  std::uint64_t data_offset() const { return data_offset_; }  // start of the data section in the file
  std::uint64_t file_size() const { return file_size_; }

  // Metadata in file order.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }
  const GgufValue* find(std::string_view key) const;
  // Typed getters: nullopt when the key is absent; FormatError naming the key when it holds
  // another type (any integer type converts to an integer if it fits, f32/f64 to double).
  std::optional<std::int64_t> get_int(std::string_view key) const;
  std::optional<double> get_float(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;
  std::optional<std::string> get_string(std::string_view key) const;
  std::optional<std::vector<std::string>> get_string_array(std::string_view key) const;
  std::optional<std::vector<float>> get_float_array(std::string_view key) const;
  std::optional<std::vector<std::int32_t>> get_int_array(std::string_view key) const;
  std::optional<std::vector<bool>> get_bool_array(std::string_view key) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;

  // Hands the mapping over (to a Model); tensors' bytes stay valid as long as it lives.
  std::unique_ptr<model::MappedFile> release_mapping();

 private:
  [[noreturn]] void wrong_type(std::string_view key, const GgufValue& v, std::string_view expected) const;
  const GgufValue* find_array(std::string_view key, bool (*element_ok)(gguf::ValueType),
                              std::string_view expected) const;
  std::filesystem::path path_;
  std::unique_ptr<model::MappedFile> file_;
  std::uint32_t version_ = 0;
  std::uint32_t alignment_ = gguf::kDefaultAlignment;
  std::uint64_t data_offset_ = 0;
  std::uint64_t file_size_ = 0;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::vector<GgufTensorInfo> tensors_;
};

// A token id key (tokenizer.ggml.bos_token_id ...), or -1 when absent or "none" (GGUF writes
// 0xFFFFFFFF for none).
int gguf_token_id(const GgufFile& f, const std::string& key);

// Loads a Llama-family model (general.architecture llama, mistral or qwen2) from a GGUF file.
std::unique_ptr<model::Model> read_gguf(const std::filesystem::path& path, const LoadOptions& options = {});

}  // namespace tapdiff::formats
