#pragma once
// Eigen types of the reference engine. Every tensor is row-major: rows are token positions
// (activations) or output features (weights), so a row of a weight is one output's input weights.
// GCC 12's own AVX-512 intrinsics (the `__Y = __Y` self-initialisation of _mm256_undefined_pd and
// kin) raise -Wmaybe-uninitialized, and -Wuninitialized under the sanitizers, once inlined into
// Eigen's packet code (GCC bug 105593, fixed in GCC 13). The pragma covers the intrinsic and Eigen
// headers only, included here first; the project's own code keeps both warnings.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#include <Eigen/Core>
#pragma GCC diagnostic pop
#else
#include <Eigen/Core>
#endif

namespace tapdiff::reference {

template <typename S>
using Mat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename S>
using ConstMatMap = Eigen::Map<const Mat<S>>;
template <typename S>
using Vec = Eigen::Matrix<S, 1, Eigen::Dynamic>;  // a row vector (norm weights, biases)

}  // namespace tapdiff::reference
