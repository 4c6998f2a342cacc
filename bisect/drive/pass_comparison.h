#pragma once
// One forward pass's comparison, fed step by step: engine B against the truth per op
// (OpAccumulator), the floor engine against the truth per op (its metrics calibrate the op's
// tolerance), and the rows. The bisection's passes and the local check of a dump use it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bisect/compare/comparator.h"
#include "bisect/compare/metrics.h"
#include "bisect/compare/tolerances.h"
#include "bisect/drive/lockstep.h"
#include "model/config.h"
#include "model/engine.h"
#include "model/graph.h"

namespace tapdiff::bisect {

class PassComparison {
 public:
  // observed: the steps compared (all when empty); finish() judges those only.
  PassComparison(const model::Graph& graph, const model::ModelConfig& config, const StepFilter& observed = {});

  // One step's outputs; out.step must be one of the graph's own steps.
  void add(const StepOutputs& out);
  // The rows of one part of the pass just added: a chunk of `sequence`.
  void add_rows(const model::ChunkInfo& chunk, int sequence);

  // Judges every compared op: by k times its floor when calibration is set and there is a floor,
  // else by tolerances.lookup(id, precision).
  std::vector<OpResult> finish(const Tolerances& tolerances, model::Precision precision,
                               const std::optional<Calibration>& calibration, bool have_floor);

  const std::vector<RowInfo>& rows() const { return rows_; }

 private:
  const model::Graph& graph_;
  std::vector<OpAccumulator> ops_;
  std::vector<MetricsAccumulator> floors_;
  std::vector<bool> compared_;
  std::vector<RowInfo> rows_;
  std::int64_t next_row_ = 0;
};

}  // namespace tapdiff::bisect
