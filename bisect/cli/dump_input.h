#pragma once
// Opening a dump named on the command line: tapdiff's HDF5, or a safetensors / .npz dump of an
// outside engine (a file or a folder of per-step files) imported through --map for the model it
// ran (docs/import.md).
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "dumps/dump_reader.h"
#include "model/weights.h"

namespace tapdiff::cli {

struct DumpInputOptions {
  std::string map = "tapdiff";  // a preset (dumps::preset_names) or a TOML map file
};
void add_dump_input_options(CLI::App& cmd, DumpInputOptions& options);

// Opens `path`. An imported dump's model is `model` (--model), else the one `other` (an HDF5 dump
// of the same run) names; UsageError when neither is given. Its notes go to stderr.
std::unique_ptr<dumps::DumpReader> open_dump(const std::string& path, const DumpInputOptions& options,
                                             const model::Model* model, const dumps::DumpReader* other = nullptr);

}  // namespace tapdiff::cli
