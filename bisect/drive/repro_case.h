#pragma once
// The culprit as a test case for the engine's own suite: one forward pass of engine B where the op
// first breaks its tolerance, with the op's inputs as B had them (its own, read from its dump; A's
// in a bisection): the pass's rows, their positions and tokens, and for attention the K and V rows
// of every position it reads; the weights the op reads, the reference's output on those inputs, B's
// output, and the tolerance. bisect/report/repro.h writes it as files with a check in Python and C.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "bisect/compare/comparator.h"
#include "bisect/drive/bisect.h"
#include "dumps/dump_reader.h"
#include "model/engine.h"
#include "model/graph.h"
#include "model/host_tensor.h"
#include "model/weights.h"

namespace tapdiff::bisect {

struct ReproTensor {
  std::string name;  // "input.0/rope_q", "kv.k": the names the checks look up
  model::HostTensor value;
};

struct ReproWeight {
  model::WeightKind kind;
  std::string file_name;  // the tensor's name in the model file
  std::int64_t rows = 0, cols = 0;
  std::vector<float> values;  // dequantized; empty when left out for size
  std::string name() const;   // in the case: "weight.<kind>"
};

struct ReproCase {
  model::TensorId id;
  model::ChunkInfo chunk;  // B's forward pass: the first where the op breaks its tolerance
  std::vector<std::int32_t> tokens, positions;
  std::vector<ReproTensor> inputs;  // the step's inputs (rows of the pass), then kv.k and kv.v for attention
  std::vector<ReproWeight> weights;
  model::HostTensor reference;  // f64, the reference on B's inputs
  model::HostTensor engine;     // B's output as its dump holds it
  Tolerance tolerance;
  Metrics metrics;  // B's output against the reference over the pass's rows
  std::vector<Violation> violations;
  std::int64_t first_bad_row = -1;  // of the pass: the first whose row alone breaks the tolerance
};

// Weights past this many bytes (as f32, all of the op's together) are named and left out.
inline constexpr std::uint64_t kReproWeightBytes = std::uint64_t{256} << 20;

// The case of `culprit`, an op of B's dump checked on B's own inputs (local_check.h): the reference
// (f64; reset and run here on the op alone, pass by pass up to the culprit's) on B's inputs.
ReproCase repro_case_from_dump(const dumps::DumpReader& b, const model::Graph& graph, const model::Model& model,
                               model::Engine& truth, const OpResult& culprit);

// The case of a bisection's culprit, an op of engine B checked on A's inputs (one prompt): both
// engines reset and run again over the forced scan's passes up to the culprit's, A (truth) every
// step up to the culprit's, B the culprit's step alone on A's values of its inputs.
ReproCase repro_case_of_bisection(const model::Graph& graph, const model::Model& model, model::Engine& truth,
                                  model::Engine& b, const BisectResult& bisection,
                                  std::span<const std::int32_t> prompt);

}  // namespace tapdiff::bisect
