#pragma once
// The calibrated-tolerance options that `bisect` and `compare --model` share: --no-calibrate, --k
// and --min-floor (docs/tolerances.md).
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "bisect/compare/tolerances.h"

namespace tapdiff::cli {

struct CalibrationOptions {
  bool off = false;         // --no-calibrate
  std::optional<double> k;  // --k; default: the precision's (model/precision.def)
  double min_floor = bisect::Calibration{}.min_floor_nmse;

  // The calibration asked for, for an engine B in `precision`; nullopt with --no-calibrate.
  std::optional<bisect::Calibration> calibration(model::Precision precision) const;
};

// Adds --no-calibrate (its help: no_calibrate_help), --k and --min-floor (finite, > 0).
void add_calibration_options(CLI::App& command, CalibrationOptions& options, const std::string& no_calibrate_help);

}  // namespace tapdiff::cli
