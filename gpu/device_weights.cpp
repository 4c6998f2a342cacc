#include "gpu/device_weights.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include <fmt/core.h>

#include "gpu/device.h"
#include "gpu/stream.h"
#include "model/dtype.h"
#include "model/errors.h"

namespace tapdiff::gpu {
namespace {

constexpr std::uint64_t kWeightBlock = 256ull << 20;
constexpr std::uint64_t kStagingLimit = 64ull << 20;  // flush the upload stream past this much

// The type an f16 or bf16 engine holds its float weights in (block formats stay as they are); f32
// for an f32 engine, which keeps every weight as stored.
model::DType held_type(Activations activations) {
  switch (activations) {
    case Activations::f16: return model::DType::f16;
    case Activations::bf16: return model::DType::bf16;
    case Activations::f32: break;
  }
  return model::DType::f32;
}

}  // namespace

DeviceWeights::DeviceWeights(const Device& device, Stream& stream, const model::Model& m, Activations activations)
    : activations_(activations),
      norm_offset_(m.config().block.norm_offset),
      arena_(device, "weights", MemoryKind::device_local, kWeightBlock) {
  for (const auto& [key, t] : m.tensors()) upload(stream, key.first, key.second, t);
  stream.trim();
}

void DeviceWeights::upload(Stream& stream, model::WeightKind kind, int layer, const model::WeightTensor& t) {
  DeviceWeight w{t.name, {}, t.dtype, t.rows, t.cols, static_cast<std::uint32_t>(model::row_bytes(t.dtype, t.cols))};
  const bool vector = model::is_vector(kind);
  const model::DType held = held_type(activations_);
  const bool narrow = held != model::DType::f32;
  const bool float_matrix =
      t.dtype == model::DType::f32 || t.dtype == model::DType::f16 || t.dtype == model::DType::bf16;
  if (!vector && narrow && float_matrix && t.dtype != held) {
    w.dtype = held;
    w.row_bytes = static_cast<std::uint32_t>(t.cols * 2);
    const std::uint64_t size = static_cast<std::uint64_t>(t.rows) * w.row_bytes;
    w.region = arena_.allocate(size, fmt::format("weights of {}", t.name));
    upload_converted(stream, t, w);
    stored_ += size;
    weights_.emplace(std::make_pair(kind, layer), std::move(w));
    return;
  }
  std::vector<std::byte> gathered;  // a tensor in parts
  std::span<const std::byte> bytes = t.contiguous(gathered);
  std::vector<float> widened;  // 1-D tensors as f32
  const bool offset = model::is_norm(kind) && norm_offset_ != 0;
  if (vector && (t.dtype != model::DType::f32 || narrow || offset)) {
    widened.resize(static_cast<std::size_t>(t.rows * t.cols));
    for (std::int64_t r = 0; r < t.rows; ++r)
      model::dequantize_row(t.dtype, t.row(r), widened.data() + r * t.cols, t.cols);
    if (held == model::DType::f16)
      for (float& v : widened) v = model::f16_to_f32(model::f32_to_f16(v));
    if (held == model::DType::bf16)
      for (float& v : widened) v = model::bf16_to_f32(model::f32_to_bf16(v));
    if (offset)
      for (float& v : widened) v += static_cast<float>(norm_offset_);
    bytes = std::as_bytes(std::span<const float>(widened));
    w.dtype = model::DType::f32;
    w.row_bytes = static_cast<std::uint32_t>(t.cols * 4);
  }
  w.region = arena_.allocate(bytes.size(), fmt::format("weights of {}", t.name));
  stored_ += bytes.size();
  // Pieces of at most kStagingLimit, flushed as they accumulate, bound the staging memory.
  for (std::uint64_t off = 0; off < bytes.size();) {
    const std::uint64_t n = std::min<std::uint64_t>(kStagingLimit, bytes.size() - off);
    stage(stream, n, w.region.sub(off, n),
          [&](std::span<std::byte> staging) { std::memcpy(staging.data(), bytes.data() + off, n); });
    off += n;
  }
  weights_.emplace(std::make_pair(kind, layer), std::move(w));
}

void DeviceWeights::stage(Stream& stream, std::uint64_t size, const Region& dst,
                          const std::function<void(std::span<std::byte>)>& fill) {
  stream.upload(size, dst, fill);
  staged_ += size;
  if (staged_ >= kStagingLimit) stream.flush(), staged_ = 0;
}

void DeviceWeights::upload_converted(Stream& stream, const model::WeightTensor& t, const DeviceWeight& w) {
  const std::int64_t block_rows = std::max<std::int64_t>(1, static_cast<std::int64_t>(kStagingLimit / w.row_bytes));
  for (std::int64_t first = 0; first < t.rows; first += block_rows) {
    const std::int64_t rows = std::min(block_rows, t.rows - first);
    const std::uint64_t size = static_cast<std::uint64_t>(rows) * w.row_bytes;
    stage(stream, size, w.region.sub(static_cast<std::uint64_t>(first) * w.row_bytes, size),
          [&](std::span<std::byte> staging) {
            auto* out = reinterpret_cast<std::uint16_t*>(staging.data());
#pragma omp parallel
            {
              std::vector<float> row(static_cast<std::size_t>(t.cols));
#pragma omp for schedule(static)
              for (std::int64_t r = 0; r < rows; ++r) {
                model::dequantize_row(t.dtype, t.row(first + r), row.data(), t.cols);
                model::quantize_row(w.dtype, row.data(), reinterpret_cast<std::byte*>(out + r * t.cols), t.cols);
              }
            }
          });
  }
}

const DeviceWeight* DeviceWeights::find(model::WeightKind kind, int layer) const {
  const auto it = weights_.find({kind, layer});
  return it == weights_.end() ? nullptr : &it->second;
}

const DeviceWeight& DeviceWeights::get(model::WeightKind kind, int layer) const {
  const DeviceWeight* w = find(kind, layer);
  TAPDIFF_ASSERT(w != nullptr, "weight {} of layer {} not on the device", model::weight_kind_name(kind), layer);
  return *w;
}

}  // namespace tapdiff::gpu
