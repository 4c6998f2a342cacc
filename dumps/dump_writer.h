#pragma once
// A tap that streams a run into an HDF5 dump (docs/dump-format.md).
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dumps/h5.h"
#include "dumps/schema.h"
#include "dumps/tap_filter.h"
#include "model/engine.h"

namespace tapdiff::dumps {

// Writes one dataset /taps/<layer>/<op> [rows, width] per tapped op of the graph, rows appended
// chunk by chunk, plus per-row provenance /rows/{position,chunk,decode,token}.
//
// Durability contract: end_chunk() first flushes the chunk's rows and provenance, then raises
// the root attribute rows_complete and flushes again. A process killed at any moment leaves a
// file that opens, says complete = 0, and holds correct data for rows [0, rows_complete).
// Rows of an unfinished chunk may be present past rows_complete; readers ignore them.
// A tapped op that was not recorded during a chunk reads as NaN for that chunk's rows.
// Not thread-safe (nor is the serial HDF5 library): one thread calls it at a time.
class DumpWriter final : public model::Tap {
 public:
  // Creates (truncates) path with every tap dataset the filter selects, empty, so the file shows
  // what will come. The metadata's model_config must describe graph (asserted); its
  // storage_dtype is set from storage; an empty `created` becomes now.
  // EnvironmentError naming path when its folder does not exist or it cannot be created.
  DumpWriter(const std::string& path, RunMetadata metadata, const model::Graph& graph, const TapFilter& filter,
             StorageType storage = StorageType::f32);
  // Without finish(), closes the file leaving complete = 0.
  ~DumpWriter() override;
  DumpWriter(const DumpWriter&) = delete;
  DumpWriter& operator=(const DumpWriter&) = delete;

  bool wants(const model::TapKey& key) const override;
  // value is [key.chunk.rows, width of the op], f32 or f64 (asserted); it becomes the rows of
  // the dataset after those of the finished chunks. Each op at most once per chunk (asserted).
  void record(const model::TapKey& key, const model::HostTensor& value) override;
  // tokens: the chunk.rows tokens fed in the chunk.
  void end_chunk(const model::ChunkInfo& chunk, std::span<const std::int32_t> tokens) override;
  // Writes the root attribute summary (JSON text), sets complete = 1 and closes the file.
  // No chunk may be open. Nothing may be recorded afterwards.
  void finish(const nlohmann::json& summary);

  const std::string& path() const { return path_; }
  std::int64_t rows() const { return static_cast<std::int64_t>(rows_); }  // rows of finished chunks

 private:
  struct TapDataset {
    model::TensorId id;
    hsize_t width = 0;
    hsize_t rows = 0;  // rows written so far
    h5::DataSet data;
  };
  struct Provenance {
    h5::DataSet position, chunk, decode, token;
  };

  void create_taps(const RunMetadata& metadata, const model::Graph& graph, const TapFilter& filter);
  void create_provenance();
  int slot(const model::TensorId& id) const;  // index into taps_, or -1
  // The values in the storage type: (memory type, pointer), converted into scratch when needed.
  std::pair<hid_t, const void*> stored(const model::HostTensor& value);
  void append_provenance(const model::ChunkInfo& chunk, std::span<const std::int32_t> tokens);
  void close();

  std::string path_;
  StorageType storage_;
  int n_layers_ = 0;
  std::optional<h5::File> file_;  // declared first: closed after the datasets below
  std::vector<TapDataset> taps_;  // graph order
  std::vector<int> slots_;        // (layer + 1) * kOpCount + op -> index into taps_, or -1
  std::optional<Provenance> provenance_;
  hsize_t rows_ = 0;     // rows of finished chunks
  int open_chunk_ = -1;  // index of the chunk being recorded; -1 between chunks
  std::vector<float> scratch_f32_;
  std::vector<double> scratch_f64_;
  std::vector<std::uint16_t> scratch_f16_;
};

}  // namespace tapdiff::dumps
