#include "model/engine.h"

#include <fmt/core.h>

#include "model/errors.h"

namespace tapdiff::model {

void Engine::set_sequences(int n) {
  if (n != 1) throw UsageError(fmt::format("engine {} does not run ragged batches ({} sequences asked)", name(), n));
  reset();
}

void Engine::begin_batch(int index, std::span<const BatchPart> parts) {
  if (parts.size() != 1 || parts.front().sequence != 0)
    throw UsageError(fmt::format("engine {} does not run ragged batches", name()));
  const BatchPart& p = parts.front();
  begin_chunk(p.tokens, {index, p.first_pos, static_cast<int>(p.tokens.size()), p.decode});
}

}  // namespace tapdiff::model
