#include "bisect/drive/floor_run.h"

#include <map>
#include <span>
#include <utility>

#include "bisect/compare/dump_chunks.h"
#include "bisect/compare/routing.h"
#include "bisect/drive/lockstep.h"

namespace tapdiff::bisect {

std::vector<std::pair<model::TensorId, Metrics>> measure_floor(const dumps::DumpReader& dump, const model::Graph& graph,
                                                               FloorEngines engines, model::Precision precision,
                                                               const dumps::TapFilter& taps,
                                                               const std::function<void(int, int)>& progress) {
  const std::vector<DumpChunk> chunks = dump_chunks(dump, "the noise floor's run of its passes");
  const auto measured = [&](const model::Step& step) { return dump.has(step.output()) && taps.matches(step.output()); };
  std::map<std::pair<int, model::Op>, MetricsAccumulator> floors;  // by (layer, op)
  std::int64_t first_row = 0;
  // The floor engine runs as engine B of a lockstep without one: its near-tie expert choices are
  // settled to the truth's, as in bisect.
  Lockstep run(graph, Drive::free, {engines.truth, nullptr, engines.floor}, measured);
  RoutingArbiter routing(dump.config(), precision, true);
  run.set_routing(&routing);
  run.reset();
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const model::FedChunk& fed = chunks[i].fed;
    const model::BatchPart part{0, fed.tokens, fed.info.first_pos, fed.info.decode};
    run.pass(static_cast<int>(i), std::span(&part, 1), [&](const StepOutputs& out) {
      floors[{out.step.layer, out.step.op}].add(out.truth, out.b, first_row);
    });
    first_row += fed.info.rows;
    if (progress) progress(static_cast<int>(i) + 1, static_cast<int>(chunks.size()));
  }
  std::vector<std::pair<model::TensorId, Metrics>> out;
  for (const model::TensorId& id : dump.tensors())
    if (const auto f = floors.find({id.layer, id.op}); f != floors.end()) out.emplace_back(id, f->second.result());
  return out;
}

}  // namespace tapdiff::bisect
