// Reference engine speed: prefill of T tokens and decode steps on a model (default: a
// TinyLlama-1.1B-shaped f32 synth model), median of several runs. Prints a Markdown table.
//   tapdiff_bench_reference [--model SPEC] [--prompt-tokens 128] [--decode-steps 16] [--repeats 5] [--threads 2]
#include <chrono>
#include <thread>
#include <vector>

#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "bench/bench_support.h"
#include "bisect/cli/model_source.h"
#include "model/runner.h"
#include "reference/cpu_engine.h"

namespace {

using Clock = std::chrono::steady_clock;
using tapdiff::bench::largest;
using tapdiff::bench::median;
using tapdiff::bench::smallest;

}  // namespace

int main(int argc, char** argv) {
  std::string model_spec = "synth:tinyllama";
  int prompt_tokens = 128, decode_steps = 16, repeats = 5, threads = 2;
  CLI::App app{"Reference engine benchmark"};
  app.add_option("--model", model_spec, "Model (file, folder or synth:SHAPE)")->capture_default_str();
  app.add_option("--prompt-tokens", prompt_tokens)->capture_default_str();
  app.add_option("--decode-steps", decode_steps)->capture_default_str();
  app.add_option("--repeats", repeats)->capture_default_str();
  app.add_option("--threads", threads)->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  const auto t_load = Clock::now();
  const auto m = tapdiff::cli::open_model(model_spec);
  const auto engine = tapdiff::reference::make_cpu_engine(*m, {tapdiff::model::Precision::f32, threads});
  const tapdiff::model::Graph graph(m->config());
  const double load_s = std::chrono::duration<double>(Clock::now() - t_load).count();

  std::vector<std::int32_t> prompt(static_cast<std::size_t>(prompt_tokens));
  for (std::size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<std::int32_t>(3 + (i * 7919) % 1000);
  tapdiff::model::NullTap tap;
  tapdiff::model::RunOptions options;
  options.generate = decode_steps + 1;  // the first generated token needs no decode step
  std::vector<double> prefill, decode;
  for (int r = 0; r <= repeats; ++r) {
    const auto result = tapdiff::model::run_sequence(*engine, graph, prompt, options, tap);
    if (r == 0) continue;  // warm-up: pages the weights in
    prefill.push_back(prompt_tokens / result.prefill_seconds);
    decode.push_back(1e3 * result.decode_seconds / result.decode_steps);
  }
  const auto& c = m->config();
  fmt::print("model: {} ({} layers, dim {}, heads {}/{}, ffn {}, vocab {}), load {:.1f} s\n", model_spec, c.n_layers,
             c.dim, c.n_heads, c.n_kv_heads, c.ffn_dim, c.vocab, load_s);
  fmt::print("engine: {}; {} repeats after 1 warm-up; hardware threads {}\n\n", engine->device(), repeats,
             std::thread::hardware_concurrency());
  fmt::print("| measure | median | min | max |\n|---|---|---|---|\n");
  fmt::print("| prefill T={} (tokens/s) | {:.1f} | {:.1f} | {:.1f} |\n", prompt_tokens, median(prefill),
             smallest(prefill), largest(prefill));
  fmt::print("| decode (ms/token, {} steps) | {:.1f} | {:.1f} | {:.1f} |\n", decode_steps, median(decode),
             smallest(decode), largest(decode));
  return 0;
}
