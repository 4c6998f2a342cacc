#include "model/host_tensor.h"

#include <algorithm>

#include "model/errors.h"

namespace tapdiff::model {

HostTensor::HostTensor(Scalar scalar, std::int64_t rows, std::int64_t cols) { reshape(scalar, rows, cols); }

void HostTensor::reshape(Scalar scalar, std::int64_t rows, std::int64_t cols) {
  TAPDIFF_ASSERT(rows >= 0 && cols >= 0, "negative shape [{}, {}]", rows, cols);
  rows_ = rows, cols_ = cols;
  const auto n = static_cast<std::size_t>(rows * cols);
  if (scalar == Scalar::f32) {
    if (!std::holds_alternative<std::vector<float>>(data_)) data_ = std::vector<float>();
    std::get<std::vector<float>>(data_).resize(n);
  } else {
    if (!std::holds_alternative<std::vector<double>>(data_)) data_ = std::vector<double>();
    std::get<std::vector<double>>(data_).resize(n);
  }
}

std::span<float> HostTensor::f32() {
  TAPDIFF_ASSERT(scalar() == Scalar::f32, "tensor holds f64, f32 asked");
  return std::get<std::vector<float>>(data_);
}
std::span<const float> HostTensor::f32() const {
  TAPDIFF_ASSERT(scalar() == Scalar::f32, "tensor holds f64, f32 asked");
  return std::get<std::vector<float>>(data_);
}
std::span<double> HostTensor::f64() {
  TAPDIFF_ASSERT(scalar() == Scalar::f64, "tensor holds f32, f64 asked");
  return std::get<std::vector<double>>(data_);
}
std::span<const double> HostTensor::f64() const {
  TAPDIFF_ASSERT(scalar() == Scalar::f64, "tensor holds f32, f64 asked");
  return std::get<std::vector<double>>(data_);
}

double HostTensor::at(std::int64_t row, std::int64_t col) const {
  TAPDIFF_ASSERT(row >= 0 && row < rows_ && col >= 0 && col < cols_, "index ({}, {}) outside [{}, {}]", row, col, rows_,
                 cols_);
  const auto i = static_cast<std::size_t>(row * cols_ + col);
  return std::visit([i](const auto& v) { return static_cast<double>(v[i]); }, data_);
}

HostTensor HostTensor::slice_rows(std::int64_t first, std::int64_t count) const {
  TAPDIFF_ASSERT(first >= 0 && count >= 0 && first + count <= rows_, "rows [{}, {}) outside {} rows", first,
                 first + count, rows_);
  HostTensor out(scalar(), count, cols_);
  std::visit(
      [&](const auto& src) {
        using T = typename std::decay_t<decltype(src)>::value_type;
        auto& dst = std::get<std::vector<T>>(out.data_);
        std::copy_n(src.begin() + first * cols_, count * cols_, dst.begin());
      },
      data_);
  return out;
}

void HostTensor::set_rows(std::int64_t first, const HostTensor& rows) {
  TAPDIFF_ASSERT(rows.scalar() == scalar() && rows.cols_ == cols_ && first >= 0 && first + rows.rows_ <= rows_,
                 "{} rows of {} columns at row {} of a [{}, {}] tensor", rows.rows_, rows.cols_, first, rows_, cols_);
  std::visit(
      [&](auto& dst) {
        using T = typename std::decay_t<decltype(dst)>::value_type;
        const auto& src = std::get<std::vector<T>>(rows.data_);
        std::copy(src.begin(), src.end(), dst.begin() + first * cols_);
      },
      data_);
}

HostTensor HostTensor::to(Scalar scalar) const {
  HostTensor out(scalar, rows_, cols_);
  std::visit(
      [&](const auto& src) {
        std::visit(
            [&](auto& dst) {
              using T = typename std::decay_t<decltype(dst)>::value_type;
              std::transform(src.begin(), src.end(), dst.begin(), [](auto x) { return static_cast<T>(x); });
            },
            out.data_);
      },
      data_);
  return out;
}

}  // namespace tapdiff::model
