#include "gpu/llama_cpp_steps.h"

#include <algorithm>
#include <vector>

#include "formats/llama_cpp_precision.h"
#include "model/half_float.h"

namespace tapdiff::gpu {
namespace {

// f32 values: llama.cpp's precision keeps f32 activations.
std::uint64_t f32_bytes(std::int64_t rows, std::int64_t cols) {
  return static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(cols) * sizeof(float);
}

}  // namespace

LlamaCppSteps::LlamaCppSteps(const Device& device, Stream& stream, Kernels& kernels, const model::Block& block)
    : stream_(stream), kernels_(kernels) {
  if (!formats::llama_cpp_gelu_by_table(block)) return;
  std::vector<float> table;
  for (const std::uint16_t h : formats::llama_cpp_gelu_table()) table.push_back(model::widen_f16(h));
  const std::uint64_t bytes = table.size() * sizeof(float);
  gelu_arena_ = std::make_unique<Arena>(device, "llama.cpp's GELU table", MemoryKind::device_local, bytes);
  gelu_table_ = gelu_arena_->allocate(bytes, "llama.cpp's GELU table");
  stream_.upload(table.data(), bytes, gelu_table_);
  stream_.flush();  // now: a reset abandons what is recorded
}

void LlamaCppSteps::allocate(Arena& arena, int capacity, int widest) {
  rounded_ = arena.allocate(f32_bytes(capacity, widest), "the products' rounded inputs");
  excess_ = arena.allocate(f32_bytes(capacity, std::max(widest / 32, 1)), "the Q8_1 sums' excess");
}

Kernel LlamaCppSteps::product(const Region& x, const DeviceWeight& w, const DeviceWeight* bias, const Region& out,
                              int rows, std::uint32_t faults) {
  const formats::DotType type = formats::dot_type(w.dtype);
  if (type == formats::DotType::f32) return kernels_.matmul(stream_, x, w, bias, out, rows, faults);
  const Region rounded = rounded_.sub(0, f32_bytes(rows, w.cols));
  kernels_.round_to_dot_type(stream_, type, x, rounded, excess_, rows, static_cast<int>(w.cols));
  Kernel kernel = kernels_.matmul(stream_, rounded, w, bias, out, rows, faults);
  if (type == formats::DotType::q8_1) kernels_.q8_1_correction(stream_, excess_, w, out, rows);
  return kernel;
}

void LlamaCppSteps::cache(const Region& rows, const Region& cache, int count, int width) {
  kernels_.round_to_dot_type(stream_, formats::DotType::f16, rows, cache, excess_, count, width);
}

model::HostTensor LlamaCppSteps::cached_values(const model::HostTensor& t) {
  model::HostTensor rounded = t.to(model::Scalar::f32);
  for (float& v : rounded.f32()) v = model::f16_to_f32(model::f32_to_f16(v));
  return rounded;
}

}  // namespace tapdiff::gpu
