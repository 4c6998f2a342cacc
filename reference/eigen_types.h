#pragma once
// Eigen types of the reference engine. Every tensor is row-major: rows are token positions
// (activations) or output features (weights), so a row of a weight is one output's input weights.
#include <Eigen/Core>

namespace tapdiff::reference {

template <typename S>
using Mat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename S>
using ConstMatMap = Eigen::Map<const Mat<S>>;
template <typename S>
using Vec = Eigen::Matrix<S, 1, Eigen::Dynamic>;  // a row vector (norm weights, biases)

}  // namespace tapdiff::reference
