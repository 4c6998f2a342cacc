// tapdiff: find where an LLM inference engine numerically parts from its reference.
// Exit codes: 0 success / match, 1 divergence, 2 bad input or usage, 3 environment failure.
#include <cstdio>
#include <exception>
#include <string>

#include <fmt/core.h>

#include "bisect/cli/commands.h"
#include "model/errors.h"

int main(int argc, char** argv) {
  CLI::App app{"tapdiff: find the first op where an inference engine parts from its reference", "tapdiff"};
  app.set_version_flag("--version", std::string(TAPDIFF_VERSION));
  app.require_subcommand(1);
  tapdiff::cli::CliContext context;
  for (int i = 0; i < argc; ++i) context.command_line += (i > 0 ? " " : "") + std::string(argv[i]);
  tapdiff::cli::add_synth_command(app, context);
  tapdiff::cli::add_run_command(app, context);
  tapdiff::cli::add_inspect_command(app, context);
  tapdiff::cli::add_compare_command(app, context);
  tapdiff::cli::add_bisect_command(app, context);
  tapdiff::cli::add_devices_command(app, context);
  tapdiff::cli::add_faults_command(app, context);
  tapdiff::cli::add_model_info_command(app, context);
  tapdiff::cli::add_validate_command(app, context);
  tapdiff::cli::add_tokenize_command(app, context);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const tapdiff::FormatError& e) {
    fmt::print(stderr, "tapdiff: error: {}\n", e.what());
    return 2;
  } catch (const tapdiff::UsageError& e) {
    fmt::print(stderr, "tapdiff: error: {}\n", e.what());
    return 2;
  } catch (const tapdiff::EnvironmentError& e) {
    fmt::print(stderr, "tapdiff: error: {}\n", e.what());
    return 3;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "tapdiff: error: out of host memory\n");
    return 3;
  } catch (const std::exception& e) {
    fmt::print(stderr, "tapdiff: internal error: {}\n", e.what());
    return 70;
  }
  return context.exit_code;
}
