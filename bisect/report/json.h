#pragma once
// The JSON report of a finding (docs/tolerances.md): verdict, first, culprit (with
// culprit_note instead where two dumps alone cannot isolate it), isolation, local, diagnosis,
// tokens, ops, plus the runs, the rows compared and the tolerances used; a bisection adds its
// token impact, batch and timings.
#include <span>

#include <nlohmann/json.hpp>

#include "bisect/compare/comparator.h"
#include "bisect/judge/finding.h"

namespace tapdiff::bisect {

nlohmann::json metrics_json(const Metrics& m);
// One op: layer, op, class, pass, metrics, tolerance, violations, worst, first_bad_position.
nlohmann::json op_json(const OpResult& op);
nlohmann::json report_json(const Finding& finding);

}  // namespace tapdiff::bisect
