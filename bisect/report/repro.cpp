#include "bisect/report/repro.h"

#include <map>
#include <set>

#include <fmt/core.h>

#include "bisect/compare/text_format.h"
#include "bisect/report/repro_files.h"
#include "dumps/safetensors_writer.h"
#include "model/errors.h"
#include "model/output_file.h"

namespace tapdiff::bisect {
namespace {

constexpr std::string_view kCase = "case.safetensors";
constexpr std::string_view kReadme = "README.md";

// Every name a repro writes, and the C check its README builds (left as it is).
std::set<std::string> repro_names() {
  std::set<std::string> names{std::string(kCase), std::string(kReadme), "check"};
  for (const ReproFile& file : repro_files()) names.emplace(file.name);
  return names;
}

std::string exact(double value) { return fmt::format("{:.17g}", value); }

dumps::NamedArray tensor_array(const std::string& name, const model::HostTensor& t) {
  const std::vector<std::int64_t> shape{t.rows(), t.cols()};
  return t.scalar() == model::Scalar::f64 ? dumps::named_array(name, shape, t.f64())
                                          : dumps::named_array(name, shape, t.f32());
}

std::map<std::string, std::string> metadata(const ReproCase& repro, const ReproSource& source) {
  std::map<std::string, std::string> meta{
      {"format", "tapdiff repro 1"},
      {"op", std::string(model::op_name(repro.id.op))},
      {"layer", std::to_string(repro.id.layer)},
      {"pass", std::to_string(repro.chunk.index)},
      {"decode", repro.chunk.decode ? "true" : "false"},
      {"model", source.model},
      {"engine", source.engine},
      {"reference", source.reference},
      {"config", source.config},
      {"tolerance", describe(repro.tolerance.bound)},
      {"tolerance_source", repro.tolerance.source},
      {"engine_nmse", exact(repro.metrics.nmse)},
      {"engine_max_abs", exact(repro.metrics.max_abs)},
      {"engine_max_rel", exact(repro.metrics.max_rel)},
      {"engine_cosine", exact(repro.metrics.cosine)},
  };
  const Bound& bound = repro.tolerance.bound;
  for (const auto& [key, value] :
       {std::pair{"bound_nmse", bound.nmse}, std::pair{"bound_max_abs", bound.max_abs},
        std::pair{"bound_max_rel", bound.max_rel}, std::pair{"bound_min_cosine", bound.min_cosine}})
    if (value) meta[key] = exact(*value);
  std::string left_out;
  for (const ReproWeight& w : repro.weights) {
    meta[w.name() + ".file_name"] = w.file_name;
    if (w.values.empty()) left_out += (left_out.empty() ? "" : ", ") + w.name();
  }
  if (!left_out.empty()) meta["weights_left_out"] = left_out;
  return meta;
}

std::string readme(const ReproCase& repro, const ReproSource& source) {
  const std::string where = fmt::format("{}/{}", repro.id.layer, model::op_name(repro.id.op));
  std::string weights;
  for (const ReproWeight& w : repro.weights)
    weights += fmt::format(
        "- `{}`: `{}` [{}, {}]{}\n", w.name(), w.file_name, w.rows, w.cols,
        w.values.empty()
            ? fmt::format(" (left out: the op's weights pass {} MiB; read it from the model)", kReproWeightBytes >> 20)
            : "");
  if (weights.empty()) weights = "- none: the op reads no weights\n";
  std::string inputs;
  for (const ReproTensor& t : repro.inputs)
    inputs += fmt::format("- `{}` [{}, {}]\n", t.name, t.value.rows(), t.value.cols());
  return fmt::format(
      "# {where}: a test case from tapdiff\n\n"
      "Engine B's `{op}` of layer {layer} is past its tolerance on the inputs it was given (the reference ran on the "
      "same): in forward pass {pass} of "
      "{engine} ({rows} rows at positions {first}..{last}{decode}), of the model `{model}`; the reference is "
      "{reference}.\n\n"
      "- tolerance: {tolerance} ({tolerance_source})\n"
      "- the engine's output against the reference on these rows: nmse {nmse}, max_abs {max_abs}{violations}\n\n"
      "`case.safetensors` holds the op's inputs as the engine had them, the weights it reads (as tapdiff holds "
      "them, dequantized to float32), the rows' `positions` and `tokens`, the reference's output on those inputs "
      "(`output.reference`, float64) and the engine's (`output.engine`); its metadata holds the tolerance and the "
      "model's config as tapdiff read it.\n\n"
      "Inputs:\n{inputs}\nWeights:\n{weights}\n"
      "## Running the checks\n\n"
      "Fill in `kernel.py` (or `kernel.c`) with a call of your engine's kernel, then:\n\n"
      "```\n"
      "python3 check.py                      # your kernel\n"
      "python3 check.py --replay engine      # the recorded engine output: fails\n"
      "python3 check.py --replay reference   # the reference's: passes\n"
      "cc -O2 -o check check.c kernel.c -lm && ./check [--replay engine|reference]\n"
      "```\n\n"
      "Exit 0: within the tolerance; 1: past it; 2: the case could not be run.\n",
      fmt::arg("where", where), fmt::arg("op", model::op_name(repro.id.op)), fmt::arg("layer", repro.id.layer),
      fmt::arg("pass", repro.chunk.index), fmt::arg("engine", source.engine), fmt::arg("reference", source.reference),
      fmt::arg("rows", repro.chunk.rows), fmt::arg("first", repro.positions.front()),
      fmt::arg("last", repro.positions.back()), fmt::arg("decode", repro.chunk.decode ? ", a decode step" : ""),
      fmt::arg("model", source.model), fmt::arg("tolerance", describe(repro.tolerance.bound)),
      fmt::arg("tolerance_source", repro.tolerance.source), fmt::arg("nmse", short_number(repro.metrics.nmse)),
      fmt::arg("max_abs", short_number(repro.metrics.max_abs)),
      fmt::arg("violations", repro.violations.empty() && repro.first_bad_row < 0
                                 ? " (within the tolerance on these rows: the op is past it over the whole run)"
                                 : ""),
      fmt::arg("inputs", inputs), fmt::arg("weights", weights));
}

}  // namespace

void check_repro_dir(const std::filesystem::path& dir) {
  std::error_code error;
  if (!std::filesystem::exists(dir, error)) return;
  if (!std::filesystem::is_directory(dir, error))
    throw UsageError(fmt::format("--repro {}: expected a folder to write the case into, found a file", dir.string()));
  const std::set<std::string> names = repro_names();
  for (const auto& entry : std::filesystem::directory_iterator(dir, error))
    if (!names.contains(entry.path().filename().string()))
      throw UsageError(
          fmt::format("--repro {}: the folder holds {}, which a repro does not write: give an empty or new folder",
                      dir.string(), entry.path().filename().string()));
  if (error) throw UsageError(fmt::format("--repro {}: cannot read the folder: {}", dir.string(), error.message()));
}

void write_repro(const ReproCase& repro, const ReproSource& source, const std::filesystem::path& dir) {
  check_repro_dir(dir);
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) throw UsageError(fmt::format("--repro {}: cannot make the folder: {}", dir.string(), error.message()));

  std::vector<dumps::NamedArray> arrays;
  for (const ReproTensor& t : repro.inputs) arrays.push_back(tensor_array(t.name, t.value));
  for (const ReproWeight& w : repro.weights)
    if (!w.values.empty())
      arrays.push_back(dumps::named_array(w.name(), {w.rows, w.cols}, std::span<const float>(w.values)));
  const auto rows = static_cast<std::int64_t>(repro.positions.size());
  arrays.push_back(dumps::named_array("positions", {rows}, std::span<const std::int32_t>(repro.positions)));
  arrays.push_back(dumps::named_array("tokens", {rows}, std::span<const std::int32_t>(repro.tokens)));
  arrays.push_back(tensor_array("output.reference", repro.reference));
  arrays.push_back(tensor_array("output.engine", repro.engine));
  dumps::write_safetensors(dir / kCase, "--repro", arrays, metadata(repro, source));
  for (const ReproFile& file : repro_files()) model::write_text(dir / file.name, "--repro", file.text);
  model::write_text(dir / kReadme, "--repro", readme(repro, source));
}

}  // namespace tapdiff::bisect
