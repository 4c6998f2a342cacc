#pragma once
// Reads a dump written by DumpWriter or by any writer following docs/dump-format.md (h5py).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "dumps/h5.h"
#include "dumps/imported_dump.h"
#include "dumps/schema.h"
#include "model/graph.h"
#include "model/host_tensor.h"

namespace tapdiff::dumps {

// Every key whose meaning differs between two model_config objects, "key: A value vs B value"
// joined by "; " (values quoted as bounded excerpts); "" when they mean the same model. Compared by
// meaning: the keys the reader parses (widths, block, rope_style, rotary_dim, experts) at the value
// they stand for, a field left out at its documented default (docs/dump-format.md); any other key
// only where both state it (left out, it is not said, not contradicted).
std::string config_differences(const nlohmann::json& a, const nlohmann::json& b);

class DumpReader {
 public:
  // Opens and checks the whole layout. UsageError when path does not exist or is not a regular
  // file (a directory, a FIFO: named, never opened); FormatError naming path when it is not HDF5,
  // not a tapdiff dump (no schema_version), of another schema version, or inconsistent with
  // itself: a tap of unknown op or misplaced layer, a width that does not match model_config,
  // fewer rows than rows(), provenance shorter than rows_complete (or, without it, of different
  // lengths), extents larger than the file can hold. A file that says complete = 0 and fails any
  // of these is reported as "incomplete dump", and so is an empty one.
  //
  // Guard::child_process: libhdf5 first reads the file in a child process (crash_guard.h) the way
  // this constructor does, walking every tap's chunk index too: a crash or hang there is
  // FormatError "corrupt dump". Guard::none reads in this process only: for a file that libhdf5
  // itself has just written (the fuzz target of the reader, where a memory error must surface).
  enum class Guard : std::uint8_t { child_process, none };
  explicit DumpReader(const std::string& path, Guard guard = Guard::child_process);
  // A dump an outside engine wrote as safetensors or .npz (a file or a folder of per-step files:
  // is_imported_dump; UsageError for anything else), imported through options' name map, for the
  // model options name (docs/import.md). Its metadata say so: engine "imported <format> (map
  // <name>)", compute_dtype empty (such files do not say what the engine computed in).
  DumpReader(const std::string& path, const ImportOptions& options);
  // What a reader of an imported dump should be told (arrays no rule maps, positions assumed).
  const std::vector<std::string>& notes() const { return notes_; }
  // The name map an imported dump was read through ("hf", "llama.cpp", a TOML file); "" for HDF5.
  const std::string& import_map() const { return import_map_; }

  const std::string& path() const { return path_; }
  // storage_dtype is what the taps' data hold (the narrowest element type of any tap), whatever the
  // attribute says; the attribute only stands in for a dump without taps.
  const RunMetadata& metadata() const { return metadata_; }
  const model::ModelConfig& config() const { return config_; }  // the fields widths need
  bool complete() const { return complete_; }                   // finish() ran; absent attribute: true
  // Rows that hold valid data: rows_complete when present, else the provenance length.
  std::int64_t rows() const { return rows_; }

  // Tapped op outputs in graph order (layer ascending, embed first, logits last).
  const std::vector<model::TensorId>& tensors() const { return tensors_; }
  bool has(const model::TensorId& id) const;
  // The type one tap's data are stored in ("bf16", "f16", "f32", "f64"): metadata().storage_dtype
  // where the taps are stored alike, the tap's own where an imported dump mixes types.
  std::string storage_dtype(const model::TensorId& id) const;
  // Rows [first_row, first_row + count) clamped to rows(): [n, width], f64 when stored as f64,
  // else f32 (f16 storage widens exactly). UsageError naming the file when id is not tapped.
  model::HostTensor read(const model::TensorId& id, std::int64_t first_row, std::int64_t count) const;

  // Per-row provenance, rows() entries each.
  const std::vector<std::int32_t>& positions() const { return positions_; }
  const std::vector<std::int32_t>& chunks() const { return chunks_; }
  const std::vector<std::uint8_t>& decode_flags() const { return decode_; }
  const std::vector<std::int32_t>& tokens() const { return tokens_; }
  const nlohmann::json& summary() const { return summary_; }  // null when absent

  // Every problem of the dump at once, one line each (tapdiff validate): what the constructor
  // refuses, each bad tap and /rows dataset on its own, and what reads but misleads (positions that
  // do not increase, tokens outside the vocabulary). Empty for a sound dump.
  static std::vector<std::string> problems_of(const std::string& path);

  // Why a and b do not describe the same run, or nullopt when they do: different models
  // (sha256, or model_config when a sha256 is empty), then different positions or tokens over
  // the rows both hold. One line naming both files.
  static std::optional<std::string> mismatch(const DumpReader& a, const DumpReader& b);

 private:
  // Reads (guarded), collecting every problem into problems instead of throwing at the first.
  DumpReader(const std::string& path, std::vector<std::string>& problems);
  static h5::File open_guarded(const std::string& path);
  void read_layout();  // everything but the file and complete_
  // Walks the chunk index of every tap (what reads would walk), calling heartbeat after each.
  void walk_chunk_indexes(const std::function<void()>& heartbeat) const;
  void check_schema_version() const;
  void read_provenance();
  void read_taps();
  // Returns the element type's bytes (2, 4 or 8), or 0 for a problem collected.
  std::size_t check_tap(const model::TensorId& id, const h5::DataSet& data);
  void check_rows();  // what reads but misleads, collected only
  // FormatError(message), or, when collecting, message appended; returns 0.
  std::size_t problem(std::string message);

  void import_from(const ImportedDump& imported, const ImportOptions& options);

  std::string path_;
  std::optional<h5::File> file_;                  // an HDF5 dump
  std::shared_ptr<const ImportedDump> imported_;  // or an imported one
  std::vector<std::string> notes_;
  std::string import_map_;
  RunMetadata metadata_;
  model::ModelConfig config_;
  bool complete_ = true;
  std::int64_t rows_ = 0;
  std::vector<model::TensorId> tensors_;
  std::vector<std::pair<model::TensorId, std::size_t>> tap_bytes_;  // an HDF5 dump's: each tap's value bytes
  std::vector<std::int32_t> positions_, chunks_, tokens_;
  std::vector<std::uint8_t> decode_;
  nlohmann::json summary_;
  std::vector<std::string>* problems_ = nullptr;  // collecting instead of throwing (problems_of)
};

}  // namespace tapdiff::dumps
