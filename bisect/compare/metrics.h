#pragma once
// How far tensor b is from tensor a (a is the reference), accumulated over row blocks so no
// tensor needs to be in memory whole. Non-finite values are counted, never compared as numbers.
#include <cstdint>

#include "model/host_tensor.h"

namespace tapdiff::bisect {

struct Metrics {
  std::int64_t count = 0;           // elements compared (both finite)
  std::int64_t nonfinite = 0;       // elements where a or b is NaN/Inf and the other differs
  std::int64_t nonfinite_both = 0;  // elements NaN in both, or the same Inf: alike, but not compared as numbers
  double max_abs = 0;               // max |a - b|
  double max_rel = 0;               // max |a - b| / max(|a|, rms of a's row): no blow-up near zero
  double rms_err = 0;               // sqrt(mean (a - b)^2)
  double rms_a = 0;                 // sqrt(mean a^2)
  double nmse = 0;                  // sum (a - b)^2 / sum a^2
  double cosine = 1;                // a.b / (|a| |b|)
  std::int64_t worst_row = -1, worst_col = -1;  // where |a - b| is largest
  double worst_a = 0, worst_b = 0;
};

class MetricsAccumulator {
 public:
  // Adds a block of rows of both tensors (same shape); first_row is their row index in the whole.
  void add(const model::HostTensor& a, const model::HostTensor& b, std::int64_t first_row);
  // Adds rows [begin, end) of the block only (first_row: the whole's index of the block's row 0).
  void add(const model::HostTensor& a, const model::HostTensor& b, std::int64_t first_row, std::int64_t begin,
           std::int64_t end);
  // Adds the elements another accumulator saw, as if they came after this one's.
  void merge(const MetricsAccumulator& other);
  Metrics result() const;

 private:
  template <typename TA, typename TB>
  void add_rows(const model::HostTensor& a, const model::HostTensor& b, std::int64_t first_row, std::size_t begin,
                std::size_t end);
  template <typename TA, typename TB>
  bool add_finite_row(const TA* ra, const TB* rb, std::size_t cols, std::int64_t row);
  template <typename TA, typename TB>
  void add_row(const TA* ra, const TB* rb, std::size_t cols, std::int64_t row);

  std::int64_t count_ = 0, nonfinite_ = 0, nonfinite_both_ = 0;
  double sum_sq_err_ = 0, sum_sq_a_ = 0, sum_sq_b_ = 0, dot_ = 0, max_abs_ = 0;
  std::int64_t worst_row_ = -1, worst_col_ = -1;
  double worst_a_ = 0, worst_b_ = 0, max_rel_ = 0;
};

// Metrics of whole tensors.
Metrics compare(const model::HostTensor& a, const model::HostTensor& b);

}  // namespace tapdiff::bisect
