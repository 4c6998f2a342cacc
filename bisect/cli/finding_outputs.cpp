#include "bisect/cli/finding_outputs.h"

#include <unistd.h>

#include <cstdio>

#include <fmt/core.h>

#include "bisect/cli/output_file.h"
#include "bisect/report/html.h"
#include "bisect/report/json.h"
#include "bisect/report/junit.h"
#include "bisect/report/terminal.h"

namespace tapdiff::cli {

void add_report_options(CLI::App& cmd, ReportFiles& files) {
  cmd.add_option("--json", files.json, "Write the full report as JSON");
  cmd.add_option("--junit", files.junit, "Write a JUnit XML report (one testcase per layer/op)");
  cmd.add_option("--html", files.html, "Write a self-contained HTML report");
}

void write_reports(const bisect::Finding& finding, const ReportFiles& files) {
  if (!files.json.empty()) write_text(files.json, "--json", bisect::report_json(finding).dump(2) + "\n");
  if (!files.junit.empty()) write_text(files.junit, "--junit", bisect::junit_xml(finding));
  if (!files.html.empty()) write_text(files.html, "--html", bisect::html_report(finding));
  fmt::print("{}", bisect::terminal_report(finding, ::isatty(STDOUT_FILENO) != 0));
  std::fflush(stdout);
}

}  // namespace tapdiff::cli
