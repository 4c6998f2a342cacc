#pragma once
// Cheap diagnoses of where in the tensor a divergence lives, from what a comparison keeps (per-row
// errors, per-head and per-channel sums, provenance). Each is a named code with its evidence; the
// catalogue and the exact tests are in docs/tolerances.md.
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bisect/compare/comparator.h"
#include "bisect/drive/bisect.h"
#include "bisect/drive/local_check.h"
#include "model/diagnosis_code.h"

namespace tapdiff::bisect {

struct Diagnosis {
  model::DiagnosisCode code;
  std::string text;         // one sentence with the evidence
  nlohmann::json evidence;  // the numbers behind it
};

// Diagnoses of one op's comparison (the symptom: the first op past tolerance). Empty when it passes.
// In a batch: whether only some sequences break the tolerance, then the per-position diagnoses
// over the rows of the sequence where the op first breaks it.
// config: the model's RoPE layout (rope-frequency).
std::vector<Diagnosis> diagnose_op(const OpResult& op, std::span<const RowInfo> rows, const model::ModelConfig& config);

// Diagnoses of a whole comparison: those of the first failing op, and non-finite values in any op.
std::vector<Diagnosis> diagnose(const CompareResult& result);

// Diagnoses of a comparison isolated on B's own inputs (compare --model): those of the culprit's
// local error, then the comparison's not already given, whether the symptom inherits its error, and
// an error that no single op owns (accumulated).
std::vector<Diagnosis> diagnose(const CompareResult& result, const LocalCheck& local);

// Diagnoses of an in-process bisection: those of the culprit's local error (where the op itself is
// wrong), then those of the symptom not already given, whether the symptom inherits its error, an
// error that no single op owns (accumulated), and an early EOS of engine B.
std::vector<Diagnosis> diagnose(const BisectResult& result);

// Spearman's rank correlation of x and y (average ranks for ties); 0 when either is constant or
// fewer than two values.
double spearman(std::span<const double> x, std::span<const double> y);

}  // namespace tapdiff::bisect
