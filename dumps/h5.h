#pragma once
// A small RAII wrapper over the HDF5 1.10 C API: files, groups, datasets and attributes.
// HDF5's own error printing is silenced; every failure becomes an exception whose one-line
// message names the file, the object and what failed (plus HDF5's innermost reason):
//   EnvironmentError  creating, writing, flushing (the disk or the library failed us)
//   FormatError       reading something that is absent or of the wrong kind
#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tapdiff::dumps::h5 {

// Element types a dump stores, each little endian on disk. f16 is IEEE binary16 (numpy float16);
// in memory it is the raw 16 bits (std::uint16_t), converted with model::f16_to_f32/f32_to_f16.
enum class Type : std::uint8_t { i32, u8, f16, f32, f64 };
hid_t file_type(Type type);    // the on-disk type (a shared handle: do not close)
hid_t memory_type(Type type);  // the native in-memory type (f16: the binary16 type itself)

// The innermost message on HDF5's error stack ("unable to open file: name = ..."), or "".
std::string last_error();

// Owns one HDF5 identifier and releases it with the matching H5*close. Move-only.
class Id {
 public:
  using Closer = herr_t (*)(hid_t);
  Id() = default;
  Id(hid_t id, Closer close) : id_(id), close_(close) {}
  Id(Id&& other) noexcept;
  Id& operator=(Id&& other) noexcept;
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  ~Id() { reset(); }

  hid_t get() const { return id_; }
  void reset();
  hid_t release();  // gives up ownership: the caller closes

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer close_ = nullptr;
};

// A file, group or dataset: something that carries attributes. Writing an attribute that
// exists overwrites it (in place when type and size are unchanged, so flushed files stay
// consistent). Reading accepts what h5py writes: fixed or variable-length strings, any integer
// width, any float width, scalars or 1-element arrays.
class Object {
 public:
  static constexpr std::size_t kMaxStringBytes = std::size_t{1} << 24;  // longer: refused as damaged

  hid_t id() const { return id_.get(); }
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }  // "/" for the root, "/taps/0/q_proj", ...

  bool has_attribute(const std::string& name) const;
  void set_string(const std::string& name, std::string_view value) const;
  void set_int(const std::string& name, std::int64_t value) const;
  void set_double(const std::string& name, double value) const;
  void set_ints(const std::string& name, std::span<const std::int32_t> values) const;

  // FormatError("<file>: <path> has no attribute '<name>'") when absent, or when of another kind;
  // a fixed-length string longer than its storage or kMaxStringBytes is refused too.
  std::string get_string(const std::string& name) const;
  std::int64_t get_int(const std::string& name) const;
  double get_double(const std::string& name) const;
  std::vector<std::int32_t> get_ints(const std::string& name) const;

 protected:
  Object(Id id, std::string file, std::string path)
      : id_(std::move(id)), file_(std::move(file)), path_(std::move(path)) {}
  std::string where(std::string_view child = {}) const;  // "a.h5: /taps/0" for messages
  Id& handle() { return id_; }

 private:
  Id open_attribute(const std::string& name) const;
  // Opens the attribute for writing when it has this type and element count, else recreates it.
  Id writable_attribute(const std::string& name, hid_t type, hsize_t count) const;

  Id id_;
  std::string file_;
  std::string path_;
};

// How a new dataset is laid out. Rank 1 or 2; rows are the first dimension.
struct Layout {
  std::vector<hsize_t> dims;    // initial extent
  std::vector<hsize_t> chunk;   // empty: contiguous and fixed; else chunked and unlimited along rows
  const void* fill = nullptr;   // fill value, in memory_type(type); null: HDF5's default (zero)
  std::size_t cache_bytes = 0;  // raw-data chunk cache of this handle; 0: HDF5's default (1 MiB)
  int gzip_level = 0;           // chunked only; 1-9: the shuffle filter, then deflate at this level

  static Layout fixed(std::vector<hsize_t> dims) { return {std::move(dims), {}, nullptr, 0, 0}; }
  static Layout extendible(std::vector<hsize_t> dims, std::vector<hsize_t> chunk, const void* fill = nullptr,
                           std::size_t cache_bytes = 0) {
    return {std::move(dims), std::move(chunk), fill, cache_bytes, 0};
  }
};

class DataSet : public Object {
 public:
  DataSet(Id id, std::string file, std::string path) : Object(std::move(id), std::move(file), std::move(path)) {}

  std::vector<hsize_t> extent() const;
  void set_extent(std::span<const hsize_t> dims) const;
  H5T_class_t type_class() const;
  std::size_t type_size() const;
  bool is_f16() const;  // stored as IEEE binary16, little endian
  // Chunks allocated in the file, counted by walking the whole chunk index; 0 when not chunked.
  std::uint64_t chunk_count() const;
  // For a dataset whose every element was written: FormatError naming file and dataset when
  // `elements` of `element_bytes` are more than the file can hold (its size, times deflate's
  // largest ratio when filtered), a damaged extent that must not become an allocation.
  void require_storable(hsize_t elements, std::size_t element_bytes) const;

  // Rows [first, first + count) of a rank-1 or rank-2 dataset, every column, from/to a dense
  // row-major buffer of mem_type. The rows must lie inside the extent.
  void write_rows(hsize_t first, hsize_t count, hid_t mem_type, const void* data) const;
  void read_rows(hsize_t first, hsize_t count, hid_t mem_type, void* data) const;
  // One whole chunk of a chunked dataset without filters, as the file stores it (its type, its
  // chunk shape, row-major), at element `offset` (a multiple of the chunk shape, inside the
  // extent): written as it is, past HDF5's type conversion, selections and chunk cache.
  void write_chunk(std::span<const hsize_t> offset, std::span<const std::byte> bytes) const;

 private:
  // The file space with rows [first, first + count) selected, and the matching memory space.
  std::pair<Id, Id> row_selection(hsize_t first, hsize_t count) const;
};

class Group : public Object {
 public:
  Group(Id id, std::string file, std::string path) : Object(std::move(id), std::move(file), std::move(path)) {}

  bool contains(const std::string& name) const;  // a direct child link of this name exists
  std::vector<std::string> children() const;     // names of the direct children
  Group create_group(const std::string& name) const;
  Group open_group(const std::string& name) const;  // FormatError when absent or not a group
  DataSet create_dataset(const std::string& name, Type type, const Layout& layout) const;
  DataSet open_dataset(const std::string& name, std::size_t cache_bytes = 0) const;

 private:
  std::string child_path(const std::string& name) const;
};

// An HDF5 file; as a Group it is the root group.
class File : public Group {
 public:
  enum class Mode : std::uint8_t { read, write };
  // Creates (truncates) path in the HDF5 1.10 file format. EnvironmentError naming path when that
  // fails.
  static File create(const std::string& path);
  // Opens an existing file. FormatError when path is not an HDF5 file, or is damaged or cut short
  // (a writer that stopped before its first flush leaves a file HDF5 cannot open). Read-only, a
  // file that a writer left without closing it opens too.
  static File open(const std::string& path, Mode mode = Mode::read);

  // Writes every dirty buffer of the file to the OS, so that a later crash keeps what is here.
  void flush() const;
  // Closes now (EnvironmentError if HDF5 fails to write). Handles into the file must be gone.
  void close();

 private:
  File(Id id, const std::string& path) : Group(std::move(id), path, "/") {}
};

}  // namespace tapdiff::dumps::h5
