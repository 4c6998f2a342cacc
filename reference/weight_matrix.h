#pragma once
// A weight tensor seen as an Eigen matrix of the engine's scalar type: a zero-copy view into the
// memory-mapped file when the stored type already is that scalar (f32 weights, f32 engine),
// otherwise a dequantized copy made once at load. With a storage other than f32 the copy holds the
// dequantized values rounded to it (an f16 or bf16 emulation's weights), whatever the stored type.
#include <cstdint>

#include "model/weights.h"
#include "reference/eigen_types.h"
#include "reference/rounding.h"

namespace tapdiff::reference {

template <typename S>
class WeightMatrix {
 public:
  WeightMatrix() = default;
  explicit WeightMatrix(const model::WeightTensor& tensor, Storage storage = Storage::f32);
  // The bytes the matrix of this tensor owns: 0 for a view.
  static std::uint64_t copy_bytes(const model::WeightTensor& tensor, Storage storage = Storage::f32);

  ConstMatMap<S> matrix() const { return ConstMatMap<S>(data_, rows_, cols_); }  // [rows, cols]
  // A 1-D tensor (rows == 1) as a row vector.
  Eigen::Map<const Vec<S>> vector() const { return Eigen::Map<const Vec<S>>(data_, rows_ * cols_); }
  Eigen::Index rows() const { return rows_; }
  Eigen::Index cols() const { return cols_; }
  bool empty() const { return data_ == nullptr; }
  bool is_view() const { return owned_.size() == 0 && data_ != nullptr; }

 private:
  Mat<S> owned_;
  const S* data_ = nullptr;
  Eigen::Index rows_ = 0;
  Eigen::Index cols_ = 0;
};

extern template class WeightMatrix<float>;
extern template class WeightMatrix<double>;

}  // namespace tapdiff::reference
