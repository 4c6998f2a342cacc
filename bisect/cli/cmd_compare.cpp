// tapdiff compare: compare dump B against reference dump A op by op, offline and streaming, under
// tolerances; exit 0 when every op is within tolerance, 1 on a divergence, 2 for bad input.
#include <unistd.h>

#include <cstdio>

#include <fmt/core.h>

#include "bisect/cli/commands.h"
#include "bisect/cli/output_file.h"
#include "bisect/cli/progress_line.h"
#include "bisect/comparator.h"
#include "bisect/diagnosis.h"
#include "bisect/report_html.h"
#include "bisect/report_json.h"
#include "bisect/report_junit.h"
#include "bisect/report_terminal.h"
#include "dumps/dump_reader.h"
#include "model/errors.h"

namespace tapdiff::cli {
namespace {

struct CompareArgs {
  std::string a, b;
  std::string tolerances;
  std::string json, junit, html;
  std::string taps = "all";
  std::int64_t max_rows = 0;
};

int compare(const CompareArgs& args) {
  // Everything that can be refused is checked before the long part: the tolerance file first.
  const bisect::Tolerances tolerances =
      args.tolerances.empty() ? bisect::Tolerances() : bisect::Tolerances::from_file(args.tolerances);
  const dumps::DumpReader a(args.a);
  const dumps::DumpReader b(args.b);
  bisect::CompareOptions options;
  options.taps = dumps::TapFilter(args.taps);
  options.max_rows = args.max_rows;
  bisect::CompareResult result;
  {
    ProgressLine progress;
    options.progress = [&progress](const bisect::CompareProgress& p) {
      progress.update([&p](double seconds) { return bisect::progress_line(p, seconds); }, p.done == p.total);
    };
    result = bisect::compare_dumps(a, b, tolerances, options);
  }
  const std::vector<bisect::Diagnosis> diagnoses = bisect::diagnose(result);
  if (!args.json.empty()) write_text(args.json, "--json", bisect::report_json(result, diagnoses).dump(2) + "\n");
  if (!args.junit.empty()) write_text(args.junit, "--junit", bisect::junit_xml(result));
  if (!args.html.empty()) write_text(args.html, "--html", bisect::html_report(result, diagnoses));
  fmt::print("{}", bisect::terminal_report(result, diagnoses, ::isatty(STDOUT_FILENO) != 0));
  std::fflush(stdout);
  return result.match() ? 0 : 1;
}

}  // namespace

void add_compare_command(CLI::App& app, CliContext& context) {
  auto args = std::make_shared<CompareArgs>();
  CLI::App* cmd = app.add_subcommand(
      "compare", "Compare dump B against reference dump A op by op under tolerances (exit 0 match, 1 diverged)");
  cmd->add_option("a", args->a, "Reference dump (HDF5)")->required();
  cmd->add_option("b", args->b, "Dump to check against it (HDF5)")->required();
  cmd->add_option("--tolerances", args->tolerances, "TOML tolerance file (docs/tolerances.md); default: built-in");
  cmd->add_option("--json", args->json, "Write the full report as JSON");
  cmd->add_option("--junit", args->junit, "Write a JUnit XML report (one testcase per layer/op)");
  cmd->add_option("--html", args->html, "Write a self-contained HTML report");
  cmd->add_option("--taps", args->taps, "Which ops to compare: all, layers, or a regex over LAYER/OP")
      ->capture_default_str();
  cmd->add_option("--max-rows", args->max_rows, "Compare at most N positions (0 = all)")->check(CLI::NonNegativeNumber);
  cmd->callback([args, &context] { context.exit_code = compare(*args); });
}

}  // namespace tapdiff::cli
