// tapdiff compare: compare dump B against reference dump A op by op, offline and streaming, under
// tolerances; with --model, isolate the culprit on B's own inputs (bisect/drive/local_check.h). Exit 0
// when every op is within tolerance and the runs agree, 1 otherwise, 2 for bad input.
#include <filesystem>

#include <fmt/core.h>

#include "bisect/cli/calibration_options.h"
#include "bisect/cli/commands.h"
#include "bisect/cli/dump_input.h"
#include "bisect/cli/dump_model.h"
#include "bisect/cli/engine_factory.h"
#include "bisect/cli/finding_outputs.h"
#include "bisect/cli/model_source.h"
#include "bisect/cli/option_checks.h"
#include "bisect/cli/progress_line.h"
#include "bisect/compare/comparator.h"
#include "bisect/compare/precision_evidence.h"
#include "bisect/compare/text_format.h"
#include "bisect/drive/floor_run.h"
#include "bisect/drive/local_check.h"
#include "bisect/judge/finding.h"
#include "bisect/report/repro.h"
#include "bisect/report/terminal.h"
#include "dumps/dump_reader.h"
#include "formats/load_model.h"
#include "model/errors.h"
#include "model/precision.h"

namespace tapdiff::cli {
namespace {

struct CompareArgs {
  std::string a, b;
  std::string tolerances;
  ReportFiles reports;
  std::string taps = "all";
  std::int64_t max_rows = 0;
  bool common_rows = false;
  bool common_ops = false;
  // --model: the culprit on B's own inputs
  std::string model;
  formats::LoadOptions load;
  std::string layers;
  int threads = 0;
  std::string b_precision;  // what B computes in: as B's dump states it, or its values tell, when empty
  std::string floor;        // --floor: a run in B's precision whose error against A calibrates B's tolerances
  CalibrationOptions calibrate;
  DumpInputOptions input;
  std::string repro;  // --repro: the culprit's case and its checks, written into this folder
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

// What B computes in: --b-precision, else as B's dump states it or its values tell.
bisect::PrecisionOfB precision_of_b(const CompareArgs& args, const dumps::DumpReader& b) {
  if (args.b_precision.empty()) return bisect::precision_of(b);
  const std::optional<model::Precision> given = model::parse_precision(args.b_precision);
  if (!given)
    throw UsageError(fmt::format("--b-precision {}: expected one of {} (llama.cpp: its CPU backend's roundings)",
                                 args.b_precision, model::precision_names()));
  return {*given, bisect::PrecisionOfB::From::given, ""};
}

// --model, checked before the comparison: the model B ran, and the options of the check on B's
// own inputs (its layers, B's precision, calibration: none where B's precision is unknown).
struct CheckOnB {
  std::unique_ptr<model::Model> model;
  bisect::LocalCheckOptions options;
  bisect::PrecisionOfB precision;
};

CheckOnB prepare_check_on_b(const CompareArgs& args, std::unique_ptr<model::Model> model, const dumps::DumpReader& b,
                            const bisect::Tolerances& tolerances, const bisect::PrecisionOfB& precision) {
  CheckOnB check{std::move(model), {}, precision};
  require_model_of(b, *check.model, "--model", args.model);
  bisect::LocalCheckOptions& options = check.options;
  options.tolerances = tolerances;
  options.precision = precision.value;
  if (!args.layers.empty()) parse_layers(args.layers, check.model->config().n_layers, options);
  const bool known = precision.from != bisect::PrecisionOfB::From::unknown;
  options.calibration = known ? args.calibrate.calibration(precision.value) : std::nullopt;
  return check;
}

// The reference in B's precision. A precision it cannot emulate for this model is refused with
// where that precision came from (given, stated by B's dump, or inferred and from what).
std::unique_ptr<model::Engine> floor_engine(const bisect::PrecisionOfB& precision, const model::Model& m, int threads) {
  try {
    return make_engine(reference_choice(std::string(model::precision_name(precision.value)), threads), m);
  } catch (const UsageError& e) {
    const std::string why = precision.evidence.empty() ? "" : ": " + precision.evidence;
    throw UsageError(fmt::format("B's precision is {} ({}{}), and the reference cannot emulate it here: {}",
                                 model::precision_name(precision.value), bisect::from_name(precision.from), why,
                                 e.what()));
  }
}

// The scan's tolerances from the noise floor of B's precision over A's own passes (floor_run.h):
// B's ops are held to k times it, as bisect's floor engine holds them.
bisect::Tolerances with_measured_floor(bisect::Tolerances tolerances, const dumps::DumpReader& a, const model::Model& m,
                                       const bisect::Calibration& calibration, const bisect::PrecisionOfB& precision,
                                       const CompareArgs& args) {
  const model::Graph graph(m.config());
  const auto truth = make_engine(reference_choice("f64", args.threads), m);
  const auto floor = floor_engine(precision, m, args.threads);
  ProgressLine progress;
  const auto floors = bisect::measure_floor(
      a, graph, {*truth, *floor}, precision.value, dumps::TapFilter(args.taps), [&progress](int pass, int passes) {
        progress.update(
            [&](double seconds) {
              return fmt::format("noise floor on A's passes  pass {:>4}/{}  {:.1f} s", pass, passes, seconds);
            },
            pass == passes);
      });
  tolerances.set_calibration(calibration);
  for (const auto& [id, metrics] : floors) tolerances.set_floor(id, metrics);
  return tolerances;
}

// The culprit on B's own inputs: every op of B's dump run by the reference on B's inputs.
bisect::LocalCheck check_on_b(const CompareArgs& args, CheckOnB& check, const dumps::DumpReader& b,
                              model::Engine& truth) {
  const model::Model& m = *check.model;
  const model::Graph graph(m.config());
  std::unique_ptr<model::Engine> floor;
  if (check.options.calibration) floor = floor_engine(check.precision, m, args.threads);
  ProgressLine progress;
  check.options.progress = [&progress](int chunk, int chunks) {
    progress.update(
        [&](double seconds) {
          return fmt::format("check on B's inputs  chunk {:>4}/{}  {:.1f} s", chunk, chunks, seconds);
        },
        chunk == chunks);
  };
  return bisect::check_locally(b, graph, {truth, floor.get()}, check.options);
}

// --repro DIR: the culprit's case on B's inputs and its checks (bisect/report/repro.h).
void write_repro_of(const CompareArgs& args, const CheckOnB& check, const dumps::DumpReader& b,
                    const std::optional<bisect::Isolation>& isolation, model::Engine* truth) {
  if (!isolation || !isolation->culprit || !truth) {
    fmt::print("repro: no culprit was found on B's own inputs: nothing written to {}\n", args.repro);
    return;
  }
  const bisect::OpResult& culprit = isolation->local[*isolation->culprit];
  const model::Graph graph(check.model->config());
  const bisect::ReproCase repro = bisect::repro_case_from_dump(b, graph, *check.model, *truth, culprit);
  const std::string reference = fmt::format("{} ({})", truth->name(), truth->compute_dtype());
  bisect::write_repro(repro, {args.model, args.b, reference, model::to_json(check.model->config()).dump()}, args.repro);
  fmt::print(
      "repro: {}: {}'s case on B's inputs (forward pass {}) with its checks: python3 {}/check.py --replay "
      "engine fails as found; fill in kernel.py or kernel.c to run yours\n",
      args.repro, model::to_string(culprit.id), repro.chunk.index, args.repro);
}

// --floor F: F's error against A per op, F a run of the same prompt in B's precision (`tapdiff run
// --dtype llama.cpp`, say): B's ops are held to k times it, as bisect's floor engine holds them.
bisect::Tolerances with_floor(bisect::Tolerances tolerances, const dumps::DumpReader& a, const dumps::DumpReader& floor,
                              const CompareArgs& args, const std::optional<bisect::Calibration>& calibration) {
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
  // Everything that can be refused is checked before the long part: the outputs and the tolerance file first.
  refuse_reports_over_inputs(args.reports, {args.a, args.b, args.tolerances, args.model, args.floor,
                                            std::filesystem::exists(args.input.map) ? args.input.map : ""});
  bisect::Tolerances tolerances =
      args.tolerances.empty() ? bisect::Tolerances() : bisect::Tolerances::from_file(args.tolerances);
  if (args.model.empty() && !args.layers.empty()) throw UsageError("--layers: give --model too");
  if (!args.repro.empty()) {
    if (args.model.empty()) throw UsageError("--repro: give --model too (the culprit is found on B's own inputs)");
    bisect::check_repro_dir(args.repro);
  }
  std::unique_ptr<model::Model> model = args.model.empty() ? nullptr : open_model(args.model, args.load);
  // An imported dump takes the model from --model, else from the other dump (HDF5 first).
  const bool a_imported = dumps::is_imported_dump(args.a);
  std::unique_ptr<dumps::DumpReader> a_dump, b_dump;
  if (a_imported) b_dump = open_dump(args.b, args.input, model.get());
  a_dump = open_dump(args.a, args.input, model.get(), b_dump.get());
  if (!b_dump) b_dump = open_dump(args.b, args.input, model.get(), a_dump.get());
  const dumps::DumpReader& a = *a_dump;
  const dumps::DumpReader& b = *b_dump;
  const bisect::PrecisionOfB precision = precision_of_b(args, b);
  const std::optional<bisect::Calibration> calibration = args.calibrate.calibration(precision.value);
  const bool known = precision.from != bisect::PrecisionOfB::From::unknown;
  std::string tolerance_source;
  if (!args.floor.empty()) {
    tolerances =
        with_floor(std::move(tolerances), a, *open_dump(args.floor, args.input, model.get(), &a), args, calibration);
    tolerance_source = fmt::format("calibrated against {} (k = {})", args.floor, bisect::short_number(calibration->k));
  }
  std::optional<CheckOnB> check;
  if (model) check = prepare_check_on_b(args, std::move(model), b, tolerances, precision);
  if (check && args.floor.empty() && calibration && known) {
    tolerances = with_measured_floor(std::move(tolerances), a, *check->model, *calibration, precision, args);
    tolerance_source = fmt::format("calibrated against ref {} on A's passes (k = {})",
                                   model::precision_name(precision.value), bisect::short_number(calibration->k));
  }
  bisect::CompareOptions options;
  options.taps = dumps::TapFilter(args.taps);
  options.max_rows = args.max_rows;
  options.common_rows = args.common_rows;
  options.common_ops = args.common_ops;
  options.b_precision = precision;
  bisect::CompareResult result;
  {
    ProgressLine progress;
    options.progress = [&progress](const bisect::CompareProgress& p) {
      progress.update([&p](double seconds) { return bisect::progress_line(p, seconds); }, p.done == p.total);
    };
    result = bisect::compare_dumps(a, b, tolerances, options);
  }
  if (!tolerance_source.empty()) result.tolerance_source = tolerance_source;
  // Where nothing tells what B computes in, no op is taken for a bug: no culprit is named.
  std::optional<bisect::LocalCheck> local;
  std::unique_ptr<model::Engine> truth;
  if (check && !result.match() && known) {
    truth = make_engine(reference_choice("f64", args.threads), *check->model);
    local = check_on_b(args, *check, b, *truth);
  }
  const bisect::Finding finding =
      bisect::judge_comparison(std::move(result), std::move(local), bisect::DumpSource(a), bisect::DumpSource(b));
  write_reports(finding, args.reports);
  if (!args.repro.empty()) write_repro_of(args, *check, b, finding.isolation, truth.get());
  return finding.match() ? 0 : 1;
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
  add_report_options(*cmd, args->reports);
  cmd->add_option("--taps", args->taps, "Which ops to compare: all, layers, or a regex over LAYER/OP")
      ->capture_default_str();
  cmd->add_option("--max-rows", args->max_rows, "Compare at most N positions (0 = all)")->check(CLI::NonNegativeNumber);
  cmd->add_flag("--common-rows", args->common_rows,
                "Compare the positions both runs hold: positions only A holds (B stopped early on purpose) are "
                "reported, not failed");
  cmd->add_flag("--common-ops", args->common_ops,
                "Compare the ops both dumps tap: ops tapped in one only (B taps a part of the graph on purpose) are "
                "listed, not failed");
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
                  "What B computes in: a precision of model/precision.def (f64, f32, f16, f16_acc16, bf16, "
                  "llama.cpp, llama.cpp-vulkan, fp8_e4m3, fp8_e5m2; docs/tolerances.md); default: as B's dump "
                  "states it, else as its values tell. With --model the reference "
                  "emulates it on A's passes and on B's inputs, and B's ops are held to k x that noise floor");
  cmd->add_option("--repro", args->repro,
                  "With --model: write the culprit's case into this folder (its inputs as B had them, the "
                  "reference's output in f64, B's, the tolerance) with a check in Python and in C that fails as "
                  "found and calls a kernel you fill in");
  add_calibration_options(*cmd, args->calibrate,
                          "With --model: hold each op to the tolerance table instead of k x the noise floor of the "
                          "reference in B's precision, on A's passes and on B's inputs (and refuse --floor)");
  cmd->callback([args, &context] { context.exit_code = compare(*args); });
}

}  // namespace tapdiff::cli
