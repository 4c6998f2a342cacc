#pragma once
// Device memory: blocks (a VkBuffer with its own VkDeviceMemory), regions inside them, and arenas
// that bump-allocate regions from large blocks and free them all together (one arena per
// lifetime class: weights, activations, KV cache, per-submit staging).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/vk_api.h"

namespace tapdiff::gpu {

class Device;

enum class MemoryKind : std::uint8_t {
  device_local,  // kernels' data; filled by copies
  upload,        // host-visible, coherent, written by the host and copied to device_local regions
  readback,      // host-visible, coherent (cached where offered), copied into by the device
};

// A VkBuffer bound to its own allocation; mapped for the host-visible kinds.
class Block {
 public:
  // EnvironmentError (naming `what`, the size and the device's heap) when the memory cannot be had.
  Block(const Device& device, MemoryKind kind, std::uint64_t size, std::string_view what);
  ~Block();
  Block(Block&& other) noexcept;
  Block& operator=(Block&&) = delete;
  Block(const Block&) = delete;

  VkBuffer buffer() const { return buffer_; }
  std::uint64_t size() const { return size_; }
  std::byte* host() const { return host_; }

 private:
  VkDevice device_ = VK_NULL_HANDLE;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  std::uint64_t size_ = 0;
  std::byte* host_ = nullptr;
};

// A byte range of a block: what a descriptor binds and a copy addresses.
struct Region {
  VkBuffer buffer = VK_NULL_HANDLE;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::byte* host = nullptr;  // mapped address for host-visible kinds

  bool overlaps(const Region& o) const {
    return buffer == o.buffer && offset < o.offset + o.size && o.offset < offset + size;
  }
  // Bytes [first, first + count) of this region.
  Region sub(std::uint64_t first, std::uint64_t count) const;
};

class Arena {
 public:
  // block_size: the size of shared blocks; a larger request gets a block of its own.
  Arena(const Device& device, std::string name, MemoryKind kind, std::uint64_t block_size);
  Arena(Arena&&) noexcept = default;
  Arena& operator=(Arena&&) = delete;

  // A region of `size` bytes aligned for storage-buffer binding. The size is rounded up to a
  // multiple of 4 (kernels read words); EnvironmentError past the device's limits, naming `what`.
  Region allocate(std::uint64_t size, std::string_view what);
  // Forgets every region but keeps the blocks (per-submit staging).
  void reset();
  // Frees every block.
  void release();
  std::uint64_t reserved_bytes() const;

 private:
  const Device* device_;
  std::string name_;
  MemoryKind kind_;
  std::uint64_t block_size_;
  std::uint64_t alignment_;
  std::vector<Block> blocks_;
  std::size_t current_ = 0;  // block that bump allocation continues in
  std::uint64_t used_ = 0;   // bytes used in blocks_[current_]
};

}  // namespace tapdiff::gpu
