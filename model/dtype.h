#pragma once
// Storage types of weight tensors and their row (de)quantization. The quantized types are ggml's
// block formats (model/quant_blocks.h): 32 elements per block for Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
// IQ4_NL and MXFP4, 256 per super-block for Q2_K to Q6_K and IQ4_XS.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tapdiff::model {

// The order is the Vulkan kernels' DTYPE code (gpu/shaders/dequant.glsl).
enum class DType : std::uint8_t {
  f32,
  f16,
  bf16,
  q8_0,
  q4_0,
  q4_1,
  q5_0,
  q5_1,
  iq4_nl,
  q2_k,
  q3_k,
  q4_k,
  q5_k,
  q6_k,
  iq4_xs,
  mxfp4,
};

std::span<const DType> all_dtypes();
std::string_view dtype_name(DType t);  // "f32", "q4_k", ...
std::optional<DType> dtype_from_name(std::string_view name);
std::string dtype_names();         // "f32, f16, ..., iq4_xs, mxfp4", for messages
bool is_quantized(DType t);        // a block format
int block_size(DType t);           // elements per block (1 for plain types)
std::size_t block_bytes(DType t);  // bytes per block
// Bytes of a row of n elements; n must be a multiple of block_size(t) (FormatError otherwise is the
// loader's job: this asserts).
std::size_t row_bytes(DType t, std::int64_t n);

float f16_to_f32(std::uint16_t h);
std::uint16_t f32_to_f16(float f);                               // round to nearest even, overflow to inf
void f32_to_f16(std::span<const float> in, std::uint16_t* out);  // each as above, in a loop the compiler inlines
float bf16_to_f32(std::uint16_t h);
std::uint16_t f32_to_bf16(float f);  // round to nearest even

// dst[0..n) = the n elements of one row stored as t at src, exactly as ggml dequantizes them.
void dequantize_row(DType t, const std::byte* src, float* dst, std::int64_t n);
// dst = row of n elements stored as t (round-to-nearest quantization: model/quant_blocks.h).
void quantize_row(DType t, const float* src, std::byte* dst, std::int64_t n);

}  // namespace tapdiff::model
