#include "tests/fuzz/dump_text.h"

#include <hdf5.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <vector>

#include <fmt/core.h>

#include "dumps/h5.h"

namespace tapdiff::fuzz {
namespace {

using dumps::h5::Id;

// Dimensions up to 2^16: the reader allocates what a file declares (a /rows dataset of 2^40
// unwritten entries asks for terabytes), which is no memory-safety question; docs/fuzzing.md.
constexpr hsize_t kMaxDim = hsize_t{1} << 16;
constexpr hsize_t kMaxWritten = hsize_t{1} << 16;  // elements the harness itself writes per dataset

std::vector<std::string_view> split(std::string_view text, std::size_t max_fields) {
  std::vector<std::string_view> out;
  while (!text.empty() && out.size() + 1 < max_fields) {
    const std::size_t space = text.find(' ');
    out.push_back(text.substr(0, space));
    if (space == std::string_view::npos) return out;
    text.remove_prefix(space + 1);
  }
  if (!text.empty() || out.size() + 1 == max_fields) out.push_back(text);
  return out;
}

struct Element {
  hid_t file_type;
  hid_t memory_type;
  bool floating;
};

std::optional<Element> element(std::string_view name) {
  if (name == "i32") return Element{H5T_STD_I32LE, H5T_NATIVE_INT64, false};
  if (name == "u8") return Element{H5T_STD_U8LE, H5T_NATIVE_INT64, false};
  if (name == "i64") return Element{H5T_STD_I64LE, H5T_NATIVE_INT64, false};
  if (name == "f16") return Element{dumps::h5::file_type(dumps::h5::Type::f16), H5T_NATIVE_DOUBLE, true};
  if (name == "f32") return Element{H5T_IEEE_F32LE, H5T_NATIVE_DOUBLE, true};
  if (name == "f64") return Element{H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, true};
  return std::nullopt;
}

Id vlen_string() {
  Id type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), H5T_VARIABLE);
  H5Tset_cset(type.get(), H5T_CSET_UTF8);
  return type;
}

// Numbers as int64 or double bit patterns (8 bytes each), in the memory type of `floating`.
std::vector<std::int64_t> numbers(const std::vector<std::string_view>& words, bool floating) {
  std::vector<std::int64_t> out;
  for (std::string_view w : words) {
    const std::string s(w);
    if (floating) {
      const double d = std::strtod(s.c_str(), nullptr);
      std::int64_t bits = 0;
      static_assert(sizeof bits == sizeof d);
      __builtin_memcpy(&bits, &d, sizeof d);
      out.push_back(bits);
    } else {
      out.push_back(std::strtoll(s.c_str(), nullptr, 10));
    }
  }
  return out;
}

class Writer {
 public:
  explicit Writer(const std::filesystem::path& path)
      : file_(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose),
        lcpl_(H5Pcreate(H5P_LINK_CREATE), H5Pclose) {
    H5Pset_create_intermediate_group(lcpl_.get(), 1);
  }
  bool ok() const { return file_.get() >= 0; }

  void line(std::string_view text) {
    const std::vector<std::string_view> head = split(text, 2);
    if (head.size() < 2) return;
    if (head[0] == "group") object(std::string(head[1]));
    if (head[0] == "attr") attribute(split(head[1], 4));
    if (head[0] == "data") dataset(split(head[1], 4));
  }

 private:
  // The object at path, created as a group when absent; invalid when HDF5 refuses.
  Id object(const std::string& path) {
    if (path == "/") return Id(H5Oopen(file_.get(), "/", H5P_DEFAULT), H5Oclose);
    if (path.empty() || path[0] != '/') return {};
    if (exists(path)) return Id(H5Oopen(file_.get(), path.c_str(), H5P_DEFAULT), H5Oclose);
    const hid_t group = H5Gcreate2(file_.get(), path.c_str(), lcpl_.get(), H5P_DEFAULT, H5P_DEFAULT);
    if (group < 0) return {};
    H5Gclose(group);
    return Id(H5Oopen(file_.get(), path.c_str(), H5P_DEFAULT), H5Oclose);
  }

  // Whether every component of path exists (H5Lexists fails on a missing intermediate group).
  bool exists(const std::string& path) const {
    for (std::size_t end = path.find('/', 1);; end = path.find('/', end + 1)) {
      if (H5Lexists(file_.get(), path.substr(0, end).c_str(), H5P_DEFAULT) <= 0) return false;
      if (end == std::string::npos) return true;
    }
  }

  // fields: path, name, type, value
  void attribute(const std::vector<std::string_view>& f) {
    if (f.size() < 3) return;
    const Id target = object(std::string(f[0]));
    if (target.get() < 0) return;
    const std::string name(f[1]);
    const std::string_view type = f[2], value = f.size() > 3 ? f[3] : std::string_view();
    if (H5Aexists(target.get(), name.c_str()) > 0) H5Adelete(target.get(), name.c_str());
    if (type == "str" || type == "fstr") {
      const bool fixed = type == "fstr";
      Id string_type = fixed ? Id(H5Tcopy(H5T_C_S1), H5Tclose) : vlen_string();
      if (fixed) H5Tset_size(string_type.get(), std::max<std::size_t>(value.size(), 1));
      const Id space(H5Screate(H5S_SCALAR), H5Sclose);
      const Id attr(H5Acreate2(target.get(), name.c_str(), string_type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
                    H5Aclose);
      std::string text(value);
      text.resize(std::max<std::size_t>(text.size(), 1));
      const char* pointer = text.c_str();
      if (attr.get() >= 0)
        H5Awrite(attr.get(), string_type.get(), fixed ? static_cast<const void*>(text.data()) : &pointer);
      return;
    }
    const bool array = type == "ints" || type == "floats", floating = type == "float" || type == "floats";
    if (!array && type != "int" && type != "float") return;
    std::vector<std::int64_t> values = numbers(split(value, 1 << 16), floating);
    if (!array) values.resize(1);
    const hsize_t count = values.size();
    const Id space(
        array ? (count == 0 ? H5Screate(H5S_NULL) : H5Screate_simple(1, &count, nullptr)) : H5Screate(H5S_SCALAR),
        H5Sclose);
    const hid_t file_type = floating ? H5T_IEEE_F64LE : array ? H5T_STD_I32LE : H5T_STD_I64LE;
    const Id attr(H5Acreate2(target.get(), name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    if (attr.get() >= 0 && count > 0)
      H5Awrite(attr.get(), floating ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT64, values.data());
  }

  // fields: path, type, shape, values
  void dataset(const std::vector<std::string_view>& f) {
    if (f.size() < 3) return;
    const std::string path(f[0]);
    if (path.size() < 2 || path[0] != '/' || exists(path)) return;
    std::string_view shape = f[2];
    const bool gzip = shape.ends_with("+z");
    if (gzip) shape.remove_suffix(1);
    const bool chunked = shape.ends_with('+');
    if (chunked) shape.remove_suffix(1);
    std::vector<hsize_t> dims;
    for (std::string_view d = shape; shape != "-";) {
      const std::size_t x = d.find('x');
      dims.push_back(std::strtoull(std::string(d.substr(0, x)).c_str(), nullptr, 10));
      if (dims.size() > 4 || dims.back() > kMaxDim) return;
      if (x == std::string_view::npos) break;
      d.remove_prefix(x + 1);
    }
    const int rank = static_cast<int>(dims.size());
    std::vector<hsize_t> max_dims = dims;
    const Id dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    if (chunked && rank > 0) {
      max_dims[0] = H5S_UNLIMITED;
      std::vector<hsize_t> chunk(dims.size(), 1);
      chunk[0] = std::clamp<hsize_t>(dims[0], 1, 64);
      chunk.back() = std::clamp<hsize_t>(dims.back(), 1, 1024);
      H5Pset_chunk(dcpl.get(), rank, chunk.data());
      if (gzip) H5Pset_shuffle(dcpl.get()), H5Pset_deflate(dcpl.get(), 1);
    }
    const Id space(rank == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(rank, dims.data(), max_dims.data()), H5Sclose);
    const bool strings = f[1] == "str";
    const std::optional<Element> e = element(f[1]);
    if (!strings && !e) return;
    const Id string_type = vlen_string();
    const hid_t file_type = strings ? string_type.get() : e->file_type;
    const Id data(H5Dcreate2(file_.get(), path.c_str(), file_type, space.get(), lcpl_.get(), dcpl.get(), H5P_DEFAULT),
                  H5Dclose);
    const std::vector<std::string_view> words = split(f.size() > 3 ? f[3] : std::string_view(), 1 << 16);
    hsize_t n = 1;
    for (hsize_t d : dims) n = d != 0 && n > kMaxWritten / d ? kMaxWritten + 1 : n * d;
    if (data.get() < 0 || words.empty() || n > kMaxWritten) return;
    if (strings) {
      std::vector<std::string> text(words.begin(), words.end());
      std::vector<const char*> pointers(n);
      for (hsize_t i = 0; i < n; ++i) pointers[i] = text[i % text.size()].c_str();
      H5Dwrite(data.get(), string_type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, pointers.data());
      return;
    }
    const std::vector<std::int64_t> values = numbers(words, e->floating);
    std::vector<std::int64_t> filled(n);
    for (hsize_t i = 0; i < n; ++i) filled[i] = values[i % values.size()];
    H5Dwrite(data.get(), e->memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, filled.data());
  }

  Id file_;
  Id lcpl_;
};

// --- reading, for seeds ---------------------------------------------------------------------

std::string type_name(hid_t type) {
  const H5T_class_t cls = H5Tget_class(type);
  const std::size_t size = H5Tget_size(type);
  if (cls == H5T_STRING) return "str";
  if (cls == H5T_FLOAT) return size == 2 ? "f16" : size == 4 ? "f32" : "f64";
  if (cls == H5T_INTEGER) return size == 1 ? "u8" : size == 4 ? "i32" : "i64";
  return "?";
}

std::string string_value(hid_t attr, hid_t type) {
  if (H5Tis_variable_str(type) > 0) {
    const Id memory = vlen_string();
    char* text = nullptr;
    H5Aread(attr, memory.get(), &text);
    std::string out = text != nullptr ? text : "";
    H5free_memory(text);
    return out;
  }
  std::string out(H5Tget_size(type), '\0');
  H5Aread(attr, type, out.data());
  return out.substr(0, out.find('\0'));
}

herr_t print_attribute(hid_t object, const char* name, const H5A_info_t*, void* out_text) {
  std::string& out = *static_cast<std::string*>(out_text);
  const Id attr(H5Aopen(object, name, H5P_DEFAULT), H5Aclose);
  const Id type(H5Aget_type(attr.get()), H5Tclose);
  const Id space(H5Aget_space(attr.get()), H5Sclose);
  const auto count = static_cast<std::size_t>(std::max<hssize_t>(H5Sget_simple_extent_npoints(space.get()), 0));
  const bool array = H5Sget_simple_extent_type(space.get()) != H5S_SCALAR;
  std::vector<char> path(static_cast<std::size_t>(H5Iget_name(object, nullptr, 0)) + 1);
  H5Iget_name(object, path.data(), path.size());
  const H5T_class_t cls = H5Tget_class(type.get());
  std::string value;
  if (cls == H5T_STRING) {
    value = (H5Tis_variable_str(type.get()) > 0 ? "str " : "fstr ") + string_value(attr.get(), type.get());
    std::replace(value.begin(), value.end(), '\n', ' ');
  } else {
    const bool floating = cls == H5T_FLOAT;
    std::vector<double> values(std::max<std::size_t>(count, 1));
    H5Aread(attr.get(), H5T_NATIVE_DOUBLE, values.data());
    value = floating ? (array ? "floats" : "float") : (array ? "ints" : "int");
    for (std::size_t i = 0; i < count; ++i) value += fmt::format(" {}", values[i]);
  }
  out += fmt::format("attr {} {} {}\n", path.data(), name, value);
  return 0;
}

struct Visit {
  std::string* out;
  std::size_t max_values;
};

herr_t print_object(hid_t root, const char* name, const H5O_info_t* info, void* visit_data) {
  const Visit& v = *static_cast<Visit*>(visit_data);
  const std::string path = std::string(name) == "." ? "/" : "/" + std::string(name);
  if (info->type == H5O_TYPE_GROUP && path != "/") *v.out += "group " + path + "\n";
  if (info->type == H5O_TYPE_DATASET) {
    const Id data(H5Dopen2(root, path.c_str(), H5P_DEFAULT), H5Dclose);
    const Id type(H5Dget_type(data.get()), H5Tclose);
    const Id space(H5Dget_space(data.get()), H5Sclose);
    const Id dcpl(H5Dget_create_plist(data.get()), H5Pclose);
    const int rank = H5Sget_simple_extent_ndims(space.get());
    std::vector<hsize_t> dims(static_cast<std::size_t>(std::max(rank, 0)));
    H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
    std::string shape = rank == 0 ? "-" : "";
    for (std::size_t i = 0; i < dims.size(); ++i) shape += fmt::format("{}{}", i > 0 ? "x" : "", dims[i]);
    if (H5Pget_layout(dcpl.get()) == H5D_CHUNKED) shape += H5Pget_nfilters(dcpl.get()) > 0 ? "+z" : "+";
    std::string values;
    const auto n = static_cast<std::size_t>(std::max<hssize_t>(H5Sget_simple_extent_npoints(space.get()), 0));
    if (H5Tget_class(type.get()) != H5T_STRING && n > 0) {
      std::vector<double> all(n);
      H5Dread(data.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, all.data());
      for (std::size_t i = 0; i < std::min(n, v.max_values); ++i) values += fmt::format(" {:.4}", all[i]);
    }
    *v.out += fmt::format("data {} {} {}{}\n", path, type_name(type.get()), shape, values);
  }
  const Id object(H5Oopen(root, path.c_str(), H5P_DEFAULT), H5Oclose);
  H5Aiterate2(object.get(), H5_INDEX_NAME, H5_ITER_INC, nullptr, print_attribute, v.out);
  return 0;
}

}  // namespace

void write_dump_text(const std::filesystem::path& path, std::string_view text) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  Writer writer(path);
  if (!writer.ok()) return;
  while (!text.empty()) {
    const std::size_t end = std::min(text.find('\n'), text.size());
    writer.line(text.substr(0, end));
    text.remove_prefix(std::min(end + 1, text.size()));
  }
}

std::string read_dump_text(const std::filesystem::path& path, std::size_t max_values) {
  const Id file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  std::string out;
  Visit visit{&out, max_values};
  H5Ovisit(file.get(), H5_INDEX_NAME, H5_ITER_INC, print_object, &visit);
  return out;
}

}  // namespace tapdiff::fuzz
