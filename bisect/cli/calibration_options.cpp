#include "bisect/cli/calibration_options.h"

#include "bisect/cli/option_checks.h"

namespace tapdiff::cli {

std::optional<bisect::Calibration> CalibrationOptions::calibration(model::Precision precision) const {
  if (off) return std::nullopt;
  return bisect::Calibration{k.value_or(model::default_k(precision)), min_floor};
}

void add_calibration_options(CLI::App& command, CalibrationOptions& options, const std::string& no_calibrate_help) {
  command.add_flag("--no-calibrate", options.off, no_calibrate_help);
  command
      .add_option("--k", options.k,
                  "Calibrated mode: an op diverges past k x its noise floor (default: B's precision's, "
                  "docs/tolerances.md)")
      ->check(finite_positive());
  command.add_option("--min-floor", options.min_floor, "Calibrated mode: the smallest floor NMSE trusted")
      ->check(finite_positive())
      ->capture_default_str();
}

}  // namespace tapdiff::cli
