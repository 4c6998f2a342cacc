#include "dumps/dump_writer.h"

#include <utility>

#include <fmt/core.h>

#include "model/errors.h"

namespace tapdiff::dumps {
namespace {

// The dataset of every op output the filter selects, in graph order, checked against the widths
// the metadata's model_config gives (what a reader will check them against).
std::vector<TapSpec> tap_specs(const std::string& path, const nlohmann::json& model_config, const model::Graph& graph,
                               const TapFilter& filter) {
  const model::ModelConfig config = config_from_json(model_config, path);
  const model::Graph described(config);
  std::vector<TapSpec> taps;
  for (const model::Step& step : graph.steps()) {
    const model::TensorId id = step.output();
    if (!filter.matches(id)) continue;
    TAPDIFF_ASSERT(described.width(id) == graph.width(id) && config.n_layers == graph.n_layers(),
                   "{}: model_config gives {} width {}, the graph {}", path, model::to_string(id), described.width(id),
                   graph.width(id));
    taps.push_back({id, graph.width(id)});
  }
  return taps;
}

RunMetadata with_options(RunMetadata metadata, const WriterOptions& options) {
  metadata.storage_dtype = std::string(storage_name(options.storage));
  metadata.compression = compression_name(options.compress_level);
  if (metadata.created.empty()) metadata.created = utc_now_iso8601();
  return metadata;
}

// A library built without thread-safety must see one thread at a time, whatever the dump:
// then the caller's thread writes.
bool hdf5_is_thread_safe() {
  hbool_t safe = false;
  return H5is_library_threadsafe(&safe) >= 0 && safe;
}

std::span<const std::byte> bytes_of(const model::HostTensor& value) {
  return value.scalar() == model::Scalar::f32 ? std::as_bytes(value.f32()) : std::as_bytes(value.f64());
}

}  // namespace

DumpWriter::DumpWriter(const std::string& path, RunMetadata metadata, const model::Graph& graph,
                       const TapFilter& filter, const WriterOptions& options)
    : path_(path),
      storage_(options.storage),
      n_layers_(graph.n_layers()),
      taps_(tap_specs(path, metadata.model_config, graph, filter)),
      file_(path, with_options(std::move(metadata), options), taps_, options.storage, options.compress_level),
      queue_(options.background && hdf5_is_thread_safe(), options.queue_bytes) {
  slots_.assign(static_cast<std::size_t>((n_layers_ + 2) * model::kOpCount), -1);
  for (std::size_t i = 0; i < taps_.size(); ++i)
    slots_[static_cast<std::size_t>((taps_[i].id.layer + 1) * model::kOpCount + static_cast<int>(taps_[i].id.op))] =
        static_cast<int>(i);
  recorded_.assign(taps_.size(), -1);
  if (queue_.background()) queue_.push({}, [](std::span<const std::byte>) { quiet_hdf5_errors_on_this_thread(); });
}

DumpWriter::DumpWriter(const std::string& path, RunMetadata metadata, const model::Graph& graph,
                       const TapFilter& filter, StorageType storage)
    : DumpWriter(path, std::move(metadata), graph, filter, WriterOptions{.storage = storage}) {}

DumpWriter::~DumpWriter() = default;

int DumpWriter::slot(const model::TensorId& id) const {
  if (id.layer < -1 || id.layer > n_layers_) return -1;
  return slots_[static_cast<std::size_t>((id.layer + 1) * model::kOpCount + static_cast<int>(id.op))];
}

bool DumpWriter::wants(const model::TapKey& key) const { return !finished_ && slot(key.id) >= 0; }

void DumpWriter::start_chunk(int index) {
  queue_.drain();  // the chunks before are durable: see the class comment
  open_chunk_ = index;
}

std::size_t DumpWriter::claim(const model::TapKey& key, std::int64_t rows, std::int64_t cols) {
  queue_.check();  // a failed writer reports that first, whatever the call
  TAPDIFF_ASSERT(!finished_, "{}: record({}) after finish()", path_, model::to_string(key.id));
  const int index = slot(key.id);
  TAPDIFF_ASSERT(index >= 0, "{}: record({}) of an op that is not tapped", path_, model::to_string(key.id));
  TAPDIFF_ASSERT(open_chunk_ < 0 || open_chunk_ == key.chunk.index,
                 "{}: record({}) for chunk {} while chunk {} has not ended", path_, model::to_string(key.id),
                 key.chunk.index, open_chunk_);
  const auto at = static_cast<std::size_t>(index);
  TAPDIFF_ASSERT(rows == key.chunk.rows && cols == taps_[at].width,
                 "{}: {} of chunk {}: expected [{}, {}], found [{}, {}]", path_, model::to_string(key.id),
                 key.chunk.index, key.chunk.rows, taps_[at].width, rows, cols);
  TAPDIFF_ASSERT(recorded_[at] != key.chunk.index, "{}: {} recorded twice in chunk {}", path_, model::to_string(key.id),
                 key.chunk.index);
  if (open_chunk_ < 0) start_chunk(key.chunk.index);
  recorded_[at] = key.chunk.index;
  return at;
}

void DumpWriter::record(const model::TapKey& key, const model::HostTensor& value) {
  const std::size_t at = claim(key, value.rows(), value.cols());
  queue_.push(bytes_of(value), [this, at, scalar = value.scalar(), rows = value.rows()](
                                   std::span<const std::byte> data) { file_.write_tap(at, scalar, rows, data); });
}

bool DumpWriter::record_f16(const model::TapKey& key, const model::HalfRows& value) {
  if (storage_ != StorageType::f16) return false;
  const std::size_t at = claim(key, value.rows, value.cols);
  queue_.push(std::as_bytes(value.bits),
              [this, at, rows = value.rows](std::span<const std::byte> data) { file_.write_tap_f16(at, rows, data); });
  return true;
}

void DumpWriter::end_chunk(const model::ChunkInfo& chunk, std::span<const std::int32_t> tokens) {
  queue_.check();
  TAPDIFF_ASSERT(!finished_, "{}: end_chunk() after finish()", path_);
  TAPDIFF_ASSERT(open_chunk_ < 0 || open_chunk_ == chunk.index, "{}: end_chunk({}) while chunk {} is open", path_,
                 chunk.index, open_chunk_);
  TAPDIFF_ASSERT(std::cmp_equal(tokens.size(), chunk.rows), "{}: chunk {} of {} rows given {} tokens", path_,
                 chunk.index, chunk.rows, tokens.size());
  if (open_chunk_ < 0) start_chunk(chunk.index);
  queue_.push(std::as_bytes(tokens), [this, chunk](std::span<const std::byte> data) {
    file_.end_chunk(chunk, {reinterpret_cast<const std::int32_t*>(data.data()), data.size() / sizeof(std::int32_t)});
  });
  rows_ += chunk.rows;
  open_chunk_ = -1;
}

void DumpWriter::finish(const nlohmann::json& summary) {
  queue_.check();
  TAPDIFF_ASSERT(!finished_, "{}: finish() called twice", path_);
  TAPDIFF_ASSERT(open_chunk_ < 0, "{}: finish() while chunk {} has not ended", path_, open_chunk_);
  queue_.push({}, [this, summary](std::span<const std::byte>) { file_.finish(summary); });
  queue_.drain();
  finished_ = true;
}

}  // namespace tapdiff::dumps
