#pragma once
// The subcommands of the tapdiff binary. Each adds itself to the app; its callback stores the
// process exit code in the context (0 ok, 1 divergence) and throws for bad input.
#include <string>

#include <CLI/CLI.hpp>

namespace tapdiff::cli {

struct CliContext {
  std::string command_line;  // the whole invocation, recorded in dumps and reports
  int exit_code = 0;
};

void add_synth_command(CLI::App& app, CliContext& context);
void add_run_command(CLI::App& app, CliContext& context);
void add_inspect_command(CLI::App& app, CliContext& context);
void add_compare_command(CLI::App& app, CliContext& context);
void add_bisect_command(CLI::App& app, CliContext& context);
void add_devices_command(CLI::App& app, CliContext& context);
void add_faults_command(CLI::App& app, CliContext& context);
void add_model_info_command(CLI::App& app, CliContext& context);
void add_validate_command(CLI::App& app, CliContext& context);
void add_tokenize_command(CLI::App& app, CliContext& context);

}  // namespace tapdiff::cli
