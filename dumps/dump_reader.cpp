#include "dumps/dump_reader.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <optional>
#include <utility>

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "dumps/crash_guard.h"
#include "model/dtype.h"
#include "model/errors.h"
#include "model/json_input.h"

namespace tapdiff::dumps {
namespace {

std::string_view kind_of(std::filesystem::file_type type) {
  switch (type) {
    case std::filesystem::file_type::directory: return "a directory";
    case std::filesystem::file_type::fifo: return "a FIFO";
    case std::filesystem::file_type::socket: return "a socket";
    case std::filesystem::file_type::block: return "a block device";
    case std::filesystem::file_type::character: return "a character device";
    default: return "something other than a regular file";
  }
}

// What needs no HDF5 (nor opening the file, which would wait on a FIFO): path names a regular
// file with something in it. A path that cannot be examined is left to HDF5 to report.
void check_path(const std::string& path) {
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (status.type() == std::filesystem::file_type::not_found)
    throw UsageError(fmt::format("{}: no such dump file", path));
  if (status.type() == std::filesystem::file_type::none) return;
  if (status.type() == std::filesystem::file_type::directory)
    throw UsageError(
        fmt::format("{}: expected a dump file, found a directory (a folder is an outside engine's dump "
                    "when it holds .safetensors or .npz files; python -m tapdiff.torch_dumps converts .pt "
                    "files to one: docs/import.md)",
                    path));
  if (status.type() != std::filesystem::file_type::regular)
    throw UsageError(fmt::format("{}: expected a dump file, found {}", path, kind_of(status.type())));
  if (std::filesystem::path(path).extension() == ".pt")
    throw UsageError(
        fmt::format("{}: expected a dump file, found a PyTorch .pt file (a pickle, which tapdiff does "
                    "not load): convert it with python -m tapdiff.torch_dumps (docs/import.md)",
                    path));
  if (std::filesystem::file_size(path, error) == 0 && !error)
    throw FormatError(
        fmt::format("{}: incomplete dump: the file is empty (its run stopped before writing anything: "
                    "killed, or out of disk space)",
                    path));
}

h5::File open_unguarded(const std::string& path) {
  check_path(path);
  return h5::File::open(path);
}

// "<path>: <rest>" -> "<rest>", to wrap a message without naming the file twice.
std::string_view after_path(std::string_view message, const std::string& path) {
  const std::string prefix = path + ": ";
  return message.starts_with(prefix) ? message.substr(prefix.size()) : message;
}

// Calls make(), naming the file and dataset when the host has not the memory for it.
template <class F>
auto allocate_for(const h5::DataSet& data, std::uint64_t bytes, F&& make) {
  try {
    return make();
  } catch (const std::bad_alloc&) {
    throw EnvironmentError(fmt::format("{}: {}: cannot allocate {:.1f} MiB to read it (out of host memory)",
                                       data.file(), data.path(), static_cast<double>(bytes) / (1 << 20)));
  }
}

// How model_config determines an op's width, for messages.
// The name of an HDF5 tap's float type by its value bytes (2, 4 or 8).
std::string float_type_name(std::size_t bytes) { return bytes == 2 ? "f16" : bytes == 4 ? "f32" : "f64"; }

std::string_view width_formula(model::Op op) {
  switch (op) {
    case model::Op::q_proj:
    case model::Op::q_norm:
    case model::Op::rope_q:
    case model::Op::attn: return "n_heads*head_dim (the layer's)";
    case model::Op::k_proj:
    case model::Op::v_proj:
    case model::Op::k_norm:
    case model::Op::v_norm:
    case model::Op::rope_k: return "n_kv_heads*head_dim (the layer's)";
    case model::Op::ffn_gate:
    case model::Op::ffn_up:
    case model::Op::ffn_act: return "ffn_dim";
    case model::Op::logits: return "vocab";
    default: return "dim";
  }
}

// The layer an op belongs to is fixed: -1 for embed, n_layers after the blocks, else a block.
bool layer_fits(model::Op op, int layer, int n_layers) {
  if (op == model::Op::embed) return layer == -1;
  if (op == model::Op::final_norm || op == model::Op::logits) return layer == n_layers;
  return layer >= 0 && layer < n_layers;
}

std::optional<int> parse_layer(const std::string& text) {
  int layer = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), layer);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return layer;
}

hsize_t length_of(const h5::DataSet& data) {
  const std::vector<hsize_t> extent = data.extent();
  if (extent.size() != 1)
    throw FormatError(
        fmt::format("{}: {}: expected a 1-D dataset, found rank {}", data.file(), data.path(), extent.size()));
  return extent[0];
}

// The first `count` entries of a 1-D dataset.
template <class T>
std::vector<T> read_entries(const h5::DataSet& data, hsize_t count, h5::Type type) {
  data.require_storable(count, sizeof(T));
  std::vector<T> values = allocate_for(data, count * sizeof(T), [&] { return std::vector<T>(count); });
  data.read_rows(0, count, h5::memory_type(type), values.data());
  return values;
}

}  // namespace

DumpReader::DumpReader(const std::string& path, Guard guard)
    : path_(path), file_(guard == Guard::none ? open_unguarded(path) : open_guarded(path)) {
  read_layout();
}

DumpReader::DumpReader(const std::string& path, const ImportOptions& options) : path_(path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) throw UsageError(fmt::format("{}: no such dump file", path));
  if (!is_imported_dump(path))
    throw UsageError(fmt::format("{}: expected a safetensors or .npz dump, or a folder of them", path));
  config_ = config_from_json(options.model_config, path + ": the model given for it");
  imported_ = std::make_shared<const ImportedDump>(path, options, config_);
  import_from(*imported_, options);
}

void DumpReader::import_from(const ImportedDump& imported, const ImportOptions& options) {
  metadata_.engine = fmt::format("imported {} (map {})", imported.format(), options.map.name);
  metadata_.storage_dtype = imported.storage_dtype();
  import_map_ = options.map.name;
  metadata_.model_config = options.model_config;
  metadata_.model_sha256 = options.model_sha256;
  metadata_.model_path = options.model_path;
  metadata_.compression = "none";
  rows_ = imported.rows();
  tensors_ = imported.tensors();
  positions_ = imported.positions();
  chunks_ = imported.chunks();
  decode_ = imported.decode_flags();
  tokens_ = imported.tokens();
  for (std::size_t r = 0; r < tokens_.size(); ++r)
    if (decode_[r] == 0) metadata_.prompt_tokens.push_back(tokens_[r]);
  if (!chunks_.empty() && chunks_.back() > 0)
    metadata_.chunk_size = static_cast<int>(std::count(chunks_.begin(), chunks_.end(), chunks_.front()));
  notes_ = imported.notes();
}

h5::File DumpReader::open_guarded(const std::string& path) {
  check_path(path);
  run_in_child(path, [&](const std::function<void()>& heartbeat) {
    const DumpReader reader(path, Guard::none);
    heartbeat();
    reader.walk_chunk_indexes(heartbeat);
  });
  return h5::File::open(path);
}

void DumpReader::read_layout() {
  try {  // what a writer makes durable first (DumpFile)
    complete_ = !file_->has_attribute(names::kComplete) || file_->get_int(names::kComplete) != 0;
  } catch (const FormatError& e) {
    throw FormatError(
        fmt::format("{}: incomplete or damaged dump (a run stopped while creating it leaves a root "
                    "that cannot be read): {}",
                    path_, after_path(e.what(), path_)));
  }
  try {
    check_schema_version();
    metadata_ = read_metadata(*file_);
    config_ = config_from_json(metadata_.model_config, path_);
    read_provenance();
    if (file_->has_attribute(names::kSummary))
      summary_ = model::parse_json_text(file_->get_string(names::kSummary), path_ + ": attribute 'summary'", "a value");
    read_taps();
  } catch (const FormatError& e) {
    if (complete_) throw;
    throw FormatError(
        fmt::format("{}: incomplete dump (complete = 0: its run stopped, killed or out of disk space, "
                    "before the file was whole): {}",
                    path_, after_path(e.what(), path_)));
  }
}

void DumpReader::walk_chunk_indexes(const std::function<void()>& heartbeat) const {
  for (const model::TensorId& id : tensors_) {
    file_->open_dataset(tap_path(id).substr(1)).chunk_count();
    heartbeat();
  }
}

void DumpReader::check_schema_version() const {
  if (!file_->has_attribute(names::kSchemaVersion))
    throw FormatError(
        fmt::format("{}: not a tapdiff dump (no '{}' attribute at the root)", path_, names::kSchemaVersion));
  const std::int64_t version = file_->get_int(names::kSchemaVersion);
  if (version != kSchemaVersion)
    throw FormatError(
        fmt::format("{}: schema version {}, this tapdiff reads version {}", path_, version, kSchemaVersion));
}

void DumpReader::read_provenance() {
  const h5::Group rows = file_->open_group(names::kRows);
  const h5::DataSet position = rows.open_dataset(names::kPosition), chunk = rows.open_dataset(names::kChunk),
                    decode = rows.open_dataset(names::kDecode), token = rows.open_dataset(names::kToken);
  const hsize_t n[4] = {length_of(position), length_of(chunk), length_of(decode), length_of(token)};
  // Rows past rows_complete (an unfinished chunk's, each dataset as far as it got) are not data.
  const bool vouched = file_->has_attribute(names::kRowsComplete);
  rows_ = vouched ? file_->get_int(names::kRowsComplete) : static_cast<std::int64_t>(n[0]);
  const auto fewest = *std::min_element(std::begin(n), std::end(n));
  if (vouched && (rows_ < 0 || std::cmp_greater(rows_, fewest)))
    throw FormatError(fmt::format("{}: rows_complete is {} but /rows holds {} rows", path_, rows_, fewest));
  if (!vouched && fewest != *std::max_element(std::begin(n), std::end(n)))
    throw FormatError(
        fmt::format("{}: /rows: expected datasets of one length, found position {}, chunk {}, decode {}, token {}",
                    path_, n[0], n[1], n[2], n[3]));
  const auto keep = static_cast<hsize_t>(rows_);
  positions_ = read_entries<std::int32_t>(position, keep, h5::Type::i32);
  chunks_ = read_entries<std::int32_t>(chunk, keep, h5::Type::i32);
  decode_ = read_entries<std::uint8_t>(decode, keep, h5::Type::u8);
  tokens_ = read_entries<std::int32_t>(token, keep, h5::Type::i32);
}

void DumpReader::read_taps() {
  if (!file_->contains(names::kTaps)) return;
  const h5::Group taps = file_->open_group(names::kTaps);
  std::size_t narrowest = 0;
  for (const std::string& layer_name : taps.children()) {
    const std::optional<int> layer = parse_layer(layer_name);
    if (!layer) {
      problem(fmt::format("{}: /{}/{}: expected a layer number as the group name", path_, names::kTaps, layer_name));
      continue;
    }
    const h5::Group group = taps.open_group(layer_name);
    for (const std::string& op_name : group.children()) {
      const std::optional<model::Op> op = model::op_from_name(op_name);
      if (!op) {
        problem(fmt::format("{}: /{}/{}/{}: unknown op '{}' (op names are listed in docs/dump-format.md)", path_,
                            names::kTaps, layer_name, op_name, op_name));
        continue;
      }
      const model::TensorId id{*op, *layer};
      const std::size_t bytes = check_tap(id, group.open_dataset(op_name));
      if (bytes == 0) continue;
      narrowest = narrowest == 0 ? bytes : std::min(narrowest, bytes);
      tensors_.push_back(id);
      tap_bytes_.emplace_back(id, bytes);
    }
  }
  if (narrowest != 0) metadata_.storage_dtype = float_type_name(narrowest);
  std::sort(tensors_.begin(), tensors_.end(), [](const model::TensorId& a, const model::TensorId& b) {
    return a.layer != b.layer ? a.layer < b.layer : static_cast<int>(a.op) < static_cast<int>(b.op);
  });
}

std::size_t DumpReader::check_tap(const model::TensorId& id, const h5::DataSet& data) {
  const std::string where = fmt::format("{}: {}", path_, tap_path(id));
  if (!layer_fits(id.op, id.layer, config_.n_layers))
    return problem(
        fmt::format("{}: {} cannot be at layer {} of a {}-layer model (embed is -1, final_norm "
                    "and logits are n_layers)",
                    where, model::op_name(id.op), id.layer, config_.n_layers));
  if (data.type_class() != H5T_FLOAT)
    return problem(fmt::format("{}: expected floats, found another element type", where));
  const std::size_t bytes = data.type_size();
  if (bytes != 2 && bytes != 4 && bytes != 8)
    return problem(fmt::format("{}: expected floats of 2, 4 or 8 bytes, found {} bytes", where, bytes));
  const std::vector<hsize_t> extent = data.extent();
  if (extent.size() != 2)
    return problem(fmt::format("{}: expected [rows, width], found rank {}", where, extent.size()));
  const int width = model::op_width(config_, id);
  if (std::cmp_not_equal(extent[1], width))
    return problem(
        fmt::format("{}: width {}, but model_config gives {} = {}", where, extent[1], width_formula(id.op), width));
  if (std::cmp_less(extent[0], rows_))
    return problem(fmt::format("{}: {} rows, but the dump has {} rows", where, extent[0], rows_));
  return bytes;
}

std::size_t DumpReader::problem(std::string message) {
  if (!problems_) throw FormatError(message);
  problems_->push_back(std::move(message));
  return 0;
}

std::vector<std::string> DumpReader::problems_of(const std::string& path) {
  std::vector<std::string> found;
  try {
    const DumpReader collecting(path, found);
  } catch (const FormatError& e) {  // libhdf5 crashing or hanging on the file, or a problem after
    found.emplace_back(e.what());   // which nothing more can be read
  }
  return found;
}

DumpReader::DumpReader(const std::string& path, std::vector<std::string>& problems)
    : path_(path), file_(open_guarded(path)), problems_(&problems) {
  read_layout();
  check_rows();
}

void DumpReader::check_rows() {
  std::vector<std::int64_t> bad_tokens;
  for (std::size_t r = 0; r < tokens_.size(); ++r)
    if (tokens_[r] < 0 || tokens_[r] >= config_.vocab) bad_tokens.push_back(static_cast<std::int64_t>(r));
  if (!bad_tokens.empty())
    problem(fmt::format("{}: /rows/token: {} token{} outside the vocabulary [0, {}), the first at row {}", path_,
                        bad_tokens.size(), bad_tokens.size() == 1 ? "" : "s", config_.vocab, bad_tokens.front()));
  for (std::size_t r = 1; r < positions_.size(); ++r)
    if (positions_[r] <= positions_[r - 1]) {
      problem(
          fmt::format("{}: /rows/position: row {} is at position {} after {}: rows are in feed order, so "
                      "positions increase (compare aligns such a run by its rows' places and reports it)",
                      path_, r, positions_[r], positions_[r - 1]));
      break;
    }
  for (std::size_t r = 1; r < chunks_.size(); ++r)
    if (chunks_[r] < chunks_[r - 1]) {
      problem(fmt::format("{}: /rows/chunk: row {} is in chunk {} after chunk {}: chunks are numbered in feed order",
                          path_, r, chunks_[r], chunks_[r - 1]));
      break;
    }
  const auto flag = std::find_if(decode_.begin(), decode_.end(), [](std::uint8_t d) { return d > 1; });
  if (flag != decode_.end())
    problem(fmt::format("{}: /rows/decode: expected 0 or 1, found {} at row {}", path_, *flag, flag - decode_.begin()));
  // Expert ids and kept positions are compared as the engine wrote them: say where they name no
  // expert, no position of their row (or -1: none).
  for (const model::TensorId& id : tensors_) {
    if (id.op == model::Op::idx_ids) {
      const model::HostTensor kept = read(id, 0, rows_).to(model::Scalar::f64);
      for (std::int64_t r = 0; r < kept.rows(); ++r) {
        const auto position = positions_[static_cast<std::size_t>(r)];
        const std::span<const double> row =
            kept.f64().subspan(static_cast<std::size_t>(r * kept.cols()), static_cast<std::size_t>(kept.cols()));
        const auto bad = std::find_if(row.begin(), row.end(), [&](double x) {
          return x != -1 && !(x >= 0 && x <= position && x == std::floor(x));
        });
        if (bad == row.end()) continue;
        problem(fmt::format("{}: {}: expected kept positions in [0, {}] (or -1: none), found {} at row {}", path_,
                            model::to_string(id), position, *bad, r));
        break;
      }
      continue;
    }
    if (id.op != model::Op::moe_ids) continue;
    const model::HostTensor ids = read(id, 0, rows_).to(model::Scalar::f64);
    const std::span<const double> v = ids.f64();
    const auto bad = std::find_if(
        v.begin(), v.end(), [&](double x) { return !(x >= 0 && x < config_.experts.count && x == std::floor(x)); });
    if (bad != v.end())
      problem(fmt::format("{}: {}: expected expert ids in [0, {}), found {} at row {}", path_, model::to_string(id),
                          config_.experts.count, *bad, (bad - v.begin()) / std::max<std::int64_t>(ids.cols(), 1)));
  }
  if (summary_.is_object() && summary_.contains("generated") && !summary_["generated"].is_array())
    problem(fmt::format("{}: attribute 'summary': 'generated' is not an array of token ids", path_));
}

bool DumpReader::has(const model::TensorId& id) const {
  return std::find(tensors_.begin(), tensors_.end(), id) != tensors_.end();
}

std::string DumpReader::storage_dtype(const model::TensorId& id) const {
  if (imported_) return imported_->storage_dtype(id);
  for (const auto& [tap, bytes] : tap_bytes_)
    if (tap == id) return float_type_name(bytes);
  return metadata_.storage_dtype;
}

model::HostTensor DumpReader::read(const model::TensorId& id, std::int64_t first_row, std::int64_t count) const {
  if (imported_) return imported_->read(id, first_row, count);
  if (!has(id)) throw UsageError(fmt::format("{}: {} was not tapped in this dump", path_, model::to_string(id)));
  TAPDIFF_ASSERT(first_row >= 0 && count >= 0, "read rows [{}, +{})", first_row, count);
  const std::int64_t first = std::min(first_row, rows_);
  const std::int64_t n = std::min(count, rows_ - first);
  const h5::DataSet data = file_->open_dataset(tap_path(id).substr(1));
  const auto width = static_cast<std::int64_t>(data.extent()[1]);
  const auto start = static_cast<hsize_t>(first);
  const auto rows = static_cast<hsize_t>(n);
  const bool wide = data.type_size() == 8;
  const auto bytes = static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(width) * (wide ? 8 : 4);
  if (wide) {
    model::HostTensor out = allocate_for(data, bytes, [&] { return model::HostTensor(model::Scalar::f64, n, width); });
    data.read_rows(start, rows, h5::memory_type(h5::Type::f64), out.f64().data());
    return out;
  }
  model::HostTensor out = allocate_for(data, bytes, [&] { return model::HostTensor(model::Scalar::f32, n, width); });
  if (data.is_f16()) {
    std::vector<std::uint16_t> half =
        allocate_for(data, bytes / 2, [&] { return std::vector<std::uint16_t>(static_cast<std::size_t>(n * width)); });
    data.read_rows(start, rows, h5::memory_type(h5::Type::f16), half.data());
    std::transform(half.begin(), half.end(), out.f32().begin(), model::f16_to_f32);
  } else {
    data.read_rows(start, rows, h5::memory_type(h5::Type::f32), out.f32().data());
  }
  return out;
}

namespace {

std::string short_sha(const std::string& sha) { return sha.size() > 12 ? sha.substr(0, 12) + ".." : sha; }

std::string model_file(const RunMetadata& m) {
  return m.model_path.empty() ? "unknown file" : std::filesystem::path(m.model_path).filename().string();
}

std::optional<std::string> model_mismatch(const DumpReader& a, const DumpReader& b) {
  const RunMetadata& ma = a.metadata();
  const RunMetadata& mb = b.metadata();
  if (!ma.model_sha256.empty() && !mb.model_sha256.empty()) {
    if (ma.model_sha256 == mb.model_sha256) return std::nullopt;
    return fmt::format("different models: {} has sha256 {} ({}), {} has {} ({})", a.path(), short_sha(ma.model_sha256),
                       model_file(ma), b.path(), short_sha(mb.model_sha256), model_file(mb));
  }
  const std::string differ = config_differences(ma.model_config, mb.model_config);
  if (differ.empty()) return std::nullopt;
  return fmt::format("different models: the model_config of {} ({}) and {} ({}) differ in {}", a.path(), model_file(ma),
                     b.path(), model_file(mb), differ);
}

// The keys config_from_json reads, and so can say what a left-out one means.
constexpr std::array kParsedKeys = {"n_layers", "dim",        "n_heads",    "n_kv_heads", "head_dim", "ffn_dim",
                                    "vocab",    "rope_style", "rotary_dim", "block",      "experts"};

// A model_config with its parsed keys at what they mean (to_json of the parsed config), without
// the family's name (the same graph under two names, Mixtral's GGUF as llama say, is one model);
// nullopt when it does not parse (it is then compared as written).
std::optional<nlohmann::json> meaning(const nlohmann::json& config) {
  try {
    const nlohmann::json parsed = model::to_json(config_from_json(config, "model_config"));
    nlohmann::json out = config;
    out.erase("arch");
    for (const char* key : kParsedKeys) {
      if (parsed.contains(key))
        out[key] = parsed.at(key);
      else
        out.erase(key);
    }
    return out;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

std::string config_differences(const nlohmann::json& raw_a, const nlohmann::json& raw_b) {
  if (!raw_a.is_object() || !raw_b.is_object())
    return fmt::format("{} vs {}", model::json_excerpt(raw_a), model::json_excerpt(raw_b));
  const std::optional<nlohmann::json> meant_a = meaning(raw_a), meant_b = meaning(raw_b);
  const bool by_meaning = meant_a && meant_b;
  const nlohmann::json& a = by_meaning ? *meant_a : raw_a;
  const nlohmann::json& b = by_meaning ? *meant_b : raw_b;
  std::vector<std::string> keys;
  for (const auto& [key, value] : a.items()) keys.push_back(key);
  for (const auto& [key, value] : b.items()) keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  std::vector<std::string> out;
  for (const std::string& key : keys) {
    if (a.contains(key) && b.contains(key) && a.at(key) == b.at(key)) continue;
    if (by_meaning && (!a.contains(key) || !b.contains(key))) continue;  // said by one only: no contradiction
    const std::string va = a.contains(key) ? model::json_excerpt(a.at(key)) : "(absent)";
    const std::string vb = b.contains(key) ? model::json_excerpt(b.at(key)) : "(absent)";
    out.push_back(fmt::format("{}: {} vs {}", key.substr(0, 80), va, vb));
  }
  return fmt::format("{}", fmt::join(out, "; "));
}

std::optional<std::string> DumpReader::mismatch(const DumpReader& a, const DumpReader& b) {
  if (auto models = model_mismatch(a, b)) return models;
  const auto rows = static_cast<std::size_t>(std::min(a.rows(), b.rows()));
  for (std::size_t i = 0; i < rows; ++i) {
    if (a.positions()[i] != b.positions()[i])
      return fmt::format("different positions: row {} is position {} in {}, {} in {}", i, a.positions()[i], a.path(),
                         b.positions()[i], b.path());
    if (a.tokens()[i] != b.tokens()[i]) {
      const bool decode = a.decode_flags()[i] != 0 || b.decode_flags()[i] != 0;
      return fmt::format("different tokens: first difference at position {} ({} vs {}){}", a.positions()[i],
                         a.tokens()[i], b.tokens()[i],
                         decode ? ", a decode row: the runs generated different tokens before it" : "");
    }
  }
  return std::nullopt;
}

}  // namespace tapdiff::dumps
