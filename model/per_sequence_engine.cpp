#include "model/per_sequence_engine.h"

#include <algorithm>

#include <fmt/core.h>

#include "model/errors.h"

namespace tapdiff::model {

PerSequenceEngine::PerSequenceEngine(std::vector<std::unique_ptr<Engine>> engines) : engines_(std::move(engines)) {
  TAPDIFF_ASSERT(!engines_.empty(), "a per-sequence engine without engines");
  next_chunk_.assign(1, 0);
}

void PerSequenceEngine::reset() {
  for (auto& e : engines_) e->reset();
  std::fill(next_chunk_.begin(), next_chunk_.end(), 0);
  parts_.clear();
}

void PerSequenceEngine::set_sequences(int n) {
  if (n < 1 || n > static_cast<int>(engines_.size()))
    throw UsageError(fmt::format("a batch of {} sequences for {} {} engine{} (one per sequence)", n, engines_.size(),
                                 name(), engines_.size() == 1 ? "" : "s"));
  sequences_ = n;
  next_chunk_.assign(static_cast<std::size_t>(n), 0);
  reset();
}

void PerSequenceEngine::begin_chunk(std::span<const std::int32_t> tokens, const ChunkInfo& chunk) {
  const BatchPart part{0, tokens, chunk.first_pos, chunk.decode};
  begin_batch(chunk.index, std::span<const BatchPart>(&part, 1));
}

void PerSequenceEngine::begin_batch(int index, std::span<const BatchPart> parts) {
  (void)index;  // each sequence's engine counts its own chunks
  for (const BatchPart& p : parts) {
    if (p.sequence < 0 || p.sequence >= sequences_)
      throw UsageError(fmt::format("sequence {} of a batch of {}", p.sequence, sequences_));
    if (std::count_if(parts.begin(), parts.end(), [&](const BatchPart& q) { return q.sequence == p.sequence; }) > 1)
      throw UsageError(fmt::format("sequence {} appears twice in one pass", p.sequence));
  }
  parts_.assign(parts.begin(), parts.end());
  for (const BatchPart& p : parts_)
    engine_of(p).begin_chunk(p.tokens, {next_chunk_[static_cast<std::size_t>(p.sequence)]++, p.first_pos,
                                        static_cast<int>(p.tokens.size()), p.decode});
}

void PerSequenceEngine::execute(const Step& step, const Deliver& deliver) {
  for (const BatchPart& p : parts_) engine_of(p).execute(step, {});
  if (deliver) deliver(read(step.output()));
}

void PerSequenceEngine::end_chunk() {
  for (const BatchPart& p : parts_) engine_of(p).end_chunk();
}

HostTensor PerSequenceEngine::read(const TensorId& id) {
  std::vector<HostTensor> parts;
  std::int64_t rows = 0;
  for (const BatchPart& p : parts_) parts.push_back(engine_of(p).read(id)), rows += parts.back().rows();
  if (parts.size() == 1) return std::move(parts.front());
  HostTensor out(parts.front().scalar(), rows, parts.front().cols());
  std::int64_t row = 0;
  for (const HostTensor& part : parts) out.set_rows(row, part), row += part.rows();
  return out;
}

// From the one engine that holds the rows, when one does.
HostTensor PerSequenceEngine::read_rows(const TensorId& id, std::int64_t first, std::int64_t count) {
  std::int64_t row0 = 0;
  for (const BatchPart& p : parts_) {
    const auto rows = static_cast<std::int64_t>(p.tokens.size());
    if (first >= row0 && first + count <= row0 + rows) return engine_of(p).read_rows(id, first - row0, count);
    row0 += rows;
  }
  return Engine::read_rows(id, first, count);
}

void PerSequenceEngine::write(const TensorId& id, const HostTensor& value) {
  std::int64_t row = 0;
  for (const BatchPart& p : parts_) {
    const auto rows = static_cast<std::int64_t>(p.tokens.size());
    engine_of(p).write(id, parts_.size() == 1 ? value : value.slice_rows(row, rows));
    row += rows;
  }
  TAPDIFF_ASSERT(row == value.rows(), "{} rows written to a pass of {}", value.rows(), row);
}

std::unique_ptr<Engine> engine_per_sequence(std::size_t sequences,
                                            const std::function<std::unique_ptr<Engine>()>& make) {
  if (sequences == 1) return make();
  std::vector<std::unique_ptr<Engine>> engines;
  for (std::size_t s = 0; s < sequences; ++s) engines.push_back(make());
  return std::make_unique<PerSequenceEngine>(std::move(engines));
}

}  // namespace tapdiff::model
