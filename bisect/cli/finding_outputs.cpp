#include "bisect/cli/finding_outputs.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include "bisect/report/html.h"
#include "bisect/report/json.h"
#include "bisect/report/junit.h"
#include "bisect/report/terminal.h"
#include "model/errors.h"
#include "model/output_file.h"

namespace tapdiff::cli {

void add_report_options(CLI::App& cmd, ReportFiles& files) {
  cmd.add_option("--json", files.json, "Write the full report as JSON");
  cmd.add_option("--junit", files.junit, "Write a JUnit XML report (one testcase per layer/op)");
  cmd.add_option("--html", files.html, "Write a self-contained HTML report");
}

void refuse_reports_over_inputs(const ReportFiles& files, std::initializer_list<std::string> inputs) {
  namespace fs = std::filesystem;
  const auto resolved = [](const std::string& path) {
    std::error_code ec;
    const fs::path p = fs::weakly_canonical(path, ec);
    return ec ? fs::absolute(path) : p;
  };
  std::vector<std::pair<std::string, fs::path>> outputs;
  for (const auto& [option, path] :
       {std::pair<std::string, std::string>{"--json", files.json}, {"--junit", files.junit}, {"--html", files.html}}) {
    if (path.empty()) continue;
    const fs::path out = resolved(path);
    for (const auto& [other, earlier] : outputs)
      if (earlier == out) throw UsageError(fmt::format("{} {}: {} writes that file too", option, path, other));
    for (const std::string& input : inputs) {
      if (input.empty()) continue;
      const fs::path in = resolved(input);
      const auto [end, _] = std::mismatch(in.begin(), in.end(), out.begin(), out.end());
      if (in == out || (end == in.end() && fs::is_directory(in)))
        throw UsageError(fmt::format(
            "{} {}: expected a file that is none of the inputs, found {}", option, path,
            in == out ? fmt::format("the input {}", input) : fmt::format("a file inside the input {}", input)));
    }
    outputs.emplace_back(option, out);
  }
}

void write_reports(const bisect::Finding& finding, const ReportFiles& files) {
  if (!files.json.empty()) model::write_text(files.json, "--json", bisect::report_json(finding).dump(2) + "\n");
  if (!files.junit.empty()) model::write_text(files.junit, "--junit", bisect::junit_xml(finding));
  if (!files.html.empty()) model::write_text(files.html, "--html", bisect::html_report(finding));
  fmt::print("{}", bisect::terminal_report(finding, ::isatty(STDOUT_FILENO) != 0));
  std::fflush(stdout);
}

}  // namespace tapdiff::cli
