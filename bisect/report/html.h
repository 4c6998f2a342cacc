#pragma once
// One self-contained HTML page for people (no network, no scripts, no external fonts): the
// verdict, the diagnoses, a heatmap of log10 NMSE per layer x op (inline SVG), the error per
// position of the first bad op (inline SVG; the worst op when all match), the failing ops and the
// metadata of both runs.
#include <string>
#include <vector>

#include "bisect/compare/comparator.h"
#include "bisect/judge/diagnosis.h"

namespace tapdiff::bisect {

// culprit_html: the bisect's culprit and token sections (HTML); empty for compare, which says why
// it cannot isolate a culprit.
std::string html_report(const CompareResult& result, const std::vector<Diagnosis>& diagnoses,
                        const std::string& culprit_html = {});

// The pieces, each an <svg> element.
std::string heatmap_svg(const CompareResult& result);
std::string position_plot_svg(const OpResult& op, std::span<const RowInfo> rows);

}  // namespace tapdiff::bisect
