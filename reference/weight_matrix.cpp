#include "reference/weight_matrix.h"

#include "reference/round_f16.h"

#include <cstdint>
#include <type_traits>
#include <vector>

namespace tapdiff::reference {

template <typename S>
WeightMatrix<S>::WeightMatrix(const model::WeightTensor& tensor, bool round_f16)
    : rows_(static_cast<Eigen::Index>(tensor.rows)), cols_(static_cast<Eigen::Index>(tensor.cols)) {
  if constexpr (std::is_same_v<S, float>) {
    if (tensor.dtype == model::DType::f32 && !round_f16 &&
        reinterpret_cast<std::uintptr_t>(tensor.bytes.data()) % alignof(float) == 0) {
      data_ = reinterpret_cast<const float*>(tensor.bytes.data());
      return;
    }
  }
  owned_.resize(rows_, cols_);
  std::vector<float> row(static_cast<std::size_t>(cols_));
#pragma omp parallel for firstprivate(row) schedule(static) if (rows_ * cols_ > (1 << 18))
  for (Eigen::Index r = 0; r < rows_; ++r) {
    model::dequantize_row(tensor.dtype, tensor.row(r), row.data(), cols_);
    if (round_f16) round_to_f16(row);
    for (Eigen::Index c = 0; c < cols_; ++c) owned_(r, c) = static_cast<S>(row[static_cast<std::size_t>(c)]);
  }
  data_ = owned_.data();
}

template class WeightMatrix<float>;
template class WeightMatrix<double>;

}  // namespace tapdiff::reference
