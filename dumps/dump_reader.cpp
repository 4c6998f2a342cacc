#include "dumps/dump_reader.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <utility>

#include <fmt/core.h>

#include "model/dtype.h"
#include "model/errors.h"

namespace tapdiff::dumps {
namespace {

h5::File open_existing(const std::string& path) {
  if (!std::filesystem::exists(path)) throw UsageError(fmt::format("{}: no such dump file", path));
  return h5::File::open(path);
}

// How model_config determines an op's width, for messages.
std::string_view width_formula(model::Op op) {
  switch (op) {
    case model::Op::q_proj:
    case model::Op::rope_q:
    case model::Op::attn: return "n_heads*head_dim";
    case model::Op::k_proj:
    case model::Op::v_proj:
    case model::Op::rope_k: return "n_kv_heads*head_dim";
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

template <class T>
std::vector<T> read_vector(const h5::Group& rows, const char* name, h5::Type type) {
  const h5::DataSet data = rows.open_dataset(name);
  const std::vector<hsize_t> extent = data.extent();
  if (extent.size() != 1)
    throw FormatError(
        fmt::format("{}: {}: expected a 1-D dataset, found rank {}", data.file(), data.path(), extent.size()));
  std::vector<T> values(extent[0]);
  data.read_rows(0, extent[0], h5::memory_type(type), values.data());
  return values;
}

}  // namespace

DumpReader::DumpReader(const std::string& path) : path_(path), file_(open_existing(path)) {
  check_schema_version();
  metadata_ = read_metadata(file_);
  config_ = config_from_json(metadata_.model_config, path_);
  read_provenance();
  if (file_.has_attribute(names::kSummary)) {
    const std::string text = file_.get_string(names::kSummary);
    summary_ = nlohmann::json::parse(text, nullptr, false);
    if (summary_.is_discarded())
      throw FormatError(fmt::format("{}: attribute 'summary': expected JSON, found '{}'", path_, text.substr(0, 80)));
  }
  read_taps();
}

void DumpReader::check_schema_version() const {
  if (!file_.has_attribute(names::kSchemaVersion))
    throw FormatError(
        fmt::format("{}: not a tapdiff dump (no '{}' attribute at the root)", path_, names::kSchemaVersion));
  const std::int64_t version = file_.get_int(names::kSchemaVersion);
  if (version != kSchemaVersion)
    throw FormatError(
        fmt::format("{}: schema version {}, this tapdiff reads version {}", path_, version, kSchemaVersion));
}

void DumpReader::read_provenance() {
  const h5::Group rows = file_.open_group(names::kRows);
  positions_ = read_vector<std::int32_t>(rows, names::kPosition, h5::Type::i32);
  chunks_ = read_vector<std::int32_t>(rows, names::kChunk, h5::Type::i32);
  decode_ = read_vector<std::uint8_t>(rows, names::kDecode, h5::Type::u8);
  tokens_ = read_vector<std::int32_t>(rows, names::kToken, h5::Type::i32);
  const std::size_t n = positions_.size();
  if (chunks_.size() != n || decode_.size() != n || tokens_.size() != n)
    throw FormatError(
        fmt::format("{}: /rows: expected datasets of one length, found position {}, chunk {}, "
                    "decode {}, token {}",
                    path_, n, chunks_.size(), decode_.size(), tokens_.size()));
  complete_ = !file_.has_attribute(names::kComplete) || file_.get_int(names::kComplete) != 0;
  rows_ =
      file_.has_attribute(names::kRowsComplete) ? file_.get_int(names::kRowsComplete) : static_cast<std::int64_t>(n);
  if (rows_ < 0 || std::cmp_greater(rows_, n))
    throw FormatError(fmt::format("{}: rows_complete is {} but /rows holds {} rows", path_, rows_, n));
  const auto keep = static_cast<std::size_t>(rows_);  // rows of an unfinished chunk are not data
  positions_.resize(keep);
  chunks_.resize(keep);
  decode_.resize(keep);
  tokens_.resize(keep);
}

void DumpReader::read_taps() {
  if (!file_.contains(names::kTaps)) return;
  const h5::Group taps = file_.open_group(names::kTaps);
  for (const std::string& layer_name : taps.children()) {
    const std::optional<int> layer = parse_layer(layer_name);
    if (!layer)
      throw FormatError(
          fmt::format("{}: /{}/{}: expected a layer number as the group name", path_, names::kTaps, layer_name));
    const h5::Group group = taps.open_group(layer_name);
    for (const std::string& op_name : group.children()) {
      const std::optional<model::Op> op = model::op_from_name(op_name);
      if (!op)
        throw FormatError(fmt::format("{}: /{}/{}/{}: unknown op '{}' (op names are listed in docs/dump-format.md)",
                                      path_, names::kTaps, layer_name, op_name, op_name));
      const model::TensorId id{*op, *layer};
      check_tap(id, group.open_dataset(op_name));
      tensors_.push_back(id);
    }
  }
  std::sort(tensors_.begin(), tensors_.end(), [](const model::TensorId& a, const model::TensorId& b) {
    return a.layer != b.layer ? a.layer < b.layer : static_cast<int>(a.op) < static_cast<int>(b.op);
  });
}

void DumpReader::check_tap(const model::TensorId& id, const h5::DataSet& data) const {
  const std::string where = fmt::format("{}: {}", path_, tap_path(id));
  if (!layer_fits(id.op, id.layer, config_.n_layers))
    throw FormatError(
        fmt::format("{}: {} cannot be at layer {} of a {}-layer model (embed is -1, final_norm "
                    "and logits are n_layers)",
                    where, model::op_name(id.op), id.layer, config_.n_layers));
  if (data.type_class() != H5T_FLOAT)
    throw FormatError(fmt::format("{}: expected floats, found another element type", where));
  const std::vector<hsize_t> extent = data.extent();
  if (extent.size() != 2)
    throw FormatError(fmt::format("{}: expected [rows, width], found rank {}", where, extent.size()));
  const int width = model::op_width(config_, id.op);
  if (std::cmp_not_equal(extent[1], width))
    throw FormatError(
        fmt::format("{}: width {}, but model_config gives {} = {}", where, extent[1], width_formula(id.op), width));
  if (std::cmp_less(extent[0], rows_))
    throw FormatError(fmt::format("{}: {} rows, but the dump has {} rows", where, extent[0], rows_));
}

bool DumpReader::has(const model::TensorId& id) const {
  return std::find(tensors_.begin(), tensors_.end(), id) != tensors_.end();
}

model::HostTensor DumpReader::read(const model::TensorId& id, std::int64_t first_row, std::int64_t count) const {
  if (!has(id)) throw UsageError(fmt::format("{}: {} was not tapped in this dump", path_, model::to_string(id)));
  TAPDIFF_ASSERT(first_row >= 0 && count >= 0, "read rows [{}, +{})", first_row, count);
  const std::int64_t first = std::min(first_row, rows_);
  const std::int64_t n = std::min(count, rows_ - first);
  const h5::DataSet data = file_.open_dataset(tap_path(id).substr(1));
  const auto width = static_cast<std::int64_t>(data.extent()[1]);
  const auto start = static_cast<hsize_t>(first);
  const auto rows = static_cast<hsize_t>(n);
  if (data.type_size() == 8) {
    model::HostTensor out(model::Scalar::f64, n, width);
    data.read_rows(start, rows, h5::memory_type(h5::Type::f64), out.f64().data());
    return out;
  }
  model::HostTensor out(model::Scalar::f32, n, width);
  if (data.is_f16()) {
    std::vector<std::uint16_t> half(static_cast<std::size_t>(n * width));
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

// The first key whose value differs between two model configs, as "key=value" for each side.
std::pair<std::string, std::string> first_config_difference(const nlohmann::json& a, const nlohmann::json& b) {
  if (a.is_object() && b.is_object()) {
    std::vector<std::string> keys;
    for (const auto& [key, value] : a.items()) keys.push_back(key);
    for (const auto& [key, value] : b.items()) keys.push_back(key);
    std::sort(keys.begin(), keys.end());
    for (const std::string& key : keys) {
      const std::string va = a.contains(key) ? a.at(key).dump() : "(absent)";
      const std::string vb = b.contains(key) ? b.at(key).dump() : "(absent)";
      if (va != vb) return {key + "=" + va, key + "=" + vb};
    }
  }
  return {a.dump(), b.dump()};
}

std::optional<std::string> model_mismatch(const DumpReader& a, const DumpReader& b) {
  const RunMetadata& ma = a.metadata();
  const RunMetadata& mb = b.metadata();
  if (!ma.model_sha256.empty() && !mb.model_sha256.empty()) {
    if (ma.model_sha256 == mb.model_sha256) return std::nullopt;
    return fmt::format("different models: {} has sha256 {} ({}), {} has {} ({})", a.path(), short_sha(ma.model_sha256),
                       model_file(ma), b.path(), short_sha(mb.model_sha256), model_file(mb));
  }
  if (ma.model_config == mb.model_config) return std::nullopt;
  const auto [da, db] = first_config_difference(ma.model_config, mb.model_config);
  return fmt::format("different models: {} has model_config {} ({}), {} has {} ({})", a.path(), da, model_file(ma),
                     b.path(), db, model_file(mb));
}

}  // namespace

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
