// tapdiff compare: compare dump B against reference dump A op by op, offline and streaming, under
// tolerances; with --model, isolate the culprit on B's own inputs (bisect/local_check.h). Exit 0
// when every op is within tolerance and the runs agree, 1 otherwise, 2 for bad input.
#include <unistd.h>

#include <cstdio>

#include <fmt/core.h>

#include "bisect/cli/calibration_options.h"
#include "bisect/cli/commands.h"
#include "bisect/cli/dump_input.h"
#include "bisect/cli/dump_model.h"
#include "bisect/cli/engine_factory.h"
#include "bisect/cli/model_source.h"
#include "bisect/cli/option_checks.h"
#include "bisect/cli/output_file.h"
#include "bisect/cli/progress_line.h"
#include "bisect/comparator.h"
#include "bisect/diagnosis.h"
#include "bisect/local_check.h"
#include "bisect/lookalike.h"
#include "bisect/report_format.h"
#include "bisect/report_html.h"
#include "bisect/report_isolation.h"
#include "bisect/report_json.h"
#include "bisect/report_junit.h"
#include "bisect/report_terminal.h"
#include "dumps/dump_reader.h"
#include "model/errors.h"

namespace tapdiff::cli {
namespace {

struct CompareArgs {
  std::string a, b;
  std::string tolerances;
  std::string json, junit, html;
  std::string taps = "all";
  std::int64_t max_rows = 0;
  // --model: the culprit on B's own inputs
  std::string model;
  model::LoadOptions load;
  std::string layers;
  int threads = 0;
  std::string b_precision;  // the floor's precision: B's compute dtype when empty
  std::string floor;        // --floor: a run in B's precision whose error against A calibrates B's tolerances
  CalibrationOptions calibrate;
  DumpInputOptions input;
};

// "FIRST:LAST" (either may be empty) into options' layer range. UsageError otherwise.
void parse_layers(const std::string& spec, int n_layers, bisect::LocalCheckOptions& options) {
  const std::size_t colon = spec.find(':');
  const auto number = [&](const std::string& text, int fallback) {
    if (text.empty()) return fallback;
    const std::optional<std::int64_t> value = parse_integer(text);
    if (value && *value >= -1 && *value <= n_layers) return static_cast<int>(*value);
    throw UsageError(fmt::format("--layers {}: expected FIRST:LAST, layers from -1 (embed) to {} (final_norm, logits)",
                                 spec, n_layers));
  };
  if (colon == std::string::npos) {
    options.first_layer = options.last_layer = number(spec, 0);
    return;
  }
  options.first_layer = number(spec.substr(0, colon), -1);
  options.last_layer = number(spec.substr(colon + 1), n_layers);
  if (options.first_layer > options.last_layer)
    throw UsageError(fmt::format("--layers {}: the first layer is after the last", spec));
}

// --model, checked before the comparison: the model B ran, and the options of the check on B's
// own inputs (its layers, B's dtype, calibration).
struct CheckOnB {
  std::unique_ptr<model::Model> model;
  bisect::LocalCheckOptions options;
  std::string floor_dtype;  // the reference's --dtype that emulates B's precision
};

CheckOnB prepare_check_on_b(const CompareArgs& args, std::unique_ptr<model::Model> model, const dumps::DumpReader& b,
                            const bisect::Tolerances& tolerances) {
  CheckOnB check{std::move(model), {}, ""};
  require_model_of(b, *check.model, "--model", args.model);
  bisect::LocalCheckOptions& options = check.options;
  options.tolerances = tolerances;
  options.dtype = b.metadata().compute_dtype.empty() ? "f32" : b.metadata().compute_dtype;
  if (!args.layers.empty()) parse_layers(args.layers, check.model->config().n_layers, options);
  // The reference emulates f64, f32 and f16 (not bf16) for the floor, and llama.cpp's CPU
  // roundings (its arithmetic is f32: the tolerance rules of f32).
  if (args.b_precision.empty()) {
    const bool emulated = bisect::Tolerances::knows_dtype(options.dtype) && options.dtype != "bf16";
    check.floor_dtype = emulated ? options.dtype : "";
  } else if (args.b_precision == "llama.cpp") {
    check.floor_dtype = args.b_precision;
    options.dtype = "f32";
  } else if (args.b_precision == "f32" || args.b_precision == "f16" || args.b_precision == "f64") {
    check.floor_dtype = options.dtype = args.b_precision;
  } else {
    throw UsageError(fmt::format("--b-precision {}: expected f32, f16, f64 or llama.cpp (llama.cpp's CPU roundings)",
                                 args.b_precision));
  }
  options.calibration = check.floor_dtype.empty() ? std::nullopt : args.calibrate.calibration();
  return check;
}

// The culprit on B's own inputs: every op of B's dump run by the reference on B's inputs.
bisect::LocalCheck check_on_b(const CompareArgs& args, CheckOnB& check, const dumps::DumpReader& b) {
  const model::Model& m = *check.model;
  const model::Graph graph(m.config());
  const auto truth = make_engine(reference_choice("f64", args.threads), m);
  std::unique_ptr<model::Engine> floor;
  if (check.options.calibration) floor = make_engine(reference_choice(check.floor_dtype, args.threads), m);
  ProgressLine progress;
  check.options.progress = [&progress](int chunk, int chunks) {
    progress.update(
        [&](double seconds) {
          return fmt::format("check on B's inputs  chunk {:>4}/{}  {:.1f} s", chunk, chunks, seconds);
        },
        chunk == chunks);
  };
  return bisect::check_locally(b, graph, {*truth, floor.get()}, check.options);
}

// --floor F: F's error against A per op, F a run of the same prompt in B's precision (`tapdiff run
// --dtype llama.cpp`, say): B's ops are held to k times it, as bisect's floor engine holds them.
bisect::Tolerances with_floor(bisect::Tolerances tolerances, const dumps::DumpReader& a, const dumps::DumpReader& floor,
                              const CompareArgs& args) {
  const std::optional<bisect::Calibration> calibration = args.calibrate.calibration();
  if (!calibration) throw UsageError("--floor calibrates the tolerances: give --floor or --no-calibrate, not both");
  bisect::CompareOptions options;
  options.taps = dumps::TapFilter(args.taps);
  options.max_rows = args.max_rows;
  const bisect::CompareResult measured = bisect::compare_dumps(a, floor, bisect::Tolerances(), options);
  tolerances.set_calibration(*calibration);
  for (const bisect::OpResult& op : measured.ops) tolerances.set_floor(op.id, op.metrics);
  return tolerances;
}

int compare(const CompareArgs& args) {
  // Everything that can be refused is checked before the long part: the tolerance file first.
  bisect::Tolerances tolerances =
      args.tolerances.empty() ? bisect::Tolerances() : bisect::Tolerances::from_file(args.tolerances);
  if (args.model.empty() && !args.layers.empty()) throw UsageError("--layers: give --model too");
  if (args.model.empty() && !args.b_precision.empty()) throw UsageError("--b-precision: give --model too");
  std::unique_ptr<model::Model> model = args.model.empty() ? nullptr : open_model(args.model, args.load);
  // An imported dump takes the model from --model, else from the other dump (HDF5 first).
  const bool a_imported = dumps::is_imported_dump(args.a);
  std::unique_ptr<dumps::DumpReader> a_dump, b_dump;
  if (a_imported) b_dump = open_dump(args.b, args.input, model.get());
  a_dump = open_dump(args.a, args.input, model.get(), b_dump.get());
  if (!b_dump) b_dump = open_dump(args.b, args.input, model.get(), a_dump.get());
  const dumps::DumpReader& a = *a_dump;
  const dumps::DumpReader& b = *b_dump;
  if (!args.floor.empty())
    tolerances = with_floor(std::move(tolerances), a, *open_dump(args.floor, args.input, model.get(), &a), args);
  std::optional<CheckOnB> check;
  if (model) check = prepare_check_on_b(args, std::move(model), b, tolerances);
  bisect::CompareOptions options;
  options.taps = dumps::TapFilter(args.taps);
  options.max_rows = args.max_rows;
  bisect::CompareResult result;
  {
    ProgressLine progress;
    options.progress = [&progress](const bisect::CompareProgress& p) {
      progress.update([&p](double seconds) { return bisect::progress_line(p, seconds); }, p.done == p.total);
    };
    result = bisect::compare_dumps(a, b, tolerances, options);
  }
  if (!args.floor.empty())
    result.tolerance_source =
        fmt::format("calibrated against {} (k = {})", args.floor, bisect::short_number(args.calibrate.k));
  std::optional<bisect::LocalCheck> local;
  if (check && !result.match()) local = check_on_b(args, *check, b);
  std::vector<bisect::Diagnosis> diagnoses = local ? bisect::diagnose(result, *local) : bisect::diagnose(result);
  for (bisect::Diagnosis& d : bisect::lookalikes(result, bisect::DumpSource(a), bisect::DumpSource(b)))
    diagnoses.push_back(std::move(d));
  std::optional<bisect::Isolation> isolation;
  if (local) {
    isolation.emplace(
        bisect::Isolation{result, local->local, local->culprit, local->symptom_of(result), "B's own inputs", false});
  }
  if (!args.json.empty()) {
    nlohmann::json report = bisect::report_json(result, diagnoses);
    if (isolation) bisect::add_isolation_json(report, *isolation, local->rows.size());
    write_text(args.json, "--json", report.dump(2) + "\n");
  }
  if (!args.junit.empty()) write_text(args.junit, "--junit", bisect::junit_xml(result));
  if (!args.html.empty())
    write_text(args.html, "--html",
               bisect::html_report(result, diagnoses, isolation ? bisect::isolation_html(*isolation) : ""));
  bisect::TerminalExtras extras;
  if (isolation) extras.after_verdict = bisect::isolation_lines(*isolation);
  fmt::print("{}", bisect::terminal_report(result, diagnoses, ::isatty(STDOUT_FILENO) != 0, 8, extras));
  std::fflush(stdout);
  return result.match() ? 0 : 1;
}

}  // namespace

void add_compare_command(CLI::App& app, CliContext& context) {
  auto args = std::make_shared<CompareArgs>();
  CLI::App* cmd = app.add_subcommand(
      "compare", "Compare dump B against reference dump A op by op under tolerances (exit 0 match, 1 diverged)");
  cmd->add_option("a", args->a, "Reference dump (HDF5, or safetensors / .npz: a file or a folder of per-step files)")
      ->required();
  cmd->add_option("b", args->b, "Dump to check against it (as A)")->required();
  add_dump_input_options(*cmd, args->input);
  cmd->add_option("--tolerances", args->tolerances, "TOML tolerance file (docs/tolerances.md); default: built-in");
  cmd->add_option("--json", args->json, "Write the full report as JSON");
  cmd->add_option("--junit", args->junit, "Write a JUnit XML report (one testcase per layer/op)");
  cmd->add_option("--html", args->html, "Write a self-contained HTML report");
  cmd->add_option("--taps", args->taps, "Which ops to compare: all, layers, or a regex over LAYER/OP")
      ->capture_default_str();
  cmd->add_option("--max-rows", args->max_rows, "Compare at most N positions (0 = all)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--model", args->model,
                  "The model B ran (GGUF file, Hugging Face folder, synth:SHAPE): on a divergence, run each op of B's "
                  "dump on B's own inputs in the f64 reference to find the culprit; the model of an imported dump");
  add_load_options(*cmd, args->load);
  cmd->add_option("--layers", args->layers,
                  "With --model: check only layers FIRST:LAST (embed is -1, final_norm and logits n_layers)");
  cmd->add_option("--threads", args->threads, "With --model: CPU threads of the reference (0 = all)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--floor", args->floor,
                  "A run of the same prompt in B's precision (`tapdiff run --dtype llama.cpp --dump F`, say): B's "
                  "ops are held to k times its error against A instead of the tolerance table");
  cmd->add_option("--b-precision", args->b_precision,
                  "With --model: what B computes in, emulated by the reference for the noise floor: f32, f16, f64 "
                  "or llama.cpp (f32 rounded where llama.cpp's CPU backend rounds); default: B's dump's compute "
                  "dtype");
  add_calibration_options(*cmd, args->calibrate,
                          "With --model: hold each op's own error to the tolerance table instead of k x the noise "
                          "floor of the reference in B's precision (and refuse --floor)");
  cmd->callback([args, &context] { context.exit_code = compare(*args); });
}

}  // namespace tapdiff::cli
