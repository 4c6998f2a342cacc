#pragma once
// The dump schema (docs/dump-format.md): its version, the names of its datasets and
// attributes, and the run metadata every dump carries at its root.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/graph.h"

namespace tapdiff::dumps {
namespace h5 {
class Group;
}

inline constexpr int kSchemaVersion = 1;

// Paths and attribute names, written and read only through these.
namespace names {
inline constexpr const char* kTaps = "taps";                   // /taps/<layer>/<op>: [rows, width]
inline constexpr const char* kRows = "rows";                   // /rows/*: one entry per row
inline constexpr const char* kPosition = "position";           // int32: position in the sequence
inline constexpr const char* kChunk = "chunk";                 // int32: ChunkInfo::index
inline constexpr const char* kDecode = "decode";               // uint8: 1 for a decode step
inline constexpr const char* kToken = "token";                 // int32: token fed at the row
inline constexpr const char* kPromptTokens = "prompt_tokens";  // /prompt_tokens: int32
inline constexpr const char* kSchemaVersion = "schema_version";
inline constexpr const char* kComplete = "complete";
inline constexpr const char* kRowsComplete = "rows_complete";
inline constexpr const char* kSummary = "summary";
inline constexpr const char* kModelConfig = "model_config";
inline constexpr const char* kStorageDtype = "storage_dtype";
inline constexpr const char* kCompression = "compression";
// Per tap dataset.
inline constexpr const char* kLayer = "layer";
inline constexpr const char* kOp = "op";
inline constexpr const char* kClass = "class";
inline constexpr const char* kKernel = "kernel";
}  // namespace names

// How tap values are stored on disk; whatever the engine computed in.
enum class StorageType : std::uint8_t { f32, f64, f16 };
std::string_view storage_name(StorageType type);                      // "f32", "f64", "f16"
std::optional<StorageType> storage_from_name(std::string_view name);  // nullopt when unknown
// The bytes of one stored value of a dump's storage_dtype: an imported dump may store bf16 (2) or
// what no StorageType names (counted as 4).
std::size_t stored_value_bytes(std::string_view storage_dtype);

// What produced a dump: the root attributes (and /prompt_tokens).
struct RunMetadata {
  std::string tool_version;                    // "0.1.0"
  std::string engine;                          // "ref", "vulkan", "pytorch"
  std::string device;                          // "CPU (Eigen, 2 threads)", GPU name
  std::string compute_dtype;                   // "f32", "f64", "f16"
  std::map<std::string, std::string> kernels;  // op name -> kernel variant that ran it
  std::string model_path;
  std::string model_sha256;     // hex; empty when unknown
  nlohmann::json model_config;  // model::to_json(ModelConfig)
  std::vector<std::int32_t> prompt_tokens;
  int chunk_size = 0;  // prefill chunk size in tokens; 0 = whole prompt
  std::string command_line;
  std::string created;        // ISO 8601 UTC, "2024-05-01T12:34:56Z"
  std::string storage_dtype;  // f32 | f64 | f16
  std::string compression;    // filters of the tap datasets: "none", "shuffle+gzip-<level>"; "" when absent
};

// Now, as ISO 8601 UTC to the second.
std::string utc_now_iso8601();

// "/taps/<layer>/<op>", e.g. "/taps/-1/embed".
std::string tap_path(const model::TensorId& id);

// The model config a dump names, as far as the widths of tap datasets need it
// (n_layers, dim, n_heads, n_kv_heads, head_dim, ffn_dim, vocab). FormatError("<source>: ...")
// when a field is missing or not a positive integer, or when they fail ModelConfig::validate.
model::ModelConfig config_from_json(const nlohmann::json& config, const std::string& source);

// Writes the root attributes of metadata (all but complete, rows_complete, summary) and
// /prompt_tokens.
void write_metadata(const h5::Group& root, const RunMetadata& metadata);
// Reads them back. schema_version must be checked first; model_config is required (a JSON
// object), the other attributes read as empty/0 when absent. FormatError naming the file.
RunMetadata read_metadata(const h5::Group& root);

}  // namespace tapdiff::dumps
