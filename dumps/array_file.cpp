#include "dumps/array_file.h"

#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "formats/safetensors_reader.h"
#include "model/errors.h"
#include "model/mapped_file.h"
#include "model/printable.h"

namespace tapdiff::dumps {
namespace {

constexpr std::array<char, 4> kZipMagic = {'P', 'K', 3, 4};
constexpr std::array<char, 4> kZipEmptyMagic = {'P', 'K', 5, 6};

constexpr std::pair<std::string_view, ElementType> kSafetensorsTypes[] = {
    {"F16", ElementType::f16}, {"BF16", ElementType::bf16}, {"F32", ElementType::f32},
    {"F64", ElementType::f64}, {"I32", ElementType::i32},   {"I64", ElementType::i64}};

ElementType safetensors_type(std::string_view name) {
  for (const auto& [n, t] : kSafetensorsTypes)
    if (n == name) return t;
  return ElementType::other;
}

ElementType numpy_type(std::string_view descr) {
  static constexpr std::pair<std::string_view, ElementType> kTypes[] = {{"<f2", ElementType::f16},
                                                                        {"<f4", ElementType::f32},
                                                                        {"<f8", ElementType::f64},
                                                                        {"<i4", ElementType::i32},
                                                                        {"<i8", ElementType::i64}};
  for (const auto& [n, t] : kTypes)
    if (n == descr) return t;
  return ElementType::other;
}

// The bytes of one element of a numpy type string ('<f4': 4, '|u1': 1, '<U8': 32).
std::uint64_t numpy_item_size(std::string_view descr) {
  std::uint64_t n = 0;
  for (char c : descr.substr(std::min<std::size_t>(2, descr.size())))
    if (c >= '0' && c <= '9' && n < 1'000'000) n = n * 10 + static_cast<std::uint64_t>(c - '0');
  return descr.size() > 1 && descr[1] == 'U' ? 4 * n : n;
}

// Little-endian reads inside a byte span; FormatError naming the file past its end.
class Bytes {
 public:
  Bytes(std::span<const std::byte> bytes, const std::filesystem::path& path) : bytes_(bytes), path_(path) {}
  std::span<const std::byte> at(std::uint64_t offset, std::uint64_t size, std::string_view what) const {
    if (offset > bytes_.size() || size > bytes_.size() - offset)
      throw FormatError(fmt::format("{}: {} at byte {} (+{}) lies past the end of the file ({} bytes)", path_.string(),
                                    what, offset, size, bytes_.size()));
    return bytes_.subspan(offset, size);
  }
  template <class T>
  T get(std::uint64_t offset, std::string_view what) const {
    T v{};
    std::memcpy(&v, at(offset, sizeof(T), what).data(), sizeof(T));
    return v;
  }
  std::size_t size() const { return bytes_.size(); }

 private:
  std::span<const std::byte> bytes_;
  const std::filesystem::path& path_;
};

// The end-of-central-directory record: the central directory's offset and entry count (zip64 where
// the record defers to it).
struct Directory {
  std::uint64_t offset = 0, entries = 0;
};

Directory find_directory(const Bytes& b, const std::filesystem::path& path) {
  constexpr std::uint32_t kEnd = 0x06054b50, kEnd64 = 0x06064b50, kLocator64 = 0x07064b50;
  if (b.size() < 22)
    throw FormatError(fmt::format("{}: expected a zip archive (.npz), found {} bytes", path.string(), b.size()));
  const std::size_t lowest = b.size() > 22 + 65535 ? b.size() - 22 - 65535 : 0;
  for (std::size_t at = b.size() - 22;; --at) {
    if (b.get<std::uint32_t>(at, "end of central directory") == kEnd) {
      Directory d{b.get<std::uint32_t>(at + 16, "central directory offset"),
                  b.get<std::uint16_t>(at + 10, "entry count")};
      if (at >= 20 && b.get<std::uint32_t>(at - 20, "zip64 locator") == kLocator64) {
        const auto end64 = b.get<std::uint64_t>(at - 20 + 8, "zip64 end record offset");
        if (b.get<std::uint32_t>(end64, "zip64 end record") != kEnd64)
          throw FormatError(fmt::format("{}: expected a zip64 end record at byte {}", path.string(), end64));
        d.entries = b.get<std::uint64_t>(end64 + 32, "zip64 entry count");
        d.offset = b.get<std::uint64_t>(end64 + 48, "zip64 central directory offset");
      }
      return d;
    }
    if (at == lowest) break;
  }
  throw FormatError(fmt::format("{}: expected a zip archive (.npz), found no end of central directory", path.string()));
}

// The dict of a .npy header: {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }.
struct NpyHeader {
  std::string descr;
  bool fortran = false;
  std::vector<std::int64_t> shape;
};

std::optional<NpyHeader> parse_npy_header(std::string_view h) {
  NpyHeader out;
  auto value_of = [&](std::string_view key) -> std::optional<std::string_view> {
    const std::size_t k = h.find(fmt::format("'{}'", key));
    if (k == std::string_view::npos) return std::nullopt;
    const std::size_t colon = h.find(':', k);
    if (colon == std::string_view::npos) return std::nullopt;
    std::size_t start = h.find_first_not_of(' ', colon + 1);
    if (start == std::string_view::npos) return std::nullopt;
    return h.substr(start);
  };
  const auto descr = value_of("descr");
  const auto fortran = value_of("fortran_order");
  const auto shape = value_of("shape");
  if (!descr || !fortran || !shape || descr->empty() || (*descr)[0] != '\'' || shape->empty() || (*shape)[0] != '(')
    return std::nullopt;
  const std::size_t close = descr->find('\'', 1);
  if (close == std::string_view::npos) return std::nullopt;
  out.descr = std::string(descr->substr(1, close - 1));
  out.fortran = fortran->starts_with("True");
  const std::size_t end = shape->find(')');
  if (end == std::string_view::npos) return std::nullopt;
  std::string_view dims = shape->substr(1, end - 1);
  while (!dims.empty()) {
    const std::size_t comma = dims.find(',');
    std::string_view part = dims.substr(0, comma);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    while (!part.empty() && (part.back() == ' ' || part.back() == 'L')) part.remove_suffix(1);
    if (!part.empty()) {
      std::int64_t n = 0;
      for (char c : part) {
        if (c < '0' || c > '9' || n > std::numeric_limits<std::int64_t>::max() / 16) return std::nullopt;
        n = n * 10 + (c - '0');
      }
      out.shape.push_back(n);
    }
    if (comma == std::string_view::npos) break;
    dims.remove_prefix(comma + 1);
  }
  return out;
}

std::vector<std::byte> inflate_member(std::span<const std::byte> in, std::uint64_t size, const std::string& where) {
  // Deflate expands at most 1032-fold: a larger size is a damaged directory, not memory to ask for.
  constexpr std::uint64_t kMaxRatio = 1032;
  if (size / kMaxRatio > in.size())
    throw FormatError(
        fmt::format("{}: declares {} bytes inflated from {} deflated bytes, more than deflate can expand "
                    "to",
                    where, size, in.size()));
  std::vector<std::byte> out;
  try {
    out.resize(size);
  } catch (const std::bad_alloc&) {
    throw EnvironmentError(fmt::format("{}: cannot allocate {:.1f} MiB to inflate it (out of host memory)", where,
                                       static_cast<double>(size) / (1 << 20)));
  }
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) throw EnvironmentError(fmt::format("{}: zlib failed to start", where));
  std::size_t in_at = 0, out_at = 0;
  int status = Z_OK;
  while (status == Z_OK) {
    constexpr std::size_t kStep = 1u << 30;  // z_stream counts in 32 bits
    z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data() + in_at));
    z.avail_in = static_cast<uInt>(std::min(kStep, in.size() - in_at));
    z.next_out = reinterpret_cast<Bytef*>(out.data() + out_at);
    z.avail_out = static_cast<uInt>(std::min<std::size_t>(kStep, out.size() - out_at));
    const uInt in_before = z.avail_in, out_before = z.avail_out;
    status = inflate(&z, Z_NO_FLUSH);
    in_at += in_before - z.avail_in;
    out_at += out_before - z.avail_out;
    if (status == Z_OK && in_before == z.avail_in && out_before == z.avail_out) status = Z_DATA_ERROR;
  }
  inflateEnd(&z);
  if (status != Z_STREAM_END || out_at != size)
    throw FormatError(fmt::format("{}: expected {} bytes of deflated data, found a damaged stream ({} bytes inflated)",
                                  where, size, out_at));
  return out;
}

}  // namespace

std::string_view safetensors_type_name(ElementType type) {
  for (const auto& [n, t] : kSafetensorsTypes)
    if (t == type) return n;
  return "";
}

std::string_view element_type_name(ElementType type) {
  switch (type) {
    case ElementType::f16: return "f16";
    case ElementType::bf16: return "bf16";
    case ElementType::f32: return "f32";
    case ElementType::f64: return "f64";
    case ElementType::i32: return "i32";
    case ElementType::i64: return "i64";
    case ElementType::other: return "other";
  }
  return "?";
}

std::size_t element_bytes(ElementType type) {
  switch (type) {
    case ElementType::f16:
    case ElementType::bf16: return 2;
    case ElementType::f32:
    case ElementType::i32: return 4;
    case ElementType::f64:
    case ElementType::i64: return 8;
    case ElementType::other: return 0;
  }
  return 0;
}

std::int64_t NamedArray::elements() const {
  std::int64_t n = 1;
  for (const std::int64_t d : shape) n *= d;
  return n;
}

bool ArrayFile::recognises(const std::filesystem::path& path) {
  const std::string ext = path.extension().string();
  if (ext == ".safetensors" || ext == ".npz") return true;  // read as one, to say what in it is wrong
  if (ext == ".pt") return false;  // PyTorch's zip of a pickle: named as such by the dump reader
  std::ifstream in(path, std::ios::binary);
  std::array<char, 9> head{};
  in.read(head.data(), head.size());
  if (in.gcount() < 4) return false;
  if (std::equal(kZipMagic.begin(), kZipMagic.end(), head.begin()) ||
      std::equal(kZipEmptyMagic.begin(), kZipEmptyMagic.end(), head.begin()))
    return true;
  return in.gcount() == 9 && head[8] == '{';  // safetensors: u64 header length, then its JSON
}

ArrayFile::ArrayFile(const std::filesystem::path& path) : path_(path) {
  std::ifstream in(path, std::ios::binary);
  std::array<char, 4> head{};
  in.read(head.data(), head.size());
  const bool zip = in.gcount() == 4 && (std::equal(kZipMagic.begin(), kZipMagic.end(), head.begin()) ||
                                        std::equal(kZipEmptyMagic.begin(), kZipEmptyMagic.end(), head.begin()));
  if (zip)
    read_npz();
  else if (path.extension() == ".npz")
    throw FormatError(fmt::format("{}: expected a zip archive (.npz, magic PK\\x03\\x04), found {} other bytes",
                                  path.string(), std::filesystem::file_size(path)));
  else
    read_safetensors();
}

ArrayFile::~ArrayFile() = default;

void ArrayFile::read_safetensors() {
  format_ = "safetensors";
  formats::SafetensorsFile st(path_);
  for (const formats::SafetensorsTensor& t : st.tensors())
    arrays_.push_back({t.name, safetensors_type(t.dtype_name), t.dtype_name, t.shape, t.bytes});
  file_ = st.release_mapping();
}

void ArrayFile::read_npz() {
  format_ = "npz";
  file_ = std::make_unique<model::MappedFile>(path_);
  const Bytes b(file_->bytes(), path_);
  const std::string file = path_.string();
  if (b.size() >= 4 && b.get<std::uint32_t>(0, "signature") == 0x06054b50) return;  // an empty archive
  const Directory dir = find_directory(b, path_);
  std::uint64_t at = dir.offset;
  // Each member's bytes (local header to end of data), by start: entries that share data (a zip
  // bomb's way to inflate one stream many times) are refused before anything is inflated.
  std::map<std::uint64_t, std::pair<std::uint64_t, std::string>> extents;
  const auto claim = [&](std::uint64_t begin, std::uint64_t end, const std::string& where, const std::string& member) {
    auto next = extents.lower_bound(begin);
    const auto other = next != extents.end() && next->first < end                         ? next
                       : next != extents.begin() && std::prev(next)->second.first > begin ? std::prev(next)
                                                                                          : extents.end();
    if (other != extents.end())
      throw FormatError(fmt::format("{}: its bytes [{}, {}) overlap those of member '{}': expected members apart",
                                    where, begin, end, other->second.second));
    extents.emplace(begin, std::pair{end, member});
  };
  for (std::uint64_t e = 0; e < dir.entries; ++e) {
    if (b.get<std::uint32_t>(at, "central directory entry") != 0x02014b50)
      throw FormatError(fmt::format("{}: expected central directory entry {} at byte {}", file, e, at));
    const auto method = b.get<std::uint16_t>(at + 10, "compression method");
    const auto crc = b.get<std::uint32_t>(at + 16, "CRC-32");
    std::uint64_t packed = b.get<std::uint32_t>(at + 20, "compressed size");
    std::uint64_t size = b.get<std::uint32_t>(at + 24, "size");
    const auto name_length = b.get<std::uint16_t>(at + 28, "name length");
    const auto extra_length = b.get<std::uint16_t>(at + 30, "extra length");
    const auto comment_length = b.get<std::uint16_t>(at + 32, "comment length");
    std::uint64_t local = b.get<std::uint32_t>(at + 42, "local header offset");
    const auto name_bytes = b.at(at + 46, name_length, "member name");
    std::string member(reinterpret_cast<const char*>(name_bytes.data()), name_bytes.size());
    // zip64: the fields saturated at 0xffffffff are in the extra field 0x0001, in this order.
    for (std::uint64_t x = at + 46 + name_length; x + 4 <= at + 46 + name_length + extra_length;) {
      const auto id = b.get<std::uint16_t>(x, "extra field");
      const auto length = b.get<std::uint16_t>(x + 2, "extra field length");
      if (id == 0x0001) {
        std::uint64_t f = x + 4;
        for (std::uint64_t* field : {&size, &packed, &local})
          if (*field == 0xffffffffu) *field = b.get<std::uint64_t>(f, "zip64 field"), f += 8;
      }
      x += 4 + length;
    }
    at += 46 + name_length + extra_length + comment_length;
    const std::string shown = model::printable(member);
    const std::string where = fmt::format("{}: member '{}'", file, shown);
    if (!member.ends_with(".npy"))
      throw FormatError(fmt::format("{}: expected arrays saved by numpy (NAME.npy), found another member", where));
    if (b.get<std::uint32_t>(local, "local header") != 0x04034b50)
      throw FormatError(fmt::format("{}: expected its local header at byte {}", where, local));
    const std::uint64_t data_at = local + 30 + b.get<std::uint16_t>(local + 26, "local name length") +
                                  b.get<std::uint16_t>(local + 28, "local extra length");
    const std::span<const std::byte> data = b.at(data_at, method == 0 ? size : packed, shown);
    claim(local, data_at + data.size(), where, shown);
    std::span<const std::byte> npy;
    if (method == 0) {
      npy = data;
    } else if (method == 8) {
      inflated_.push_back(inflate_member(data, size, where));
      npy = inflated_.back();
    } else {
      throw FormatError(fmt::format(
          "{}: expected stored or deflated data (np.savez, np.savez_compressed), found method {}", where, method));
    }
    if (const auto found = static_cast<std::uint32_t>(
            crc32_z(0, reinterpret_cast<const Bytef*>(npy.data()), static_cast<z_size_t>(npy.size())));
        found != crc)
      throw FormatError(
          fmt::format("{}: expected data of CRC-32 {:08x} (its directory entry), found {:08x}: the "
                      "file is damaged",
                      where, crc, found));
    const Bytes n(npy, path_);
    constexpr char kMagic[] = "\x93NUMPY";
    if (npy.size() < 10 || std::memcmp(npy.data(), kMagic, 6) != 0)
      throw FormatError(fmt::format("{}: expected a .npy array (magic \\x93NUMPY)", where));
    const auto major = static_cast<int>(npy[6]);
    const std::uint64_t header_length =
        major == 1 ? n.get<std::uint16_t>(8, "npy header length") : n.get<std::uint32_t>(8, "npy header length");
    const std::uint64_t header_at = major == 1 ? 10 : 12;
    const auto header_bytes = n.at(header_at, header_length, "npy header");
    const std::string_view header(reinterpret_cast<const char*>(header_bytes.data()), header_bytes.size());
    const std::optional<NpyHeader> h = parse_npy_header(header);
    if (!h) throw FormatError(fmt::format("{}: expected a .npy header dict, found '{}'", where, header.substr(0, 120)));
    if (h->fortran)
      throw FormatError(
          fmt::format("{}: expected a C-ordered array, found fortran_order True (np.ascontiguousarray "
                      "before saving)",
                      where));
    NamedArray a{member.substr(0, member.size() - 4), numpy_type(h->descr), h->descr, h->shape, {}};
    std::uint64_t bytes = numpy_item_size(h->descr);
    for (const std::int64_t d : a.shape)
      if (__builtin_mul_overflow(bytes, static_cast<std::uint64_t>(d), &bytes))
        throw FormatError(fmt::format("{}: shape ({}) is larger than any file", where, fmt::join(a.shape, ", ")));
    a.bytes = n.at(header_at + header_length, bytes, fmt::format("member '{}' data", shown));
    arrays_.push_back(std::move(a));
  }
}

void ArrayFile::release(const NamedArray& array, std::int64_t first, std::int64_t count) const {
  const std::span<const std::byte> mapped = file_->bytes();
  const std::size_t size = element_bytes(array.type);
  const std::byte* begin = array.bytes.data() + static_cast<std::size_t>(first) * size;
  const std::byte* end = begin + static_cast<std::size_t>(count) * size;
  if (begin < mapped.data() || end > mapped.data() + mapped.size()) return;  // inflated: not in the mapping
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const std::uintptr_t from = (reinterpret_cast<std::uintptr_t>(begin) + page - 1) / page * page;
  const std::uintptr_t to = reinterpret_cast<std::uintptr_t>(end) / page * page;
  if (to > from) ::madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED);
}

const NamedArray* ArrayFile::find(std::string_view name) const {
  const auto it = std::find_if(arrays_.begin(), arrays_.end(), [&](const NamedArray& a) { return a.name == name; });
  return it == arrays_.end() ? nullptr : &*it;
}

}  // namespace tapdiff::dumps
