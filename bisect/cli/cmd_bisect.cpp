// tapdiff bisect: run engine A (the truth: the f64 reference, or the Vulkan engine in f32 for an
// f16 engine B) and engine B in one process on the same tokens, compare every op as they go, then
// isolate the culprit on A's inputs; exit 0 when every op is within tolerance, 1 on a divergence,
// 2 for bad input, 3 for the environment.
#include <filesystem>
#include <optional>

#include <fmt/core.h>

#include "bisect/cli/calibration_options.h"
#include "bisect/cli/commands.h"
#include "bisect/cli/engine_factory.h"
#include "bisect/cli/finding_outputs.h"
#include "bisect/cli/model_source.h"
#include "bisect/cli/progress_line.h"
#include "bisect/cli/prompt_input.h"
#include "bisect/cli/run_context.h"
#include "bisect/drive/bisect.h"
#include "bisect/judge/finding.h"
#include "bisect/report/repro.h"
#include "bisect/report/terminal.h"
#include "dumps/dump_writer.h"
#include "formats/load_model.h"
#include "model/errors.h"
#include "model/per_sequence_engine.h"
#include "model/precision.h"

namespace tapdiff::cli {
namespace {

EngineChoice vulkan_choice() {
  EngineChoice choice;
  choice.name = "vulkan";
  return choice;
}

struct BisectArgs {
  std::string model = kDefaultModel;
  formats::LoadOptions load;
  std::string engine_a = "ref";
  EngineChoice engine_b = vulkan_choice();
  PromptOptions prompt;
  int chunk = 0;
  int generate = 0;
  int top_k = 5;
  std::string tolerances;
  CalibrationOptions calibrate;
  bool layers_first = false;
  ReportFiles reports;
  std::string dump_dir;
  std::string taps = "all";
  std::string repro;  // --repro: the culprit's case and its checks, written into this folder
  std::string command_line;
};

// A dump of one engine's free run, for --dump-dir.
std::optional<dumps::DumpWriter> open_dump(const BisectArgs& a, const std::string& name, const model::Model& m,
                                           const model::Engine& engine, const std::vector<std::int32_t>& prompt,
                                           const model::Graph& graph) {
  if (a.dump_dir.empty()) return std::nullopt;
  dumps::RunMetadata meta = bisect::engine_metadata(engine, m.config(), prompt, a.chunk);
  add_run_context(meta, m, a.command_line);
  const auto storage = dumps::storage_from_name(meta.storage_dtype);
  if (!storage) throw UsageError(fmt::format("{}: no dump storage type for dtype {}", name, meta.storage_dtype));
  return std::make_optional<dumps::DumpWriter>((std::filesystem::path(a.dump_dir) / name).string(), meta, graph,
                                               dumps::TapFilter(a.taps), *storage);
}

// Engine A or the floor engine: the reference, one engine per sequence for a batch.
std::unique_ptr<model::Engine> reference_engine(const EngineChoice& choice, const model::Model& m,
                                                std::size_t sequences) {
  return model::engine_per_sequence(sequences, [&] { return make_engine(choice, m); });
}

// Engine A, the truth, in a precision finer than B's: the reference in f64, or, for a model whose
// f64 passes would take the CPU too long, the Vulkan engine in f32 when B computes in f16 (on B's
// device, with the default kernels and no planted faults; it runs a batch in one pass, as B does).
// UsageError for any other engine A, or one no finer than B.
void check_truth_choice(const BisectArgs& a, model::Precision b_precision) {
  if (a.engine_a != "ref" && a.engine_a != "vulkan")
    throw UsageError(fmt::format(
        "--engine-a {}: engine A is the truth: expected ref (f64 on the CPU) or vulkan (f32 on the GPU)", a.engine_a));
  if (a.engine_a == "vulkan" && b_precision != model::Precision::f16)
    throw UsageError(fmt::format(
        "--engine-a vulkan computes in f32, which is no truth for a B in --dtype {}: expected --dtype f16, or "
        "--engine-a ref (f64)",
        a.engine_b.dtype));
}

// After check_truth_choice.
std::unique_ptr<model::Engine> truth_engine(const BisectArgs& a, const model::Model& m, std::size_t sequences) {
  if (a.engine_a == "ref") return reference_engine(reference_choice("f64", a.engine_b.threads), m, sequences);
  EngineChoice choice = vulkan_choice();
  choice.dtype = "f32";
  choice.device = a.engine_b.device;
  choice.max_context = a.engine_b.max_context;
  return make_engine(choice, m);
}

// --repro DIR: the culprit's case on A's inputs (both engines run again up to its pass); nullopt
// without a culprit.
std::optional<bisect::ReproCase> repro_case_of(const model::Graph& graph, const model::Model& m,
                                               const bisect::LockstepEngines& engines,
                                               const bisect::BisectResult& result,
                                               const std::vector<std::int32_t>& prompt) {
  if (!result.culprit) return std::nullopt;
  return bisect::repro_case_of_bisection(graph, m, engines.truth, engines.b, result, prompt);
}

// Writes the case and its checks (bisect/report/repro.h), or says why there is none.
void write_repro_of(const BisectArgs& a, const model::Model& m, const bisect::LockstepEngines& engines,
                    const std::optional<bisect::ReproCase>& repro) {
  if (!repro) {
    fmt::print("repro: no culprit was found: nothing written to {}\n", a.repro);
    return;
  }
  const std::string truth = fmt::format("{} ({})", engines.truth.name(), engines.truth.compute_dtype());
  const std::string b = fmt::format("{} ({}, {})", engines.b.name(), engines.b.compute_dtype(), engines.b.device());
  bisect::write_repro(*repro, {a.model, b, truth, model::to_json(m.config()).dump()}, a.repro);
  fmt::print(
      "repro: {}: {}'s case on A's inputs (forward pass {}) with its checks: python3 {}/check.py --replay "
      "engine fails as found; fill in kernel.py or kernel.c to run yours\n",
      a.repro, model::to_string(repro->id), repro->chunk.index, a.repro);
}

nlohmann::json dump_summary(const std::vector<std::int32_t>& generated) { return {{"generated", generated}}; }

int bisect_command(const BisectArgs& a) {
  const std::optional<model::Precision> parsed = model::parse_precision(a.engine_b.dtype);
  if (!parsed)
    throw UsageError(fmt::format("--dtype {}: expected one of {}", a.engine_b.dtype, model::precision_names()));
  const model::Precision b_precision = *parsed;
  check_truth_choice(a, b_precision);
  // Everything that can be refused is checked before the long part.
  refuse_reports_over_inputs(a.reports,
                             {a.model, a.tolerances, a.prompt.prompt_file, a.prompt.vocab, a.prompt.batch_file});
  const bisect::Tolerances table =
      a.tolerances.empty() ? bisect::Tolerances() : bisect::Tolerances::from_file(a.tolerances);
  if (!a.repro.empty()) {
    if (!a.prompt.batch_file.empty())
      throw UsageError("--repro writes the case of one prompt: not with --batch-prompts");
    bisect::check_repro_dir(a.repro);
  }
  if (!a.dump_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.dump_dir, ec);
    if (ec) throw UsageError(fmt::format("--dump-dir {}: cannot create the folder: {}", a.dump_dir, ec.message()));
  }
  const auto m = open_model(a.model, a.load);
  m->prefetch_sha256();  // the report names it: hashing overlaps the runs
  const auto tokenizer = load_tokenizer(a.prompt, *m);
  const model::Prompts prompts = a.prompt.batch_file.empty() ? model::Prompts{resolve_prompt(a.prompt, tokenizer)}
                                                             : resolve_batch_prompts(a.prompt, tokenizer);
  if (prompts.size() > 1 && !a.dump_dir.empty())
    throw UsageError("--dump-dir keeps the dumps of one prompt: it does not take --batch-prompts");
  for (const auto& p : prompts) warn_past_context(*m, p.size() + static_cast<std::size_t>(a.generate));
  const std::vector<std::int32_t>& prompt = prompts.front();
  const model::Graph graph(m->config());

  const auto truth = truth_engine(a, *m, prompts.size());
  std::unique_ptr<model::Engine> floor;
  if (!a.calibrate.off)
    floor = reference_engine(reference_choice(a.engine_b.dtype, a.engine_b.threads), *m, prompts.size());
  const auto b = make_engine(a.engine_b, *m);

  bisect::BisectOptions options;
  options.chunk = a.chunk;
  options.generate = a.generate;
  options.top_k = a.top_k;
  options.eos_token = tokenizer ? tokenizer->eos() : m->config().eos_token;
  options.precision = b_precision;
  options.layers_first = a.layers_first;
  options.tolerances = table;
  options.calibration = a.calibrate.calibration(b_precision);
  auto dump_a = open_dump(a, "a.h5", *m, *truth, prompt, graph);
  auto dump_b = open_dump(a, "b.h5", *m, *b, prompt, graph);
  if (dump_a) options.tap_a = &*dump_a;
  if (dump_b) options.tap_b = &*dump_b;

  bisect::BisectResult result;
  {
    ProgressLine progress;
    options.progress = [&progress](const bisect::BisectProgress& p) {
      progress.update([&p](double seconds) { return bisect::bisect_progress_line(p, seconds); });
    };
    result = bisect::run_bisect(m->config(), {*truth, floor.get(), *b}, prompts, options);
  }
  const bisect::LockstepEngines engines{*truth, floor.get(), *b};
  std::optional<bisect::ReproCase> repro;
  if (!a.repro.empty()) repro = repro_case_of(graph, *m, engines, result, prompt);
  for (bisect::RunInfo* run : {&result.run.a, &result.run.b}) add_run_context(run->metadata, *m, a.command_line);
  if (dump_a) dump_a->finish(dump_summary(result.tokens.a)), result.run.a.path = a.dump_dir + "/a.h5";
  if (dump_b) dump_b->finish(dump_summary(result.tokens.b)), result.run.b.path = a.dump_dir + "/b.h5";

  const bisect::TokenText text = [&tokenizer](std::int32_t id) {
    return tokenizer ? text::valid_utf8(tokenizer->decode(std::vector<std::int32_t>{id})) : std::string();
  };
  const bisect::Finding finding = bisect::judge_bisection(std::move(result), text);
  write_reports(finding, a.reports);
  if (!a.repro.empty()) write_repro_of(a, *m, engines, repro);
  return finding.match() ? 0 : 1;
}

}  // namespace

void add_bisect_command(CLI::App& app, CliContext& context) {
  auto args = std::make_shared<BisectArgs>();
  CLI::App* cmd = app.add_subcommand("bisect",
                                     "Run the truth (the f64 reference, or Vulkan in f32) and an engine in one "
                                     "process, find the first op past tolerance and the op that causes "
                                     "it (exit 0 match, 1 diverged)");
  cmd->add_option("--model", args->model, "GGUF file, Hugging Face folder, or synth:SHAPE[:DTYPE]")
      ->capture_default_str();
  add_load_options(*cmd, args->load);
  cmd->add_option("--engine-a", args->engine_a,
                  "Engine A, the truth: ref (computes in f64) or vulkan (f32 on B's device; needs --dtype f16)")
      ->capture_default_str();
  cmd->add_option("--engine-b", args->engine_b.name, "Engine B, under test: vulkan or ref")->capture_default_str();
  cmd->add_option("--dtype", args->engine_b.dtype, "Compute dtype of engine B (and of the calibration reference)")
      ->capture_default_str();
  cmd->add_option("--threads", args->engine_b.threads, "CPU threads of the reference engines (0 = all)")
      ->check(CLI::NonNegativeNumber);
  add_vulkan_options(*cmd, args->engine_b);
  add_prompt_options(*cmd, args->prompt);
  add_batch_prompts_option(*cmd, args->prompt,
                           "engine B runs them as one batch, the reference each alone (one engine per sequence)");
  cmd->add_option("--chunk", args->chunk, "Prefill chunk size in tokens (0 = whole prompt)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--generate", args->generate, "Greedy tokens to generate (the next token is compared even at 0)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--top-k", args->top_k, "Logits shown where the tokens part")->check(CLI::PositiveNumber);
  cmd->add_option("--tolerances", args->tolerances,
                  "TOML tolerance file (docs/tolerances.md), used for ops without a calibrated floor, or for all "
                  "with --no-calibrate");
  add_calibration_options(*cmd, args->calibrate,
                          "Hold ops to the tolerance table instead of k x the measured noise floor");
  cmd->add_flag("--layers-first", args->layers_first,
                "Compare the layer outputs and the attention and FFN updates first (fewer read-backs from engine "
                "B), every op only when one diverges");
  add_report_options(*cmd, args->reports);
  cmd->add_option("--dump-dir", args->dump_dir, "Keep both engines' free-run dumps here (a.h5, b.h5)");
  cmd->add_option("--taps", args->taps, "Which ops --dump-dir keeps: all, layers, or a regex over LAYER/OP")
      ->capture_default_str();
  cmd->add_option("--repro", args->repro,
                  "Write the culprit's case into this folder (its inputs as B had them: A's values, the truth's "
                  "output, B's, the tolerance) with a check in Python and in C that fails as found and calls a "
                  "kernel you fill in");
  cmd->callback([args, &context] {
    args->command_line = context.command_line;
    context.exit_code = bisect_command(*args);
  });
}

}  // namespace tapdiff::cli
