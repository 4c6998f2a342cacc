#pragma once
// Summary statistics of a tensor, accumulated over row blocks so a tensor never needs to be in
// memory whole: RMS, max |x| and where it is, NaN and Inf counts (non-finite values are counted,
// never folded into the numbers).
#include <cstdint>
#include <limits>

#include "model/host_tensor.h"

namespace tapdiff::bisect {

class TensorStats {
 public:
  // Adds the rows of block; first_row is the row index of block's first row in the whole tensor.
  void add(const model::HostTensor& block, std::int64_t first_row);

  std::int64_t finite() const { return finite_; }
  std::int64_t nan() const { return nan_; }
  std::int64_t inf() const { return inf_; }
  double rms() const;  // over finite values
  double max_abs() const { return max_abs_; }
  double mean() const;                               // over finite values
  std::int64_t max_row() const { return max_row_; }  // -1 when no finite value
  std::int64_t max_col() const { return max_col_; }

 private:
  std::int64_t finite_ = 0, nan_ = 0, inf_ = 0;
  double sum_ = 0, sum_sq_ = 0, max_abs_ = 0;
  std::int64_t max_row_ = -1, max_col_ = -1;
};

}  // namespace tapdiff::bisect
