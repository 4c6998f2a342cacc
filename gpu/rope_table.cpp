#include "gpu/rope_table.h"

#include <algorithm>
#include <cstddef>

namespace tapdiff::gpu {

namespace {

// Appends the rows of positions first .. first + count - 1: head_dim / 2 (cos, sin) pairs each, the
// rotated pairs' from their frequencies, the others (1, 0).
void compute_rows(std::vector<float>& table, int first, int count, RopeRowLayout layout,
                  const model::RopeFrequencies& f) {
  std::vector<double> cos_sin(2 * f.inv_freq.size());
  const auto rotated = static_cast<int>(f.inv_freq.size());
  for (int t = 0; t < count; ++t) {
    model::rope_cos_sin(f, first + t, cos_sin);
    for (int i = 0; i < layout.lead_pairs; ++i) table.insert(table.end(), {1.0f, 0.0f});
    for (double v : cos_sin) table.push_back(static_cast<float>(v));
    for (int i = layout.lead_pairs + rotated; i < layout.head_dim / 2; ++i) table.insert(table.end(), {1.0f, 0.0f});
  }
}

}  // namespace

void RopeTableCache::append(std::vector<float>& table, int first_pos, int rows, RopeRowLayout layout,
                            const model::RopeFrequencies& f) {
  std::vector<float>& known = rows_[{layout, f}];
  const auto width = static_cast<std::size_t>(layout.head_dim);  // floats per row
  const int end = first_pos + rows;
  if (const auto computed = static_cast<int>(known.size() / width); end > computed)
    compute_rows(known, computed, end - computed, layout, f);
  // Positions before 0 (a planted fault's shifted table) are computed each time.
  const int before = std::min(std::max(-first_pos, 0), rows);
  compute_rows(table, first_pos, before, layout, f);
  if (before == rows) return;
  const auto from = static_cast<std::ptrdiff_t>(static_cast<std::size_t>(first_pos + before) * width);
  const auto to = static_cast<std::ptrdiff_t>(static_cast<std::size_t>(end) * width);
  table.insert(table.end(), known.begin() + from, known.begin() + to);
}

}  // namespace tapdiff::gpu
