#include "dumps/dump_writer.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <utility>

#include <fmt/core.h>

#include "model/dtype.h"
#include "model/errors.h"

namespace tapdiff::dumps {
namespace {

// Shape of the HDF5 chunks of a tap dataset: [min(kMaxChunkRows, kChunkElements / width) or 1,
// width], 64 KiB of f32 at most unless one row is larger. Every flush (one per ended chunk of
// the run) rewrites each dataset's partly filled HDF5 chunk whole, so a decode step costs about
// chunk_rows times its own bytes: small chunks keep decode with every op tapped cheap, and reads
// of whole sequences still take few, large requests.
constexpr hsize_t kChunkElements = hsize_t{1} << 14;
constexpr hsize_t kMaxChunkRows = 64;
constexpr hsize_t kProvenanceChunk = 1024;  // entries per chunk of a /rows dataset

h5::Type element_type(StorageType storage) {
  switch (storage) {
    case StorageType::f32: return h5::Type::f32;
    case StorageType::f64: return h5::Type::f64;
    case StorageType::f16: return h5::Type::f16;
  }
  return h5::Type::f32;
}

std::size_t element_bytes(StorageType storage) {
  switch (storage) {
    case StorageType::f32: return 4;
    case StorageType::f64: return 8;
    case StorageType::f16: return 2;
  }
  return 4;
}

// Fill value NaN in the storage type's memory representation, so rows never written show.
const void* nan_fill(StorageType storage) {
  static const float f32 = std::numeric_limits<float>::quiet_NaN();
  static const double f64 = std::numeric_limits<double>::quiet_NaN();
  static const std::uint16_t f16 = 0x7e00;
  switch (storage) {
    case StorageType::f32: return &f32;
    case StorageType::f64: return &f64;
    case StorageType::f16: return &f16;
  }
  return nullptr;
}

h5::File create_file(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty() && !std::filesystem::is_directory(parent))
    throw EnvironmentError(
        fmt::format("{}: cannot create the dump: folder '{}' does not exist", path, parent.string()));
  return h5::File::create(path);
}

}  // namespace

DumpWriter::DumpWriter(const std::string& path, RunMetadata metadata, const model::Graph& graph,
                       const TapFilter& filter, StorageType storage)
    : path_(path), storage_(storage), n_layers_(graph.n_layers()), file_(create_file(path)) {
  metadata.storage_dtype = std::string(storage_name(storage));
  if (metadata.created.empty()) metadata.created = utc_now_iso8601();
  write_metadata(*file_, metadata);
  file_->set_int(names::kComplete, 0);
  file_->set_int(names::kRowsComplete, 0);
  create_taps(metadata, graph, filter);
  create_provenance();
  file_->flush();
}

DumpWriter::~DumpWriter() {
  taps_.clear();
  provenance_.reset();
  file_.reset();  // closing errors cannot be reported from here
}

void DumpWriter::create_taps(const RunMetadata& metadata, const model::Graph& graph, const TapFilter& filter) {
  const model::ModelConfig config = config_from_json(metadata.model_config, path_);
  const model::Graph described(config);
  slots_.assign(static_cast<std::size_t>((n_layers_ + 2) * model::kOpCount), -1);
  const h5::Group taps = file_->create_group(names::kTaps);
  std::map<int, h5::Group> layers;
  for (const model::Step& step : graph.steps()) {
    const model::TensorId id = step.output();
    if (!filter.matches(id)) continue;
    const auto width = static_cast<hsize_t>(graph.width(id.op));
    TAPDIFF_ASSERT(described.width(id.op) == graph.width(id.op) && config.n_layers == n_layers_,
                   "{}: model_config gives {} width {}, the graph {}", path_, model::to_string(id),
                   described.width(id.op), width);
    if (!layers.contains(id.layer)) layers.emplace(id.layer, taps.create_group(std::to_string(id.layer)));
    const hsize_t chunk_rows = std::clamp<hsize_t>(kChunkElements / width, 1, kMaxChunkRows);
    const std::size_t chunk_bytes = chunk_rows * width * element_bytes(storage_);
    h5::DataSet data = layers.at(id.layer).create_dataset(
        std::string(model::op_name(id.op)), element_type(storage_),
        h5::Layout::extendible({0, width}, {chunk_rows, width}, nan_fill(storage_), chunk_bytes + 4096));
    const auto kernel = metadata.kernels.find(std::string(model::op_name(id.op)));
    data.set_int(names::kLayer, id.layer);
    data.set_string(names::kOp, model::op_name(id.op));
    data.set_string(names::kClass, model::op_class_name(model::op_class(id.op)));
    data.set_string(names::kKernel, kernel != metadata.kernels.end() ? kernel->second : "");
    slots_[static_cast<std::size_t>((id.layer + 1) * model::kOpCount + static_cast<int>(id.op))] =
        static_cast<int>(taps_.size());
    taps_.push_back({id, width, 0, std::move(data)});
  }
}

void DumpWriter::create_provenance() {
  const h5::Group rows = file_->create_group(names::kRows);
  auto make = [&](const char* name, h5::Type type) {
    return rows.create_dataset(name, type, h5::Layout::extendible({0}, {kProvenanceChunk}));
  };
  provenance_.emplace(Provenance{make(names::kPosition, h5::Type::i32), make(names::kChunk, h5::Type::i32),
                                 make(names::kDecode, h5::Type::u8), make(names::kToken, h5::Type::i32)});
}

int DumpWriter::slot(const model::TensorId& id) const {
  if (id.layer < -1 || id.layer > n_layers_) return -1;
  return slots_[static_cast<std::size_t>((id.layer + 1) * model::kOpCount + static_cast<int>(id.op))];
}

bool DumpWriter::wants(const model::TapKey& key) const { return file_.has_value() && slot(key.id) >= 0; }

std::pair<hid_t, const void*> DumpWriter::stored(const model::HostTensor& value) {
  const bool is_f32 = value.scalar() == model::Scalar::f32;
  const auto n = static_cast<std::size_t>(value.size());
  switch (storage_) {
    case StorageType::f32:
      if (is_f32) return {h5::memory_type(h5::Type::f32), value.f32().data()};
      scratch_f32_.resize(n);
      std::transform(value.f64().begin(), value.f64().end(), scratch_f32_.begin(),
                     [](double x) { return static_cast<float>(x); });
      return {h5::memory_type(h5::Type::f32), scratch_f32_.data()};
    case StorageType::f64:
      if (!is_f32) return {h5::memory_type(h5::Type::f64), value.f64().data()};
      scratch_f64_.assign(value.f32().begin(), value.f32().end());
      return {h5::memory_type(h5::Type::f64), scratch_f64_.data()};
    case StorageType::f16:
      scratch_f16_.resize(n);
      if (is_f32)  // f64 goes through f32: a double rounding, off by one f16 ulp at worst
        std::transform(value.f32().begin(), value.f32().end(), scratch_f16_.begin(), model::f32_to_f16);
      else
        std::transform(value.f64().begin(), value.f64().end(), scratch_f16_.begin(),
                       [](double x) { return model::f32_to_f16(static_cast<float>(x)); });
      return {h5::memory_type(h5::Type::f16), scratch_f16_.data()};
  }
  return {H5I_INVALID_HID, nullptr};
}

void DumpWriter::record(const model::TapKey& key, const model::HostTensor& value) {
  TAPDIFF_ASSERT(file_.has_value(), "{}: record({}) after finish()", path_, model::to_string(key.id));
  const int index = slot(key.id);
  TAPDIFF_ASSERT(index >= 0, "{}: record({}) of an op that is not tapped", path_, model::to_string(key.id));
  TAPDIFF_ASSERT(open_chunk_ < 0 || open_chunk_ == key.chunk.index,
                 "{}: record({}) for chunk {} while chunk {} has not ended", path_, model::to_string(key.id),
                 key.chunk.index, open_chunk_);
  TapDataset& tap = taps_[static_cast<std::size_t>(index)];
  const auto rows = static_cast<hsize_t>(key.chunk.rows);
  TAPDIFF_ASSERT(value.rows() == key.chunk.rows && static_cast<hsize_t>(value.cols()) == tap.width,
                 "{}: {} of chunk {}: expected [{}, {}], found [{}, {}]", path_, model::to_string(key.id),
                 key.chunk.index, rows, tap.width, value.rows(), value.cols());
  TAPDIFF_ASSERT(tap.rows <= rows_, "{}: {} recorded twice in chunk {}", path_, model::to_string(key.id),
                 key.chunk.index);
  open_chunk_ = key.chunk.index;
  const hsize_t end = rows_ + rows;
  const hsize_t extent[2] = {end, tap.width};
  tap.data.set_extent(extent);
  const auto [memory_type, data] = stored(value);
  tap.data.write_rows(rows_, rows, memory_type, data);
  tap.rows = end;
}

void DumpWriter::append_provenance(const model::ChunkInfo& chunk, std::span<const std::int32_t> tokens) {
  const auto n = static_cast<std::size_t>(chunk.rows);
  std::vector<std::int32_t> positions(n), chunks(n, chunk.index);
  std::vector<std::uint8_t> decode(n, chunk.decode ? 1 : 0);
  for (std::size_t i = 0; i < n; ++i) positions[i] = chunk.first_pos + static_cast<std::int32_t>(i);
  const hsize_t end = rows_ + n;
  auto append = [&](const h5::DataSet& data, h5::Type type, const void* values) {
    data.set_extent(std::span(&end, 1));
    data.write_rows(rows_, n, h5::memory_type(type), values);
  };
  append(provenance_->position, h5::Type::i32, positions.data());
  append(provenance_->chunk, h5::Type::i32, chunks.data());
  append(provenance_->decode, h5::Type::u8, decode.data());
  append(provenance_->token, h5::Type::i32, tokens.data());
}

void DumpWriter::end_chunk(const model::ChunkInfo& chunk, std::span<const std::int32_t> tokens) {
  TAPDIFF_ASSERT(file_.has_value(), "{}: end_chunk() after finish()", path_);
  TAPDIFF_ASSERT(open_chunk_ < 0 || open_chunk_ == chunk.index, "{}: end_chunk({}) while chunk {} is open", path_,
                 chunk.index, open_chunk_);
  TAPDIFF_ASSERT(std::cmp_equal(tokens.size(), chunk.rows), "{}: chunk {} of {} rows given {} tokens", path_,
                 chunk.index, chunk.rows, tokens.size());
  const hsize_t end = rows_ + static_cast<hsize_t>(chunk.rows);
  for (TapDataset& tap : taps_) {  // an op not delivered in this chunk: NaN rows keep alignment
    if (tap.rows == end) continue;
    const hsize_t extent[2] = {end, tap.width};
    tap.data.set_extent(extent);
    tap.rows = end;
  }
  append_provenance(chunk, tokens);
  file_->flush();  // the data first, then the count that vouches for it
  rows_ = end;
  file_->set_int(names::kRowsComplete, static_cast<std::int64_t>(rows_));
  file_->flush();
  open_chunk_ = -1;
}

void DumpWriter::finish(const nlohmann::json& summary) {
  TAPDIFF_ASSERT(file_.has_value(), "{}: finish() called twice", path_);
  TAPDIFF_ASSERT(open_chunk_ < 0, "{}: finish() while chunk {} has not ended", path_, open_chunk_);
  file_->set_string(names::kSummary, summary.dump());
  file_->set_int(names::kRowsComplete, static_cast<std::int64_t>(rows_));
  file_->set_int(names::kComplete, 1);
  close();
}

void DumpWriter::close() {
  taps_.clear();
  provenance_.reset();
  file_->close();
  file_.reset();
}

}  // namespace tapdiff::dumps
