#pragma once
// The reports of a finding's isolation, whichever way it ran: `tapdiff bisect` (engine B's ops on
// A's inputs) or `tapdiff compare --model` (the reference on B's own inputs,
// bisect/drive/local_check.h). The culprit, the symptom's own error, every op's local error, in the
// terminal, the HTML and the JSON. `run`: the end-to-end comparison, whose first op is the symptom.
#include <string>

#include <nlohmann/json.hpp>

#include "bisect/compare/comparator.h"
#include "bisect/judge/finding.h"

namespace tapdiff::bisect {

// "layer 3 rope_q (rope)".
std::string op_title(const OpResult& op);
// "" on a match; else the culprit, or why there is none.
std::string culprit_text(const CompareResult& run, const Isolation& isolation);
// "" without a symptom checked locally; else whether the symptom is itself wrong or inherits.
std::string symptom_text(const CompareResult& run, const Isolation& isolation);
// The "culprit  ...", "symptom  ..." lines of the terminal report ("" on a match).
std::string isolation_lines(const CompareResult& run, const Isolation& isolation);
// The culprit and symptom paragraphs of the HTML report ("" on a match).
std::string isolation_html(const CompareResult& run, const Isolation& isolation);
// Sets culprit, isolation, local and local_positions of a report_json object.
void add_isolation_json(nlohmann::json& report, const CompareResult& run, const Isolation& isolation);

}  // namespace tapdiff::bisect
