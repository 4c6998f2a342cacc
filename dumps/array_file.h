#pragma once
// Named arrays from the files outside engines already write: safetensors (Candle, MLX, Hugging
// Face) and numpy's .npz (np.savez, or np.savez_compressed: inflated in memory). Bytes stay in the
// mapped file where the format stores them plainly. A bad file gives a FormatError naming it, the
// array, what was expected and what was found.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tapdiff::model {
class MappedFile;
}

namespace tapdiff::dumps {

enum class ElementType : std::uint8_t { f16, bf16, f32, f64, i32, i64, other };
std::string_view element_type_name(ElementType type);
std::size_t element_bytes(ElementType type);               // 0 for other
std::string_view safetensors_type_name(ElementType type);  // "F32", "BF16", ...; "" for other

struct NamedArray {
  std::string name;
  ElementType type = ElementType::other;
  std::string type_name;  // as the file says: "F32", "<f4", ...
  std::vector<std::int64_t> shape;
  std::span<const std::byte> bytes;  // little-endian, row-major
  std::int64_t elements() const;
};

class ArrayFile {
 public:
  // Reads the arrays of a .safetensors or .npz file (told apart by their first bytes).
  explicit ArrayFile(const std::filesystem::path& path);
  ~ArrayFile();
  ArrayFile(const ArrayFile&) = delete;
  ArrayFile& operator=(const ArrayFile&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string_view format() const { return format_; }  // "safetensors" or "npz"
  const std::vector<NamedArray>& arrays() const { return arrays_; }
  const NamedArray* find(std::string_view name) const;
  // Drops elements [first, first + count) of an array (the pages wholly inside them) from this
  // process's memory: they stay in the page cache and are read again if touched. A reader done
  // with a block keeps its resident set to that block. Nothing for an inflated member.
  void release(const NamedArray& array, std::int64_t first, std::int64_t count) const;

  // Whether the file is one this reads: by its extension (.safetensors, .npz: then read as one, to
  // say what in it is wrong; .pt, PyTorch's zip of a pickle: never), else by its first bytes.
  static bool recognises(const std::filesystem::path& path);

 private:
  void read_safetensors();
  void read_npz();
  std::filesystem::path path_;
  std::string_view format_;
  std::unique_ptr<model::MappedFile> file_;
  std::vector<std::vector<std::byte>> inflated_;  // compressed .npz members
  std::vector<NamedArray> arrays_;
};

}  // namespace tapdiff::dumps
