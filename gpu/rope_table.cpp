#include "gpu/rope_table.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace tapdiff::gpu {

namespace {

// Appends the rows of positions first .. first + count - 1 given each pair's frequency.
void compute_rows(std::vector<float>& table, int first, int count, const std::vector<double>& frequencies) {
  for (int t = 0; t < count; ++t) {
    const double pos = static_cast<double>(first + t);
    for (double frequency : frequencies) {
      const double angle = pos * frequency;
      table.push_back(static_cast<float>(std::cos(angle)));
      table.push_back(static_cast<float>(std::sin(angle)));
    }
  }
}

}  // namespace

void RopeTableCache::append(std::vector<float>& table, int first_pos, int rows, int head_dim, double base) {
  const int half = head_dim / 2;
  std::vector<double> frequencies(static_cast<std::size_t>(half));
  for (int i = 0; i < half; ++i) frequencies[static_cast<std::size_t>(i)] = std::pow(base, -2.0 * i / head_dim);
  std::vector<float>& known = rows_[{head_dim, base}];
  const auto width = static_cast<std::size_t>(head_dim);  // floats per row
  const int end = first_pos + rows;
  if (const auto computed = static_cast<int>(known.size() / width); end > computed)
    compute_rows(known, computed, end - computed, frequencies);
  // Positions before 0 (a planted fault's shifted table) are computed each time.
  const int before = std::min(std::max(-first_pos, 0), rows);
  compute_rows(table, first_pos, before, frequencies);
  if (before == rows) return;
  const auto from = static_cast<std::ptrdiff_t>(static_cast<std::size_t>(first_pos + before) * width);
  const auto to = static_cast<std::ptrdiff_t>(static_cast<std::size_t>(end) * width);
  table.insert(table.end(), known.begin() + from, known.begin() + to);
}

}  // namespace tapdiff::gpu
