#pragma once
// What `tapdiff compare` and `tapdiff bisect` print of a finding: a one-line verdict, the culprit, a
// compact table of the first failing ops, the diagnoses and the tokens; ANSI colour only when
// asked (stdout is a TTY). And the progress lines of long comparisons and bisections (stderr, only
// on a TTY).
#include <string>

#include "bisect/compare/comparator.h"
#include "bisect/drive/bisect.h"
#include "bisect/judge/finding.h"

namespace tapdiff::bisect {

// "match: 92 ops within tolerance over 65 positions", or
// "diverged at layer 3 rope_q (rope): nmse 2.1e-3 > 1e-8, first at position 64 (chunk 1 start),
//  worst at position 71 head 5 channel 3: 0.8123 vs 0.441"
std::string verdict_line(const CompareResult& result);

// The whole terminal report, lines ending in '\n'. max_table: failing ops listed at most.
std::string terminal_report(const Finding& finding, bool color, std::size_t max_table = 8);

// "compare  34/92 ops  3/rope_q  1.21 GB read, 0.84 GB/s" (no newline).
std::string progress_line(const CompareProgress& progress, double seconds);
// "bisect free run  chunk 3/8" (no newline).
std::string bisect_progress_line(const BisectProgress& progress, double seconds);

}  // namespace tapdiff::bisect
