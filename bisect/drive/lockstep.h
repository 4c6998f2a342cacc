#pragma once
// Several engines run the same chunk step by step, so their outputs of each op can be compared the
// moment they exist: nothing is kept beyond one op's output per engine (and, when forcing, the
// truth's outputs that later steps still read).
//
// Two ways to drive engine B (and the floor engine, which stands for B's precision):
//   - free: every engine computes every op from its own previous outputs (the end-to-end run);
//   - forced: before each step, the step's inputs are overwritten with the truth's values
//     (Engine::write), so an op's difference from the truth is its own, local error. Attention
//     appends the forced K/V rows to the engine's own cache through its own append path, so a
//     bug in the engine's cache bookkeeping counts as attention's local error.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "model/engine.h"
#include "model/graph.h"
#include "model/host_tensor.h"

namespace tapdiff::bisect {

enum class Drive { free, forced };

struct LockstepEngines {
  model::Engine& truth;  // engine A: the reference every other engine is measured against
  model::Engine* floor;  // the reference in B's precision (calibrated mode); null: none
  model::Engine& b;      // the engine under test
};

// One step's outputs of every engine, [chunk.rows, width] each.
struct StepOutputs {
  const model::Step& step;
  const model::ChunkInfo& chunk;
  const model::HostTensor& truth;
  const model::HostTensor* floor;  // null without a floor engine
  const model::HostTensor& b;
};
using StepObserver = std::function<void(const StepOutputs&)>;
using StepFilter = std::function<bool(const model::Step&)>;

class RoutingArbiter;  // bisect/compare/routing.h

class Lockstep {
 public:
  // observed: the steps whose outputs are read and observed (all when empty; free drive only: a
  // forced step needs every input read). The others only execute, so their outputs stay where
  // the engine keeps them (a GPU engine then need not finish each op before the next).
  Lockstep(const model::Graph& graph, Drive drive, LockstepEngines engines, StepFilter observed = {});

  // Empties every engine's KV caches and makes room for `sequences` (model::Engine::set_sequences).
  void reset(int sequences = 1);
  // At each observed moe_ids (idx_ids) step, the arbiter settles B's and the floor's near-tie expert
  // choices (kept positions: bisect/compare/routing.h): they continue with the truth's, and observe
  // sees the settled ids. Null: none.
  void set_routing(RoutingArbiter* arbiter) { routing_ = arbiter; }
  // One forward pass of every engine over the parts of a ragged batch (model::Engine::begin_batch);
  // observe sees every step's outputs, [every part's rows, width], in graph order, with chunk
  // describing the whole pass (its index, the first part's position, the total rows).
  void pass(int index, std::span<const model::BatchPart> parts, const StepObserver& observe);

 private:
  const model::Graph& graph_;
  Drive drive_;
  LockstepEngines engines_;
  std::vector<std::vector<std::size_t>> producers_;  // per step: the steps whose outputs it reads
  std::vector<std::size_t> last_use_;                // per step: the index of the last step that reads its output
  StepFilter observed_;
  RoutingArbiter* routing_ = nullptr;

  // The outputs moe_ids chooses by (model::choice_op) and idx_scores go to the arbiter; a moe_ids or
  // idx_ids step's are settled by it (B's and the floor's rewritten where it changed them).
  void arbitrate(const model::Step& step, std::span<const model::BatchPart> parts, const model::HostTensor& truth,
                 std::optional<model::HostTensor>& floor, model::HostTensor& b);
};

}  // namespace tapdiff::bisect
