#pragma once
// Reads Hugging Face model folders: config.json plus model.safetensors, or
// model.safetensors.index.json and its shards.
// A safetensors file is: u64 LE header length N, N bytes of JSON
// {name: {dtype, shape, data_offsets: [begin, end)}, "__metadata__": {str: str}}, then the data;
// offsets count from the end of the header. Every offset is checked against the file size; a bad
// file gives a one-line FormatError naming the file, what was expected and what was found.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/config.h"
#include "model/dtype.h"
#include "model/weights.h"

namespace tapdiff::model {
class MappedFile;
}  // namespace tapdiff::model

namespace tapdiff::formats {

struct SafetensorsTensor {
  std::string name;
  std::string dtype_name;             // as in the file: "F32", "BF16", "I8", ...
  std::optional<model::DType> dtype;  // F32, F16, BF16; nullopt for the types a model cannot use
  std::vector<std::int64_t> shape;    // row-major, last dimension contiguous
  std::span<const std::byte> bytes;   // inside the mapping
};

class SafetensorsFile {
 public:
  // Maps and parses `path`: FormatError for a bad file, EnvironmentError if it cannot be read.
  explicit SafetensorsFile(const std::filesystem::path& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::filesystem::path& path() const { return path_; }
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }  // in header order
  const SafetensorsTensor* find(std::string_view name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // Hands the mapping over (to a Model); tensors' bytes stay valid as long as it lives.
  std::unique_ptr<model::MappedFile> release_mapping();

 private:
  void check_data_layout(std::span<const std::byte> data) const;
  void parse_entry(const std::string& name, const nlohmann::json& entry, std::span<const std::byte> data);
  std::filesystem::path path_;
  std::unique_ptr<model::MappedFile> file_;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

// The ModelConfig a Hugging Face config.json describes (FormatError naming `source` for a
// missing or mistyped key). tied_output is tie_word_embeddings only: the reader also ties when
// lm_head.weight is absent. Not validated: the caller calls validate().
model::ModelConfig hf_config(const nlohmann::json& config, const std::string& source);

// Loads a Llama-family model from a Hugging Face folder. The folder carries no tokenizer here:
// the model's vocabulary stays empty.
std::unique_ptr<model::Model> read_safetensors(const std::filesystem::path& folder);

}  // namespace tapdiff::formats
