#include "gpu/device_weights.h"

#include <algorithm>
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

}  // namespace

DeviceWeights::DeviceWeights(const Device& device, Stream& stream, const model::Model& m, bool f16)
    : f16_(f16),
      norm_offset_(m.config().block.norm_offset),
      arena_(device, "weights", MemoryKind::device_local, kWeightBlock) {
  for (const auto& [key, t] : m.tensors()) upload(stream, key.first, key.second, t);
  stream.trim();
}

void DeviceWeights::upload(Stream& stream, model::WeightKind kind, int layer, const model::WeightTensor& t) {
  DeviceWeight w{t.name, {}, t.dtype, t.rows, t.cols, static_cast<std::uint32_t>(model::row_bytes(t.dtype, t.cols))};
  std::vector<std::byte> gathered;  // a tensor in parts
  std::span<const std::byte> bytes = t.contiguous(gathered);
  std::vector<float> widened;      // 1-D tensors as f32
  std::vector<std::uint16_t> f16;  // F32 and BF16 matrices under f16 weights
  const bool offset = model::is_norm(kind) && norm_offset_ != 0;
  const bool convert = model::is_vector(kind) ? t.dtype != model::DType::f32 || f16_ || offset
                                              : f16_ && (t.dtype == model::DType::f32 || t.dtype == model::DType::bf16);
  if (convert) {
    widened.resize(static_cast<std::size_t>(t.rows * t.cols));
    for (std::int64_t r = 0; r < t.rows; ++r)
      model::dequantize_row(t.dtype, t.row(r), widened.data() + r * t.cols, t.cols);
  }
  if (convert && model::is_vector(kind)) {
    if (f16_)
      for (float& v : widened) v = model::f16_to_f32(model::f32_to_f16(v));
    if (offset)
      for (float& v : widened) v += static_cast<float>(norm_offset_);
    bytes = std::as_bytes(std::span<const float>(widened));
    w.dtype = model::DType::f32;
    w.row_bytes = static_cast<std::uint32_t>(t.cols * 4);
  } else if (convert) {
    f16.resize(widened.size());
    model::f32_to_f16(widened, f16.data());
    widened = {};
    bytes = std::as_bytes(std::span<const std::uint16_t>(f16));
    w.dtype = model::DType::f16;
    w.row_bytes = static_cast<std::uint32_t>(t.cols * 2);
  }
  w.region = arena_.allocate(bytes.size(), fmt::format("weights of {}", t.name));
  stored_ += bytes.size();
  // Pieces of at most kStagingLimit, flushed as they accumulate, bound the staging memory.
  for (std::uint64_t off = 0; off < bytes.size();) {
    const std::uint64_t n = std::min<std::uint64_t>(kStagingLimit, bytes.size() - off);
    stream.upload(bytes.data() + off, n, w.region.sub(off, n));
    off += n, staged_ += n;
    if (staged_ >= kStagingLimit) stream.flush(), staged_ = 0;
  }
  weights_.emplace(std::make_pair(kind, layer), std::move(w));
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
