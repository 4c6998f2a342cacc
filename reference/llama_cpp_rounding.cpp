#include "reference/llama_cpp_rounding.h"

#include <cmath>
#include <cstring>
#include <span>

#include "formats/llama_cpp_precision.h"
#include "model/errors.h"
#include "model/quant_blocks.h"
#include "reference/rounding.h"

namespace tapdiff::reference {
namespace {

constexpr int kBlock32 = 32;
constexpr int kBlock256 = 256;

float to_f16_value(float v) { return model::f16_to_f32(model::f32_to_f16(v)); }

// quantize_row_q8_0 / q8_1 (ggml-cpu/arch/x86/quants.c): d = max|x| / 127 stored as f16, each
// value rounded from x * (127 / max|x|), half to even.
void round_block_q8_0(float* x) {
  float amax = 0.0f;
  for (int j = 0; j < kBlock32; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  const float d = to_f16_value(amax / 127.0f);
  const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  for (int j = 0; j < kBlock32; ++j) x[j] = std::nearbyint(x[j] * id) * d;
}

// quantize_row_q8_K_ref (ggml-quants.c): the value of largest magnitude (the first of equal ones)
// sets iscale = -127 / max; each value is nearest_int(iscale * x), at most 127; d = 1 / iscale.
void round_block_q8_k(float* x) {
  float max = 0.0f, amax = 0.0f;
  for (int j = 0; j < kBlock256; ++j) {
    const float ax = std::fabs(x[j]);
    if (ax > amax) {
      amax = ax;
      max = x[j];
    }
  }
  if (amax == 0.0f) {
    std::fill_n(x, kBlock256, 0.0f);
    return;
  }
  const float iscale = -127.0f / max;
  const float d = 1.0f / iscale;
  for (int j = 0; j < kBlock256; ++j)
    x[j] = static_cast<float>(std::min(127, model::blocks::nearest_int(iscale * x[j]))) * d;
}

template <typename RoundBlock>
void round_blocks(Mat<float>& x, int block, RoundBlock round_block) {
  TAPDIFF_ASSERT(x.cols() % block == 0, "rows of {} values are no whole blocks of {}", x.cols(), block);
  float* data = x.data();
  const Eigen::Index blocks = x.size() / block;
#pragma omp parallel for schedule(static) if (blocks > 4096)
  for (Eigen::Index b = 0; b < blocks; ++b) round_block(data + b * block);
}

}  // namespace

void round_to_dot_type(DotType t, Mat<float>& x) {
  switch (t) {
    case DotType::f32: return;
    case DotType::f16: round_to_f16(std::span<float>(x.data(), static_cast<std::size_t>(x.size()))); return;
    case DotType::bf16:
      for (float& v : x.reshaped()) v = model::bf16_to_f32(model::f32_to_bf16(v));
      return;
    case DotType::q8_0:
    case DotType::q8_1: round_blocks(x, kBlock32, round_block_q8_0); return;
    case DotType::q8_k: round_blocks(x, kBlock256, round_block_q8_k); return;
  }
}

Mat<float> q8_1_sum_correction(const Mat<float>& x, const model::WeightTensor& weights) {
  TAPDIFF_ASSERT(weights.dtype == model::DType::q4_1 || weights.dtype == model::DType::q5_1,
                 "{}: a Q8_1 sum correction needs Q4_1 or Q5_1 weights", weights.name);
  TAPDIFF_ASSERT(x.cols() == weights.cols && x.cols() % kBlock32 == 0, "{}: input of {} columns for {} weights",
                 weights.name, x.cols(), weights.cols);
  const Eigen::Index blocks = x.cols() / kBlock32;
  // Per row and block: f16(d * sum(q)) - f16(d) * sum(q), the stored sum against the values'.
  Mat<float> excess(x.rows(), blocks);
  for (Eigen::Index t = 0; t < x.rows(); ++t) {
    for (Eigen::Index b = 0; b < blocks; ++b) {
      const float* block = x.row(t).data() + b * kBlock32;
      float amax = 0.0f;
      for (int j = 0; j < kBlock32; ++j) amax = std::fmax(amax, std::fabs(block[j]));
      const float d = amax / 127.0f;
      const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
      float sum = 0.0f;  // of at most 32 integers of magnitude 127 or less: exact
      for (int j = 0; j < kBlock32; ++j) sum += std::nearbyint(block[j] * id);
      excess(t, b) = to_f16_value(d * sum) - to_f16_value(d) * sum;
    }
  }
  // Each weight block's minimum m, the f16 after its scale d (model/quant_blocks.h: Q4_1, Q5_1).
  const std::size_t block_bytes = model::block_bytes(weights.dtype);
  Mat<float> mins(weights.rows, blocks);
  for (std::int64_t r = 0; r < weights.rows; ++r) {
    const std::byte* row = weights.row(r);
    for (Eigen::Index b = 0; b < blocks; ++b) {
      std::uint16_t m = 0;
      std::memcpy(&m, row + static_cast<std::size_t>(b) * block_bytes + sizeof(std::uint16_t), sizeof m);
      mins(r, b) = model::f16_to_f32(m);
    }
  }
  return excess * mins.transpose();
}

void rms_norm_as_llama_cpp(const Mat<float>& x, const Eigen::Map<const Vec<float>>& w, double eps, Mat<float>& out) {
  const Eigen::Index width = w.size();
  TAPDIFF_ASSERT(width > 0 && x.cols() % width == 0, "rows of {} values normed in runs of {}", x.cols(), width);
  out.resize(x.rows(), x.cols());
  for (Eigen::Index t = 0; t < x.rows(); ++t) {
    for (Eigen::Index first = 0; first < x.cols(); first += width) {
      double sum = 0.0;
      for (Eigen::Index c = first; c < first + width; ++c) sum += static_cast<double>(x(t, c) * x(t, c));
      const auto mean = static_cast<float>(sum / static_cast<double>(width));
      const float scale = 1.0f / std::sqrt(mean + static_cast<float>(eps));
      for (Eigen::Index c = first; c < first + width; ++c) out(t, c) = (x(t, c) * scale) * w(c - first);
    }
  }
}

void layer_norm_as_llama_cpp(const Mat<float>& x, const Eigen::Map<const Vec<float>>& w, const float* b, double eps,
                             Mat<float>& out) {
  const Eigen::Index width = w.size();
  TAPDIFF_ASSERT(width > 0 && x.cols() == width, "rows of {} values normed over {}", x.cols(), width);
  out.resize(x.rows(), x.cols());
  const auto n = static_cast<float>(width);
  for (Eigen::Index t = 0; t < x.rows(); ++t) {
    double sum = 0.0;
    for (Eigen::Index c = 0; c < width; ++c) sum += static_cast<double>(x(t, c));
    const float mean = static_cast<float>(sum) / n;
    double squares = 0.0;
    for (Eigen::Index c = 0; c < width; ++c) {
      const float v = x(t, c) - mean;
      out(t, c) = v;
      squares += static_cast<double>(v * v);
    }
    const auto variance = static_cast<float>(squares / static_cast<double>(width));
    const float scale = 1.0f / std::sqrt(variance + static_cast<float>(eps));
    for (Eigen::Index c = 0; c < width; ++c) {
      out(t, c) = (out(t, c) * scale) * w(c);
      if (b != nullptr) out(t, c) += b[c];
    }
  }
}

void gelu_mul_as_llama_cpp(const Mat<float>& gate, const Mat<float>& up, Mat<float>& out) {
  out = gate.binaryExpr(up, [](float g, float u) { return formats::llama_cpp_gelu_mul(g, u); });
}

void gelu_as_llama_cpp(const Mat<float>& x, Mat<float>& out) {
  out = x.unaryExpr([](float v) { return formats::llama_cpp_gelu_mul(v, 1.0f); });
}

}  // namespace tapdiff::reference
