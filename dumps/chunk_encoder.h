#pragma once
// Encodes HDF5 chunks as the shuffle filter then the deflate filter would (H5Pset_shuffle,
// H5Pset_deflate), so that the dump writer hands HDF5 finished chunks (H5Dwrite_chunk): one zlib
// stream kept for every chunk, where HDF5's deflate filter sets one up and frees it per chunk.
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

namespace tapdiff::dumps {

class ChunkEncoder {
 public:
  explicit ChunkEncoder(int level);  // zlib level 1-9
  ~ChunkEncoder();
  ChunkEncoder(const ChunkEncoder&) = delete;
  ChunkEncoder& operator=(const ChunkEncoder&) = delete;

  // bytes (elements of element_bytes each) shuffled and deflated; valid until the next call.
  // EnvironmentError when zlib fails (out of memory).
  std::span<const std::byte> encode(std::span<const std::byte> bytes, std::size_t element_bytes);

 private:
  struct Stream;
  std::unique_ptr<Stream> stream_;
  std::vector<std::byte> shuffled_;
  std::vector<std::byte> deflated_;
};

}  // namespace tapdiff::dumps
