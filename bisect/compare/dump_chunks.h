#pragma once
// The forward passes a dump's run made, to run again: its rows grouped by /rows/chunk in row order,
// each at its rows' places in the token stream (aligned_positions: a run that restarted its
// positions is replayed at the positions it should have used). The local check of a dump
// (local_check.h) and `run --tokens-from` run them.
#include <cstdint>
#include <string_view>
#include <vector>

#include "dumps/dump_reader.h"
#include "model/runner.h"

namespace tapdiff::bisect {

struct DumpChunk {
  std::int64_t first_row = 0;  // of the dump
  model::FedChunk fed;         // tokens: a view of the dump's /rows/token
};

// UsageError naming the dump and `purpose` when its rows do not hold every position from 0 on, one
// row each (replaying them rebuilds the whole KV cache), or when it has no rows.
std::vector<DumpChunk> dump_chunks(const dumps::DumpReader& dump, std::string_view purpose);

}  // namespace tapdiff::bisect
