#include "gpu/batch_runner.h"

#include <algorithm>
#include <chrono>

#include <fmt/core.h>

#include "model/errors.h"
#include "model/runner.h"

namespace tapdiff::gpu {
namespace {

struct Sequence {
  int fed = 0;            // rows of the sequence fed so far (its next position)
  int chunks = 0;         // its chunks so far: the next chunk's index
  std::int32_t next = 0;  // the token its next decode step feeds
  bool finished = false;
};

// One forward pass over a row span of each of the given sequences: taps get their slices, and the
// logits of the pass come back [total rows, vocab].
class Pass {
 public:
  Pass(VulkanEngine& engine, const model::Graph& graph, std::span<model::Tap* const> taps)
      : engine_(engine), graph_(graph), taps_(taps) {}

  model::HostTensor run(int index, std::vector<Sequence>& seqs, const std::vector<BatchPart>& parts) {
    std::vector<model::ChunkInfo> local;  // each part as its sequence's own chunk
    std::vector<int> row0;
    int rows = 0;
    for (const BatchPart& p : parts) {
      const Sequence& s = seqs[static_cast<std::size_t>(p.sequence)];
      local.push_back({s.chunks, p.first_pos, static_cast<int>(p.tokens.size()), p.decode});
      row0.push_back(rows);
      rows += static_cast<int>(p.tokens.size());
    }
    engine_.begin_batch(index, parts);
    model::HostTensor logits;
    for (const model::Step& step : graph_.steps()) {
      std::vector<std::size_t> wanting;
      for (std::size_t i = 0; i < parts.size(); ++i)
        if (model::Tap* tap = tap_of(parts[i].sequence); tap && tap->wants({step.output(), local[i]}))
          wanting.push_back(i);
      const bool is_logits = step.op == model::Op::logits;
      if (wanting.empty() && !is_logits) {
        engine_.execute(step, {});
        continue;
      }
      engine_.execute(step, [&, wanting, is_logits, id = step.output()](const model::HostTensor& value) {
        for (std::size_t i : wanting)
          tap_of(parts[i].sequence)->record({id, local[i]}, value.slice_rows(row0[i], local[i].rows));
        if (is_logits) logits = value;
      });
    }
    engine_.end_chunk();
    for (std::size_t i = 0; i < parts.size(); ++i) {
      Sequence& s = seqs[static_cast<std::size_t>(parts[i].sequence)];
      if (model::Tap* tap = tap_of(parts[i].sequence)) tap->end_chunk(local[i], parts[i].tokens);
      s.fed += local[i].rows;
      ++s.chunks;
    }
    return logits;
  }

 private:
  model::Tap* tap_of(int sequence) const { return taps_.empty() ? nullptr : taps_[static_cast<std::size_t>(sequence)]; }

  VulkanEngine& engine_;
  const model::Graph& graph_;
  std::span<model::Tap* const> taps_;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

BatchRunResult run_batch(VulkanEngine& engine, const model::Graph& graph,
                         const std::vector<std::vector<std::int32_t>>& prompts, const BatchRunOptions& options,
                         std::span<model::Tap* const> taps) {
  if (prompts.empty()) throw UsageError("a batch needs at least one prompt");
  for (std::size_t s = 0; s < prompts.size(); ++s)
    if (prompts[s].empty()) throw UsageError(fmt::format("prompt {} of the batch has no tokens", s + 1));
  TAPDIFF_ASSERT(taps.empty() || taps.size() == prompts.size(), "{} taps for {} prompts", taps.size(), prompts.size());
  const auto n = static_cast<int>(prompts.size());
  engine.set_sequences(n);
  BatchRunResult result;
  result.sequences.resize(prompts.size());
  std::vector<Sequence> seqs(prompts.size());
  Pass pass(engine, graph, taps);

  // Takes the greedy token of each part from the last of its rows in the pass's logits.
  auto pick = [&](const model::HostTensor& logits, const std::vector<BatchPart>& parts) {
    std::int64_t row = 0;
    for (const BatchPart& p : parts) {
      row += static_cast<std::int64_t>(p.tokens.size());
      const auto s = static_cast<std::size_t>(p.sequence);
      const bool prompt_done = seqs[s].fed == static_cast<int>(prompts[s].size());
      if (!p.decode && !prompt_done) continue;
      if (options.generate == 0) {
        seqs[s].finished = true;
        continue;
      }
      const std::int32_t token = model::argmax_last_row(logits.slice_rows(row - 1, 1));
      std::vector<std::int32_t>& generated = result.sequences[s].generated;
      generated.push_back(token);
      seqs[s].next = token;
      seqs[s].finished =
          static_cast<int>(generated.size()) == options.generate || (options.stop_at_eos && token == options.eos_token);
    }
  };

  auto start = std::chrono::steady_clock::now();
  for (bool more = true; more;) {
    std::vector<BatchPart> parts;
    for (int s = 0; s < n; ++s) {
      const auto& prompt = prompts[static_cast<std::size_t>(s)];
      const int fed = seqs[static_cast<std::size_t>(s)].fed, left = static_cast<int>(prompt.size()) - fed;
      if (left == 0) continue;
      const int rows = options.chunk > 0 ? std::min(options.chunk, left) : left;
      parts.push_back(
          {s, std::span(prompt).subspan(static_cast<std::size_t>(fed), static_cast<std::size_t>(rows)), fed, false});
      ++result.sequences[static_cast<std::size_t>(s)].prefill_chunks;
    }
    more = !parts.empty();
    if (more) pick(pass.run(result.passes++, seqs, parts), parts);
  }
  result.prefill_seconds = seconds_since(start);

  start = std::chrono::steady_clock::now();
  for (bool more = true; more;) {
    std::vector<BatchPart> parts;
    for (int s = 0; s < n; ++s) {
      Sequence& seq = seqs[static_cast<std::size_t>(s)];
      if (seq.finished) continue;
      parts.push_back({s, std::span<const std::int32_t>(&seq.next, 1), seq.fed, true});
      ++result.sequences[static_cast<std::size_t>(s)].decode_steps;
    }
    more = !parts.empty();
    if (more) pick(pass.run(result.passes++, seqs, parts), parts);
  }
  result.decode_seconds = seconds_since(start);
  return result;
}

}  // namespace tapdiff::gpu
