#pragma once
// What `tapdiff compare` prints: a one-line verdict, a compact table of the first failing ops, the
// diagnoses and the generated tokens; ANSI colour only when asked (stdout is a TTY). And the
// progress line for long comparisons (stderr, only on a TTY).
#include <optional>
#include <string>
#include <vector>

#include "bisect/compare/comparator.h"
#include "bisect/judge/diagnosis.h"

namespace tapdiff::bisect {

// "match: 92 ops within tolerance over 65 positions", or
// "diverged at layer 3 rope_q (rope): nmse 2.1e-3 > 1e-8, first at position 64 (chunk 1 start),
//  worst at position 71 head 5 channel 3: 0.8123 vs 0.441"
std::string verdict_line(const CompareResult& result);

// What the bisect adds to the report: lines right after the verdict (the culprit), and its own
// token lines in place of the compare's.
struct TerminalExtras {
  std::string after_verdict;
  std::optional<std::string> tokens;
};

// The whole terminal report, lines ending in '\n'. max_table: failing ops listed at most.
std::string terminal_report(const CompareResult& result, const std::vector<Diagnosis>& diagnoses, bool color,
                            std::size_t max_table = 8, const TerminalExtras& extras = {});

// "compare  34/92 ops  3/rope_q  1.21 GB read, 0.84 GB/s" (no newline).
std::string progress_line(const CompareProgress& progress, double seconds);

}  // namespace tapdiff::bisect
