// The reference's own noise floor: the same model and tokens through the f64 ("golden") and the
// f32 reference, compared op by op. Prints a Markdown table: per op, the worst layer's NMSE,
// max relative error and max |a-b| (a = f64).
//   tapdiff_noise_floor [--model SPEC] (--prompt T | --tokens L | --prompt-file F) [--chunk N]
#include <map>

#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "bisect/cli/model_source.h"
#include "bisect/cli/prompt_input.h"
#include "bisect/compare/metrics.h"
#include "model/memory_tap.h"
#include "model/runner.h"
#include "reference/cpu_engine.h"

using namespace tapdiff;

int main(int argc, char** argv) {
  std::string model_spec = "synth:small";
  cli::PromptOptions prompt_options;
  int chunk = 0;
  CLI::App app{"f32 vs f64 reference, op by op"};
  app.add_option("--model", model_spec)->capture_default_str();
  cli::add_prompt_options(app, prompt_options);
  app.add_option("--chunk", chunk, "Prefill chunk size (0 = whole prompt)");
  CLI11_PARSE(app, argc, argv);

  const auto m = cli::open_model(model_spec);
  const auto prompt = cli::resolve_prompt(prompt_options, cli::load_tokenizer(prompt_options, *m));
  const model::Graph graph(m->config());
  model::RunOptions options;
  options.chunk = chunk;
  model::MemoryTap golden, f32;
  model::run_sequence(*reference::make_cpu_engine(*m, {model::Precision::f64, 0}), graph, prompt, options, golden);
  model::run_sequence(*reference::make_cpu_engine(*m, {model::Precision::f32, 0}), graph, prompt, options, f32);

  struct Worst {
    bisect::Metrics metrics;
    int layer = 0;
  };
  std::map<int, Worst> per_op;  // by op index, in graph order
  for (const model::Step& step : graph.steps()) {
    const bisect::Metrics mt = bisect::compare(golden.get(step.output()), f32.get(step.output()));
    Worst& w = per_op[static_cast<int>(step.op)];
    if (mt.nmse >= w.metrics.nmse) w = {mt, step.layer};
  }
  fmt::print("model {}, {} tokens, chunk {}: f32 reference vs f64 reference\n\n", model_spec, prompt.size(),
             chunk > 0 ? chunk : static_cast<int>(prompt.size()));
  fmt::print("| op | class | worst layer | NMSE | max rel | max abs |\n|---|---|---|---|---|---|\n");
  for (const auto& [op_index, w] : per_op) {
    const auto op = static_cast<model::Op>(op_index);
    fmt::print("| {} | {} | {} | {:.2e} | {:.2e} | {:.2e} |\n", model::op_name(op),
               model::op_class_name(model::op_class(op)), w.layer, w.metrics.nmse, w.metrics.max_rel,
               w.metrics.max_abs);
  }
  return 0;
}
