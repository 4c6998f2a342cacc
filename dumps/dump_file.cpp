#include "dumps/dump_file.h"

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

// Shape of the HDF5 chunks of a tap dataset: [min(kMaxChunkRows, kChunkBytes / row bytes) or 1,
// width], 64 KiB at most unless one row is larger (f16 rows: twice the rows of f32). Every flush
// (one per ended chunk of the run) rewrites each dataset's partly filled HDF5 chunk whole, so a
// decode step costs about chunk_rows times its own bytes: small chunks keep decode with every op
// tapped cheap, and reads of whole sequences still take few, large requests. A prefill's whole
// chunks are written directly (append_tap_rows), at about the file system's own rate.
//
// A compressed tap dataset has chunks of one row instead, each written once, whole, and never
// again. HDF5 moves a compressed chunk that is rewritten (its size changes) and may reuse the
// space it leaves at once, while the chunk index on disk points there until the next flush: a run
// killed, or out of disk space, in between would lose rows below rows_complete.
constexpr hsize_t kChunkBytes = hsize_t{1} << 16;
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

// HDF5 may be built without a filter, or with a decoder only; a compressed dump needs both
// filters able to encode.
void require_encoder(const std::string& path, H5Z_filter_t filter, const char* name) {
  unsigned flags = 0;
  if (H5Zfilter_avail(filter) <= 0 || H5Zget_filter_info(filter, &flags) < 0 ||
      (flags & H5Z_FILTER_CONFIG_ENCODE_ENABLED) == 0)
    throw EnvironmentError(
        fmt::format("{}: cannot compress the dump: expected HDF5's {} filter, found this HDF5 library cannot write it",
                    path, name));
}

}  // namespace

void quiet_hdf5_errors_on_this_thread() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

std::string compression_name(int level) { return level > 0 ? fmt::format("shuffle+gzip-{}", level) : "none"; }

DumpFile::DumpFile(const std::string& path, const RunMetadata& metadata, const std::vector<TapSpec>& taps,
                   StorageType storage, int compress_level)
    : path_(path), storage_(storage) {
  TAPDIFF_ASSERT(compress_level >= 0 && compress_level <= 9, "{}: gzip level {}", path, compress_level);
  if (compress_level > 0) {
    require_encoder(path, H5Z_FILTER_SHUFFLE, "shuffle");
    require_encoder(path, H5Z_FILTER_DEFLATE, "deflate (gzip)");
    encoder_.emplace(compress_level);
  }
  file_.emplace(create_file(path));
  // First what makes the file an unfinished dump of no rows, made durable alone: a file cut short
  // after this opens and says so (DumpReader calls it incomplete), whatever else it lacks.
  file_->set_int(names::kSchemaVersion, kSchemaVersion);
  file_->set_int(names::kComplete, 0);
  file_->set_int(names::kRowsComplete, 0);
  file_->flush();
  write_metadata(*file_, metadata);
  create_taps(metadata, taps, compress_level);
  create_provenance();
  file_->flush();
}

DumpFile::~DumpFile() {
  taps_.clear();
  provenance_.reset();
  file_.reset();  // closing errors cannot be reported from here
}

void DumpFile::create_taps(const RunMetadata& metadata, const std::vector<TapSpec>& taps, int compress_level) {
  const h5::Group root = file_->create_group(names::kTaps);
  std::map<int, h5::Group> layers;
  for (const TapSpec& spec : taps) {
    const model::TensorId id = spec.id;
    const auto width = static_cast<hsize_t>(spec.width);
    if (!layers.contains(id.layer)) layers.emplace(id.layer, root.create_group(std::to_string(id.layer)));
    const hsize_t chunk_rows =
        compress_level > 0 ? 1 : std::clamp<hsize_t>(kChunkBytes / (width * element_bytes(storage_)), 1, kMaxChunkRows);
    const std::size_t chunk_bytes = chunk_rows * width * element_bytes(storage_);
    h5::Layout layout = h5::Layout::extendible({0, width}, {chunk_rows, width}, nan_fill(storage_), chunk_bytes + 4096);
    layout.gzip_level = compress_level;
    const std::string name(model::op_name(id.op));
    h5::DataSet data = layers.at(id.layer).create_dataset(name, element_type(storage_), layout);
    const auto kernel = metadata.kernels.find(name);
    data.set_int(names::kLayer, id.layer);
    data.set_string(names::kOp, name);
    data.set_string(names::kClass, model::op_class_name(model::op_class(id.op)));
    data.set_string(names::kKernel, kernel != metadata.kernels.end() ? kernel->second : "");
    taps_.push_back({width, chunk_rows, 0, std::move(data)});
  }
}

void DumpFile::create_provenance() {
  const h5::Group rows = file_->create_group(names::kRows);
  auto make = [&](const char* name, h5::Type type) {
    return rows.create_dataset(name, type, h5::Layout::extendible({0}, {kProvenanceChunk}));
  };
  provenance_.emplace(Provenance{make(names::kPosition, h5::Type::i32), make(names::kChunk, h5::Type::i32),
                                 make(names::kDecode, h5::Type::u8), make(names::kToken, h5::Type::i32)});
}

std::pair<hid_t, const void*> DumpFile::stored(model::Scalar scalar, std::span<const std::byte> values) {
  // values come from a HostTensor or a copy of its bytes: aligned for their type.
  const std::span<const float> f32(reinterpret_cast<const float*>(values.data()), values.size() / sizeof(float));
  const std::span<const double> f64(reinterpret_cast<const double*>(values.data()), values.size() / sizeof(double));
  const bool is_f32 = scalar == model::Scalar::f32;
  switch (storage_) {
    case StorageType::f32:
      if (is_f32) return {h5::memory_type(h5::Type::f32), f32.data()};
      scratch_f32_.resize(f64.size());
      std::transform(f64.begin(), f64.end(), scratch_f32_.begin(), [](double x) { return static_cast<float>(x); });
      return {h5::memory_type(h5::Type::f32), scratch_f32_.data()};
    case StorageType::f64:
      if (!is_f32) return {h5::memory_type(h5::Type::f64), f64.data()};
      scratch_f64_.assign(f32.begin(), f32.end());
      return {h5::memory_type(h5::Type::f64), scratch_f64_.data()};
    case StorageType::f16:
      if (is_f32) {
        scratch_f16_.resize(f32.size());
        model::f32_to_f16(f32, scratch_f16_.data());
      } else {  // through f32: a double rounding, off by one f16 ulp at worst
        scratch_f16_.resize(f64.size());
        std::transform(f64.begin(), f64.end(), scratch_f16_.begin(),
                       [](double x) { return model::f32_to_f16(static_cast<float>(x)); });
      }
      return {h5::memory_type(h5::Type::f16), scratch_f16_.data()};
  }
  return {H5I_INVALID_HID, nullptr};
}

void DumpFile::write_tap(std::size_t slot, model::Scalar scalar, std::int64_t rows, std::span<const std::byte> values) {
  const std::size_t bytes = scalar == model::Scalar::f32 ? 4 : 8;
  TAPDIFF_ASSERT(values.size() % bytes == 0, "{}: {} bytes of {}-byte values", path_, values.size(), bytes);
  const auto [memory_type, data] = stored(scalar, values);
  append_tap_rows(slot, rows, values.size() / bytes, memory_type, data);
}

void DumpFile::write_tap_f16(std::size_t slot, std::int64_t rows, std::span<const std::byte> bits) {
  TAPDIFF_ASSERT(storage_ == StorageType::f16, "{}: f16 values for a {} dump", path_, storage_name(storage_));
  TAPDIFF_ASSERT(bits.size() % 2 == 0, "{}: {} bytes of f16", path_, bits.size());
  append_tap_rows(slot, rows, bits.size() / 2, h5::memory_type(h5::Type::f16), bits.data());
}

void DumpFile::append_tap_rows(std::size_t slot, std::int64_t rows, std::size_t values, hid_t memory_type,
                               const void* data) {
  TapDataset& tap = taps_.at(slot);
  const auto n = static_cast<hsize_t>(rows);
  TAPDIFF_ASSERT(values == n * tap.width, "{}: {} values for {} rows of width {}", path_, values, rows, tap.width);
  const hsize_t end = rows_ + n;
  const hsize_t extent[2] = {end, tap.width};
  tap.data.set_extent(extent);
  // The rows of whole chunks [whole_from, whole_to) skip HDF5's conversion, selections, chunk cache
  // and filters (a copy of every byte, ~20% of a prefill's writing; a zlib stream set up per
  // chunk); the rows around them, sharing a chunk with rows of other calls, go through H5Dwrite.
  // A compressed tap's chunks are single rows: all whole.
  const hsize_t cr = tap.chunk_rows;
  const hsize_t whole_from = std::min(end, (rows_ + cr - 1) / cr * cr);
  const hsize_t whole_to = std::max(whole_from, end / cr * cr);
  const auto* bytes = static_cast<const std::byte*>(data);
  const std::size_t row_bytes = tap.width * element_bytes(storage_);
  tap.data.write_rows(rows_, whole_from - rows_, memory_type, bytes);
  for (hsize_t r = whole_from; r < whole_to; r += cr) {
    const hsize_t offset[2] = {r, 0};
    const std::span<const std::byte> chunk(bytes + (r - rows_) * row_bytes, cr * row_bytes);
    tap.data.write_chunk(offset, encoder_ ? encoder_->encode(chunk, element_bytes(storage_)) : chunk);
  }
  tap.data.write_rows(whole_to, end - whole_to, memory_type, bytes + (whole_to - rows_) * row_bytes);
  tap.rows = end;
}

void DumpFile::append_provenance(const model::ChunkInfo& chunk, std::span<const std::int32_t> tokens) {
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

void DumpFile::end_chunk(const model::ChunkInfo& chunk, std::span<const std::int32_t> tokens) {
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
}

void DumpFile::finish(const nlohmann::json& summary) {
  file_->set_string(names::kSummary, summary.dump());
  file_->set_int(names::kRowsComplete, static_cast<std::int64_t>(rows_));
  file_->set_int(names::kComplete, 1);
  taps_.clear();
  provenance_.reset();
  file_->close();
  file_.reset();
}

}  // namespace tapdiff::dumps
