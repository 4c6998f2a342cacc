#include "dumps/h5.h"

#include <algorithm>
#include <bit>
#include <filesystem>

#include <fmt/core.h>

#include "model/errors.h"

namespace tapdiff::dumps::h5 {
namespace {

// HDF5 prints its error stack to stderr by default; we report through exceptions instead. Nor
// does it close anything at exit: every handle has its owner here, and libhdf5 1.10 crashes when its
// exit handler closes again a file whose H5Fclose failed (a full disk).
void quiet() {
  static const bool once = [] {
    H5dont_atexit();
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)once;
}
// Before main, so before anything else calls HDF5: H5dont_atexit only works before HDF5 starts.
[[maybe_unused]] const bool quiet_at_load = (quiet(), true);

}  // namespace
}  // namespace tapdiff::dumps::h5

#if defined(__SANITIZE_ADDRESS__)
#define TAPDIFF_LEAK_CHECKED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TAPDIFF_LEAK_CHECKED 1
#endif
#endif
#ifdef TAPDIFF_LEAK_CHECKED
// With its exit handler off, HDF5 never frees its own global state, and a file whose flush failed
// (a full disk) keeps its internal buffers: LeakSanitizer is told that memory allocated inside
// libhdf5 is HDF5's to keep. Every handle tapdiff opens has an owner that closes it.
extern "C" const char* __lsan_default_suppressions() { return "leak:libhdf5\n"; }
extern "C" const char* __lsan_default_options() { return "print_suppressions=0"; }
#endif

namespace tapdiff::dumps::h5 {
namespace {

template <class Error>
[[noreturn]] void fail(const std::string& where, std::string_view what) {
  const std::string reason = last_error();
  if (reason.empty()) throw Error(fmt::format("{}: {}", where, what));
  throw Error(fmt::format("{}: {} (HDF5: {})", where, what, reason));
}

// Returns id, or throws Error naming where and what when HDF5 signalled failure (< 0).
template <class Error = EnvironmentError>
hid_t need(hid_t id, const std::string& where, std::string_view what) {
  if (id < 0) fail<Error>(where, what);
  return id;
}

hid_t make_half_type() {
  quiet();
  // As h5py and numpy define float16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
  const hid_t type = H5Tcopy(H5T_IEEE_F32LE);
  H5Tset_fields(type, 15, 10, 5, 0, 10);
  H5Tset_size(type, 2);
  H5Tset_ebias(type, 15);
  return type;
}

hid_t half_type() {
  static const hid_t type = make_half_type();
  return type;
}

// Variable-length string type of the given character set (UTF-8 for what we write).
Id string_type(H5T_cset_t cset, std::size_t size) {
  Id type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), size);
  H5Tset_cset(type.get(), cset);
  return type;
}

std::string_view class_name(H5T_class_t cls) {
  switch (cls) {
    case H5T_INTEGER: return "an integer";
    case H5T_FLOAT: return "a float";
    case H5T_STRING: return "a string";
    case H5T_ENUM: return "an enum";
    case H5T_COMPOUND: return "a compound";
    case H5T_ARRAY: return "an array type";
    default: return "another HDF5 type";
  }
}

Id scalar_space() { return Id(H5Screate(H5S_SCALAR), H5Sclose); }

constexpr unsigned kCompactAttributes = 64;  // attributes, or links, kept in an object's header

// Creation properties that leave out modification times, so identical runs give identical files.
Id no_times(hid_t plist_class) {
  Id plist(H5Pcreate(plist_class), H5Pclose);
  H5Pset_obj_track_times(plist.get(), false);
  return plist;
}

}  // namespace

hid_t file_type(Type type) {
  quiet();
  switch (type) {
    case Type::i32: return H5T_STD_I32LE;
    case Type::u8: return H5T_STD_U8LE;
    case Type::f16: return half_type();
    case Type::f32: return H5T_IEEE_F32LE;
    case Type::f64: return H5T_IEEE_F64LE;
  }
  return H5I_INVALID_HID;
}

hid_t memory_type(Type type) {
  quiet();
  switch (type) {
    case Type::i32: return H5T_NATIVE_INT32;
    case Type::u8: return H5T_NATIVE_UINT8;
    case Type::f16: return half_type();
    case Type::f32: return H5T_NATIVE_FLOAT;
    case Type::f64: return H5T_NATIVE_DOUBLE;
  }
  return H5I_INVALID_HID;
}

std::string last_error() {
  std::string message;
  auto innermost = [](unsigned n, const H5E_error2_t* error, void* out) -> herr_t {
    if (n == 0 && error->desc != nullptr) *static_cast<std::string*>(out) = error->desc;
    return 0;
  };
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, innermost, &message);
  // One line: HDF5's write errors quote ctime(), which ends in a newline.
  std::replace_if(
      message.begin(), message.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  return message;
}

// --- Id ---------------------------------------------------------------------------------------

Id::Id(Id&& other) noexcept : id_(other.id_), close_(other.close_) { other.id_ = H5I_INVALID_HID; }

Id& Id::operator=(Id&& other) noexcept {
  if (this != &other) {
    reset();
    id_ = other.id_;
    close_ = other.close_;
    other.id_ = H5I_INVALID_HID;
  }
  return *this;
}

void Id::reset() {
  if (id_ >= 0 && close_ != nullptr) close_(id_);
  id_ = H5I_INVALID_HID;
}

hid_t Id::release() {
  const hid_t id = id_;
  id_ = H5I_INVALID_HID;
  return id;
}

// --- Object: attributes ---------------------------------------------------------------------

std::string Object::where(std::string_view child) const {
  if (child.empty()) return fmt::format("{}: {}", file_, path_);
  return fmt::format("{}: {}{}{}", file_, path_, path_ == "/" ? "" : "/", child);
}

bool Object::has_attribute(const std::string& name) const {
  const htri_t found = H5Aexists(id(), name.c_str());
  if (found < 0) fail<FormatError>(where(), fmt::format("cannot look up attribute '{}'", name));
  return found > 0;
}

Id Object::open_attribute(const std::string& name) const {
  if (!has_attribute(name)) throw FormatError(fmt::format("{} has no attribute '{}'", where(), name));
  return Id(need<FormatError>(H5Aopen(id(), name.c_str(), H5P_DEFAULT), where(),
                              fmt::format("cannot open attribute '{}'", name)),
            H5Aclose);
}

Id Object::writable_attribute(const std::string& name, hid_t type, hsize_t count) const {
  Id space = count == 1 ? scalar_space() : Id(H5Screate_simple(1, &count, nullptr), H5Sclose);
  if (has_attribute(name)) {
    Id attr(H5Aopen(id(), name.c_str(), H5P_DEFAULT), H5Aclose);
    Id old_type(H5Aget_type(attr.get()), H5Tclose);
    Id old_space(H5Aget_space(attr.get()), H5Sclose);
    if (H5Tequal(old_type.get(), type) > 0 && H5Sextent_equal(old_space.get(), space.get()) > 0) return attr;
    attr.reset();
    need(H5Adelete(id(), name.c_str()), where(), fmt::format("cannot replace attribute '{}'", name));
  }
  return Id(need(H5Acreate2(id(), name.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT), where(),
                 fmt::format("cannot create attribute '{}'", name)),
            H5Aclose);
}

void Object::set_string(const std::string& name, std::string_view value) const {
  const Id type = string_type(H5T_CSET_UTF8, H5T_VARIABLE);
  const Id attr = writable_attribute(name, type.get(), 1);
  const std::string text(value);
  const char* data = text.c_str();
  need(H5Awrite(attr.get(), type.get(), &data), where(), fmt::format("cannot write attribute '{}'", name));
}

void Object::set_int(const std::string& name, std::int64_t value) const {
  const Id attr = writable_attribute(name, H5T_STD_I64LE, 1);
  need(H5Awrite(attr.get(), H5T_NATIVE_INT64, &value), where(), fmt::format("cannot write attribute '{}'", name));
}

void Object::set_double(const std::string& name, double value) const {
  const Id attr = writable_attribute(name, H5T_IEEE_F64LE, 1);
  need(H5Awrite(attr.get(), H5T_NATIVE_DOUBLE, &value), where(), fmt::format("cannot write attribute '{}'", name));
}

void Object::set_ints(const std::string& name, std::span<const std::int32_t> values) const {
  const Id attr = writable_attribute(name, H5T_STD_I32LE, values.size());
  need(H5Awrite(attr.get(), H5T_NATIVE_INT32, values.data()), where(),
       fmt::format("cannot write attribute '{}'", name));
}

namespace {

// The attribute's element count, checking that its class is one of the accepted ones.
hsize_t checked_count(hid_t attr, const std::string& where, const std::string& name,
                      std::initializer_list<H5T_class_t> accepted, std::string_view expected) {
  const Id type(H5Aget_type(attr), H5Tclose);
  const H5T_class_t cls = H5Tget_class(type.get());
  if (std::find(accepted.begin(), accepted.end(), cls) == accepted.end())
    throw FormatError(fmt::format("{}: attribute '{}': expected {}, found {}", where, name, expected, class_name(cls)));
  const Id space(H5Aget_space(attr), H5Sclose);
  const hssize_t count = H5Sget_simple_extent_npoints(space.get());
  if (count < 0) fail<FormatError>(where, fmt::format("cannot read the shape of attribute '{}'", name));
  return static_cast<hsize_t>(count);
}

void require_single(hsize_t count, const std::string& where, const std::string& name) {
  if (count != 1)
    throw FormatError(fmt::format("{}: attribute '{}': expected a single value, found {} values", where, name, count));
}

}  // namespace

std::string Object::get_string(const std::string& name) const {
  const Id attr = open_attribute(name);
  require_single(checked_count(attr.get(), where(), name, {H5T_STRING}, "a string"), where(), name);
  const Id stored(H5Aget_type(attr.get()), H5Tclose);
  const std::string what = fmt::format("cannot read attribute '{}'", name);
  if (H5Tis_variable_str(stored.get()) > 0) {
    const Id type = string_type(H5Tget_cset(stored.get()), H5T_VARIABLE);
    char* data = nullptr;
    need<FormatError>(H5Aread(attr.get(), type.get(), &data), where(), what);
    std::string text = data != nullptr ? data : "";
    H5free_memory(data);
    return text;
  }
  const std::size_t size = H5Tget_size(stored.get());  // fixed length, maybe without a NUL
  if (size > kMaxStringBytes || size > H5Aget_storage_size(attr.get()))
    throw FormatError(
        fmt::format("{}: attribute '{}': expected a string of at most {} bytes stored, found a type of {} bytes",
                    where(), name, std::min<hsize_t>(kMaxStringBytes, H5Aget_storage_size(attr.get())), size));
  const Id type = string_type(H5Tget_cset(stored.get()), size + 1);
  std::string text(size + 1, '\0');
  need<FormatError>(H5Aread(attr.get(), type.get(), text.data()), where(), what);
  text.resize(text.find('\0'));
  return text;
}

std::int64_t Object::get_int(const std::string& name) const {
  const Id attr = open_attribute(name);
  require_single(checked_count(attr.get(), where(), name, {H5T_INTEGER}, "an integer"), where(), name);
  std::int64_t value = 0;
  need<FormatError>(H5Aread(attr.get(), H5T_NATIVE_INT64, &value), where(),
                    fmt::format("cannot read attribute '{}'", name));
  return value;
}

double Object::get_double(const std::string& name) const {
  const Id attr = open_attribute(name);
  require_single(checked_count(attr.get(), where(), name, {H5T_FLOAT, H5T_INTEGER}, "a number"), where(), name);
  double value = 0;
  need<FormatError>(H5Aread(attr.get(), H5T_NATIVE_DOUBLE, &value), where(),
                    fmt::format("cannot read attribute '{}'", name));
  return value;
}

std::vector<std::int32_t> Object::get_ints(const std::string& name) const {
  const Id attr = open_attribute(name);
  const hsize_t count = checked_count(attr.get(), where(), name, {H5T_INTEGER}, "integers");
  std::vector<std::int32_t> values(count);
  if (count > 0)
    need<FormatError>(H5Aread(attr.get(), H5T_NATIVE_INT32, values.data()), where(),
                      fmt::format("cannot read attribute '{}'", name));
  return values;
}

// --- DataSet ----------------------------------------------------------------------------------

std::vector<hsize_t> DataSet::extent() const {
  const Id space(need<FormatError>(H5Dget_space(id()), where(), "cannot read the dataset's shape"), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  std::vector<hsize_t> dims(static_cast<std::size_t>(std::max(rank, 0)));
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  return dims;
}

void DataSet::set_extent(std::span<const hsize_t> dims) const {
  need(H5Dset_extent(id(), dims.data()), where(), fmt::format("cannot extend to {} rows", dims[0]));
}

H5T_class_t DataSet::type_class() const {
  const Id type(H5Dget_type(id()), H5Tclose);
  return H5Tget_class(type.get());
}

std::size_t DataSet::type_size() const {
  const Id type(H5Dget_type(id()), H5Tclose);
  return H5Tget_size(type.get());
}

bool DataSet::is_f16() const {
  const Id type(H5Dget_type(id()), H5Tclose);
  return H5Tequal(type.get(), half_type()) > 0;
}

std::uint64_t DataSet::chunk_count() const {
  const Id dcpl(need<FormatError>(H5Dget_create_plist(id()), where(), "cannot read the creation properties"), H5Pclose);
  if (H5Pget_layout(dcpl.get()) != H5D_CHUNKED) return 0;
  hsize_t chunks = 0;
  need<FormatError>(H5Dget_num_chunks(id(), H5S_ALL, &chunks), where(), "cannot read the chunk index");
  return chunks;
}

void DataSet::require_storable(hsize_t elements, std::size_t element_bytes) const {
  constexpr std::uintmax_t kDeflateMaxRatio = 1032;  // RFC 1951: a 258-byte match per 2 bits, at best
  const Id dcpl(need<FormatError>(H5Dget_create_plist(id()), where(), "cannot read the creation properties"), H5Pclose);
  std::error_code error;
  const std::uintmax_t file_bytes = std::filesystem::file_size(file(), error);
  if (error) return;  // not a file we can measure: HDF5's own reads will tell
  const std::uintmax_t most = file_bytes * (H5Pget_nfilters(dcpl.get()) > 0 ? kDeflateMaxRatio : 1);
  if (elements > most / std::max<std::size_t>(element_bytes, 1))
    throw FormatError(
        fmt::format("{}: expected at most {} elements of {} bytes in a {}-byte file, found an extent of {}", where(),
                    most / std::max<std::size_t>(element_bytes, 1), element_bytes, file_bytes, elements));
}

std::pair<Id, Id> DataSet::row_selection(hsize_t first, hsize_t count) const {
  Id file_space(need(H5Dget_space(id()), where(), "cannot read the dataset's shape"), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(file_space.get());
  TAPDIFF_ASSERT(rank == 1 || rank == 2, "{}: rank {} dataset", where(), rank);
  hsize_t dims[2] = {0, 1};
  H5Sget_simple_extent_dims(file_space.get(), dims, nullptr);
  TAPDIFF_ASSERT(first + count <= dims[0], "{}: rows [{}, {}) outside {} rows", where(), first, first + count, dims[0]);
  const hsize_t start[2] = {first, 0};
  const hsize_t size[2] = {count, dims[1]};
  need(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, size, nullptr), where(),
       "cannot select rows");
  Id memory_space(H5Screate_simple(rank, size, nullptr), H5Sclose);
  return {std::move(file_space), std::move(memory_space)};
}

void DataSet::write_rows(hsize_t first, hsize_t count, hid_t mem_type, const void* data) const {
  if (count == 0) return;
  const auto [file_space, memory_space] = row_selection(first, count);
  need(H5Dwrite(id(), mem_type, memory_space.get(), file_space.get(), H5P_DEFAULT, data), where(),
       fmt::format("cannot write rows [{}, {})", first, first + count));
}

void DataSet::write_chunk(std::span<const hsize_t> offset, std::span<const std::byte> bytes) const {
  need(H5Dwrite_chunk(id(), H5P_DEFAULT, 0, offset.data(), bytes.size(), bytes.data()), where(),
       fmt::format("cannot write the chunk at row {}", offset.empty() ? 0 : offset[0]));
}

void DataSet::read_rows(hsize_t first, hsize_t count, hid_t mem_type, void* data) const {
  if (count == 0) return;
  const auto [file_space, memory_space] = row_selection(first, count);
  need<FormatError>(H5Dread(id(), mem_type, memory_space.get(), file_space.get(), H5P_DEFAULT, data), where(),
                    fmt::format("cannot read rows [{}, {})", first, first + count));
}

// --- Group ------------------------------------------------------------------------------------

std::string Group::child_path(const std::string& name) const {
  return path() == "/" ? "/" + name : path() + "/" + name;
}

bool Group::contains(const std::string& name) const {
  const htri_t found = H5Lexists(id(), name.c_str(), H5P_DEFAULT);
  if (found < 0) fail<FormatError>(where(), fmt::format("cannot look up '{}'", name));
  return found > 0;
}

std::vector<std::string> Group::children() const {
  H5G_info_t info{};
  need<FormatError>(H5Gget_info(id(), &info), where(), "cannot list the group");
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t size = H5Lget_name_by_idx(id(), ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (size < 0) fail<FormatError>(where(), "cannot list the group");
    std::string name(static_cast<std::size_t>(size) + 1, '\0');
    H5Lget_name_by_idx(id(), ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT);
    name.resize(static_cast<std::size_t>(size));
    names.push_back(std::move(name));
  }
  return names;
}

Group Group::create_group(const std::string& name) const {
  const Id gcpl = no_times(H5P_GROUP_CREATE);
  H5Pset_link_phase_change(gcpl.get(), kCompactAttributes, kCompactAttributes);
  Id group(
      need(H5Gcreate2(id(), name.c_str(), H5P_DEFAULT, gcpl.get(), H5P_DEFAULT), where(name), "cannot create group"),
      H5Gclose);
  return Group(std::move(group), file(), child_path(name));
}

Group Group::open_group(const std::string& name) const {
  if (!contains(name)) throw FormatError(fmt::format("{}: missing group", where(name)));
  Id group(need<FormatError>(H5Gopen2(id(), name.c_str(), H5P_DEFAULT), where(name), "expected a group"), H5Gclose);
  return Group(std::move(group), file(), child_path(name));
}

namespace {

Id access_properties(std::size_t cache_bytes) {
  Id dapl(H5Pcreate(H5P_DATASET_ACCESS), H5Pclose);
  // 101 hash slots (a prime) is plenty: rows are written in order, so few chunks are live.
  if (cache_bytes > 0) H5Pset_chunk_cache(dapl.get(), 101, cache_bytes, 1.0);
  return dapl;
}

}  // namespace

DataSet Group::create_dataset(const std::string& name, Type type, const Layout& layout) const {
  const int rank = static_cast<int>(layout.dims.size());
  TAPDIFF_ASSERT(rank == 1 || rank == 2, "{}: rank {} dataset", where(name), rank);
  const Id dcpl = no_times(H5P_DATASET_CREATE);
  std::vector<hsize_t> max_dims = layout.dims;
  if (!layout.chunk.empty()) {
    TAPDIFF_ASSERT(layout.chunk.size() == layout.dims.size(), "{}: chunk rank", where(name));
    H5Pset_chunk(dcpl.get(), rank, layout.chunk.data());
    max_dims[0] = H5S_UNLIMITED;
    if (layout.gzip_level > 0) {
      // Shuffle puts bytes of equal significance side by side, which deflate then finds alike.
      H5Pset_shuffle(dcpl.get());
      H5Pset_deflate(dcpl.get(), static_cast<unsigned>(layout.gzip_level));
    }
  }
  if (layout.fill != nullptr) H5Pset_fill_value(dcpl.get(), memory_type(type), layout.fill);
  const Id space(H5Screate_simple(rank, layout.dims.data(), max_dims.data()), H5Sclose);
  const Id dapl = access_properties(layout.cache_bytes);
  Id dataset(need(H5Dcreate2(id(), name.c_str(), file_type(type), space.get(), H5P_DEFAULT, dcpl.get(), dapl.get()),
                  where(name), "cannot create dataset"),
             H5Dclose);
  return DataSet(std::move(dataset), file(), child_path(name));
}

DataSet Group::open_dataset(const std::string& name, std::size_t cache_bytes) const {
  if (!contains(name)) throw FormatError(fmt::format("{}: missing dataset", where(name)));
  const Id dapl = access_properties(cache_bytes);
  Id dataset(need<FormatError>(H5Dopen2(id(), name.c_str(), dapl.get()), where(name), "expected a dataset"), H5Dclose);
  return DataSet(std::move(dataset), file(), child_path(name));
}

// --- File -------------------------------------------------------------------------------------

File File::create(const std::string& path) {
  quiet();
  // The HDF5 1.10 file format: object headers, the superblock, group indexes, attribute heaps and
  // chunk indexes carry checksums, and a chunk index is an extensible array, whose entries stay
  // where they were first written as it grows (the 1.8 format's B-tree moves half a node's entries
  // when it splits one: a run killed during that flush lost rows it had vouched for).
  const Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V110, H5F_LIBVER_V110);
  // The root's attributes stay in its (checksummed) object header rather than in a heap of their
  // own, and its header carries no times (identical runs give identical files).
  const Id fcpl = no_times(H5P_FILE_CREATE);
  H5Pset_attr_phase_change(fcpl.get(), kCompactAttributes, kCompactAttributes);
  const hid_t id = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl.get(), fapl.get());
  if (id < 0) fail<EnvironmentError>(path, "cannot create the HDF5 file");
  return File(Id(id, H5Fclose), path);
}

namespace {

// File access that reads a 1.10-format file whose superblock still says "open for writing" (its
// writer died) as h5clear does, without writing to it: libhdf5's property "clear_status_flags"
// (known to every libhdf5 since 1.10) clears the flags in memory.
Id ignoring_a_dead_writer() {
  Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  hbool_t clear = true;
  if (H5Pexist(fapl.get(), "clear_status_flags") <= 0 || H5Pset(fapl.get(), "clear_status_flags", &clear) < 0)
    return Id(H5P_DEFAULT, nullptr);
  return fapl;
}

}  // namespace

File File::open(const std::string& path, Mode mode) {
  quiet();
  const htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
  if (is_hdf5 < 0) fail<EnvironmentError>(path, "cannot read the file");
  if (is_hdf5 == 0) throw FormatError(fmt::format("{}: not an HDF5 file", path));
  const Id fapl = mode == Mode::read ? ignoring_a_dead_writer() : Id(H5P_DEFAULT, nullptr);
  const hid_t id = H5Fopen(path.c_str(), mode == Mode::read ? H5F_ACC_RDONLY : H5F_ACC_RDWR, fapl.get());
  if (id < 0) {  // the signature is there, the rest is not
    const std::string reason = last_error();
    throw FormatError(
        fmt::format("{}: cannot open the HDF5 file (HDF5: {}): damaged, or incomplete (its writer "
                    "stopped before the file was first flushed whole: killed, or out of disk space)",
                    path, reason.empty() ? "no reason given" : reason));
  }
  return File(Id(id, H5Fclose), path);
}

void File::flush() const { need(H5Fflush(id(), H5F_SCOPE_LOCAL), file(), "cannot flush the file"); }

void File::close() {
  const hid_t id = handle().release();
  if (id >= 0 && H5Fclose(id) < 0) fail<EnvironmentError>(file(), "cannot close the file");
}

}  // namespace tapdiff::dumps::h5
