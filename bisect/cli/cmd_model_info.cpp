// tapdiff model-info: what a dump of a model must carry, as JSON on stdout: its model_config (the
// dump's root attribute, as tapdiff writes it), the weights' sha256 and path, and every tap a run
// records, in graph order, with its width. Writers outside tapdiff (python/tapdiff) read it.
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "bisect/cli/commands.h"
#include "bisect/cli/model_source.h"
#include "formats/load_model.h"
#include "model/graph.h"

namespace tapdiff::cli {

void add_model_info_command(CLI::App& app, CliContext& context) {
  auto model = std::make_shared<std::string>(kDefaultModel);
  auto load = std::make_shared<formats::LoadOptions>();
  CLI::App* cmd = app.add_subcommand(
      "model-info", "Print a model's dump metadata as JSON: model_config, sha256, and every tap with its width");
  cmd->add_option("--model", *model, "GGUF file, Hugging Face folder, or synth:SHAPE[:DTYPE]")->capture_default_str();
  add_load_options(*cmd, *load);
  cmd->callback([model, load, &context] {
    const auto m = open_model(*model, *load);
    const model::Graph graph(m->config());
    nlohmann::json taps = nlohmann::json::array();
    for (const model::Step& step : graph.steps())
      taps.push_back({{"layer", step.layer}, {"op", model::op_name(step.op)}, {"width", graph.width(step.output())}});
    const nlohmann::json info{{"model_config", model::to_json(m->config())},
                              {"model_sha256", m->sha256()},
                              {"model_path", m->path().string()},
                              {"taps", std::move(taps)}};
    fmt::print("{}\n", info.dump(2));
    context.exit_code = 0;
  });
}

}  // namespace tapdiff::cli
