#include "model/runner.h"

#include <algorithm>
#include <chrono>

#include "model/errors.h"

namespace tapdiff::model {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

void run_chunk(Engine& engine, const Graph& graph, std::span<const std::int32_t> tokens, const ChunkInfo& chunk,
               Tap& tap) {
  TAPDIFF_ASSERT(static_cast<int>(tokens.size()) == chunk.rows, "chunk of {} rows given {} tokens", chunk.rows,
                 tokens.size());
  engine.begin_chunk(tokens, chunk);
  for (const Step& step : graph.steps()) {
    const TapKey key{step.output(), chunk};
    if (tap.wants(key))
      engine.execute(step, Deliver([&tap, key](const HostTensor& value) { tap.record(key, value); },
                                   [&tap, key](const HalfRows& value) { return tap.record_f16(key, value); }));
    else
      engine.execute(step, {});
  }
  engine.end_chunk();
  tap.end_chunk(chunk, tokens);
}

std::int32_t argmax_last_row(const HostTensor& logits) {
  TAPDIFF_ASSERT(logits.rows() > 0 && logits.cols() > 0, "empty logits");
  const std::int64_t row = logits.rows() - 1;
  std::int64_t best = 0;
  double best_value = logits.at(row, 0);
  for (std::int64_t c = 1; c < logits.cols(); ++c) {
    const double v = logits.at(row, c);
    if (v > best_value) best_value = v, best = c;
  }
  return static_cast<std::int32_t>(best);
}

RunResult run_sequence(Engine& engine, const Graph& graph, std::span<const std::int32_t> prompt,
                       const RunOptions& options, Tap& tap) {
  if (prompt.empty()) throw UsageError("the prompt has no tokens: give at least one");
  RunResult result;
  engine.reset();
  const int n = static_cast<int>(prompt.size());
  const int chunk_size = options.chunk > 0 ? options.chunk : n;
  const TensorId logits{Op::logits, graph.n_layers()};

  auto start = std::chrono::steady_clock::now();
  int index = 0, rows = 0;  // rows: of the latest chunk, whose last row's logits pick the next token
  for (int first = 0; first < n; first += chunk_size, ++index) {
    rows = std::min(chunk_size, n - first);
    run_chunk(engine, graph, prompt.subspan(static_cast<std::size_t>(first), static_cast<std::size_t>(rows)),
              {index, first, rows, false}, tap);
  }
  result.prefill_chunks = index;
  result.prefill_seconds = seconds_since(start);

  start = std::chrono::steady_clock::now();
  int pos = n;
  for (int g = 0; g < options.generate; ++g) {
    const std::int32_t next = argmax_last_row(engine.read_rows(logits, rows - 1, 1));
    result.generated.push_back(next);
    if (g + 1 == options.generate || (options.stop_at_eos && next == options.eos_token)) break;
    const std::array<std::int32_t, 1> token{next};
    run_chunk(engine, graph, token, {index++, pos++, 1, true}, tap);
    rows = 1;
    ++result.decode_steps;
  }
  result.decode_seconds = seconds_since(start);
  return result;
}

RunResult run_fed(Engine& engine, const Graph& graph, std::span<const FedChunk> chunks, Tap& tap) {
  if (chunks.empty()) throw UsageError("nothing to run: no rows to feed");
  RunResult result;
  engine.reset();
  const TensorId logits{Op::logits, graph.n_layers()};
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const FedChunk& c = chunks[i];
    const auto start = std::chrono::steady_clock::now();
    run_chunk(engine, graph, c.tokens, c.info, tap);
    (c.info.decode ? result.decode_seconds : result.prefill_seconds) += seconds_since(start);
    ++(c.info.decode ? result.decode_steps : result.prefill_chunks);
    const bool predicts = c.info.decode || i + 1 == chunks.size() || chunks[i + 1].info.decode;
    if (predicts) result.generated.push_back(argmax_last_row(engine.read_rows(logits, c.info.rows - 1, 1)));
  }
  return result;
}

}  // namespace tapdiff::model
