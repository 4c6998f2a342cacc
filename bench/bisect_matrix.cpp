// The bisection matrix: `tapdiff bisect` in-process over models x engines x prompt templates x
// prompt lengths x chunk sizes, one Markdown row per run.
//   Without --faults: nothing is planted, every row must say "match" (docs/bisect-matrix.md).
//   With --faults all|NAME,...: each fault of gpu/faults.h planted in the Vulkan engine (in each
//   precision --engines names for it: vulkan, vulkan:f16, vulkan:bf16) at layer 0
//   and at the middle layer, over the lengths (chunk sizes only for the faults that need chunks);
//   each row says whether the culprit is the planted layer and op (or class) with the expected
//   diagnosis code, or that the fault is below the noise floor there (docs/faults.md).
//   tapdiff_bisect_matrix --model M [--model M2 ...] [--engines ref,vulkan] [--templates DIR]
//                         [--lengths 100,500,1000] [--chunks 0,64,256] [--generate N]
//                         [--faults all|NAME,...] [--out FILE]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <thread>

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include "bisect/cli/engine_factory.h"
#include "bisect/cli/model_source.h"
#include "bisect/cli/prompt_input.h"
#include "bisect/drive/bisect.h"
#include "bisect/judge/diagnosis.h"
#include "gpu/faults.h"
#include "model/errors.h"
#include "model/per_sequence_engine.h"
#include "model/precision.h"

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
  std::string faults;  // "" none, "all", or names
  std::string out;
};

// One bisection of the matrix.
struct Case {
  std::string model, engine, inject, prompt_name;
  model::Precision precision = model::Precision::f32;  // engine B's
  model::Prompts prompts;                              // one, or a ragged batch
  int chunk = 0;
  const gpu::FaultInfo* fault = nullptr;
  int layer = -1;  // the planted layer
};

std::string op_name(const bisect::OpResult& op) { return fmt::format("{}/{}", op.id.layer, model::op_name(op.id.op)); }

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

double ratio(const bisect::OpResult& op) {
  const auto& bound = op.tolerance.bound.nmse;
  return bound && *bound > 0 ? op.metrics.nmse / *bound : 0;
}

// The worst ratio of an op's NMSE to its bound: how close a run came to a false positive.
double worst_ratio(const bisect::CompareResult& run) {
  double worst = 0;
  for (const bisect::OpResult& op : run.ops) worst = std::max(worst, ratio(op));
  return worst;
}

bool needs_chunks(const gpu::FaultInfo& f) {
  return f.fault == gpu::Fault::rope_chunk_reset || f.fault == gpu::Fault::mask_kv_offset ||
         f.fault == gpu::Fault::kv_stale_chunk;
}

// Faults that act only between the sequences of a ragged batch.
bool needs_batch(const gpu::FaultInfo& f) { return f.fault == gpu::Fault::batch_seq_leak; }
constexpr std::size_t kBatchPrompts = 3;  // a batch fault's batch: the prompt, then two shorter ones

// The reference in `choice`, one engine per sequence.
std::unique_ptr<model::Engine> per_sequence(const cli::EngineChoice& choice, const model::Model& m) {
  return model::engine_per_sequence(kBatchPrompts, [&] { return cli::make_engine(choice, m); });
}

std::vector<const gpu::FaultInfo*> selected_faults(const std::string& spec) {
  std::vector<const gpu::FaultInfo*> out;
  for (const gpu::FaultInfo& f : gpu::fault_catalogue())
    if (spec == "all" || ("," + spec + ",").find("," + std::string(f.name) + ",") != std::string::npos)
      out.push_back(&f);
  if (out.empty()) throw UsageError(fmt::format("--faults {}: no fault of that name (see tapdiff faults)", spec));
  return out;
}

// "vulkan:bf16" as an engine choice (the dtype after the colon; f32 without one).
cli::EngineChoice engine_choice(const std::string& engine, int threads) {
  cli::EngineChoice choice;
  const std::size_t colon = engine.find(':');
  choice.name = engine.substr(0, colon), choice.threads = threads;
  if (colon != std::string::npos) choice.dtype = engine.substr(colon + 1);
  return choice;
}

model::Precision precision_of(const cli::EngineChoice& choice) {
  const std::optional<model::Precision> p = model::parse_precision(choice.dtype);
  if (!p) throw UsageError(fmt::format("--engines: {}: expected one of {}", choice.dtype, model::precision_names()));
  return *p;
}

// Whether the model runs the fault at the layer (gpu::require_faults_fit): a mixture of experts'
// fault is no fault of a dense model, a RoPE fault none of a layer without RoPE.
bool plantable(const gpu::FaultInfo& f, int layer, const model::ModelConfig& config) {
  try {
    gpu::require_faults_fit(gpu::parse_faults(fmt::format("{}@{}", f.name, layer), config.n_layers),
                            model::Graph(config), config);
    return true;
  } catch (const UsageError&) {
    return false;
  }
}

// Whether the bisection found the planted fault: "ok", "class" (the right layer and class, a
// sibling op), "no diagnosis", "below noise floor" (the run matched), or "WRONG".
std::string judge(const Case& c, const bisect::BisectResult& r, const std::vector<std::string>& codes) {
  if (r.match()) return "below noise floor";
  if (!r.culprit) return "WRONG (no culprit)";
  const bisect::OpResult& culprit = r.local[*r.culprit];
  if (culprit.id.layer != c.layer && c.layer >= 0) return "WRONG";
  const auto& ops = c.fault->ops;
  const bool op_ok = std::find(ops.begin(), ops.end(), culprit.id.op) != ops.end();
  if (!op_ok && culprit.op_class() != c.fault->op_class) return "WRONG";
  const bool diagnosis_ok = !c.fault->diagnosis || std::find(codes.begin(), codes.end(),
                                                             model::diagnosis_name(*c.fault->diagnosis)) != codes.end();
  if (!diagnosis_ok) return "no diagnosis";
  return op_ok ? "ok" : "class";
}

std::string row_of(const Case& c, const std::string& length, const bisect::BisectResult& r,
                   const std::vector<std::string>& codes, double seconds) {
  const std::string codes_text = codes.empty() ? "-" : fmt::format("{}", fmt::join(codes, " "));
  const std::string chunk = c.chunk > 0 ? std::to_string(c.chunk) : "whole";
  const std::string first = r.run.first ? op_name(r.run.ops[*r.run.first]) : "-";
  const std::string culprit = r.culprit ? op_name(r.local[*r.culprit]) : "-";
  if (!c.fault)
    return fmt::format(
        "| {} | {} | {} | {} | {} | {} | {:.2e} | {} | {} | {} | {} | {:.1f} |\n", c.model, c.engine, c.prompt_name,
        length, chunk, r.match() ? "match" : "**diverged**", worst_ratio(r.run), first, culprit, codes_text,
        r.tokens.first_mismatch_step ? fmt::format("no (step {})", *r.tokens.first_mismatch_step) : "yes", seconds);
  // The planted op's own end-to-end error against its bound: the evidence for "below noise floor".
  const auto planted = std::find_if(r.run.ops.begin(), r.run.ops.end(), [&](const bisect::OpResult& op) {
    return op.id.layer == c.layer && op.id.op == c.fault->ops.front();
  });
  const std::string planted_ratio = planted != r.run.ops.end() ? fmt::format("{:.2e}", ratio(*planted)) : "-";
  return fmt::format("| {} | {} {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1f} |\n", c.model, c.engine,
                     c.inject, c.prompt_name, length, chunk, first, culprit, codes_text,
                     c.fault->diagnosis ? model::diagnosis_name(*c.fault->diagnosis) : "-", planted_ratio,
                     judge(c, r, codes), seconds);
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{"tapdiff bisect over models x engines x prompts x lengths x chunk sizes (x planted faults)"};
  app.add_option("--model", a.models, "Model spec (GGUF, HF folder, synth:SHAPE); repeatable")->required();
  app.add_option("--engines", a.engines,
                 "Engines B as NAME[:DTYPE]: ref, vulkan, vulkan:f16, vulkan:bf16, ref:f16 (faults: the vulkan ones)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--templates", a.templates, "Folder of prompt templates (*.txt)")->capture_default_str();
  app.add_option("--lengths", a.lengths, "Prompt lengths in tokens")->delimiter(',')->capture_default_str();
  app.add_option("--chunks", a.chunks, "Chunk sizes (0 = whole prompt)")->delimiter(',')->capture_default_str();
  app.add_option("--generate", a.generate, "Greedy tokens compared after the prompt")->capture_default_str();
  app.add_option("--threads", a.threads, "CPU threads of the reference engines (0 = all)");
  app.add_option("--faults", a.faults, "Plant faults in the vulkan engine: all, or NAME,... (tapdiff faults)");
  app.add_option("--out", a.out, "Also write the table to this Markdown file");
  CLI11_PARSE(app, argc, argv);

  std::vector<std::filesystem::path> templates;
  for (const auto& e : std::filesystem::directory_iterator(a.templates))
    if (e.path().extension() == ".txt") templates.push_back(e.path());
  std::sort(templates.begin(), templates.end());
  if (templates.empty()) throw UsageError(fmt::format("--templates {}: no *.txt prompt template", a.templates));
  const std::vector<const gpu::FaultInfo*> faults =
      a.faults.empty() ? std::vector<const gpu::FaultInfo*>{} : selected_faults(a.faults);

  std::string table =
      faults.empty()
          ? "| model | engine B | prompt | tokens | chunk | verdict | worst nmse/bound | first | culprit | diagnosis | "
            "tokens equal | seconds |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n"
          : "| model | planted | prompt | tokens | chunk | first | culprit | diagnosis | expected diagnosis | planted "
            "op nmse/bound | result | seconds |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  fmt::print("{}", table);
  std::map<std::string, int> results;
  int skipped = 0;
  int not_plantable = 0;  // (fault, layer) pairs a model never runs
  std::string devices;
  for (const std::string& spec : a.models) {
    const auto m = cli::open_model(spec);
    const auto tokenizer = cli::load_tokenizer({}, *m);
    if (!tokenizer) throw UsageError(fmt::format("{}: the matrix needs a model with a tokenizer vocabulary", spec));
    const std::string model_name = std::filesystem::path(spec).filename().string();
    cli::EngineChoice truth_choice;
    truth_choice.dtype = "f64", truth_choice.threads = a.threads;
    const auto truth = cli::make_engine(truth_choice, *m);
    std::map<std::string, std::unique_ptr<model::Engine>> floors;  // the reference in each B dtype
    auto floor_of = [&](const std::string& dtype) -> model::Engine& {
      auto& f = floors[dtype];
      if (!f) f = cli::make_engine(cli::reference_choice(dtype, a.threads), *m);
      return *f;
    };
    const int context = m->config().context_length;
    std::vector<int> lengths;
    for (int length : a.lengths)
      if (context > 0 && length + a.generate > context)
        ++skipped;  // past the model's trained context: not a meaningful prompt for it
      else
        lengths.push_back(length);

    std::unique_ptr<model::Engine> batch_truth, batch_floor;  // for batch faults, made when first needed
    std::string batch_floor_dtype;
    auto run = [&](Case& c, model::Engine& b, model::Engine& floor, const std::string& length) {
      model::Engine& engine_a = c.prompts.size() > 1 ? *batch_truth : *truth;
      bisect::BisectOptions options;
      options.precision = c.precision;
      options.calibration = bisect::Calibration{model::default_k(c.precision)};
      options.chunk = c.chunk;
      options.generate = a.generate;
      options.eos_token = tokenizer->eos();
      const auto start = std::chrono::steady_clock::now();
      const bisect::BisectResult r = bisect::run_bisect(m->config(), {engine_a, &floor, b}, c.prompts, options);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::vector<std::string> codes;
      for (const auto& d : bisect::diagnose(r)) codes.push_back(std::string(model::diagnosis_name(d.code)));
      const std::string row = row_of(c, length, r, codes, seconds);
      fmt::print("{}", row);
      std::fflush(stdout);
      table += row;
      ++results[c.fault ? judge(c, r, codes) : r.match() ? "match" : "diverged"];
    };
    auto prompt_of = [&](const std::filesystem::path& path, int length) {
      cli::PromptOptions prompt_options;
      prompt_options.prompt_file = path.string();
      prompt_options.length = length;
      return cli::resolve_prompt(prompt_options, tokenizer);
    };

    if (faults.empty()) {
      for (const std::string& engine : a.engines) {
        const cli::EngineChoice b_choice = engine_choice(engine, a.threads);
        const auto b = cli::make_engine(b_choice, *m);
        devices += fmt::format("- {}: {} on {}\n", spec, b->name(), b->device());
        for (const auto& path : templates)
          for (int length : lengths)
            for (int chunk : a.chunks) {
              if (chunk >= length) continue;  // the same run as the whole prompt
              Case c{model_name, engine, "", path.stem().string(), precision_of(b_choice), {prompt_of(path, length)},
                     chunk};
              run(c, *b, floor_of(b_choice.dtype), std::to_string(length));
            }
      }
      continue;
    }
    const int n_layers = m->config().n_layers;
    std::vector<int> layers{0};
    if (n_layers / 2 > 0) layers.push_back(n_layers / 2);
    std::size_t rotation = 0;  // spreads the runs over the templates
    for (const std::string& engine : a.engines)
      for (const gpu::FaultInfo* fault : faults)
        for (int layer : layers) {
          cli::EngineChoice b_choice = engine_choice(engine, a.threads);
          if (b_choice.name != "vulkan") continue;  // faults live in the Vulkan kernels
          if (!plantable(*fault, layer, m->config())) {
            ++not_plantable;
            continue;
          }
          b_choice.inject = fmt::format("{}@{}", fault->name, layer);
          const auto b = cli::make_engine(b_choice, *m);
          if (devices.find(spec) == std::string::npos)
            devices += fmt::format("- {}: {} on {}\n", spec, b->name(), b->device());
          for (int length : lengths) {
            const std::size_t first_template = rotation++;
            const std::size_t n_prompts = needs_batch(*fault) ? kBatchPrompts : 1;
            model::Prompts prompts;
            std::vector<std::string> names, lengths_text;
            for (std::size_t k = 0; k < n_prompts; ++k) {  // prompt k of a batch: length / (k + 1) tokens
              const auto& path = templates[(first_template + k) % templates.size()];
              const int tokens = length / static_cast<int>(k + 1);
              prompts.push_back(prompt_of(path, tokens));
              names.push_back(path.stem().string()), lengths_text.push_back(std::to_string(tokens));
            }
            if (n_prompts > 1 && batch_floor_dtype != b_choice.dtype) {
              if (!batch_truth) batch_truth = per_sequence(truth_choice, *m);
              batch_floor = per_sequence(cli::reference_choice(b_choice.dtype, a.threads), *m);
              batch_floor_dtype = b_choice.dtype;
            }
            std::vector<int> chunks;
            for (int chunk : a.chunks)
              if ((chunk > 0) == needs_chunks(*fault) && chunk < length) chunks.push_back(chunk);
            for (int chunk : chunks) {
              Case c{model_name,
                     engine,
                     b_choice.inject,
                     fmt::format("{}", fmt::join(names, "+")),
                     precision_of(b_choice),
                     prompts,
                     chunk,
                     fault,
                     layer};
              run(c, *b, n_prompts > 1 ? *batch_floor : floor_of(b_choice.dtype),
                  fmt::format("{}", fmt::join(lengths_text, "+")));
            }
          }
        }
  }
  std::string counts;
  int total = 0;
  for (const auto& [what, n] : results)
    counts += fmt::format("{}{}: {}", counts.empty() ? "" : ", ", what, n), total += n;
  const std::string summary = fmt::format(
      "\n{} runs ({}); {} model x length combinations past a model's context skipped; {} planted (fault, layer) "
      "pairs a model never runs left out.\nMachine: {} ({} hardware threads).\n{}",
      total, counts, skipped, not_plantable, cpu_name(), std::thread::hardware_concurrency(), devices);
  fmt::print("{}", summary);
  if (!a.out.empty()) std::ofstream(a.out) << table << summary;
  const bool wrong =
      std::any_of(results.begin(), results.end(), [](const auto& r) { return r.first.rfind("WRONG", 0) == 0; });
  const bool all_good = faults.empty() ? results["match"] == total : !wrong;
  return all_good ? 0 : 1;
}
