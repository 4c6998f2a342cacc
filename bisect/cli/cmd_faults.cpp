// tapdiff faults: the catalogue of bugs `--inject` plants in the vulkan engine (gpu/faults.h): for
// each, the op(s) where it first shows, the diagnosis tapdiff should give and the bug it mirrors.
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "bisect/cli/commands.h"
#include "gpu/faults.h"
#include "model/output_file.h"

namespace tapdiff::cli {
namespace {

std::vector<std::string_view> op_names(const gpu::FaultInfo& f) {
  std::vector<std::string_view> names;
  for (model::Op op : f.ops) names.push_back(model::op_name(op));
  return names;
}

nlohmann::json catalogue_json() {
  nlohmann::json faults = nlohmann::json::array();
  for (const gpu::FaultInfo& f : gpu::fault_catalogue())
    faults.push_back({{"name", f.name},
                      {"ops", op_names(f)},
                      {"class", model::op_class_name(f.op_class)},
                      {"diagnosis", f.diagnosis ? model::diagnosis_name(*f.diagnosis) : ""},
                      {"effect", f.effect},
                      {"mirrors", f.mirrors}});
  return {{"usage", "tapdiff run|bisect --engine vulkan --inject NAME[@LAYER][,NAME[@LAYER]...]"}, {"faults", faults}};
}

void print_catalogue() {
  fmt::print("Faults that --inject NAME[@LAYER][,...] plants in the vulkan engine (NAME alone: every layer)\n\n");
  for (const gpu::FaultInfo& f : gpu::fault_catalogue()) {
    const std::string ops = fmt::format("{} ({})", fmt::join(op_names(f), ", "), model::op_class_name(f.op_class));
    fmt::print("{:<18} shows in {:<28} diagnosis: {}\n", f.name, ops,
               f.diagnosis ? model::diagnosis_name(*f.diagnosis) : "none");
    fmt::print("    {}\n    mirrors: {}\n", f.effect, f.mirrors);
  }
}

}  // namespace

void add_faults_command(CLI::App& app, CliContext& context) {
  auto json = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("faults", "List the faults --inject can plant in the vulkan engine");
  cmd->add_option("--json", *json, "Write the catalogue as JSON");
  cmd->callback([json, &context] {
    print_catalogue();
    if (!json->empty()) model::write_text(*json, "--json", catalogue_json().dump(2) + "\n");
    context.exit_code = 0;
  });
}

}  // namespace tapdiff::cli
