#include "bisect/cli/dump_input.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "model/errors.h"

namespace tapdiff::cli {

void add_dump_input_options(CLI::App& cmd, DumpInputOptions& options) {
  cmd.add_option("--map", options.map,
                 fmt::format("How a safetensors or .npz dump's array names become taps: {} or a TOML map file "
                             "(docs/import.md)",
                             fmt::join(dumps::preset_names(), ", ")))
      ->capture_default_str();
}

std::unique_ptr<dumps::DumpReader> open_dump(const std::string& path, const DumpInputOptions& options,
                                             const model::Model* model, const dumps::DumpReader* other) {
  std::error_code error;
  if (!std::filesystem::exists(path, error) || !dumps::is_imported_dump(path))
    return std::make_unique<dumps::DumpReader>(path);
  dumps::ImportOptions import;
  const auto presets = dumps::preset_names();
  const bool preset = std::find(presets.begin(), presets.end(), options.map) != presets.end();
  import.map = !preset && std::filesystem::is_regular_file(options.map, error) ? dumps::map_from_toml(options.map)
                                                                               : dumps::preset_map(options.map);
  if (model != nullptr) {
    import.model_config = model::to_json(model->config());
    import.model_sha256 = model->sha256();
    import.model_path = model->path().string();
  } else if (other != nullptr) {
    import.model_config = other->metadata().model_config;
    import.model_sha256 = other->metadata().model_sha256;
    import.model_path = other->metadata().model_path;
  } else {
    throw UsageError(
        fmt::format("{}: a safetensors or .npz dump carries no model: give --model (the model it ran)", path));
  }
  auto reader = std::make_unique<dumps::DumpReader>(path, import);
  for (const std::string& note : reader->notes()) fmt::print(stderr, "note: {}\n", note);
  return reader;
}

}  // namespace tapdiff::cli
