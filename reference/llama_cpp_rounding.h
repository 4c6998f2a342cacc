#pragma once
// How the reference's llama.cpp emulation (--dtype llama.cpp) rounds what llama.cpp's CPU backend
// (ggml-cpu) rounds: each product's activations converted to the weight type's dot-product type
// (formats/llama_cpp_precision.h), RMSNorm's scale as ggml computes it.

#include "formats/llama_cpp_precision.h"
#include "model/dtype.h"
#include "model/weights.h"
#include "reference/eigen_types.h"

namespace tapdiff::reference {

using formats::DotType;

// Replaces each row of x by the values ggml's conversion to t gives (quantized, then dequantized
// as the product reads them), as its x86 code converts: Q8_0 and Q8_1 scale each block of 32 by
// 127 / max|x| and round half to even, storing the scale as f16; Q8_K scales each block of 256 by
// -127 / (the value of largest magnitude) and keeps the scale in f32. x's columns must be a
// multiple of the block (the weight's rows are).
void round_to_dot_type(DotType t, Mat<float>& x);

// llama.cpp's Q8_1 blocks also carry their sum, d * sum(q) rounded to f16 with d unrounded, and a
// Q4_1 or Q5_1 product takes the weight block's minimum times that sum, not the sum of the rounded
// values round_to_dot_type leaves. Returns what the product gets more, per row of x and output
// column: sum over blocks b of min[column, b] * (stored sum - sum of rounded values). Call it on x
// before round_to_dot_type. `weights` is the Q4_1 or Q5_1 matrix [out, in].
Mat<float> q8_1_sum_correction(const Mat<float>& x, const model::WeightTensor& weights);

// RMSNorm as ggml-cpu computes it (ggml_compute_forward_rms_norm_f32, then ggml_mul) over each run
// of w.size() values of a row (the row; a head of q or k): each square rounded to f32 and summed in
// double, the mean rounded to f32, scale = 1 / sqrtf(mean + eps), the values times scale, then
// times the weight. The same values to the last bit, so that a product's rounding of them to its
// dot-product type flips no value that llama.cpp's does not.
void rms_norm_as_llama_cpp(const Mat<float>& x, const Eigen::Map<const Vec<float>>& w, double eps, Mat<float>& out);

// LayerNorm as ggml-cpu computes it (ggml_compute_forward_norm_f32, then ggml_mul and ggml_add)
// over each row: the values summed in double and the mean that sum over the width in f32; each
// value less the mean in f32, its square in f32, the squares summed in double and the variance
// that sum over the width in f32; scale = 1 / sqrtf(variance + eps); the values times scale, times
// the weight, plus the bias where b is given. ggml's SIMD code adds the squares in f32 runs of 8 or
// 16 before adding those in double: the variance may differ from its in the last bits.
void layer_norm_as_llama_cpp(const Mat<float>& x, const Eigen::Map<const Vec<float>>& w, const float* b, double eps,
                             Mat<float>& out);

// out = gelu(gate) * up with ggml-cpu's GELU (formats::llama_cpp_gelu_mul: the f16 table).
void gelu_mul_as_llama_cpp(const Mat<float>& gate, const Mat<float>& up, Mat<float>& out);
// out = gelu(x), a plain FFN's, with that table.
void gelu_as_llama_cpp(const Mat<float>& x, Mat<float>& out);

}  // namespace tapdiff::reference
