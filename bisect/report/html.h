#pragma once
// One self-contained HTML page of a finding for people (no network, no scripts, no external fonts):
// the verdict, the culprit, a bisection's tokens, the diagnoses, a heatmap of log10 NMSE per layer
// x op (inline SVG), the error per position of the first bad op (inline SVG; the worst op when all
// match), the failing ops and the metadata of both runs.
#include <span>
#include <string>

#include "bisect/compare/comparator.h"
#include "bisect/judge/finding.h"

namespace tapdiff::bisect {

std::string html_report(const Finding& finding);

// The pieces, each an <svg> element.
std::string heatmap_svg(const CompareResult& result);
std::string position_plot_svg(const OpResult& op, std::span<const RowInfo> rows);

}  // namespace tapdiff::bisect
