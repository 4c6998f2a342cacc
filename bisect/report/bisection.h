#pragma once
// The reports of `tapdiff bisect`: the comparison's reports (report_json, report_terminal,
// report_html) plus the culprit, the symptom's own (local) error, every op's local error and the
// token impact with the text of the top-k tokens.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bisect/drive/bisect.h"
#include "bisect/judge/diagnosis.h"

namespace tapdiff::bisect {

// The text of a token id ("" when there is no tokenizer).
using TokenText = std::function<std::string(std::int32_t)>;

nlohmann::json bisect_json(const BisectResult& result, const std::vector<Diagnosis>& diagnoses, const TokenText& text);
std::string bisect_terminal_report(const BisectResult& result, const std::vector<Diagnosis>& diagnoses,
                                   const TokenText& text, bool color);
std::string bisect_html(const BisectResult& result, const std::vector<Diagnosis>& diagnoses, const TokenText& text);

// "bisect free run  chunk 3/8" (no newline).
std::string bisect_progress_line(const BisectProgress& progress, double seconds);

}  // namespace tapdiff::bisect
