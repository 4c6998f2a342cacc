#include "bisect/local_check.h"

#include <algorithm>

#include <fmt/core.h>

#include "bisect/pass_comparison.h"
#include "model/errors.h"

namespace tapdiff::bisect {
namespace {

bool in_layers(const model::Step& step, const LocalCheckOptions& options) {
  return step.layer >= options.first_layer && step.layer <= options.last_layer;
}

// One of B's forward passes: rows [first, first + rows) of the dump.
struct Chunk {
  std::int64_t first = 0;
  model::ChunkInfo info;
};

// B's chunks in row order, at the rows' places in the token stream, which must be 0, 1, 2, ...
std::vector<Chunk> chunks_of(const dumps::DumpReader& b, const std::vector<std::int32_t>& positions) {
  for (std::size_t r = 0; r < positions.size(); ++r)
    if (positions[r] != static_cast<std::int32_t>(r))
      throw UsageError(fmt::format(
          "{}: row {} is at position {}: checking B's ops on its own inputs needs its rows from position 0 on, one "
          "per position (the reference rebuilds the KV cache from them)",
          b.path(), r, positions[r]));
  std::vector<Chunk> out;
  for (std::int64_t r = 0; r < b.rows(); ++r) {
    const auto i = static_cast<std::size_t>(r);
    if (r == 0 || b.chunks()[i] != b.chunks()[i - 1])
      out.push_back({r, {static_cast<int>(out.size()), positions[i], 0, b.decode_flags()[i] != 0}});
    ++out.back().info.rows;
  }
  return out;
}

}  // namespace

const OpResult* LocalCheck::find(const model::TensorId& id) const {
  const auto it = std::find_if(local.begin(), local.end(), [&](const OpResult& op) { return op.id == id; });
  return it == local.end() ? nullptr : &*it;
}

LocalCheck check_locally(const dumps::DumpReader& b, const model::Graph& graph, LocalCheckEngines engines,
                         const LocalCheckOptions& options) {
  LocalCheck result;
  std::vector<PositionAnomaly> anomalies;
  const std::vector<Chunk> chunks = chunks_of(b, aligned_positions(run_rows(b), 'B', anomalies));

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
  for (const Chunk& chunk : chunks) {
    const auto tokens =
        std::span(b.tokens()).subspan(static_cast<std::size_t>(chunk.first), static_cast<std::size_t>(chunk.info.rows));
    for (model::Engine* e : {&engines.truth, engines.floor})
      if (e) e->begin_chunk(tokens, chunk.info);
    for (std::size_t i = 0; i < steps.size(); ++i) {
      if (!checked[i]) continue;
      const model::Step& step = steps[i];
      const auto read_b = [&](const model::TensorId& id) { return b.read(id, chunk.first, chunk.info.rows); };
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
      comparison.add({step, chunk.info, truth, floor ? &*floor : nullptr, own});
    }
    comparison.add_rows(chunk.info, 0);
    for (model::Engine* e : {&engines.truth, engines.floor})
      if (e) e->end_chunk();
    if (options.progress) options.progress(chunk.info.index + 1, static_cast<int>(chunks.size()));
  }
  result.local = comparison.finish(options.tolerances, options.dtype, options.calibration, engines.floor != nullptr);
  result.rows = comparison.rows();
  const auto culprit =
      std::find_if(result.local.begin(), result.local.end(), [](const OpResult& op) { return !op.pass(); });
  if (culprit != result.local.end()) result.culprit = static_cast<std::size_t>(culprit - result.local.begin());
  return result;
}

}  // namespace tapdiff::bisect
