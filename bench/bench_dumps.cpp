// What tapping costs: one prompt through the reference engine untapped, then with every op dumped
// in several ways (storage type, compression, writer thread or the caller's), the modes measured
// interleaved, median of several runs each: wall seconds, and CPU seconds of all threads, which
// other load on a shared machine disturbs less. Prints the machine and a Markdown table.
//   tapdiff_bench_dumps [--model SPEC] [--tokens 3072] [--chunk 0] [--repeats 5] [--threads 2] [--dir DIR]
// The default model is a synthetic Llama (dim 512, 8 layers, 8/4 heads, FFN 1408, vocab 4096) whose
// every-op f32 taps of 3072 tokens come to 1.0 GB.
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "bench/bench_support.h"
#include "bench/timed_run.h"
#include "bisect/cli/model_source.h"
#include "dumps/dump_writer.h"
#include "formats/load_model.h"
#include "formats/synth.h"
#include "model/runner.h"
#include "reference/cpu_engine.h"

namespace {

namespace dumps = tapdiff::dumps;
namespace formats = tapdiff::formats;
namespace model = tapdiff::model;
using tapdiff::bench::cpu_model;
using tapdiff::bench::median;
using tapdiff::bench::TimedRun;

// The default model: small enough to run a long prompt in seconds on two cores, wide enough that
// its taps are large (328 KB per token).
std::filesystem::path default_model(const std::filesystem::path& dir) {
  formats::SynthOptions options;
  model::ModelConfig& c = options.config;
  c.n_layers = 8, c.dim = 512, c.n_heads = 8, c.n_kv_heads = 4, c.head_dim = 64, c.ffn_dim = 1408;
  c.vocab = 4096, c.context_length = 4096, c.bos_token = 1, c.eos_token = 2;
  const std::filesystem::path path = dir / fmt::format("bench-dumps-{}.gguf", formats::synth_digest(options));
  if (!std::filesystem::exists(path)) formats::write_synth_model(path, options);
  return path;
}

struct Mode {
  std::string name;
  std::optional<dumps::WriterOptions> dump;  // none: untapped
};

}  // namespace

int main(int argc, char** argv) {
  std::string model_spec;
  std::string dir = std::filesystem::temp_directory_path() / "tapdiff-bench-dumps";
  int tokens = 3072, chunk = 0, repeats = 5, threads = 2;
  CLI::App app{"Cost of dumping every op"};
  app.add_option("--model", model_spec, "Model (file, folder or synth:SHAPE); default: the 1 GB-of-taps synth model");
  app.add_option("--tokens", tokens, "Prompt tokens")->capture_default_str();
  app.add_option("--chunk", chunk, "Prefill chunk size (0 = the whole prompt)")->capture_default_str();
  app.add_option("--repeats", repeats, "Runs per mode")->capture_default_str();
  app.add_option("--threads", threads, "Engine threads")->capture_default_str();
  app.add_option("--dir", dir, "Where the dumps (and the default model) are written")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::filesystem::create_directories(dir);
  const auto m = model_spec.empty() ? formats::load_model(default_model(dir)) : tapdiff::cli::open_model(model_spec);
  const auto engine = tapdiff::reference::make_cpu_engine(*m, {model::Precision::f32, threads});
  const model::Graph graph(m->config());
  const std::vector<std::int32_t> prompt = tapdiff::bench::spread_prompt(tokens, m->config().vocab);
  model::RunOptions options;
  options.chunk = chunk;

  using dumps::StorageType;
  const std::vector<Mode> modes = {
      {"untapped", std::nullopt},
      {"f32, writer thread", dumps::WriterOptions{}},
      {"f32, caller's thread", dumps::WriterOptions{.background = false}},
      {"f16, writer thread", dumps::WriterOptions{.storage = StorageType::f16}},
      {"f32 + compress 1, writer thread", dumps::WriterOptions{.compress_level = 1}},
      {"f32 + compress 1, caller's thread", dumps::WriterOptions{.compress_level = 1, .background = false}},
  };
  std::int64_t row_values = 0;
  for (const model::Step& step : graph.steps()) row_values += graph.width(step.output());
  const auto& c = m->config();
  fmt::print("model: {} ({} layers, dim {}, heads {}/{}, ffn {}, vocab {})\n",
             model_spec.empty() ? "default synth" : model_spec, c.n_layers, c.dim, c.n_heads, c.n_kv_heads, c.ffn_dim,
             c.vocab);
  fmt::print("prompt: {} tokens, chunk {}; every op tapped = {:.3f} GB of f32\n", tokens, chunk,
             4e-9 * static_cast<double>(row_values) * tokens);
  fmt::print("machine: {}, {} hardware threads; engine: {}; dumps in {}\n", cpu_model(),
             std::thread::hardware_concurrency(), engine->device(), dir);
  fmt::print("{} runs per mode, interleaved, after one untapped warm-up run\n\n", repeats);

  const std::filesystem::path dump = std::filesystem::path(dir) / fmt::format("bench-{}.h5", ::getpid());
  // One run of the prompt in a mode, the writer's creation and finish() included.
  auto run_once = [&](const Mode& mode) {
    return tapdiff::bench::timed_run(*engine, graph, *m, prompt, options, mode.dump, dump);
  };
  run_once(modes[0]);  // pages the weights in
  std::vector<std::vector<TimedRun>> samples(modes.size());
  for (int r = 0; r < repeats; ++r)
    for (std::size_t i = 0; i < modes.size(); ++i) {
      samples[i].push_back(run_once(modes[i]));
      fmt::print(stderr, "run {} {}: {:.2f} s, CPU {:.2f} s\n", r, modes[i].name, samples[i].back().seconds,
                 samples[i].back().cpu_seconds);
    }

  auto median_of = [](const std::vector<TimedRun>& runs, double TimedRun::*field) {
    std::vector<double> values;
    for (const TimedRun& x : runs) values.push_back(x.*field);
    return median(values);
  };
  const double untapped = median_of(samples[0], &TimedRun::seconds);
  fmt::print("| mode | median s | x untapped | CPU s | dump bytes | MB/s written |\n|---|---|---|---|---|---|\n");
  for (std::size_t i = 0; i < modes.size(); ++i) {
    const double seconds = median_of(samples[i], &TimedRun::seconds);
    const std::uintmax_t bytes = samples[i].front().dump_bytes;
    fmt::print("| {} | {:.2f} | {:.2f} | {:.2f} | {} | {} |\n", modes[i].name, seconds, seconds / untapped,
               median_of(samples[i], &TimedRun::cpu_seconds), bytes,
               bytes > 0 ? fmt::format("{:.0f}", 1e-6 * static_cast<double>(bytes) / seconds) : "-");
  }
  return 0;
}
