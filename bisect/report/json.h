#pragma once
// The JSON report of a comparison (the contract of issue 4, docs/tolerances.md "Reports"):
// verdict, first, culprit (null: two dumps cannot isolate), culprit_note, diagnosis, tokens, ops,
// plus the runs, the rows compared and the tolerances used.
#include <span>

#include <nlohmann/json.hpp>

#include "bisect/compare/comparator.h"
#include "bisect/judge/diagnosis.h"

namespace tapdiff::bisect {

nlohmann::json metrics_json(const Metrics& m);
// One op: layer, op, class, pass, metrics, tolerance, violations, worst, first_bad_position.
nlohmann::json op_json(const OpResult& op);
nlohmann::json report_json(const CompareResult& result, const std::vector<Diagnosis>& diagnoses);

}  // namespace tapdiff::bisect
