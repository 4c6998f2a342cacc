#include "model/batch_runner.h"

#include <algorithm>
#include <chrono>

#include <fmt/core.h>

#include "model/errors.h"
#include "model/runner.h"

namespace tapdiff::model {
namespace {

struct Sequence {
  int fed = 0;            // rows of the sequence fed so far (its next position)
  std::int32_t next = 0;  // the token its next decode step feeds
  bool finished = false;
};

// One forward pass over a row span of each of the given sequences: taps get their slices.
class Pass {
 public:
  Pass(Engine& engine, const Graph& graph, std::size_t sequences, std::span<Tap* const> taps)
      : engine_(engine), graph_(graph), chunks_(sequences), taps_(taps) {}

  void run(int index, const std::vector<BatchPart>& parts) {
    const std::vector<ChunkInfo> local = chunks_.next(parts);
    std::vector<int> row0;
    int rows = 0;
    for (const ChunkInfo& c : local) row0.push_back(rows), rows += c.rows;
    engine_.begin_batch(index, parts);
    for (const Step& step : graph_.steps()) {
      std::vector<std::size_t> wanting;
      for (std::size_t i = 0; i < parts.size(); ++i)
        if (Tap* tap = tap_of(parts[i].sequence); tap && tap->wants({step.output(), local[i]})) wanting.push_back(i);
      if (wanting.empty()) {
        engine_.execute(step, {});
        continue;
      }
      engine_.execute(step, [&, wanting, id = step.output()](const HostTensor& value) {
        for (std::size_t i : wanting)
          tap_of(parts[i].sequence)->record({id, local[i]}, value.slice_rows(row0[i], local[i].rows));
      });
    }
    engine_.end_chunk();
    for (std::size_t i = 0; i < parts.size(); ++i)
      if (Tap* tap = tap_of(parts[i].sequence)) tap->end_chunk(local[i], parts[i].tokens);
  }

 private:
  Tap* tap_of(int sequence) const { return taps_.empty() ? nullptr : taps_[static_cast<std::size_t>(sequence)]; }

  Engine& engine_;
  const Graph& graph_;
  SequenceChunks chunks_;
  std::span<Tap* const> taps_;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

std::vector<std::vector<BatchPart>> prefill_passes(const Prompts& prompts, int chunk) {
  if (prompts.empty()) throw UsageError("a batch needs at least one prompt");
  for (std::size_t s = 0; s < prompts.size(); ++s)
    if (prompts[s].empty()) throw UsageError(fmt::format("prompt {} of the batch has no tokens", s + 1));
  std::size_t longest = 0;
  for (const auto& prompt : prompts) longest = std::max(longest, prompt.size());
  const std::size_t step = chunk > 0 ? static_cast<std::size_t>(chunk) : longest;
  std::vector<std::vector<BatchPart>> passes;
  for (std::size_t fed = 0; fed < longest; fed += step) {
    std::vector<BatchPart> parts;
    for (std::size_t s = 0; s < prompts.size(); ++s)
      if (fed < prompts[s].size())
        parts.push_back({static_cast<int>(s),
                         std::span(prompts[s]).subspan(fed, std::min(step, prompts[s].size() - fed)),
                         static_cast<int>(fed), false});
    passes.push_back(std::move(parts));
  }
  return passes;
}

std::vector<ChunkInfo> SequenceChunks::next(std::span<const BatchPart> parts) {
  std::vector<ChunkInfo> out;
  for (const BatchPart& p : parts)
    out.push_back({next_index_.at(static_cast<std::size_t>(p.sequence))++, p.first_pos,
                   static_cast<int>(p.tokens.size()), p.decode});
  return out;
}

BatchRunResult run_batch(Engine& engine, const Graph& graph, const Prompts& prompts, const BatchRunOptions& options,
                         std::span<Tap* const> taps) {
  const std::vector<std::vector<BatchPart>> prefill = prefill_passes(prompts, options.chunk);
  TAPDIFF_ASSERT(taps.empty() || taps.size() == prompts.size(), "{} taps for {} prompts", taps.size(), prompts.size());
  engine.set_sequences(static_cast<int>(prompts.size()));
  BatchRunResult result;
  result.sequences.resize(prompts.size());
  std::vector<Sequence> seqs(prompts.size());
  Pass pass(engine, graph, prompts.size(), taps);

  // Runs a pass, counts each part's rows, then takes the greedy token of each sequence whose prompt
  // is done from the logits of the last of its rows (read alone).
  const TensorId logits{Op::logits, graph.n_layers()};
  auto run_and_pick = [&](const std::vector<BatchPart>& parts) {
    pass.run(result.passes++, parts);
    std::int64_t row = 0;
    for (const BatchPart& p : parts) {
      row += static_cast<std::int64_t>(p.tokens.size());
      const auto s = static_cast<std::size_t>(p.sequence);
      BatchSequenceResult& out = result.sequences[s];
      ++(p.decode ? out.decode_steps : out.prefill_chunks);
      seqs[s].fed += static_cast<int>(p.tokens.size());
      if (seqs[s].fed < static_cast<int>(prompts[s].size())) continue;
      if (options.generate == 0) {
        seqs[s].finished = true;
        continue;
      }
      const std::int32_t token = argmax_last_row(engine.read_rows(logits, row - 1, 1));
      out.generated.push_back(token);
      seqs[s].next = token;
      seqs[s].finished = static_cast<int>(out.generated.size()) == options.generate ||
                         (options.stop_at_eos && token == options.eos_token);
    }
  };

  auto start = std::chrono::steady_clock::now();
  for (const std::vector<BatchPart>& parts : prefill) run_and_pick(parts);
  result.prefill_seconds = seconds_since(start);

  start = std::chrono::steady_clock::now();
  for (bool more = true; more;) {
    std::vector<BatchPart> parts;
    for (std::size_t s = 0; s < seqs.size(); ++s)
      if (!seqs[s].finished)
        parts.push_back({static_cast<int>(s), std::span<const std::int32_t>(&seqs[s].next, 1), seqs[s].fed, true});
    more = !parts.empty();
    if (more) run_and_pick(parts);
  }
  result.decode_seconds = seconds_since(start);
  return result;
}

}  // namespace tapdiff::model
