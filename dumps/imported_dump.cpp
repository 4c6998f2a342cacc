#include "dumps/imported_dump.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <span>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "model/dtype.h"
#include "model/errors.h"
#include "model/printable.h"

namespace tapdiff::dumps {
namespace {

bool is_float(ElementType t) {
  return t == ElementType::f16 || t == ElementType::bf16 || t == ElementType::f32 || t == ElementType::f64;
}
bool is_integer(ElementType t) { return t == ElementType::i32 || t == ElementType::i64; }

// Elements [at, at + n) of a float array as doubles, one loop per element type.
template <class T, class F>
void widen_as(const std::byte* p, std::int64_t n, double* out, F&& to_double) {
  for (std::int64_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, p + i * static_cast<std::int64_t>(sizeof(T)), sizeof(T));
    out[i] = to_double(v);
  }
}

void widen(const NamedArray& a, std::int64_t at, std::int64_t n, double* out) {
  const std::byte* p = a.bytes.data() + static_cast<std::size_t>(at) * element_bytes(a.type);
  switch (a.type) {
    case ElementType::f16:
      return widen_as<std::uint16_t>(p, n, out, [](std::uint16_t h) { return model::f16_to_f32(h); });
    case ElementType::bf16:
      return widen_as<std::uint16_t>(p, n, out, [](std::uint16_t h) { return model::bf16_to_f32(h); });
    case ElementType::f32: return widen_as<float>(p, n, out, [](float f) { return static_cast<double>(f); });
    case ElementType::f64: return widen_as<double>(p, n, out, [](double d) { return d; });
    case ElementType::i32:  // expert ids (add_array)
      return widen_as<std::int32_t>(p, n, out, [](std::int32_t i) { return static_cast<double>(i); });
    case ElementType::i64:
      return widen_as<std::int64_t>(p, n, out, [](std::int64_t i) { return static_cast<double>(i); });
    case ElementType::other: break;  // taps are numbers (add_array)
  }
}

// "step_10.npz" after "step_9.npz": names compared with their digit runs as numbers.
bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      std::size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      const std::string_view da = std::string_view(a).substr(i, ie - i), db = std::string_view(b).substr(j, je - j);
      const auto strip = [](std::string_view d) { return d.substr(std::min(d.find_first_not_of('0'), d.size())); };
      const std::string_view sa = strip(da), sb = strip(db);
      if (sa.size() != sb.size()) return sa.size() < sb.size();
      if (sa != sb) return sa < sb;
      i = ie, j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i, ++j;
    }
  }
  if (a.size() - i != b.size() - j) return a.size() - i < b.size() - j;
  return a < b;  // equal but for leading zeros ("010", "10"): by their text, so the order is one
}

// A folder whose step files are one numbered series (the same name but for its last run of digits:
// step_0.npz, step_1.npz, ...) must hold every number between its first and last: a step missing
// would leave its rows out of the comparison while the cache of the next ones held them.
void check_numbering(const std::filesystem::path& folder, const std::vector<std::filesystem::path>& files) {
  struct Numbered {
    std::string prefix, suffix;
    std::uint64_t number = 0;
  };
  std::vector<Numbered> series;
  for (const auto& file : files) {
    const std::string name = file.filename().string();
    const std::size_t end = name.find_last_of("0123456789");
    if (end == std::string::npos) return;
    std::size_t begin = end;
    while (begin > 0 && std::isdigit(static_cast<unsigned char>(name[begin - 1]))) --begin;
    if (end - begin >= 18) return;  // not a step count
    series.push_back({name.substr(0, begin), name.substr(end + 1), std::stoull(name.substr(begin, end + 1 - begin))});
    if (series.front().prefix != series.back().prefix || series.front().suffix != series.back().suffix) return;
  }
  for (std::size_t i = 1; i < series.size(); ++i) {
    const std::uint64_t before = series[i - 1].number, number = series[i].number;
    const std::string shown = model::printable(files[i].filename().string());
    if (number == before)
      throw FormatError(fmt::format("{}: expected one step file per number, found two numbered {} ({} and {})",
                                    folder.string(), number, model::printable(files[i - 1].filename().string()),
                                    shown));
    if (number != before + 1)
      throw FormatError(fmt::format(
          "{}: expected step files numbered without a gap, found {} after {}: step{} {}{} missing (its rows "
          "cannot be compared, and the steps after it read a cache that held them)",
          folder.string(), shown, model::printable(files[i - 1].filename().string()), number - before > 2 ? "s" : "",
          before + 1, number - before > 2 ? fmt::format(" to {} are", number - 1) : " is"));
  }
}

// A folder's step files (.safetensors or .npz regular files), in natural order of their names.
// An entry named like one that is none (a folder, a FIFO, a broken or looping link, another case
// of the extension) is refused by name: which rows that step held is not for tapdiff to guess.
std::vector<std::filesystem::path> step_files(const std::filesystem::path& path) {
  std::error_code error;
  if (!std::filesystem::is_directory(path, error)) return {path};
  std::vector<std::filesystem::path> files;
  std::vector<std::string> skipped;
  for (std::filesystem::directory_iterator it(path, error), end; !error && it != end; it.increment(error)) {
    const std::string name = model::printable(it->path().filename().string());
    const std::string ext = it->path().extension().string();
    std::string lower = ext;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    if (lower != ".safetensors" && lower != ".npz") continue;
    std::error_code kind;
    const bool regular = it->is_regular_file(kind) && !kind;
    if (regular && ext == lower)
      files.push_back(it->path());
    else
      skipped.push_back(kind       ? fmt::format("{} ({})", name, kind.message())
                        : !regular ? fmt::format("{} (not a regular file)", name)
                                   : fmt::format("{} (the extension spelt {}, not {})", name, ext, lower));
  }
  if (error)
    throw FormatError(fmt::format("{}: expected a readable dump folder, found {}", path.string(), error.message()));
  std::sort(skipped.begin(), skipped.end());
  if (!skipped.empty())
    throw FormatError(
        fmt::format("{}: expected every entry named like a step to be a .safetensors or .npz file, found {}",
                    path.string(), fmt::join(skipped, ", ")));
  if (files.empty())
    throw FormatError(fmt::format(
        "{}: expected a dump folder of .safetensors or .npz files (one per forward pass), found none", path.string()));
  std::sort(files.begin(), files.end(),
            [](const auto& a, const auto& b) { return natural_less(a.filename().string(), b.filename().string()); });
  check_numbering(path, files);
  return files;
}

// The first array of `names` the file holds, or nullptr.
const NamedArray* first_of(const ArrayFile& file, const std::vector<std::string>& names) {
  for (const std::string& n : names)
    if (const NamedArray* a = file.find(n)) return a;
  return nullptr;
}

// The q/k ops, whose channels within each head follow the RoPE layout.
bool follows_rope_layout(model::Op op) {
  using model::Op;
  return op == Op::q_proj || op == Op::k_proj || op == Op::q_norm || op == Op::k_norm || op == Op::rope_q ||
         op == Op::rope_k;
}

// The heads an array of one per-head op holds first, [heads, rows, head_dim] after leading ones
// (as an attention computes them: MLX's and PyTorch's [batch, heads, rows, head_dim]); 0 where it
// is not so shaped.
int heads_first(const NamedArray& array, const Resolved& r, std::int64_t rows, const model::ModelConfig& config) {
  if (r.combine != Combine::one) return 0;
  const model::HeadLayout layout = model::head_layout(r.ids.front(), config);
  std::vector<std::int64_t> shape = array.shape;
  while (shape.size() > 3 && shape.front() == 1) shape.erase(shape.begin());
  const bool held = layout.has_heads() && shape.size() == 3 && shape[0] == layout.heads && shape[1] == rows &&
                    shape[2] == layout.head_dim;
  return held ? layout.heads : 0;
}

}  // namespace

bool is_imported_dump(const std::filesystem::path& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    std::filesystem::directory_iterator it(path, error), end;
    for (; !error && it != end; it.increment(error)) {
      const std::string ext = it->path().extension().string();
      std::error_code kind;
      if (it->is_regular_file(kind) && (ext == ".safetensors" || ext == ".npz")) return true;
    }
    return false;
  }
  return std::filesystem::is_regular_file(path, error) && ArrayFile::recognises(path);
}

ImportedDump::ImportedDump(const std::filesystem::path& path, const ImportOptions& options,
                           const model::ModelConfig& config)
    : path_(path), options_(options), config_(config), graph_(config) {
  require_map_fits(options.map, config);
  const std::vector<std::filesystem::path> paths = step_files(path);
  for (const auto& p : paths) files_.push_back(std::make_unique<ArrayFile>(p));
  for (std::size_t s = 0; s < files_.size(); ++s) read_step(*files_[s], static_cast<int>(s));
  for (std::size_t t = 0; t < tensors_.size(); ++t) {
    std::int64_t covered = 0;
    for (const Segment& s : segments_[t]) covered += s.rows;
    if (covered != rows())
      throw FormatError(fmt::format("{}: {} holds {} of the dump's {} rows: a tap must be in every step file",
                                    path.string(), model::to_string(tensors_[t]), covered, rows()));
  }
  std::vector<std::size_t> order(tensors_.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const model::TensorId &x = tensors_[a], &y = tensors_[b];
    return x.layer != y.layer ? x.layer < y.layer : static_cast<int>(x.op) < static_cast<int>(y.op);
  });
  std::vector<model::TensorId> tensors;
  std::vector<std::vector<Segment>> segments;
  for (const std::size_t i : order) tensors.push_back(tensors_[i]), segments.push_back(std::move(segments_[i]));
  tensors_ = std::move(tensors), segments_ = std::move(segments);
  for (const model::TensorId& id : tensors_)
    if (model::is_choice(id.op)) check_choice_order(id);
  if (positions_assumed_)
    notes_.push_back(fmt::format("{}: no positions array ({}): rows taken as positions 0, 1, ... in order",
                                 path.string(), fmt::join(options_.map.positions, ", ")));
  if (decode_assumed_)
    notes_.push_back(fmt::format("{}: no decode array ({}) in {}: those rows taken as prefill rows", path.string(),
                                 fmt::join(options_.map.decode, ", "), files_.size() > 1 ? "some step files" : "it"));
  note_mixed_storage();
  if (!unmapped_.empty())
    notes_.push_back(fmt::format(
        "{}: {} array name{} the map '{}' does not know, not compared: {}", path.string(), unmapped_.size(),
        unmapped_.size() == 1 ? "" : "s", options_.map.name,
        fmt::join(unmapped_.begin(), unmapped_.begin() + std::min<std::ptrdiff_t>(8, std::ssize(unmapped_)), ", ")));
}

ImportedDump::~ImportedDump() = default;

std::int64_t ImportedDump::step_rows(const ArrayFile& file, int step) {
  const std::string where = file.path().string();
  const NamedArray* tokens = first_of(file, options_.map.tokens);
  if (tokens == nullptr)
    throw FormatError(fmt::format("{}: expected the token ids of its rows, an integer array named {}, found none",
                                  where, fmt::join(options_.map.tokens, " or ")));
  const auto integers = [&](const NamedArray& a) {
    if (a.type != ElementType::i32 && a.type != ElementType::i64)
      throw FormatError(fmt::format("{}: '{}': expected integers (int32 or int64), found {}", where,
                                    model::printable(a.name), a.type_name));
    std::vector<std::int64_t> v(static_cast<std::size_t>(a.elements()));
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (a.type == ElementType::i64) {
        std::memcpy(&v[i], a.bytes.data() + 8 * i, 8);
      } else {
        std::int32_t x = 0;
        std::memcpy(&x, a.bytes.data() + 4 * i, 4);
        v[i] = x;
      }
    }
    return v;
  };
  // Where the file holds more than one of a row array's names, they must agree: which one the
  // engine meant is not for tapdiff to guess.
  const auto agreed = [&](const std::vector<std::string>& names, const NamedArray& chosen, std::string_view what) {
    const std::vector<std::int64_t> values = integers(chosen);
    for (const std::string& name : names)
      if (const NamedArray* other = file.find(name); other != nullptr && other != &chosen && integers(*other) != values)
        throw FormatError(
            fmt::format("{}: '{}' and '{}' both give the rows' {}: expected equal arrays, found "
                        "different ones (keep one)",
                        where, model::printable(chosen.name), model::printable(other->name), what));
    return values;
  };
  const std::vector<std::int64_t> ids = agreed(options_.map.tokens, *tokens, "token ids");
  const auto n = static_cast<std::int64_t>(ids.size());
  std::vector<std::int64_t> positions;
  if (const NamedArray* p = first_of(file, options_.map.positions)) {
    positions = agreed(options_.map.positions, *p, "positions");
    if (std::ssize(positions) != n)
      throw FormatError(fmt::format("{}: '{}' has {} entries for {} token ids", where, model::printable(p->name),
                                    positions.size(), n));
  } else {
    positions_assumed_ = true;
    const std::int64_t next = positions_.empty() ? 0 : std::int64_t{positions_.back()} + 1;
    for (std::int64_t i = 0; i < n; ++i) positions.push_back(next + i);
  }
  std::vector<std::int64_t> decode(static_cast<std::size_t>(n), 0);
  const NamedArray* d = first_of(file, options_.map.decode);
  decode_assumed_ = decode_assumed_ || d == nullptr;
  if (d != nullptr) {
    decode = agreed(options_.map.decode, *d, "decode flags");
    if (std::ssize(decode) != n)
      throw FormatError(
          fmt::format("{}: '{}' has {} entries for {} token ids", where, model::printable(d->name), decode.size(), n));
    if (const auto flag = std::find_if(decode.begin(), decode.end(), [](std::int64_t f) { return f != 0 && f != 1; });
        flag != decode.end())
      throw FormatError(fmt::format("{}: '{}' holds {} at row {}: expected 0 (a prefill row) or 1 (a decode row)",
                                    where, model::printable(d->name), *flag, flag - decode.begin()));
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const auto at = static_cast<std::size_t>(i);
    if (ids[at] < 0 || ids[at] > INT32_MAX || positions[at] < 0 || positions[at] > INT32_MAX)
      throw FormatError(fmt::format("{}: row {}: token {} at position {} is not a 32-bit id and position", where, i,
                                    ids[at], positions[at]));
    if (ids[at] >= config_.vocab)
      throw FormatError(fmt::format("{}: '{}' row {}: expected token ids in [0, {}) (the model's vocabulary), found {}",
                                    where, model::printable(tokens->name), i, config_.vocab, ids[at]));
    // A folder: a chunk per file. One file: one chunk for the prefill, one per decode row.
    const std::int32_t chunk = files_.size() > 1 ? step
                               : chunks_.empty() ? 0
                               : decode[at] != 0 ? chunks_.back() + 1
                                                 : chunks_.back();
    tokens_.push_back(static_cast<std::int32_t>(ids[at]));
    positions_.push_back(static_cast<std::int32_t>(positions[at]));
    chunks_.push_back(chunk);
    decode_.push_back(decode[at] != 0 ? 1 : 0);
  }
  return n;
}

void ImportedDump::read_step(const ArrayFile& file, int step) {
  const std::int64_t first_row = rows();
  const std::int64_t n = step_rows(file, step);
  std::set<std::string> provenance;
  for (const auto* names : {&options_.map.tokens, &options_.map.positions, &options_.map.decode})
    provenance.insert(names->begin(), names->end());
  std::set<std::string> halves, summed;  // second halves of sums seen, and those a sum used
  for (const NamedArray& array : file.arrays()) {
    if (provenance.contains(array.name)) continue;
    if (is_sum_partner(options_.map, array.name, config_))
      halves.insert(array.name);
    else if (std::string partner = add_array(file, array, first_row, n); !partner.empty())
      summed.insert(std::move(partner));
  }
  for (const std::string& half : halves)  // a second half without its first is not compared: say so
    if (!summed.contains(half)) note_unmapped(half);
}

std::int64_t ImportedDump::row_width(const ArrayFile& file, const NamedArray& array, std::int64_t rows,
                                     std::int64_t width, std::string_view hint) const {
  // [rows, width], allowing leading ones and the width split into trailing dimensions (heads).
  std::int64_t leading = 1;
  for (std::size_t k = 0; k <= array.shape.size(); ++k) {
    std::int64_t trailing = 1;
    for (std::size_t d = k; d < array.shape.size(); ++d) trailing *= array.shape[d];
    if (leading == rows && trailing == width) return width;
    if (k < array.shape.size()) leading *= array.shape[k];
  }
  throw FormatError(fmt::format("{}: '{}' has shape [{}]: expected {} rows (the step's token ids) of width {}{}",
                                file.path().string(), model::printable(array.name), fmt::join(array.shape, ", "), rows,
                                width, hint));
}

void ImportedDump::note_unmapped(const std::string& name) {
  if (unmapped_names_.insert(name).second) unmapped_.push_back(model::printable(name));
}

std::string ImportedDump::add_array(const ArrayFile& file, const NamedArray& array, std::int64_t first_row,
                                    std::int64_t rows) {
  const std::optional<Resolved> r = resolve(options_.map, array.name, config_);
  if (!r) {
    note_unmapped(array.name);
    return {};
  }
  const std::string where = fmt::format("{}: '{}'", file.path().string(), model::printable(array.name));
  const bool ids_only =
      std::all_of(r->ids.begin(), r->ids.end(), [](const model::TensorId& id) { return model::is_choice(id.op); });
  if (!is_float(array.type) && !(ids_only && is_integer(array.type)))
    throw FormatError(fmt::format("{}: expected floats (f16, bf16, f32, f64){}, found {}", where,
                                  ids_only ? " or integers (i32, i64)" : "", array.type_name));
  std::int64_t width = 0;
  for (const model::TensorId& id : r->ids) {
    const bool in_graph = std::any_of(graph_.steps().begin(), graph_.steps().end(),
                                      [&](const model::Step& s) { return s.output() == id; });
    if (!in_graph)
      throw FormatError(fmt::format("{}: maps to {} (map '{}'), which this model does not compute", where,
                                    model::to_string(id), options_.map.name));
    width += model::op_width(config_, id);
  }
  const int held = heads_first(array, *r, rows, config_);
  const int heads = options_.map.heads_first ? held : 0;
  if (heads == 0)
    row_width(
        file, array, rows, width,
        held > 0 ? " (held heads first, [heads, rows, head_dim]? a TOML map with heads_first = true reads it)" : "");
  const NamedArray* partner = nullptr;
  if (r->combine == Combine::sum) {
    partner = file.find(r->partner);
    if (partner == nullptr || partner->shape != array.shape || partner->type != array.type)
      throw FormatError(fmt::format("{}: its sum's other half '{}' is {} (expected one of shape [{}] and type {})",
                                    where, r->partner, partner ? "of another shape or type" : "absent",
                                    fmt::join(array.shape, ", "), array.type_name));
  }
  const NamedArray* order = nullptr;
  if (!r->order.empty()) {
    order = file.find(r->order);
    if (order == nullptr || order->shape != array.shape || !(is_float(order->type) || is_integer(order->type)))
      throw FormatError(
          fmt::format("{}: it is read in the order of the expert ids '{}', which is {} (expected numbers "
                      "of shape [{}])",
                      where, r->order, order ? "of another shape or type" : "absent", fmt::join(array.shape, ", ")));
  }
  std::int64_t column = 0;
  for (const model::TensorId& id : r->ids) {
    auto at = std::find(tensors_.begin(), tensors_.end(), id);
    if (at == tensors_.end()) {
      tensors_.push_back(id);
      segments_.emplace_back();
      at = tensors_.end() - 1;
    }
    std::vector<Segment>& segs = segments_[static_cast<std::size_t>(at - tensors_.begin())];
    if (!segs.empty() && segs.back().first_row + segs.back().rows > first_row)
      throw FormatError(fmt::format("{}: a second array for {} in the same step ('{}' is the other)", where,
                                    model::to_string(id), model::printable(segs.back().array->name)));
    segs.push_back({&file, &array, partner, first_row, rows, width, column, heads, order});
    column += model::op_width(config_, id);
  }
  return partner != nullptr ? partner->name : std::string();
}

// Each tap is held to the built-in tolerances of the type it is stored in (storage_dtype(id)): say
// which taps are stored how, since a tolerance file's entries hold them alike.
void ImportedDump::note_mixed_storage() {
  std::map<ElementType, std::vector<std::string>> by_type;
  for (std::size_t t = 0; t < tensors_.size(); ++t)
    for (const Segment& s : segments_[t]) {
      if (is_integer(s.array->type)) continue;  // expert ids compare exactly, whatever they are stored in
      std::vector<std::string>& taps = by_type[s.array->type];
      if (taps.empty() || taps.back() != model::to_string(tensors_[t])) taps.push_back(model::to_string(tensors_[t]));
    }
  if (by_type.size() < 2) return;
  std::vector<std::string> parts;
  for (const auto& [type, taps] : by_type)
    parts.push_back(
        fmt::format("{} {} ({}{})", taps.size(), element_type_name(type),
                    fmt::join(taps.begin(), taps.begin() + std::min<std::ptrdiff_t>(4, std::ssize(taps)), ", "),
                    taps.size() > 4 ? ", ..." : ""));
  notes_.push_back(
      fmt::format("{}: taps stored in mixed types, {}: each op is held to the built-in tolerances of "
                  "the type it is stored in (a tap stored in more than one, of the coarsest)",
                  path_.string(), fmt::join(parts, "; ")));
}

std::string ImportedDump::coarsest_type(std::span<const std::vector<Segment>> taps) {
  std::size_t narrowest = 0;
  bool bf16 = false;
  for (const std::vector<Segment>& segs : taps)
    for (const Segment& s : segs) {
      const std::size_t b = is_integer(s.array->type) ? 8 : element_bytes(s.array->type);  // ids: exact
      narrowest = narrowest == 0 ? b : std::min(narrowest, b);
      bf16 = bf16 || s.array->type == ElementType::bf16;
    }
  if (bf16) return "bf16";  // coarser than f16 where both are held
  return narrowest == 2 ? "f16" : narrowest == 8 ? "f64" : "f32";
}

std::string ImportedDump::storage_dtype() const { return coarsest_type(segments_); }

std::string ImportedDump::storage_dtype(const model::TensorId& id) const {
  const auto at = std::find(tensors_.begin(), tensors_.end(), id);
  if (at == tensors_.end()) return storage_dtype();
  return coarsest_type(std::span(segments_).subspan(static_cast<std::size_t>(at - tensors_.begin()), 1));
}

// moe_ids and idx_ids compare exactly and by place: an engine's top-k in its own order (by weight,
// say) would read as other experts chosen. Each row must be ascending, an idx_ids row before the
// -1s that end it where it keeps fewer positions (docs/import.md).
void ImportedDump::check_choice_order(const model::TensorId& id) const {
  const model::HostTensor ids = read(id, 0, rows()).to(model::Scalar::f64);
  const std::span<const double> values = ids.f64();
  const auto k = static_cast<std::size_t>(ids.cols());
  const bool experts = id.op == model::Op::moe_ids;
  for (std::size_t r = 0; r < static_cast<std::size_t>(ids.rows()); ++r) {
    const std::span<const double> row = values.subspan(r * k, k);
    const auto end = experts ? row.end() : std::find(row.begin(), row.end(), -1.0);
    const bool padded = std::all_of(end, row.end(), [](double v) { return v == -1.0; });
    if (padded && std::adjacent_find(row.begin(), end, std::greater_equal<>()) == end) continue;
    throw FormatError(fmt::format(
        "{}: {} at row {} (position {}) holds {} [{}]: expected {} (sort the engine's top-k by {} before saving it{})",
        path_.string(), model::to_string(id), r, positions_[r], experts ? "experts" : "positions", fmt::join(row, ", "),
        experts ? "ids ascending" : "positions ascending, then -1 where fewer are kept",
        experts ? "expert id" : "position", experts ? ", and its moe_weights with it" : ""));
  }
}

std::string ImportedDump::format() const {
  if (files_.size() == 1 && !std::filesystem::is_directory(path_)) return std::string(files_.front()->format());
  return fmt::format("folder of {} {} files", files_.size(), files_.front()->format());
}

model::HostTensor ImportedDump::read(const model::TensorId& id, std::int64_t first_row, std::int64_t count) const {
  const auto at = std::find(tensors_.begin(), tensors_.end(), id);
  if (at == tensors_.end())
    throw UsageError(fmt::format("{}: {} was not tapped in this dump", path_.string(), model::to_string(id)));
  const std::vector<Segment>& segs = segments_[static_cast<std::size_t>(at - tensors_.begin())];
  const std::int64_t first = std::clamp<std::int64_t>(first_row, 0, rows());
  const std::int64_t n = std::clamp<std::int64_t>(count, 0, rows() - first);
  const std::int64_t width = model::op_width(config_, id);
  const bool wide =
      std::all_of(segs.begin(), segs.end(), [](const Segment& s) { return s.array->type == ElementType::f64; });
  model::HostTensor out(wide ? model::Scalar::f64 : model::Scalar::f32, n, width);
  // Where each of the model's channels is in the dump's row: the dump's q/k channel order may be
  // the other RoPE layout (a Hugging Face dump of a GGUF model).
  std::vector<std::int64_t> source(static_cast<std::size_t>(width));
  for (std::int64_t c = 0; c < width; ++c) source[static_cast<std::size_t>(c)] = c;
  const model::RopeStyle model_style = config_.rope_style;
  const std::optional<model::RopeStyle> layout = values_layout(options_.map, config_);
  const bool permuted = layout && *layout != model_style && follows_rope_layout(id.op);
  if (permuted) {
    const int head = model::head_dim(config_, id.layer), pairs = model::rotary_dim(config_, id.layer) / 2;
    for (std::int64_t h = 0; h < width / head; ++h)
      for (int i = 0; i < pairs; ++i) {
        const model::RopePair m = model::rope_pair(model_style, i, pairs);
        const model::RopePair d = model::rope_pair(*layout, i, pairs);
        source[static_cast<std::size_t>(h * head + m.a)] = h * head + d.a;
        source[static_cast<std::size_t>(h * head + m.b)] = h * head + d.b;
      }
  }
  std::vector<double> row(static_cast<std::size_t>(width)), half(static_cast<std::size_t>(width));
  std::vector<double> ids(static_cast<std::size_t>(width));
  std::vector<std::size_t> sorted(static_cast<std::size_t>(width));
  for (const Segment& s : segs) {
    const std::int64_t lo = std::max(first, s.first_row), hi = std::min(first + n, s.first_row + s.rows);
    for (std::int64_t r = lo; r < hi; ++r) {
      const std::int64_t base = (r - s.first_row) * s.width + s.column;
      const auto at_row = static_cast<std::size_t>((r - first) * width);
      if (s.heads == 0 && !wide && !permuted && s.partner == nullptr && s.order == nullptr &&
          s.array->type == ElementType::f32) {  // as stored
        std::memcpy(out.f32().data() + at_row, s.array->bytes.data() + static_cast<std::size_t>(base) * sizeof(float),
                    static_cast<std::size_t>(width) * sizeof(float));
        continue;
      }
      if (s.heads > 0) {  // [heads, rows, head_dim]: the row's heads lie s.rows rows apart
        const std::int64_t head = width / s.heads;
        for (std::int64_t h = 0; h < s.heads; ++h)
          widen(*s.array, (h * s.rows + r - s.first_row) * head, head, row.data() + h * head);
      } else {
        widen(*s.array, base, width, row.data());
      }
      if (s.partner) {
        widen(*s.partner, base, width, half.data());
        for (std::size_t c = 0; c < row.size(); ++c) row[c] += half[c];
      }
      if (s.order) {  // the row in the order that sorts its expert ids ascending
        widen(*s.order, base, width, ids.data());
        for (std::size_t c = 0; c < sorted.size(); ++c) sorted[c] = c;
        std::stable_sort(sorted.begin(), sorted.end(), [&](std::size_t x, std::size_t y) { return ids[x] < ids[y]; });
        for (std::size_t c = 0; c < row.size(); ++c) half[c] = row[sorted[c]];
        row.swap(half);
      }
      for (std::size_t c = 0; c < row.size(); ++c) {
        const double v = permuted ? row[static_cast<std::size_t>(source[c])] : row[c];
        if (wide)
          out.f64()[at_row + c] = v;
        else
          out.f32()[at_row + c] = static_cast<float>(v);
      }
    }
    // Done with these rows: their pages leave the resident set (read again if asked for again).
    const std::int64_t from = (lo - s.first_row) * s.width, done = (hi - lo) * s.width;
    for (const NamedArray* a : {s.array, s.partner})
      if (a != nullptr && hi > lo && s.heads == 0) s.file->release(*a, from, done);
  }
  return out;
}

}  // namespace tapdiff::dumps
