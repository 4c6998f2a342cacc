#pragma once
// The outputs of a finding that compare and bisect let the user choose: the terminal report
// (always), and --json, --junit and --html files.
#include <initializer_list>
#include <string>

#include <CLI/CLI.hpp>

#include "bisect/judge/finding.h"

namespace tapdiff::cli {

struct ReportFiles {
  std::string json, junit, html;  // "": not written
};

// --json, --junit, --html.
void add_report_options(CLI::App& cmd, ReportFiles& files);

// UsageError where --json, --junit or --html names one of `inputs` (or a file inside an input
// folder), or two of them one file: the report would overwrite what the command reads. Checked
// before the command's work.
void refuse_reports_over_inputs(const ReportFiles& files, std::initializer_list<std::string> inputs);

// Writes the chosen files, then prints the terminal report (in colour on a TTY).
void write_reports(const bisect::Finding& finding, const ReportFiles& files);

}  // namespace tapdiff::cli
