#pragma once
// The noise floor of a precision over a dump's run, measured in-process: the reference in f64 (the
// truth) and the reference in that precision run the dump's own forward passes (its chunks,
// positions and fed tokens) in lockstep, and each op's floor is the second's error against the
// first over every row, as bisect's free pass measures it. `compare --model` holds B to k times it.
#include <functional>
#include <utility>
#include <vector>

#include "bisect/compare/metrics.h"
#include "dumps/dump_reader.h"
#include "dumps/tap_filter.h"
#include "model/engine.h"
#include "model/graph.h"
#include "model/precision.h"

namespace tapdiff::bisect {

struct FloorEngines {
  model::Engine& truth;  // the reference in f64
  model::Engine& floor;  // the reference in B's precision
};

// Floors of the ops the dump holds and taps selects, in graph order. UsageError naming the dump
// when its rows do not hold every position from 0 on (bisect/compare/dump_chunks.h). progress: after each
// forward pass, when set.
std::vector<std::pair<model::TensorId, Metrics>> measure_floor(const dumps::DumpReader& dump, const model::Graph& graph,
                                                               FloorEngines engines, model::Precision precision,
                                                               const dumps::TapFilter& taps,
                                                               const std::function<void(int, int)>& progress = {});

}  // namespace tapdiff::bisect
