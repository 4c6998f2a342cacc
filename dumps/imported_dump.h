#pragma once
// A dump an outside engine wrote as safetensors or .npz (docs/import.md): one file holding every
// row, or a folder of one file per forward pass (a prefill chunk or a decode step, in the order of
// their names, numbers compared as numbers). Each array is [rows, width] (leading dimensions of
// one and a split of the width into heads are accepted); its name becomes a tap through a NameMap;
// the per-row token ids are required, positions and decode flags optional. Values are read from
// the mapped files when asked for, never all at once.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "dumps/array_file.h"
#include "dumps/name_map.h"
#include "model/config.h"
#include "model/graph.h"
#include "model/host_tensor.h"

namespace tapdiff::dumps {

// What an imported dump does not carry itself: how its names map, and the model it ran.
struct ImportOptions {
  NameMap map = preset_map("tapdiff");
  nlohmann::json model_config;  // model::to_json of the model (--model, or the other dump's)
  std::string model_sha256;     // "" when the model is known by its config only
  std::string model_path;
};

// Whether path is a dump to import: a folder holding .safetensors or .npz files, or a file whose
// first bytes are safetensors' or zip's.
bool is_imported_dump(const std::filesystem::path& path);

class ImportedDump {
 public:
  // FormatError naming the file and the array for anything that cannot be read as taps of the
  // model (an op the model's graph lacks, a shape that is not [rows, width], a tap missing from
  // some steps, an element type that is not a float, no token ids).
  ImportedDump(const std::filesystem::path& path, const ImportOptions& options, const model::ModelConfig& config);
  ~ImportedDump();
  ImportedDump(const ImportedDump&) = delete;
  ImportedDump& operator=(const ImportedDump&) = delete;

  const std::vector<model::TensorId>& tensors() const { return tensors_; }  // graph order
  std::int64_t rows() const { return static_cast<std::int64_t>(positions_.size()); }
  const std::vector<std::int32_t>& positions() const { return positions_; }
  const std::vector<std::int32_t>& chunks() const { return chunks_; }
  const std::vector<std::uint8_t>& decode_flags() const { return decode_; }
  const std::vector<std::int32_t>& tokens() const { return tokens_; }
  std::string storage_dtype() const;  // the coarsest float type of the taps: "bf16", "f16", "f32", "f64"
  std::string storage_dtype(const model::TensorId& id) const;  // the same of one tap
  std::string format() const;                                  // "safetensors", "npz", "folder of N npz files", ...
  // What a reader should be told: arrays no rule maps, positions or decode flags assumed.
  const std::vector<std::string>& notes() const { return notes_; }

  // Rows [first_row, first_row + count) clamped to rows(): f64 when the arrays are f64, else f32.
  model::HostTensor read(const model::TensorId& id, std::int64_t first_row, std::int64_t count) const;

 private:
  // One step's piece of a tap: the array (and its partner for a sum), the column range it holds.
  struct Segment {
    const ArrayFile* file = nullptr;
    const NamedArray* array = nullptr;
    const NamedArray* partner = nullptr;
    std::int64_t first_row = 0, rows = 0;  // in the dump
    std::int64_t width = 0, column = 0;    // the array's row width; where this tap's columns start
    int heads = 0;                         // > 0: the array holds [heads, rows, width / heads] (NameMap::heads_first)
    const NamedArray* order = nullptr;     // expert ids in choice order: each row read sorted by them (MapRule::order)
  };
  void read_step(const ArrayFile& file, int step);
  std::int64_t step_rows(const ArrayFile& file, int step);
  // Adds the taps an array holds (none, and a note, for a name the map does not know); returns the
  // name of the second half it was summed with, or "".
  std::string add_array(const ArrayFile& file, const NamedArray& array, std::int64_t first_row, std::int64_t rows);
  void note_unmapped(const std::string& name);  // an array name the map does not know, once
  void note_mixed_storage();
  // The coarsest float type of some segments' arrays ("f32" for none).
  static std::string coarsest_type(std::span<const std::vector<Segment>> taps);
  // FormatError naming the shape, and `hint`, where the array is not [rows, width] (leading ones
  // and the width split into trailing dimensions allowed).
  std::int64_t row_width(const ArrayFile& file, const NamedArray& array, std::int64_t rows, std::int64_t width,
                         std::string_view hint = "") const;
  // FormatError naming the file, the row and its ids when a row of moe_ids is not ascending (of
  // idx_ids: ascending before the -1s it may end with).
  void check_choice_order(const model::TensorId& id) const;

  std::filesystem::path path_;
  ImportOptions options_;
  model::ModelConfig config_;
  model::Graph graph_;
  std::vector<std::unique_ptr<ArrayFile>> files_;
  std::vector<model::TensorId> tensors_;
  std::vector<std::vector<Segment>> segments_;  // per tensors_ entry, in row order
  std::vector<std::int32_t> positions_, chunks_, tokens_;
  std::vector<std::uint8_t> decode_;
  std::vector<std::string> notes_;
  std::vector<std::string> unmapped_;  // in the order first seen, for the note
  std::set<std::string> unmapped_names_;
  bool positions_assumed_ = false;
  bool decode_assumed_ = false;
};

}  // namespace tapdiff::dumps
