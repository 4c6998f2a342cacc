#pragma once
// Ragged batches through the Vulkan engine: several sequences of different lengths in one forward
// pass per step, each with its own KV cache and positions, each tapped as if it ran alone.
#include <cstdint>
#include <span>
#include <vector>

#include "gpu/vulkan_engine.h"
#include "model/engine.h"
#include "model/graph.h"

namespace tapdiff::gpu {

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

// Prefill: each pass takes the next `chunk` rows of every sequence whose prompt is not consumed
// yet (the longest prompt sets the number of passes); then decode: one row per sequence still
// generating. taps[s] (may be null; taps is empty or one per prompt) sees sequence s as it would
// alone: its own chunk indices and positions, [its rows, width] of every op it wants, and
// end_chunk after each of its chunks. UsageError for an empty batch or prompt.
BatchRunResult run_batch(VulkanEngine& engine, const model::Graph& graph,
                         const std::vector<std::vector<std::int32_t>>& prompts, const BatchRunOptions& options,
                         std::span<model::Tap* const> taps = {});

}  // namespace tapdiff::gpu
