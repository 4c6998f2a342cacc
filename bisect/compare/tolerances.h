#pragma once
// How far engine B may be from reference A, per op: bounds on the comparison metrics, looked up
// by (layer, op) and the precision B computes in. From a TOML file (docs/tolerances.md), from the
// built-in defaults, or calibrated from a measured noise floor (f64 reference vs the reference in
// B's precision). Pure data and lookups: no I/O besides reading the file.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bisect/compare/metrics.h"
#include "model/graph.h"
#include "model/precision.h"

namespace tapdiff::bisect {

// Bounds on metrics; a metric left out is not checked. Non-finite mismatches (a NaN/Inf in one
// run where the other has a finite value or another non-finite) always fail, whatever the bounds.
struct Bound {
  std::optional<double> nmse;        // NMSE <= nmse
  std::optional<double> max_abs;     // max |a - b| <= max_abs
  std::optional<double> max_rel;     // max |a - b| / max(|a|, row RMS of a) <= max_rel
  std::optional<double> min_cosine;  // cosine >= min_cosine
  friend bool operator==(const Bound&, const Bound&) = default;
};

// The bound an op is held to and where it came from, for reports:
// "built-in f32 default", "tol.toml:12 [op.rope_q]", "tol.toml:20 [[rule]] #2", "calibrated ...".
struct Tolerance {
  Bound bound;
  std::string source;
};

// One bound a metric broke: "nmse 2.1e-03 > 1e-08".
struct Violation {
  std::string metric;  // nmse | max_abs | max_rel | cosine | nonfinite
  double value = 0;
  double bound = 0;
  std::string text() const;
};

// The bounds m breaks, in the order nonfinite, nmse, max_abs, max_rel, cosine; empty = within.
std::vector<Violation> check(const Bound& bound, const Metrics& m);

// Inclusive layer range of a rule: "5" = [5, 5], "0-3" = [0, 3], "10-" = [10, inf).
struct LayerRange {
  int first = 0;
  int last = 0;  // kOpen: no upper end
  static constexpr int kOpen = 1 << 30;
  bool contains(int layer) const { return layer >= first && layer <= last; }
};
// nullopt when text is not one of the three forms above (non-negative decimals, first <= last).
std::optional<LayerRange> parse_layer_range(std::string_view text);

// Calibrated mode: op (layer, op) fails when its NMSE > k * max(floor NMSE, min_floor_nmse),
// where floor is the error of the reference in B's precision against the f64 reference.
struct Calibration {
  double k = 100;
  // Below this a measured floor is not trusted (an exact op has floor 0): about the NMSE of
  // rounding every element once to f32 (u^2/3 with u = 2^-24 is 1.2e-15), times ten.
  double min_floor_nmse = 1e-14;
};
Bound calibrated_bound(const Metrics& floor, const Calibration& calibration);

class Tolerances {
 public:
  // One [[rule]]: every selector it sets must match.
  struct Rule {
    std::optional<model::Op> op;
    std::optional<model::OpClass> cls;
    std::optional<LayerRange> layers;
    std::optional<model::Precision> dtype;
    Tolerance tolerance;
  };

  // The built-in defaults only (see builtin_bound).
  Tolerances() = default;
  // Parses a tolerance file. UsageError when path cannot be read; FormatError
  // "<path>:<line>:<col>: <key>: <what was expected>, found <what>" for bad TOML, unknown keys,
  // unknown op/class names, bad layer ranges or dtypes, negative or non-numeric bounds.
  static Tolerances from_file(const std::string& path);
  // The same from text; source names it in errors and in Tolerance::source.
  static Tolerances from_toml(std::string_view text, const std::string& source);

  // The built-in bound of a precision (nmse only: model/precision.def). Reasoning in
  // docs/tolerances.md.
  static Bound builtin_bound(model::Precision precision);

  // The tolerance of one tensor when B computes in `precision`. A calibrated floor for the tensor
  // wins; else the most specific entry of the file (docs/tolerances.md); else the built-in default
  // of builtin (nullopt: precision). The entry found is used whole: metrics it leaves out are
  // unchecked.
  Tolerance lookup(const model::TensorId& id, model::Precision precision,
                   std::optional<model::Precision> builtin = std::nullopt) const;

  // Calibrated mode. Floors may be added at any time (the in-process bisect measures them live);
  // a tensor without a floor falls back to the table lookup above.
  void set_calibration(const Calibration& calibration) { calibration_ = calibration; }
  void set_floor(const model::TensorId& id, const Metrics& floor);
  bool has_floor(const model::TensorId& id) const;
  const std::optional<Calibration>& calibration() const { return calibration_; }
  // Tolerances whose every floored tensor is held to k times its floor.
  static Tolerances calibrated(const std::vector<std::pair<model::TensorId, Metrics>>& floors,
                               const Calibration& calibration = {});

  // The parsed tables, for tests and reports.
  const std::optional<Tolerance>& default_entry() const { return default_; }
  const std::map<model::OpClass, Tolerance>& class_entries() const { return classes_; }
  const std::map<model::Op, Tolerance>& op_entries() const { return ops_; }
  const std::vector<Rule>& rules() const { return rules_; }
  const std::string& source() const { return source_; }  // the file, or "" for built-in

 private:
  friend class TomlLoader;
  const Rule* best_rule(const model::TensorId& id, model::Precision precision) const;

  std::string source_;
  std::optional<Tolerance> default_;
  std::map<model::OpClass, Tolerance> classes_;
  std::map<model::Op, Tolerance> ops_;
  std::vector<Rule> rules_;  // file order
  std::optional<Calibration> calibration_;
  std::map<std::pair<int, model::Op>, Metrics> floors_;  // (layer, op) -> measured floor
};

// "nmse <= 1e-08, max_rel <= 0.001" or "unchecked" (only non-finite values fail).
std::string describe(const Bound& bound);

}  // namespace tapdiff::bisect
