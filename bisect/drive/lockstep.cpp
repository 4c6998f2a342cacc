#include "bisect/drive/lockstep.h"

#include <algorithm>
#include <optional>

#include "bisect/compare/routing.h"
#include "model/errors.h"

namespace tapdiff::bisect {
namespace {

// The index of the step that produces id.
std::size_t producer(const model::Graph& graph, const model::TensorId& id) {
  const auto& steps = graph.steps();
  const auto it = std::find_if(steps.begin(), steps.end(), [&](const model::Step& s) { return s.output() == id; });
  TAPDIFF_ASSERT(it != steps.end(), "no step produces {}", model::to_string(id));
  return static_cast<std::size_t>(it - steps.begin());
}

model::HostTensor run_step(model::Engine& engine, const model::Step& step) {
  engine.execute(step, {});
  return engine.read(step.output());
}

}  // namespace

Lockstep::Lockstep(const model::Graph& graph, Drive drive, LockstepEngines engines, StepFilter observed)
    : graph_(graph), drive_(drive), engines_(engines), observed_(std::move(observed)) {
  TAPDIFF_ASSERT(!observed_ || drive == Drive::free, "a forced lockstep observes every step");
  const auto& steps = graph.steps();
  producers_.resize(steps.size());
  last_use_.resize(steps.size());
  for (std::size_t i = 0; i < steps.size(); ++i) {
    last_use_[i] = i;
    for (const model::TensorId& in : steps[i].inputs) {
      producers_[i].push_back(producer(graph, in));
      last_use_[producers_[i].back()] = i;
    }
  }
}

void Lockstep::reset(int sequences) {
  engines_.truth.set_sequences(sequences);
  if (engines_.floor) engines_.floor->set_sequences(sequences);
  engines_.b.set_sequences(sequences);
}

void Lockstep::pass(int index, std::span<const model::BatchPart> parts, const StepObserver& observe) {
  TAPDIFF_ASSERT(!parts.empty(), "a pass without parts");
  model::ChunkInfo chunk{index, parts.front().first_pos, 0, true};
  for (const model::BatchPart& p : parts)
    chunk.rows += static_cast<int>(p.tokens.size()), chunk.decode = chunk.decode && p.decode;
  model::Engine* const followers[] = {engines_.floor, &engines_.b};
  engines_.truth.begin_batch(index, parts);
  for (model::Engine* e : followers)
    if (e) e->begin_batch(index, parts);
  const auto& steps = graph_.steps();
  // Forced: the truth's outputs that a later step of this chunk still reads.
  std::vector<std::optional<model::HostTensor>> held(drive_ == Drive::forced ? steps.size() : 0);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const model::Step& step = steps[i];
    if (observed_ && !observed_(step)) {
      for (model::Engine* e : {&engines_.truth, engines_.floor, &engines_.b})
        if (e) e->execute(step, {});
      continue;
    }
    model::HostTensor truth = run_step(engines_.truth, step);
    if (drive_ == Drive::forced) {
      for (std::size_t k = 0; k < step.inputs.size(); ++k) {
        const std::optional<model::HostTensor>& value = held[producers_[i][k]];
        TAPDIFF_ASSERT(value.has_value(), "{} reads {}, which is no longer held", model::to_string(step.output()),
                       model::to_string(step.inputs[k]));
        for (model::Engine* e : followers)
          if (e) e->write(step.inputs[k], *value);
      }
    }
    std::optional<model::HostTensor> floor;
    if (engines_.floor) floor = run_step(*engines_.floor, step);
    model::HostTensor b = run_step(engines_.b, step);
    if (routing_) arbitrate(step, parts, truth, floor, b);
    observe({step, chunk, truth, floor ? &*floor : nullptr, b});
    if (drive_ == Drive::forced) {
      for (std::size_t j = 0; j < i; ++j)
        if (held[j] && last_use_[j] <= i) held[j].reset();
      if (last_use_[i] > i) held[i] = std::move(truth);
    }
  }
  engines_.truth.end_chunk();
  for (model::Engine* e : followers)
    if (e) e->end_chunk();
}

void Lockstep::arbitrate(const model::Step& step, std::span<const model::BatchPart> parts,
                         const model::HostTensor& truth, std::optional<model::HostTensor>& floor,
                         model::HostTensor& b) {
  const model::HostTensor* floor_out = floor ? &*floor : nullptr;
  if (step.op == model::choice_op(graph_.config())) routing_->hold_router(step.layer, truth, floor_out, b);
  if (step.op == model::Op::idx_scores) routing_->hold_index_scores(step.layer, truth, floor_out);
  if (!model::is_choice(step.op) || !routing_->holds(step.op, step.layer)) return;  // a choice observed alone
  RoutingArbiter::Settled settled = step.op == model::Op::moe_ids
                                        ? routing_->settle(step.layer, truth, floor_out, b, row_places(parts))
                                        : routing_->settle_kept(step.layer, truth, floor_out, b, row_places(parts));
  if (settled.b_changed) engines_.b.write(step.output(), settled.b);
  if (settled.floor_changed) engines_.floor->write(step.output(), *settled.floor);
  b = std::move(settled.b);
  if (floor) floor = std::move(settled.floor);
}

}  // namespace tapdiff::bisect
