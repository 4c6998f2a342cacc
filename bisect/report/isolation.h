#pragma once
// The reports of an isolation, whichever way it ran: `tapdiff bisect` (engine B's ops on A's
// inputs) or `tapdiff compare --model` (the reference on B's own inputs, bisect/drive/local_check.h).
// The culprit, the symptom's own error, every op's local error, in the terminal and the JSON.
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bisect/compare/comparator.h"
#include "bisect/drive/local_check.h"

namespace tapdiff::bisect {

struct Isolation {
  const CompareResult& run;                  // the end-to-end comparison: its first op is the symptom
  std::span<const OpResult> local;           // every op's local error, graph order
  std::optional<std::size_t> culprit;        // index into local of the first op past its tolerance
  std::optional<std::size_t> symptom_local;  // index into local of the symptom op, when it was checked
  LocalInputs inputs;                        // whose inputs the local errors are on
  bool batch = false;                        // rows of several sequences
  // Ops that could not be checked for want of taps (compare --model), and the taps that would
  // decide them: then "no op is past its tolerance" is no verdict that the error accumulates.
  std::size_t unchecked_ops = 0;
  std::vector<std::string> missing_taps;

  bool symptom_is_culprit() const { return symptom_local && culprit && *symptom_local == *culprit; }
};

// "layer 3 rope_q (rope)".
std::string op_title(const OpResult& op);
// "" on a match; else the culprit, or why there is none.
std::string culprit_text(const Isolation& isolation);
// "" without a symptom checked locally; else whether the symptom is itself wrong or inherits.
std::string symptom_text(const Isolation& isolation);
// The "culprit  ...", "symptom  ..." lines of the terminal report ("" on a match).
std::string isolation_lines(const Isolation& isolation);
// The culprit and symptom paragraphs of the HTML report ("" on a match).
std::string isolation_html(const Isolation& isolation);
// Sets culprit, isolation, local and local_positions of a report_json object (erasing
// culprit_note); local_positions: the rows the local errors were measured on.
void add_isolation_json(nlohmann::json& report, const Isolation& isolation, std::size_t local_positions);

}  // namespace tapdiff::bisect
