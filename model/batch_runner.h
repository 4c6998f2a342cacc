#pragma once
// Ragged batches: several sequences of different lengths in one forward pass per step, each with
// its own KV cache and positions, each tapped as if it ran alone (Engine::begin_batch).
#include <cstdint>
#include <span>
#include <vector>

#include "model/engine.h"
#include "model/graph.h"

namespace tapdiff::model {

using Prompts = std::vector<std::vector<std::int32_t>>;

// The prefill passes of a batch: each takes the next `chunk` rows (0: all that are left) of every
// sequence whose prompt is not consumed yet, in sequence order; the longest prompt sets their
// number. The parts view prompts, which must outlive them. UsageError for an empty batch or prompt.
std::vector<std::vector<BatchPart>> prefill_passes(const Prompts& prompts, int chunk);

// What each part of a pass is to its sequence alone: its own chunk index (counted per sequence),
// first position, rows and decode flag.
class SequenceChunks {
 public:
  explicit SequenceChunks(std::size_t sequences) : next_index_(sequences, 0) {}
  // The parts' chunks, in part order; counts them.
  std::vector<ChunkInfo> next(std::span<const BatchPart> parts);

 private:
  std::vector<int> next_index_;
};

struct BatchRunOptions {
  int chunk = 0;     // prefill rows per sequence and pass; 0 = each whole prompt in one pass
  int generate = 0;  // greedy tokens per sequence
  bool stop_at_eos = false;
  int eos_token = -1;
};

struct BatchSequenceResult {
  std::vector<std::int32_t> generated;  // greedy tokens after the prompt (argmax, lowest id on ties)
  int prefill_chunks = 0;
  int decode_steps = 0;
};

struct BatchRunResult {
  std::vector<BatchSequenceResult> sequences;
  int passes = 0;  // forward passes over the whole batch
  double prefill_seconds = 0;
  double decode_seconds = 0;
};

// Prefill passes (prefill_passes), then decode: one row per sequence still generating. taps[s]
// (may be null; taps is empty or one per prompt) sees sequence s as it would alone: its own chunk
// indices and positions, [its rows, width] of every op it wants, and end_chunk after each of its
// chunks. UsageError for an empty batch or prompt, or an engine without ragged batches (more than
// one prompt).
BatchRunResult run_batch(Engine& engine, const Graph& graph, const Prompts& prompts, const BatchRunOptions& options,
                         std::span<Tap* const> taps = {});

}  // namespace tapdiff::model
