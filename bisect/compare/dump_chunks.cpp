#include "bisect/compare/dump_chunks.h"

#include <span>

#include <fmt/core.h>

#include "bisect/compare/comparator.h"
#include "model/errors.h"

namespace tapdiff::bisect {

std::vector<DumpChunk> dump_chunks(const dumps::DumpReader& dump, std::string_view purpose) {
  if (dump.rows() == 0) throw UsageError(fmt::format("{}: the dump has no rows: nothing to {}", dump.path(), purpose));
  std::vector<PositionAnomaly> anomalies;
  const std::vector<std::int32_t> positions = aligned_positions(run_rows(dump), 'B', anomalies);
  for (std::size_t r = 0; r < positions.size(); ++r)
    if (positions[r] != static_cast<std::int32_t>(r))
      throw UsageError(fmt::format(
          "{}: row {} is at position {}: to {} needs the run's rows from position 0 on, one per position (they "
          "rebuild the KV cache)",
          dump.path(), r, positions[r], purpose));
  const std::span<const std::int32_t> tokens(dump.tokens());
  std::vector<DumpChunk> out;
  for (std::size_t r = 0; r < positions.size(); ++r) {
    if (r == 0 || dump.chunks()[r] != dump.chunks()[r - 1])
      out.push_back({static_cast<std::int64_t>(r),
                     {{}, {static_cast<int>(out.size()), positions[r], 0, dump.decode_flags()[r] != 0}}});
    model::FedChunk& fed = out.back().fed;
    ++fed.info.rows;
    fed.tokens =
        tokens.subspan(static_cast<std::size_t>(out.back().first_row), static_cast<std::size_t>(fed.info.rows));
  }
  return out;
}

}  // namespace tapdiff::bisect
