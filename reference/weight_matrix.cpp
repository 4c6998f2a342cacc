#include "reference/weight_matrix.h"

#include "reference/rounding.h"

#include <cstdint>
#include <type_traits>
#include <vector>

namespace tapdiff::reference {

namespace {

// f32 weights in an f32 engine without rounding are used where they lie in the mapped file.
template <typename S>
bool viewable(const model::WeightTensor& tensor, Storage storage) {
  return std::is_same_v<S, float> && tensor.dtype == model::DType::f32 && storage == Storage::f32 &&
         tensor.parts.empty() && reinterpret_cast<std::uintptr_t>(tensor.bytes.data()) % alignof(float) == 0;
}

}  // namespace

template <typename S>
std::uint64_t WeightMatrix<S>::copy_bytes(const model::WeightTensor& tensor, Storage storage) {
  return viewable<S>(tensor, storage) ? 0 : static_cast<std::uint64_t>(tensor.rows * tensor.cols) * sizeof(S);
}

template <typename S>
WeightMatrix<S>::WeightMatrix(const model::WeightTensor& tensor, Storage storage)
    : rows_(static_cast<Eigen::Index>(tensor.rows)), cols_(static_cast<Eigen::Index>(tensor.cols)) {
  if (viewable<S>(tensor, storage)) {
    data_ = reinterpret_cast<const S*>(tensor.bytes.data());
    return;
  }
  owned_.resize(rows_, cols_);
  std::vector<float> row(static_cast<std::size_t>(cols_));
#pragma omp parallel for firstprivate(row) schedule(static) if (rows_ * cols_ > (1 << 18))
  for (Eigen::Index r = 0; r < rows_; ++r) {
    model::dequantize_row(tensor.dtype, tensor.row(r), row.data(), cols_);
    round_to(storage, row);
    for (Eigen::Index c = 0; c < cols_; ++c) owned_(r, c) = static_cast<S>(row[static_cast<std::size_t>(c)]);
  }
  data_ = owned_.data();
}

template class WeightMatrix<float>;
template class WeightMatrix<double>;

}  // namespace tapdiff::reference
