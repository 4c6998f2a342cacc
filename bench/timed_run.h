#pragma once
// One timed run of a prompt through an engine, untapped or with every op tapped into an HDF5 dump,
// as the benchmarks that measure runs and taps (bench_dumps, bench_vulkan) take it.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <vector>

#include "dumps/dump_writer.h"
#include "model/runner.h"
#include "model/weights.h"

namespace tapdiff::bench {

struct TimedRun {
  model::RunResult run;
  double seconds = 0;               // wall clock, the dump's creation and finish() included
  double cpu_seconds = 0;           // user + system time of every thread of the process meanwhile
  std::uintmax_t dump_bytes = 0;    // the dump's size (0 untapped); the file is removed after
  dumps::WriteQueue::Stats writer;  // the dump writer's thread busy, the run held up by it
};

// run_sequence of `prompt`; with `dump`, every op is written to an HDF5 dump at dump_path.
TimedRun timed_run(model::Engine& engine, const model::Graph& graph, const model::Model& m,
                   std::span<const std::int32_t> prompt, const model::RunOptions& options,
                   const std::optional<dumps::WriterOptions>& dump, const std::filesystem::path& dump_path);

// run_sequence of `prompt` with every op read back to the host and dropped: what taps cost
// before any writing (an f16 engine's outputs as f16 bits, unconverted, as an f16 dump takes them).
TimedRun timed_read_back(model::Engine& engine, const model::Graph& graph, std::span<const std::int32_t> prompt,
                         const model::RunOptions& options);

// A prompt of `tokens` ids spread over [3, vocab) (past the usual special tokens).
std::vector<std::int32_t> spread_prompt(int tokens, int vocab);

}  // namespace tapdiff::bench
