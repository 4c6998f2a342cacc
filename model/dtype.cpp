#include "model/dtype.h"

#include <array>
#include <bit>
#include <cstring>

#include "model/errors.h"
#include "model/half_float.h"
#include "model/quant_blocks.h"

namespace tapdiff::model {
namespace {

using DequantizeFn = void (*)(const std::byte* src, float* dst, std::int64_t n);
using QuantizeFn = void (*)(const float* src, std::byte* dst, std::int64_t n);

void copy_f32(const std::byte* src, float* dst, std::int64_t n) {
  std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
}
void store_f32(const float* src, std::byte* dst, std::int64_t n) {
  std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
}
void dequantize_f16(const std::byte* src, float* dst, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) dst[i] = widen_f16(load_u16(src + 2 * i));
}
void quantize_f16(const float* src, std::byte* dst, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) store_u16(dst + 2 * i, narrow_f16(src[i]));
}
void dequantize_bf16(const std::byte* src, float* dst, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(load_u16(src + 2 * i));
}
void quantize_bf16(const float* src, std::byte* dst, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) store_u16(dst + 2 * i, f32_to_bf16(src[i]));
}

struct Format {
  DType type;
  std::string_view name;
  int block;          // elements
  std::size_t bytes;  // per block
  DequantizeFn dequantize;
  QuantizeFn quantize;
};

// In DType order.
constexpr std::array kFormats{
    Format{DType::f32, "f32", 1, 4, copy_f32, store_f32},
    Format{DType::f16, "f16", 1, 2, dequantize_f16, quantize_f16},
    Format{DType::bf16, "bf16", 1, 2, dequantize_bf16, quantize_bf16},
    Format{DType::q8_0, "q8_0", 32, 34, blocks::dequantize_q8_0, blocks::quantize_q8_0},
    Format{DType::q4_0, "q4_0", 32, 18, blocks::dequantize_q4_0, blocks::quantize_q4_0},
    Format{DType::q4_1, "q4_1", 32, 20, blocks::dequantize_q4_1, blocks::quantize_q4_1},
    Format{DType::q5_0, "q5_0", 32, 22, blocks::dequantize_q5_0, blocks::quantize_q5_0},
    Format{DType::q5_1, "q5_1", 32, 24, blocks::dequantize_q5_1, blocks::quantize_q5_1},
    Format{DType::iq4_nl, "iq4_nl", 32, 18, blocks::dequantize_iq4_nl, blocks::quantize_iq4_nl},
    Format{DType::q2_k, "q2_k", 256, 84, blocks::dequantize_q2_k, blocks::quantize_q2_k},
    Format{DType::q3_k, "q3_k", 256, 110, blocks::dequantize_q3_k, blocks::quantize_q3_k},
    Format{DType::q4_k, "q4_k", 256, 144, blocks::dequantize_q4_k, blocks::quantize_q4_k},
    Format{DType::q5_k, "q5_k", 256, 176, blocks::dequantize_q5_k, blocks::quantize_q5_k},
    Format{DType::q6_k, "q6_k", 256, 210, blocks::dequantize_q6_k, blocks::quantize_q6_k},
    Format{DType::iq4_xs, "iq4_xs", 256, 136, blocks::dequantize_iq4_xs, blocks::quantize_iq4_xs},
    Format{DType::mxfp4, "mxfp4", 32, 17, blocks::dequantize_mxfp4, blocks::quantize_mxfp4},
};

constexpr bool formats_in_dtype_order() {
  for (std::size_t i = 0; i < kFormats.size(); ++i)
    if (static_cast<std::size_t>(kFormats[i].type) != i) return false;
  return true;
}
static_assert(formats_in_dtype_order());

constexpr std::array<DType, kFormats.size()> kAll = [] {
  std::array<DType, kFormats.size()> all{};
  for (std::size_t i = 0; i < kFormats.size(); ++i) all[i] = kFormats[i].type;
  return all;
}();

const Format& format(DType t) { return kFormats[static_cast<std::size_t>(t)]; }

}  // namespace

std::span<const DType> all_dtypes() { return kAll; }

std::string_view dtype_name(DType t) { return format(t).name; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const Format& f : kFormats)
    if (f.name == name) return f.type;
  return std::nullopt;
}

std::string dtype_names() {
  std::string names;
  for (const Format& f : kFormats) (names += names.empty() ? "" : ", ") += f.name;
  return names;
}

bool is_quantized(DType t) { return format(t).block > 1; }
int block_size(DType t) { return format(t).block; }
std::size_t block_bytes(DType t) { return format(t).bytes; }

std::size_t row_bytes(DType t, std::int64_t n) {
  TAPDIFF_ASSERT(n >= 0 && n % block_size(t) == 0, "a row of {} elements of {} (blocks of {})", n, dtype_name(t),
                 block_size(t));
  return static_cast<std::size_t>(n / block_size(t)) * block_bytes(t);
}

float f16_to_f32(std::uint16_t h) { return widen_f16(h); }
std::uint16_t f32_to_f16(float f) { return narrow_f16(f); }

void f32_to_f16(std::span<const float> in, std::uint16_t* out) {
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = narrow_f16(in[i]);
}

float bf16_to_f32(std::uint16_t h) { return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16); }

// Round to nearest even; NaN stays NaN (quiet bit set so the payload cannot round to inf).
std::uint16_t f32_to_bf16(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
  return static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

void dequantize_row(DType t, const std::byte* src, float* dst, std::int64_t n) {
  TAPDIFF_ASSERT(n % block_size(t) == 0, "dequantize {} elements of {}", n, dtype_name(t));
  format(t).dequantize(src, dst, n);
}

void quantize_row(DType t, const float* src, std::byte* dst, std::int64_t n) {
  TAPDIFF_ASSERT(n % block_size(t) == 0, "quantize {} elements to {}", n, dtype_name(t));
  format(t).quantize(src, dst, n);
}

}  // namespace tapdiff::model
