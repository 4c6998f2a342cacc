#pragma once
// A dense row-major 2-D tensor in host memory, f32 or f64: what taps receive and engines accept
// for teacher forcing. Rows are token positions, columns are features.
#include <cstdint>
#include <span>
#include <variant>
#include <vector>

namespace tapdiff::model {

enum class Scalar : std::uint8_t { f32, f64 };

class HostTensor {
 public:
  HostTensor() = default;
  HostTensor(Scalar scalar, std::int64_t rows, std::int64_t cols);
  // Makes this a [rows, cols] tensor of scalar, keeping the storage (and its capacity) when the
  // type stays: a tensor refilled over and over allocates, and page-faults, once. Contents are
  // unspecified.
  void reshape(Scalar scalar, std::int64_t rows, std::int64_t cols);

  Scalar scalar() const { return std::holds_alternative<std::vector<float>>(data_) ? Scalar::f32 : Scalar::f64; }
  std::int64_t rows() const { return rows_; }
  std::int64_t cols() const { return cols_; }
  std::int64_t size() const { return rows_ * cols_; }

  // The storage; the caller must ask for the type the tensor holds (asserted).
  std::span<float> f32();
  std::span<const float> f32() const;
  std::span<double> f64();
  std::span<const double> f64() const;

  double at(std::int64_t row, std::int64_t col) const;
  // Rows [first, first + count) as a new tensor of the same type.
  HostTensor slice_rows(std::int64_t first, std::int64_t count) const;
  // Overwrites rows [first, first + rows.rows()) with rows (same type and columns).
  void set_rows(std::int64_t first, const HostTensor& rows);
  // A copy converted to the given type.
  HostTensor to(Scalar scalar) const;

 private:
  std::int64_t rows_ = 0;
  std::int64_t cols_ = 0;
  std::variant<std::vector<float>, std::vector<double>> data_;
};

}  // namespace tapdiff::model
