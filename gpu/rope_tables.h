#pragma once
// The RoPE tables of a pass on the device, [rows, head_dim / 2] of (cos, sin) each (of the
// layer's head_dim: Gemma 4's full layers have wider heads than its sliding ones): one per
// distinct plan among the layers (rope_table_plan: the model's; the sliding layers' own where
// they have one; a layer's that --inject moves; each of them for q too where q has a temperature,
// and where latent attention turns q's heads and the keys' shared part apart; a sparse attention's
// indexer's, of its heads' width), each layer pointing at its own. A table the device holds from an earlier pass of the
// same positions is not uploaded again (the bench's repeated 8B prefill would otherwise upload 1 MB before each first
// dispatch).
#include <cstddef>
#include <span>
#include <vector>

#include "gpu/faults.h"
#include "gpu/memory.h"
#include "gpu/rope_table.h"
#include "gpu/stream.h"
#include "model/config.h"
#include "model/engine.h"

namespace tapdiff::gpu {

class RopeTables {
 public:
  // llama_cpp: the angles as llama.cpp steps them (formats::llama_cpp_rope_frequencies).
  RopeTables(const model::ModelConfig& config, const FaultSet& faults, bool llama_cpp);

  // Room for passes of `capacity` rows in arena (the tables' old room released with it): nothing held.
  void allocate(Arena& arena, int capacity);
  // Uploads the pass's tables, one part (a sequence's rows) after another, where the device does
  // not hold them already.
  void upload(Stream& stream, std::span<const model::ChunkInfo> parts);

  // The table of the layer's keys, of its queries, and of its indexer's q and k (the keys' angles
  // over the indexer's heads: model/config.h SparseIndexer).
  const Region& keys(int layer) const { return tables_[key_table_[static_cast<std::size_t>(layer)]]; }
  const Region& queries(int layer) const { return tables_[query_table_[static_cast<std::size_t>(layer)]]; }
  const Region& index(int layer) const { return tables_[index_table_[static_cast<std::size_t>(layer)]]; }

 private:
  enum class TableOf : std::uint8_t { keys, queries, index };
  // Whether q's tables are not k's (a query temperature, latent attention).
  bool own_query_tables() const;
  // The index of the table of a layer's k, q or indexer, its rows uploaded where they are new.
  std::size_t table_for(Stream& stream, int layer, TableOf of, std::span<const model::ChunkInfo> parts,
                        std::vector<std::vector<RopeTablePlan>>& plans);

  // What a table on the device holds, once the pass that uploaded it has run: per part, its plan
  // and rows.
  struct Held {
    RopeTablePlan plan;
    int rows = 0;
    friend bool operator==(const Held&, const Held&) = default;
  };

  const model::ModelConfig& config_;
  const FaultSet& faults_;
  bool llama_cpp_;
  int widest_ = 0;  // the widest head of the model's layers
  std::vector<Region> tables_;
  std::vector<std::vector<Held>> held_;  // per table (empty: not known)
  RopeTableCache cache_;
  std::vector<std::size_t> key_table_, query_table_, index_table_;  // per layer
};

}  // namespace tapdiff::gpu
