// The bisection matrix: `tapdiff bisect` in-process over models x engines x prompt templates x
// prompt lengths x chunk sizes, one Markdown row per run, with the verdict, the first op past
// tolerance, the culprit, the diagnosis codes and the time. No fault is planted: every row must
// say "match" (docs/bisect-matrix.md is its output).
//   tapdiff_bisect_matrix --model M [--model M2 ...] [--engines ref,vulkan] [--templates DIR]
//                         [--lengths 100,500,1000] [--chunks 0,64,256] [--generate N] [--out FILE]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include "bisect/bisect.h"
#include "bisect/cli/engine_factory.h"
#include "bisect/cli/model_source.h"
#include "bisect/cli/prompt_input.h"
#include "bisect/diagnosis.h"
#include "model/errors.h"

using namespace tapdiff;

namespace {

struct Args {
  std::vector<std::string> models;
  std::vector<std::string> engines{"ref", "vulkan"};
  std::string templates = "examples/prompts";
  std::vector<int> lengths{100, 500, 1000};
  std::vector<int> chunks{0, 64, 256};
  int generate = 4;
  int threads = 0;
  std::string out;
};

std::string op_name(const bisect::OpResult& op) { return fmt::format("{}/{}", op.id.layer, model::op_name(op.id.op)); }

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

// The worst ratio of an op's NMSE to its bound: how close the run came to a false positive.
double worst_margin(const bisect::CompareResult& run) {
  double worst = 0;
  for (const bisect::OpResult& op : run.ops)
    if (op.tolerance.bound.nmse && *op.tolerance.bound.nmse > 0)
      worst = std::max(worst, op.metrics.nmse / *op.tolerance.bound.nmse);
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{"tapdiff bisect over models x engines x prompts x lengths x chunk sizes"};
  app.add_option("--model", a.models, "Model spec (GGUF, HF folder, synth:SHAPE); repeatable")->required();
  app.add_option("--engines", a.engines, "Engines B: ref (f32) and/or vulkan")->delimiter(',')->capture_default_str();
  app.add_option("--templates", a.templates, "Folder of prompt templates (*.txt)")->capture_default_str();
  app.add_option("--lengths", a.lengths, "Prompt lengths in tokens")->delimiter(',')->capture_default_str();
  app.add_option("--chunks", a.chunks, "Chunk sizes (0 = whole prompt)")->delimiter(',')->capture_default_str();
  app.add_option("--generate", a.generate, "Greedy tokens compared after the prompt")->capture_default_str();
  app.add_option("--threads", a.threads, "CPU threads of the reference engines (0 = all)");
  app.add_option("--out", a.out, "Also write the table to this Markdown file");
  CLI11_PARSE(app, argc, argv);

  std::vector<std::filesystem::path> templates;
  for (const auto& e : std::filesystem::directory_iterator(a.templates))
    if (e.path().extension() == ".txt") templates.push_back(e.path());
  std::sort(templates.begin(), templates.end());

  std::string table =
      "| model | engine B | prompt | tokens | chunk | verdict | worst nmse/bound | first | culprit | diagnosis | "
      "tokens equal | seconds |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  fmt::print("{}", table);
  int runs = 0, matches = 0, skipped = 0;
  std::string devices;
  for (const std::string& spec : a.models) {
    const auto m = cli::open_model(spec);
    const auto tokenizer = cli::load_tokenizer({}, *m);
    if (!tokenizer) throw UsageError(fmt::format("{}: the matrix needs a model with a tokenizer vocabulary", spec));
    cli::EngineChoice truth_choice, floor_choice;
    truth_choice.dtype = "f64", truth_choice.threads = floor_choice.threads = a.threads;
    const auto truth = cli::make_engine(truth_choice, *m);
    const auto floor = cli::make_engine(floor_choice, *m);
    for (const std::string& engine : a.engines) {
      cli::EngineChoice b_choice;
      b_choice.name = engine, b_choice.threads = a.threads;
      const auto b = cli::make_engine(b_choice, *m);
      devices += fmt::format("- {}: {} on {}\n", spec, b->name(), b->device());
      for (const auto& path : templates) {
        for (int length : a.lengths) {
          const int context = m->config().context_length;
          if (context > 0 && length + a.generate > context) {
            ++skipped;
            continue;  // past the model's trained context: not a meaningful prompt for it
          }
          cli::PromptOptions prompt_options;
          prompt_options.prompt_file = path.string();
          prompt_options.length = length;
          const auto prompt = cli::resolve_prompt(prompt_options, tokenizer);
          for (int chunk : a.chunks) {
            if (chunk >= length) continue;  // the same run as the whole prompt
            bisect::BisectOptions options;
            options.chunk = chunk;
            options.generate = a.generate;
            options.eos_token = tokenizer->eos();
            const auto start = std::chrono::steady_clock::now();
            const bisect::BisectResult r = bisect::run_bisect(m->config(), {*truth, floor.get(), *b}, prompt, options);
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            std::vector<std::string> codes;
            for (const auto& d : bisect::diagnose(r)) codes.push_back(d.code);
            const std::string row = fmt::format(
                "| {} | {} | {} | {} | {} | {} | {:.2e} | {} | {} | {} | {} | {:.1f} |\n",
                std::filesystem::path(spec).filename().string(), engine, path.stem().string(), length,
                chunk > 0 ? std::to_string(chunk) : "whole", r.match() ? "match" : "**diverged**", worst_margin(r.run),
                r.run.first ? op_name(r.run.ops[*r.run.first]) : "-", r.culprit ? op_name(r.local[*r.culprit]) : "-",
                codes.empty() ? "-" : fmt::format("{}", fmt::join(codes, " ")),
                r.tokens.first_mismatch_step ? fmt::format("no (step {})", *r.tokens.first_mismatch_step) : "yes",
                seconds);
            fmt::print("{}", row);
            std::fflush(stdout);
            table += row;
            ++runs, matches += r.match() ? 1 : 0;
          }
        }
      }
    }
  }
  const std::string summary = fmt::format(
      "\n{} runs, {} match, {} diverged; {} template x length combinations past a model's context "
      "skipped.\nMachine: {} ({} hardware threads).\n{}",
      runs, matches, runs - matches, skipped, cpu_name(), std::thread::hardware_concurrency(), devices);
  fmt::print("{}", summary);
  if (!a.out.empty()) std::ofstream(a.out) << table << summary;
  return matches == runs ? 0 : 1;
}
