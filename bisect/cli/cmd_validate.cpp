// tapdiff validate: every problem of a dump at once, one line each; exit 0 when there is none,
// 2 otherwise (the dump would be refused, or would mislead a comparison).
#include <fmt/core.h>

#include "bisect/cli/commands.h"
#include "dumps/dump_reader.h"

namespace tapdiff::cli {

void add_validate_command(CLI::App& app, CliContext& context) {
  auto path = std::make_shared<std::string>();
  CLI::App* cmd =
      app.add_subcommand("validate", "List every problem of a dump at once (exit 0: none; 2: some), for writers");
  cmd->add_option("dump", *path, "The dump (HDF5)")->required();
  cmd->callback([path, &context] {
    const std::vector<std::string> problems = dumps::DumpReader::problems_of(*path);
    for (const std::string& p : problems) fmt::print("{}\n", p);
    if (problems.empty()) fmt::print("{}: no problem found\n", *path);
    context.exit_code = problems.empty() ? 0 : 2;
  });
}

}  // namespace tapdiff::cli
