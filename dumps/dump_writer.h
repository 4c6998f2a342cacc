#pragma once
// A tap that streams a run into an HDF5 dump (docs/dump-format.md), writing on a thread of its
// own so that the run loop only copies each tapped tensor.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dumps/dump_file.h"
#include "dumps/schema.h"
#include "dumps/tap_filter.h"
#include "dumps/write_queue.h"
#include "model/engine.h"

namespace tapdiff::dumps {

struct WriterOptions {
  StorageType storage = StorageType::f32;
  // 0: none; 1 (fastest) to 9 (smallest): HDF5's shuffle then deflate filters at this gzip level,
  // which every HDF5 reader (h5py included) decodes.
  int compress_level = 0;
  // The most memory that copies of tapped tensors waiting for the writer thread may take (with
  // the buffers recycled for them); a record() that would exceed it waits.
  std::size_t queue_bytes = std::size_t{512} << 20;
  // false: convert and write on the caller's thread inside record() and end_chunk(), as benchmarks
  // compare. Also what happens, whatever this says, when the HDF5 library is not thread-safe.
  bool background = true;
};

// Writes one dataset /taps/<layer>/<op> [rows, width] per tapped op of the graph, rows appended
// chunk by chunk, plus per-row provenance /rows/{position,chunk,decode,token}.
//
// record() copies the tensor into a queue (WriterOptions::queue_bytes) and returns; a writer
// thread converts it to the storage type and writes it, in order. end_chunk() queues the chunk's
// end; the writer thread then makes the chunk durable: it flushes the chunk's rows and provenance,
// then raises the root attribute rows_complete and flushes again. The first record() of the next
// chunk (or its end_chunk(), when it records nothing) waits until that is done, so a process
// killed at any moment leaves a file that opens, says complete = 0, and holds correct data for
// rows [0, rows_complete): every chunk but the one being recorded, and the one just ended until
// the next begins. Rows of an unfinished chunk may be present past rows_complete; readers ignore
// them. A tapped op that was not recorded during a chunk reads as NaN for that chunk's rows.
//
// An error of the writer thread (HDF5 failing to write, say) is rethrown, the same exception, by
// the next record(), end_chunk() or finish() on the caller's thread, and by every one after it;
// nothing more is written then. Not thread-safe itself: one thread calls it at a time.
class DumpWriter final : public model::Tap {
 public:
  // Creates (truncates) path with every tap dataset the filter selects, empty, so the file shows
  // what will come. The metadata's model_config must describe graph (asserted); its
  // storage_dtype and compression are set from options; an empty `created` becomes now.
  // EnvironmentError naming path when its folder does not exist, it cannot be created, or this
  // HDF5 cannot write the compression filters.
  DumpWriter(const std::string& path, RunMetadata metadata, const model::Graph& graph, const TapFilter& filter,
             const WriterOptions& options);
  DumpWriter(const std::string& path, RunMetadata metadata, const model::Graph& graph, const TapFilter& filter,
             StorageType storage = StorageType::f32);
  // Without finish(), writes what is queued (unless writing failed), then closes the file leaving
  // complete = 0. Never throws.
  ~DumpWriter() override;
  DumpWriter(const DumpWriter&) = delete;
  DumpWriter& operator=(const DumpWriter&) = delete;

  bool wants(const model::TapKey& key) const override;
  // value is [key.chunk.rows, width of the op], f32 or f64 (asserted); it becomes the rows of
  // the dataset after those of the earlier chunks. Each op at most once per chunk (asserted).
  void record(const model::TapKey& key, const model::HostTensor& value) override;
  // A dump stored as f16 takes f16 bits as they are (no conversion on either side); false for
  // the other storage types, which take the value through record().
  bool record_f16(const model::TapKey& key, const model::HalfRows& value) override;
  // tokens: the chunk.rows tokens fed in the chunk.
  void end_chunk(const model::ChunkInfo& chunk, std::span<const std::int32_t> tokens) override;
  // Waits for everything queued, writes the root attribute summary (JSON text), sets complete = 1
  // and closes the file. No chunk may be open. Nothing may be recorded afterwards.
  void finish(const nlohmann::json& summary);

  const std::string& path() const { return path_; }
  // The writer thread's time writing, and the caller's copying and waiting for it (write_queue.h).
  WriteQueue::Stats queue_stats() { return queue_.stats(); }
  // Rows of the chunks ended so far (durable once the writer thread has caught up).
  std::int64_t rows() const { return rows_; }

 private:
  int slot(const model::TensorId& id) const;  // index into taps_, or -1
  void start_chunk(int index);                // the first call of a chunk
  // Checks a recording of [rows, cols] for key and marks it recorded: the index into taps_.
  std::size_t claim(const model::TapKey& key, std::int64_t rows, std::int64_t cols);

  std::string path_;
  StorageType storage_;
  int n_layers_ = 0;
  std::vector<TapSpec> taps_;  // graph order
  std::vector<int> slots_;     // (layer + 1) * kOpCount + op -> index into taps_, or -1
  std::vector<int> recorded_;  // per tap: the chunk it was last recorded in, or -1
  std::int64_t rows_ = 0;      // rows of ended chunks
  int open_chunk_ = -1;        // index of the chunk being recorded; -1 between chunks
  bool finished_ = false;
  DumpFile file_;     // used by the writer thread alone while it runs
  WriteQueue queue_;  // declared last: its thread ends before file_ closes
};

}  // namespace tapdiff::dumps
