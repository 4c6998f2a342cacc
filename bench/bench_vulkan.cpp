// Vulkan engine speed, kernel variants side by side: prefill of each prompt length in one chunk,
// decode steps after a prompt, and what tapping every op into an HDF5 dump costs. One engine per
// variant (a --kernels choice, or a model of several: the same shape stored in other types), all
// made up front; every round runs each variant in turn (rounds after one warm-up round), so the
// ratios compare runs taken side by side. Prints Markdown; with --markdown FILE
// also writes it into FILE between the markers of --section (bench_support.h).
//   tapdiff_bench_vulkan --model SPEC[;SPEC...] [--dtype f16] [--prompt-tokens 512,2048] [--variants
//   "auto;attention=two-pass"]
//                        [--decode-prompt 512] [--decode-steps 32] [--tap-tokens 512] [--repeats 3]
//                        [--profile] [--pipeline-stats] [--markdown docs/benchmarks.md --section NAME]
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "bench/bench_support.h"
#include "bench/op_profile.h"
#include "bench/pipeline_statistics.h"
#include "bench/timed_run.h"
#include "bisect/cli/model_source.h"
#include "dumps/dump_writer.h"
#include "gpu/vulkan_engine.h"
#include "model/comma_list.h"
#include "model/errors.h"
#include "model/runner.h"

namespace {

namespace bench = tapdiff::bench;
namespace dumps = tapdiff::dumps;
namespace model = tapdiff::model;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

struct Variant {
  std::string kernels;  // --kernels of the engine; "auto" = none forced
  std::string label;    // in the tables: the kernels, or the model spec when several models run
  const model::Model* model;
  const model::Graph* graph;
  std::unique_ptr<tapdiff::gpu::VulkanEngine> engine;
};

std::string stats(const std::vector<double>& v, const char* format) {
  return fmt::format("{} ({} - {})", fmt::format(fmt::runtime(format), bench::median(v)),
                     fmt::format(fmt::runtime(format), bench::smallest(v)),
                     fmt::format(fmt::runtime(format), bench::largest(v)));
}

}  // namespace

int main(int argc, char** argv) try {
  std::string model_spec, dtype = "f16", prompt_list = "512,2048", variant_list = "auto", device, markdown, section;
  std::string dump_dir = std::filesystem::temp_directory_path() / "tapdiff-bench-vulkan";
  int decode_prompt = 512, decode_steps = 32, tap_tokens = 512, repeats = 3;
  bool profile = false, pipeline_stats = false;
  CLI::App app{"Vulkan engine benchmark: prefill, decode and taps, kernel variants side by side"};
  app.add_option("--model", model_spec,
                 "Model (file, folder or synth:SHAPE[:TYPE]); several ';'-separated, of one vocabulary, run side by "
                 "side as the variants")
      ->required();
  app.add_option("--dtype", dtype, "Compute dtype of the engine: f32 or f16")->capture_default_str();
  app.add_option("--prompt-tokens", prompt_list, "Prefill prompt lengths (comma-separated)")->capture_default_str();
  app.add_option("--variants", variant_list, "--kernels of each engine, ';'-separated ('auto': none forced)")
      ->capture_default_str();
  app.add_option("--decode-prompt", decode_prompt, "Prompt before the decode steps")->capture_default_str();
  app.add_option("--decode-steps", decode_steps, "Decode steps timed (0: none)")->capture_default_str();
  app.add_option("--tap-tokens", tap_tokens, "Prompt of the tapped runs (0: none)")->capture_default_str();
  app.add_option("--dump-dir", dump_dir, "Where the tapped runs write their dumps")->capture_default_str();
  app.add_option("--repeats", repeats, "Rounds after the warm-up round")->capture_default_str();
  app.add_option("--device", device, "Vulkan device (index or name substring)");
  app.add_flag("--profile", profile, "Also profile the decode run op by op with device timestamps");
  app.add_flag("--pipeline-stats", pipeline_stats,
               "Also list the driver's statistics of each kernel (VK_KHR_pipeline_executable_properties)");
  app.add_option("--markdown", markdown, "Also write the result into this Markdown file");
  app.add_option("--section", section, "The section's name in --markdown (default: DEVICE-MODEL-DTYPE)");
  CLI11_PARSE(app, argc, argv);
  if (dtype != "f16" && dtype != "f32") throw tapdiff::UsageError("--dtype: expected f32 or f16, found " + dtype);

  const auto load_start = Clock::now();
  std::vector<std::unique_ptr<model::Model>> models;
  std::vector<std::unique_ptr<model::Graph>> graphs;
  for (const std::string_view spec : model::split_commas(model_spec, ';')) {
    models.push_back(tapdiff::cli::open_model(std::string(spec)));
    graphs.push_back(std::make_unique<model::Graph>(models.back()->config()));
    if (models.back()->config().vocab != models.front()->config().vocab)
      throw tapdiff::UsageError("--model: the models run side by side must share a vocabulary size");
  }
  const std::vector<std::string_view> kernel_choices = model::split_commas(variant_list, ';');
  if (models.size() > 1 && kernel_choices.size() > 1)
    throw tapdiff::UsageError("--variants: one kernel choice when several models are the variants");
  if (models.size() > 1 && profile) throw tapdiff::UsageError("--profile: one model at a time");
  const auto specs = model::split_commas(model_spec, ';');
  std::vector<Variant> variants;
  for (std::size_t i = 0; i < std::max(models.size(), kernel_choices.size()); ++i) {
    const std::string_view v = kernel_choices[std::min(i, kernel_choices.size() - 1)];
    const std::size_t mi = std::min(i, models.size() - 1);
    tapdiff::gpu::VulkanEngineOptions options;
    options.device = device;
    options.f16 = dtype == "f16";
    options.kernels = v == "auto" ? "" : std::string(v);
    options.validation = false;
    options.pipeline_statistics = pipeline_stats;
    variants.push_back({std::string(v), models.size() > 1 ? std::string(specs[mi]) : std::string(v), models[mi].get(),
                        graphs[mi].get(), tapdiff::gpu::make_vulkan_engine(*models[mi], options)});
  }
  const model::Model* m = models.front().get();
  const model::Graph& graph = *graphs.front();
  const double load_s = seconds_since(load_start);
  const auto& info = variants.front().engine->device_info();
  const auto& c = m->config();
  std::vector<int> prompts;
  for (const std::string_view p : model::split_commas(prompt_list)) prompts.push_back(std::stoi(std::string(p)));

  std::string out = fmt::format(
      "Machine: {}; CPU {} ({} hardware threads); {}.\n\n"
      "Model `{}`: {} layers, dim {}, {}/{} heads of {}, FFN {}, vocab {}; `--dtype {}`, {:.2f} GB of weights on "
      "the device; {} engine(s) made in {:.1f} s.\n\n",
      variants.front().engine->device(), bench::cpu_model(), std::thread::hardware_concurrency(), bench::today(),
      model_spec, c.n_layers, c.dim, c.n_heads, c.n_kv_heads, c.head_dim, c.ffn_dim, c.vocab, dtype,
      1e-9 * static_cast<double>(variants.front().engine->stats().weight_bytes), variants.size(), load_s);
  if (models.size() > 1) {
    out += "Weights on the device per model:";
    for (const Variant& v : variants)
      out += fmt::format(" `{}` {:.2f} GB;", v.label, 1e-9 * static_cast<double>(v.engine->stats().weight_bytes));
    out.back() = '.';
    out += "\n\n";
  }
  out += fmt::format("Command: `tapdiff_bench_vulkan {}`\n\n", [&] {
    std::string args;
    for (int i = 1; i < argc; ++i) args += (i > 1 ? " " : "") + std::string(argv[i]);
    return args;
  }());
  fmt::print("{}", out);

  // Prefill: tokens/s per prompt length and variant; one warm-up round, then `repeats` rounds.
  std::vector<std::vector<std::vector<double>>> prefill(prompts.size(),
                                                        std::vector<std::vector<double>>(variants.size()));
  model::RunOptions prefill_only;
  prefill_only.generate = 1;  // the first token comes from the prefill's logits: no decode step
  for (std::size_t p = 0; p < prompts.size(); ++p) {
    const auto prompt = bench::spread_prompt(prompts[p], c.vocab);
    for (int r = 0; r <= repeats; ++r)
      for (std::size_t v = 0; v < variants.size(); ++v) {
        const bench::TimedRun t =
            bench::timed_run(*variants[v].engine, *variants[v].graph, *variants[v].model, prompt, prefill_only, {}, {});
        if (r == 0) continue;
        prefill[p][v].push_back(prompts[p] / t.run.prefill_seconds);
        fmt::print(stderr, "prefill {} {}: {:.0f} tokens/s\n", prompts[p], variants[v].label, prefill[p][v].back());
      }
  }
  std::string table = "Prefill, one chunk, untapped: tokens/s, median (min - max)";
  table += fmt::format(" of {} rounds after a warm-up round\n\n| prompt tokens |", repeats);
  for (const Variant& v : variants) table += fmt::format(" `{}` |", v.label);
  for (std::size_t v = 1; v < variants.size(); ++v)
    table += fmt::format(" `{}` / `{}` |", variants[v].label, variants[0].label);
  table += "\n|---|";
  for (std::size_t i = 0; i < 2 * variants.size() - 1; ++i) table += "---|";
  table += "\n";
  for (std::size_t p = 0; p < prompts.size(); ++p) {
    table += fmt::format("| {} |", prompts[p]);
    for (std::size_t v = 0; v < variants.size(); ++v) table += fmt::format(" {} |", stats(prefill[p][v], "{:.0f}"));
    for (std::size_t v = 1; v < variants.size(); ++v)
      table += fmt::format(" {:.2f} |", bench::median(prefill[p][v]) / bench::median(prefill[p][0]));
    table += "\n";
  }
  // Every variant each engine has run: the attention's, and the FFN's (its down product, or the
  // mixture of experts of a model that has one)
  const model::Op ffn = variants.front().model->config().experts.count > 0 ? model::Op::moe_out : model::Op::ffn_down;
  table += fmt::format("\nKernels that ran (attention / {}):", model::op_name(ffn));
  for (const Variant& v : variants)
    table += fmt::format(" `{}`: {} / {};", v.label, v.engine->kernel(model::Op::attn), v.engine->kernel(ffn));
  table.back() = '\n';
  fmt::print("{}\n", table);
  out += table + "\n";

  if (decode_steps > 0) {
    std::vector<std::vector<double>> ms(variants.size()), cpu_ms(variants.size());
    const auto prompt = bench::spread_prompt(decode_prompt, c.vocab);
    model::RunOptions decode;
    decode.generate = decode_steps + 1;  // the first generated token needs no decode step
    for (int r = 0; r <= repeats; ++r)
      for (std::size_t v = 0; v < variants.size(); ++v) {
        const bench::TimedRun t =
            bench::timed_run(*variants[v].engine, *variants[v].graph, *variants[v].model, prompt, decode, {}, {});
        if (r == 0) continue;
        ms[v].push_back(1e3 * t.run.decode_seconds / t.run.decode_steps);
        // The host's share: CPU time of the whole run, prefill included, over the decode steps.
        cpu_ms[v].push_back(1e3 * t.cpu_seconds / t.run.decode_steps);
      }
    std::string d = fmt::format(
        "Decode, {} steps after a {}-token prompt, untapped: ms/token median (min - max), tokens/s of the median; "
        "host CPU ms per step (the whole run's CPU time, prefill included, over the steps)\n\n"
        "| variant | ms/token | tokens/s | host CPU ms/step |\n|---|---|---|---|\n",
        decode_steps, decode_prompt);
    for (std::size_t v = 0; v < variants.size(); ++v)
      d += fmt::format("| `{}` | {} | {:.1f} | {:.2f} |\n", variants[v].label, stats(ms[v], "{:.2f}"),
                       1e3 / bench::median(ms[v]), bench::median(cpu_ms[v]));
    fmt::print("{}\n", d);
    out += d + "\n";
    if (profile) {
      std::vector<bench::ProfiledEngine> profiled;
      for (const Variant& v : variants) profiled.push_back({v.kernels, v.engine.get()});
      const std::string p = bench::op_profile_section(profiled, graph, *m, prompt, decode_steps);
      fmt::print("{}\n", p);
      out += p + "\n";
    }
  }

  if (tap_tokens > 0) {
    std::filesystem::create_directories(dump_dir);
    const auto path = std::filesystem::path(dump_dir) / fmt::format("bench-{}.h5", ::getpid());
    const auto prompt = bench::spread_prompt(tap_tokens, c.vocab);
    struct Mode {
      std::string name;
      std::optional<dumps::WriterOptions> dump;
      bool read_back = false;
    };
    const std::vector<Mode> modes = {{"untapped", std::nullopt},
                                     {"every op read back, dropped", std::nullopt, true},
                                     {"every op, f32 dump", dumps::WriterOptions{}},
                                     {"every op, f16 dump", dumps::WriterOptions{.storage = dumps::StorageType::f16}}};
    std::vector<std::vector<bench::TimedRun>> runs(modes.size());
    model::Engine& engine = *variants.front().engine;
    for (int r = 0; r <= repeats; ++r)
      for (std::size_t i = 0; i < modes.size(); ++i) {
        bench::TimedRun t = modes[i].read_back
                                ? bench::timed_read_back(engine, graph, prompt, prefill_only)
                                : bench::timed_run(engine, graph, *m, prompt, prefill_only, modes[i].dump, path);
        fmt::print(stderr, "taps {}: {:.2f} s (writer busy {:.2f} s, run waited {:.2f} s)\n", modes[i].name, t.seconds,
                   t.writer.job_seconds, t.writer.wait_seconds);
        if (r > 0) runs[i].push_back(std::move(t));
      }
    std::string d = fmt::format(
        "Taps: a {}-token prompt in one chunk on `{}`, every op of every layer written to HDF5 in {} (writer thread); "
        "seconds from creating the dump to its finish(), median (min - max); the writer thread's seconds busy and the "
        "run's seconds held up by it (copying into the queue, waiting for room and for the last writes), medians\n\n"
        "| mode | seconds | x untapped | dump GB | GB/s written | writer busy s | run copying s | run waiting s |\n"
        "|---|---|---|---|---|---|---|---|\n",
        tap_tokens, variants.front().kernels, dump_dir);
    const auto median_of = [](const std::vector<bench::TimedRun>& rs, auto field) {
      std::vector<double> v;
      for (const bench::TimedRun& t : rs) v.push_back(field(t));
      return v;
    };
    const double untapped = bench::median(median_of(runs[0], [](const bench::TimedRun& t) { return t.seconds; }));
    for (std::size_t i = 0; i < modes.size(); ++i) {
      const std::vector<double> s = median_of(runs[i], [](const bench::TimedRun& t) { return t.seconds; });
      const double gb = 1e-9 * static_cast<double>(runs[i].back().dump_bytes);
      const auto writer = [&](auto field) {
        return modes[i].dump ? fmt::format("{:.2f}", bench::median(median_of(runs[i], field))) : std::string("-");
      };
      d += fmt::format("| {} | {} | {:.2f} | {} | {} | {} | {} | {} |\n", modes[i].name, stats(s, "{:.3f}"),
                       bench::median(s) / untapped, gb > 0 ? fmt::format("{:.2f}", gb) : "-",
                       gb > 0 ? fmt::format("{:.2f}", gb / bench::median(s)) : "-",
                       writer([](const bench::TimedRun& t) { return t.writer.job_seconds; }),
                       writer([](const bench::TimedRun& t) { return t.writer.copy_seconds; }),
                       writer([](const bench::TimedRun& t) { return t.writer.wait_seconds; }));
    }
    fmt::print("{}\n", d);
    out += d + "\n";
  }

  if (pipeline_stats) {
    const tapdiff::gpu::VulkanEngine& engine = *variants.front().engine;
    const std::string s = bench::pipeline_statistics_section(engine.pipeline_statistics(), engine.device_info().name,
                                                             variants.front().kernels);
    fmt::print("{}\n", s);
    out += s + "\n";
  }

  if (!markdown.empty())
    bench::write_section(markdown, section.empty() ? fmt::format("{}-{}-{}", info.name, model_spec, dtype) : section,
                         out);
  return 0;
} catch (const std::exception& e) {
  fmt::print(stderr, "tapdiff_bench_vulkan: {}\n", e.what());
  return 2;
}
