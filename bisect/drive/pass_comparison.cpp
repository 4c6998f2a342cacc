#include "bisect/drive/pass_comparison.h"

namespace tapdiff::bisect {

PassComparison::PassComparison(const model::Graph& graph, const model::ModelConfig& config, const StepFilter& observed)
    : graph_(graph) {
  for (const model::Step& step : graph.steps()) {
    ops_.emplace_back(step.output(), head_layout(step.output(), config), Tolerance{});
    compared_.push_back(!observed || observed(step));
  }
  floors_.resize(graph.steps().size());
}

void PassComparison::add(const StepOutputs& out) {
  const auto i = static_cast<std::size_t>(&out.step - graph_.steps().data());
  ops_[i].add(out.truth, out.b, next_row_);
  if (out.floor) floors_[i].add(out.truth, *out.floor, next_row_);
}

// The truth runs in B's chunks (a bisection's lockstep, or compare --model on B's inputs): a chunk
// start is B's, never a boundary of A's own run (whose dump may hold the prompt in one chunk).
void PassComparison::add_rows(const model::ChunkInfo& chunk, int sequence) {
  for (int t = 0; t < chunk.rows; ++t)
    rows_.push_back({chunk.first_pos + t, chunk.index, chunk.index, false, t == 0, chunk.decode, sequence});
  next_row_ += chunk.rows;
}

std::vector<OpResult> PassComparison::finish(const Tolerances& tolerances, model::Precision precision,
                                             const std::optional<Calibration>& calibration, bool have_floor) {
  Tolerances judged = tolerances;
  const bool calibrated = calibration && have_floor;
  if (calibrated) judged.set_calibration(*calibration);
  std::vector<OpResult> out;
  for (std::size_t i = 0; i < ops_.size(); ++i) {
    if (!compared_[i]) continue;
    const model::TensorId id = graph_.steps()[i].output();
    if (calibrated) judged.set_floor(id, floors_[i].result());
    ops_[i].set_tolerance(judged.lookup(id, precision));
    out.push_back(ops_[i].finish(rows_));
  }
  return out;
}

}  // namespace tapdiff::bisect
