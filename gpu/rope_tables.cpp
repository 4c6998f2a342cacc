#include "gpu/rope_tables.h"

#include <algorithm>

#include "formats/llama_cpp_precision.h"
#include "model/errors.h"

namespace tapdiff::gpu {

RopeTables::RopeTables(const model::ModelConfig& config, const FaultSet& faults, bool llama_cpp)
    : config_(config),
      faults_(faults),
      llama_cpp_(llama_cpp),
      key_table_(static_cast<std::size_t>(config.n_layers)),
      query_table_(key_table_.size()),
      index_table_(key_table_.size()) {
  // At most one table per layer that a fault moves, plus the model's (two where the sliding layers
  // have their own RoPE, twice that where some layers do not rotate, times the layers' head widths);
  // each twice where q has its own (a temperature, or latent attention's q and shared key part).
  std::size_t tables = config_.sliding_rope ? 2 : 1;
  if (std::find(config_.rope_layers.begin(), config_.rope_layers.end(), false) != config_.rope_layers.end())
    tables *= 2;
  std::vector<int> head_dims;
  for (int l = 0; l < config_.n_layers; ++l) {
    head_dims.push_back(model::head_dim(config_, l));
    widest_ = std::max({widest_, head_dims.back(), config_.indexer.head_dim});
  }
  std::sort(head_dims.begin(), head_dims.end());
  tables *= static_cast<std::size_t>(std::unique(head_dims.begin(), head_dims.end()) - head_dims.begin());
  for (int l = 0; l < config_.n_layers; ++l) tables += moves_rope_table(faults_, l) ? 1 : 0;
  tables_.resize((own_query_tables() ? 2 : 1) * tables + (config_.sparse() ? tables : 0));
}

void RopeTables::allocate(Arena& arena, int capacity) {
  for (Region& table : tables_)
    table = arena.allocate(static_cast<std::uint64_t>(capacity) * static_cast<std::uint64_t>(widest_) * 4,
                           "the RoPE table");
  held_.assign(tables_.size(), {});
}

void RopeTables::upload(Stream& stream, std::span<const model::ChunkInfo> parts) {
  std::vector<std::vector<RopeTablePlan>> plans;
  for (int l = 0; l < config_.n_layers; ++l) {
    const auto layer = static_cast<std::size_t>(l);
    key_table_[layer] = table_for(stream, l, TableOf::keys, parts, plans);
    query_table_[layer] = own_query_tables() ? table_for(stream, l, TableOf::queries, parts, plans) : key_table_[layer];
    if (config_.sparse()) index_table_[layer] = table_for(stream, l, TableOf::index, parts, plans);
  }
}

std::size_t RopeTables::table_for(Stream& stream, int l, TableOf of, std::span<const model::ChunkInfo> parts,
                                  std::vector<std::vector<RopeTablePlan>>& plans) {
  const bool query = of == TableOf::queries;
  std::vector<RopeTablePlan> plan;
  for (const model::ChunkInfo& part : parts) {
    plan.push_back(rope_table_plan(faults_, config_, l, part, query));
    if (of == TableOf::index) plan.back().row = {config_.indexer.head_dim, 0};  // its leading pairs turn
  }
  const auto at = static_cast<std::size_t>(std::find(plans.begin(), plans.end(), plan) - plans.begin());
  if (at < plans.size()) return at;
  TAPDIFF_ASSERT(at < tables_.size(), "RoPE table {} of {}", at, tables_.size());
  std::vector<Held> held;
  for (std::size_t i = 0; i < parts.size(); ++i) held.push_back({plan[i], parts[i].rows});
  plans.push_back(std::move(plan));
  if (held_[at] == held) return at;
  held_[at].clear();  // until the upload has run (a pass abandoned after an error drops it)
  std::vector<float> table;
  const auto frequencies = llama_cpp_ ? formats::llama_cpp_rope_frequencies : model::rope_frequencies;
  for (const Held& h : held) {
    model::RopeFrequencies f = frequencies(config_, l, h.plan.base, h.plan.first_pos + h.rows);
    if (query) f = model::query_frequencies(config_, l, std::move(f));
    cache_.append(table, h.plan.first_pos, h.rows, h.plan.row, f);
  }
  stream.upload(table.data(), table.size() * sizeof(float), tables_[at]);
  stream.on_complete([this, at, held = std::move(held)]() mutable { held_[at] = std::move(held); });
  return at;
}

bool RopeTables::own_query_tables() const { return config_.query_temperature.beta != 0 || config_.latent(); }

}  // namespace tapdiff::gpu
