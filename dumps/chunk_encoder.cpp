#include "dumps/chunk_encoder.h"

#include <zlib.h>

#include <fmt/core.h>

#include "model/errors.h"

namespace tapdiff::dumps {

struct ChunkEncoder::Stream {
  z_stream z{};
};

ChunkEncoder::ChunkEncoder(int level) : stream_(std::make_unique<Stream>()) {
  TAPDIFF_ASSERT(level >= 1 && level <= 9, "deflate level {}", level);
  // compress2()'s settings, which HDF5's deflate filter uses: a zlib stream, 32 KiB window.
  if (deflateInit(&stream_->z, level) != Z_OK)
    throw EnvironmentError(
        fmt::format("cannot set up deflate (zlib: {})", stream_->z.msg ? stream_->z.msg : "no memory"));
}

ChunkEncoder::~ChunkEncoder() { deflateEnd(&stream_->z); }

std::span<const std::byte> ChunkEncoder::encode(std::span<const std::byte> bytes, std::size_t element_bytes) {
  // Shuffle: byte k of every element side by side, k = 0 .. element_bytes - 1.
  const std::size_t n = bytes.size() / element_bytes;
  TAPDIFF_ASSERT(n * element_bytes == bytes.size(), "{} bytes of {}-byte elements", bytes.size(), element_bytes);
  shuffled_.resize(bytes.size());
  for (std::size_t k = 0; k < element_bytes; ++k)
    for (std::size_t i = 0; i < n; ++i) shuffled_[k * n + i] = bytes[i * element_bytes + k];

  z_stream& z = stream_->z;
  deflated_.resize(deflateBound(&z, static_cast<uLong>(shuffled_.size())));
  z.next_in = reinterpret_cast<Bytef*>(shuffled_.data());
  z.avail_in = static_cast<uInt>(shuffled_.size());
  z.next_out = reinterpret_cast<Bytef*>(deflated_.data());
  z.avail_out = static_cast<uInt>(deflated_.size());
  const int status = deflate(&z, Z_FINISH);
  const std::size_t size = deflated_.size() - z.avail_out;
  deflateReset(&z);
  if (status != Z_STREAM_END) throw EnvironmentError(fmt::format("cannot deflate a chunk (zlib status {})", status));
  return {deflated_.data(), size};
}

}  // namespace tapdiff::dumps
