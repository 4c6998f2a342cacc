#pragma once
// --repro DIR: the culprit's case (bisect/drive/repro_case.h) as files for the engine's own suite:
//   case.safetensors  inputs, K/V rows, weights, positions, tokens, output.reference (f64) and
//                     output.engine; metadata: op, layer, pass, the tolerance and its source, the
//                     engine's metrics, the model's config (JSON)
//   check.py, kernel.py          the check in Python (numpy only) and the kernel you fill in
//   check.c, kernel.c, repro.h   the same in C99
//   README.md                    what the case is and how to run the checks
// Each check replays the engine's output (fails as tapdiff found) or the reference's (passes), or
// calls the kernel.
#include <filesystem>
#include <string>

#include "bisect/drive/repro_case.h"

namespace tapdiff::bisect {

// What the case came from, for its metadata and README.
struct ReproSource {
  std::string model;      // the model's path
  std::string engine;     // engine B: its dump, or the engine a bisection ran
  std::string reference;  // what computed output.reference: "ref (f64)", ...
  std::string config;     // model::to_json of the model's config, as text
};

// UsageError before any work when dir exists and holds anything but the files a repro writes (or
// is no folder): tapdiff does not write over files it did not create.
void check_repro_dir(const std::filesystem::path& dir);

// Writes the case's files into dir (made when missing); UsageError naming a file that cannot be written.
void write_repro(const ReproCase& repro, const ReproSource& source, const std::filesystem::path& dir);

}  // namespace tapdiff::bisect
