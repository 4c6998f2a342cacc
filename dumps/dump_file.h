#pragma once
// The HDF5 side of a dump being written (docs/dump-format.md): the file, its tap and provenance
// datasets, and the chunk-by-chunk durability protocol. DumpWriter decides what is tapped and
// drives this from its writer thread (or the caller's); one thread at a time uses it.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dumps/chunk_encoder.h"
#include "dumps/h5.h"
#include "dumps/schema.h"
#include "model/engine.h"

namespace tapdiff::dumps {

// A tapped op output: its dataset /taps/<layer>/<op> is [rows, width].
struct TapSpec {
  model::TensorId id;
  std::int64_t width = 0;
};

// HDF5 keeps its error stack, and whether to print it, per thread: a thread that writes a dump
// calls this first, so failures reach us only as exceptions (h5.h does it for the main thread).
void quiet_hdf5_errors_on_this_thread();

// "none" or "shuffle+gzip-<level>": the dump's `compression` attribute for a gzip level (0: none).
std::string compression_name(int level);

class DumpFile {
 public:
  // Creates (truncates) path with metadata at its root, complete = 0, rows_complete = 0, and one
  // empty tap dataset per spec, in order (metadata.kernels names their kernels). compress_level
  // 1-9: tap datasets go through HDF5's shuffle then deflate filters at that gzip level.
  // EnvironmentError naming path when its folder does not exist, it cannot be created, or this
  // HDF5 cannot write the filters compression needs.
  DumpFile(const std::string& path, const RunMetadata& metadata, const std::vector<TapSpec>& taps, StorageType storage,
           int compress_level);
  // Closes the file as it is: complete = 0 unless finish() ran. Errors cannot be reported here.
  ~DumpFile();
  DumpFile(const DumpFile&) = delete;
  DumpFile& operator=(const DumpFile&) = delete;

  // values: rows (those of the open chunk) x the width of taps[slot], row-major, of type scalar;
  // converted to the storage type, they become the rows of the dataset after those of the ended
  // chunks.
  void write_tap(std::size_t slot, model::Scalar scalar, std::int64_t rows, std::span<const std::byte> values);
  // The same for f16 bit patterns into a dump stored as f16: written as they are, unconverted.
  void write_tap_f16(std::size_t slot, std::int64_t rows, std::span<const std::byte> bits);
  // Makes the open chunk durable: taps not written in it get NaN rows (the fill value), the
  // provenance is appended, the file flushed, then rows_complete raised and flushed again.
  void end_chunk(const model::ChunkInfo& chunk, std::span<const std::int32_t> tokens);
  // Writes summary (JSON text), sets complete = 1 and closes the file.
  void finish(const nlohmann::json& summary);

 private:
  struct TapDataset {
    hsize_t width = 0;
    hsize_t chunk_rows = 0;  // rows of one HDF5 chunk
    hsize_t rows = 0;        // rows written so far
    h5::DataSet data;
  };
  struct Provenance {
    h5::DataSet position, chunk, decode, token;
  };

  void create_taps(const RunMetadata& metadata, const std::vector<TapSpec>& taps, int compress_level);
  void create_provenance();
  // The values in the storage type: (memory type, pointer), converted into scratch when needed.
  std::pair<hid_t, const void*> stored(model::Scalar scalar, std::span<const std::byte> values);
  // Extends taps[slot] by `rows` and writes them: `values` elements of memory_type at data, which
  // is the storage type (stored()'s result). Whole HDF5 chunks go to the file as they are (encoded
  // first when compressed).
  void append_tap_rows(std::size_t slot, std::int64_t rows, std::size_t values, hid_t memory_type, const void* data);
  void append_provenance(const model::ChunkInfo& chunk, std::span<const std::int32_t> tokens);

  std::string path_;
  StorageType storage_;
  std::optional<h5::File> file_;  // declared first: closed after the datasets below
  std::vector<TapDataset> taps_;  // in the order of the specs
  std::optional<Provenance> provenance_;
  hsize_t rows_ = 0;  // rows of the chunks made durable
  std::vector<float> scratch_f32_;
  std::vector<double> scratch_f64_;
  std::vector<std::uint16_t> scratch_f16_;
  std::optional<ChunkEncoder> encoder_;  // compressed tap datasets: each chunk shuffled and deflated here
};

}  // namespace tapdiff::dumps
