#pragma once
// What a bisection's report adds to a comparison's: the token impact (each engine's greedy tokens,
// the top-k logits of both where they part, with their text, an early EOS), a batch's sequences
// one by one, and the time of each pass; in the terminal and the HTML, and in the JSON.
#include <string>

#include <nlohmann/json.hpp>

#include "bisect/judge/finding.h"

namespace tapdiff::bisect {

// The "tokens ...", "batch ..." and "layers ..." lines of the terminal report (also the HTML's).
std::string live_tokens_text(const CompareResult& run, const LiveRun& live);
// Sets command, tokens' top-k, EOS steps and texts, batch, layers_only and timings of a
// report_json object.
void add_live_json(nlohmann::json& report, const CompareResult& run, const LiveRun& live);

}  // namespace tapdiff::bisect
