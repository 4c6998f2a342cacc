#include "bisect/drive/local_check.h"

#include <algorithm>

#include <fmt/core.h>

#include "bisect/compare/dump_chunks.h"
#include "bisect/drive/pass_comparison.h"
#include "model/errors.h"

namespace tapdiff::bisect {

std::string_view local_inputs_text(LocalInputs inputs) {
  return inputs == LocalInputs::a ? "A's inputs" : "B's own inputs";
}
namespace {

bool in_layers(const model::Step& step, const LocalCheckOptions& options) {
  return step.layer >= options.first_layer && step.layer <= options.last_layer;
}

}  // namespace

std::vector<std::string> LocalCheck::missing_taps() const {
  std::vector<std::string> out;
  for (const Undecidable& u : undecidable)
    for (const model::TensorId& id : u.missing) out.push_back(model::to_string(id));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::optional<std::size_t> LocalCheck::symptom_of(const CompareResult& run) const {
  if (!run.first) return std::nullopt;
  const model::TensorId& id = run.ops[*run.first].id;
  const auto it = std::find_if(local.begin(), local.end(), [&](const OpResult& op) { return op.id == id; });
  if (it == local.end()) return std::nullopt;
  return static_cast<std::size_t>(it - local.begin());
}

LocalCheck check_locally(const dumps::DumpReader& b, const model::Graph& graph, LocalCheckEngines engines,
                         const LocalCheckOptions& options) {
  LocalCheck result;
  const std::vector<DumpChunk> chunks = dump_chunks(b, "check B's ops on its own inputs");

  // The steps checked: in the layers, B holds the output and every input.
  std::vector<bool> checked;
  for (const model::Step& step : graph.steps()) {
    bool ok = in_layers(step, options) && b.has(step.output());
    if (ok) {
      Undecidable u{step.output(), {}};
      for (const model::TensorId& in : step.inputs)
        if (!b.has(in)) u.missing.push_back(in);
      if (!u.missing.empty()) result.undecidable.push_back(std::move(u)), ok = false;
    }
    checked.push_back(ok);
  }
  if (std::none_of(checked.begin(), checked.end(), [](bool c) { return c; }))
    throw UsageError(
        fmt::format("{}: no op in the layers asked for has its output and all of its inputs tapped: "
                    "nothing to check on B's own inputs",
                    b.path()));

  const auto& steps = graph.steps();
  PassComparison comparison(graph, b.config(), [&](const model::Step& step) {
    return checked[static_cast<std::size_t>(&step - steps.data())];
  });
  for (model::Engine* e : {&engines.truth, engines.floor})
    if (e) e->reset();
  for (const DumpChunk& chunk : chunks) {
    const model::ChunkInfo& info = chunk.fed.info;
    for (model::Engine* e : {&engines.truth, engines.floor})
      if (e) e->begin_chunk(chunk.fed.tokens, info);
    for (std::size_t i = 0; i < steps.size(); ++i) {
      if (!checked[i]) continue;
      const model::Step& step = steps[i];
      const auto read_b = [&](const model::TensorId& id) { return b.read(id, chunk.first_row, info.rows); };
      for (const model::TensorId& in : step.inputs) {
        const model::HostTensor value = read_b(in);
        for (model::Engine* e : {&engines.truth, engines.floor})
          if (e) e->write(in, value);
      }
      std::optional<model::HostTensor> floor;
      engines.truth.execute(step, {});
      const model::HostTensor truth = engines.truth.read(step.output());
      if (engines.floor) {
        engines.floor->execute(step, {});
        floor = engines.floor->read(step.output());
      }
      const model::HostTensor own = read_b(step.output());
      comparison.add({step, info, truth, floor ? &*floor : nullptr, own});
    }
    comparison.add_rows(info, 0);
    for (model::Engine* e : {&engines.truth, engines.floor})
      if (e) e->end_chunk();
    if (options.progress) options.progress(info.index + 1, static_cast<int>(chunks.size()));
  }
  result.local =
      comparison.finish(options.tolerances, options.precision, options.calibration, engines.floor != nullptr);
  result.rows = comparison.rows();
  const auto culprit =
      std::find_if(result.local.begin(), result.local.end(), [](const OpResult& op) { return !op.pass(); });
  if (culprit != result.local.end()) result.culprit = static_cast<std::size_t>(culprit - result.local.begin());
  return result;
}

}  // namespace tapdiff::bisect
