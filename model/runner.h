#pragma once
// The one loop: feed a sequence through an engine chunk by chunk, tap after every step, and
// generate greedily.
#include <cstdint>
#include <span>
#include <vector>

#include "model/engine.h"

namespace tapdiff::model {

struct RunOptions {
  int chunk = 0;     // prefill chunk size in tokens; 0 = the whole prompt in one chunk
  int generate = 0;  // greedy tokens to generate after the prompt
  bool stop_at_eos = false;
  int eos_token = -1;
};

struct RunResult {
  std::vector<std::int32_t> generated;  // greedy tokens after the prompt
  double prefill_seconds = 0;
  double decode_seconds = 0;
  int prefill_chunks = 0;
  int decode_steps = 0;
};

// Runs one forward pass over tokens as the chunk described (engine.begin_chunk .. end_chunk),
// delivering every op output the tap wants, then calls tap.end_chunk.
void run_chunk(Engine& engine, const Graph& graph, std::span<const std::int32_t> tokens, const ChunkInfo& chunk,
               Tap& tap);

// Resets the engine, prefills the prompt in chunks, then generates greedily (argmax, lowest id on
// ties). The last generated token is not fed back.
RunResult run_sequence(Engine& engine, const Graph& graph, std::span<const std::int32_t> prompt,
                       const RunOptions& options, Tap& tap);

// One forward pass of a run given whole: the tokens fed and where (a prefill chunk or a decode step).
struct FedChunk {
  std::span<const std::int32_t> tokens;
  ChunkInfo info;
};
// Teacher forcing: resets the engine and runs exactly these passes (another run's tokens, positions
// and chunking). generated holds the engine's own greedy prediction after the last prefill pass and
// after each decode pass: what it would have chosen under that history.
RunResult run_fed(Engine& engine, const Graph& graph, std::span<const FedChunk> chunks, Tap& tap);
// Index of the largest value of the last row of a logits tensor (lowest index on ties).
std::int32_t argmax_last_row(const HostTensor& logits);

}  // namespace tapdiff::model
