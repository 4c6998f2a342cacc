#pragma once
// Storage types of weight tensors and their row (de)quantization.
// Block formats (32 elements per block, as in GGUF):
//   Q8_0: f16 scale d, 32 x int8 q;            x = d * q
//   Q4_0: f16 scale d, 16 bytes of nibbles;    x = d * (nibble - 8); byte j holds element j (low
//         nibble) and element j + 16 (high nibble)
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace tapdiff::model {

enum class DType : std::uint8_t { f32, f16, bf16, q8_0, q4_0 };

std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);  // "f32", "f16", "bf16", "q8_0", "q4_0"
int block_size(DType t);                                      // elements per block (1 for plain types)
std::size_t block_bytes(DType t);                             // bytes per block
// Bytes of a row of n elements; n must be a multiple of block_size(t) (FormatError otherwise is the
// loader's job: this asserts).
std::size_t row_bytes(DType t, std::int64_t n);

float f16_to_f32(std::uint16_t h);
std::uint16_t f32_to_f16(float f);                               // round to nearest even, overflow to inf
void f32_to_f16(std::span<const float> in, std::uint16_t* out);  // each as above, in a loop the compiler inlines
float bf16_to_f32(std::uint16_t h);
std::uint16_t f32_to_bf16(float f);  // round to nearest even

// dst[0..n) = the n elements of one row stored as t at src.
void dequantize_row(DType t, const std::byte* src, float* dst, std::int64_t n);
// dst = row of n elements stored as t (quantized by round-to-nearest, as llama.cpp's reference).
void quantize_row(DType t, const float* src, std::byte* dst, std::int64_t n);

}  // namespace tapdiff::model
