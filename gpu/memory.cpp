#include "gpu/memory.h"

#include <algorithm>

#include <fmt/core.h>

#include "gpu/device.h"
#include "gpu/vk_error.h"
#include "model/errors.h"

namespace tapdiff::gpu {
namespace {

std::uint64_t align_up(std::uint64_t n, std::uint64_t a) { return (n + a - 1) / a * a; }

VkMemoryPropertyFlags required_flags(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::device_local: return 0;
    case MemoryKind::upload:
    case MemoryKind::readback: return VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  }
  return 0;
}

VkMemoryPropertyFlags preferred_flags(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::device_local: return VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    case MemoryKind::upload: return 0;
    case MemoryKind::readback: return VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
  }
  return 0;
}

}  // namespace

Block::Block(const Device& device, MemoryKind kind, std::uint64_t size, std::string_view what)
    : device_(device.handle()), size_(size) {
  const auto describe = [&] {
    return fmt::format("allocating {} for {} on {}", format_bytes(static_cast<double>(size)), what, device.info().name);
  };
  if (device.info().max_memory_allocation_size > 0 && size > device.info().max_memory_allocation_size)
    throw EnvironmentError(fmt::format("Vulkan: {}: the device allows at most {} per allocation", describe(),
                                       format_bytes(static_cast<double>(device.info().max_memory_allocation_size))));
  VkBufferCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  info.size = size;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check(vkCreateBuffer(device_, &info, nullptr, &buffer_), "vkCreateBuffer", describe);
  VkMemoryRequirements req{};
  vkGetBufferMemoryRequirements(device_, buffer_, &req);
  const int type = device.memory_type(req.memoryTypeBits, required_flags(kind), preferred_flags(kind));
  if (type < 0) {
    vkDestroyBuffer(device_, buffer_, nullptr);
    throw EnvironmentError(fmt::format("Vulkan: {}: the device has no host-visible coherent memory type", describe()));
  }
  VkMemoryAllocateInfo alloc{};
  alloc.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex = static_cast<std::uint32_t>(type);
  const char* call = "vkAllocateMemory";
  VkResult r = vkAllocateMemory(device_, &alloc, nullptr, &memory_);
  if (r == VK_SUCCESS) call = "vkBindBufferMemory", r = vkBindBufferMemory(device_, buffer_, memory_, 0);
  void* mapped = nullptr;
  if (r == VK_SUCCESS && kind != MemoryKind::device_local)
    call = "vkMapMemory", r = vkMapMemory(device_, memory_, 0, VK_WHOLE_SIZE, 0, &mapped);
  if (r != VK_SUCCESS) {
    if (memory_ != VK_NULL_HANDLE) vkFreeMemory(device_, memory_, nullptr);
    vkDestroyBuffer(device_, buffer_, nullptr);
    throw_vk_error(
        r, call,
        fmt::format("{} (memory heap of {})", describe(), format_bytes(static_cast<double>(device.heap_size(type)))));
  }
  host_ = static_cast<std::byte*>(mapped);
}

Block::Block(Block&& o) noexcept
    : device_(o.device_), buffer_(o.buffer_), memory_(o.memory_), size_(o.size_), host_(o.host_) {
  o.buffer_ = VK_NULL_HANDLE, o.memory_ = VK_NULL_HANDLE, o.host_ = nullptr;
}

Block::~Block() {
  if (buffer_ != VK_NULL_HANDLE) vkDestroyBuffer(device_, buffer_, nullptr);
  if (memory_ != VK_NULL_HANDLE) vkFreeMemory(device_, memory_, nullptr);  // unmaps implicitly
}

Region Region::sub(std::uint64_t first, std::uint64_t count) const {
  TAPDIFF_ASSERT(first + count <= size, "sub-region [{}, {}) of a region of {} bytes", first, first + count, size);
  return {buffer, offset + first, count, host != nullptr ? host + first : nullptr};
}

Arena::Arena(const Device& device, std::string name, MemoryKind kind, std::uint64_t block_size)
    : device_(&device),
      name_(std::move(name)),
      kind_(kind),
      block_size_(block_size),
      alignment_(std::max<std::uint64_t>(64, device.info().min_storage_buffer_offset_alignment)) {
  if (device.info().max_memory_allocation_size > 0)
    block_size_ = std::min(block_size_, device.info().max_memory_allocation_size);
}

Region Arena::allocate(std::uint64_t size, std::string_view what) {
  size = align_up(std::max<std::uint64_t>(size, 4), 4);
  const std::uint64_t range = device_->info().max_storage_buffer_range;
  if (size > range)
    throw EnvironmentError(fmt::format("Vulkan: {} ({}) needs a storage buffer of {}; {} binds at most {}", what, name_,
                                       format_bytes(static_cast<double>(size)), device_->info().name,
                                       format_bytes(static_cast<double>(range))));
  // Continue in the current block, else the next kept block with room, else a new block.
  while (current_ < blocks_.size()) {
    const std::uint64_t at = align_up(used_, alignment_);
    if (at + size <= blocks_[current_].size()) {
      used_ = at + size;
      const Block& b = blocks_[current_];
      return {b.buffer(), at, size, b.host() != nullptr ? b.host() + at : nullptr};
    }
    ++current_, used_ = 0;
  }
  const std::uint64_t block = std::max(size, block_size_);
  blocks_.emplace_back(
      *device_, kind_, block,
      block == size ? fmt::format("{} ({})", what, name_) : fmt::format("{} (a block of {})", what, name_));
  current_ = blocks_.size() - 1;
  used_ = size;
  const Block& b = blocks_.back();
  return {b.buffer(), 0, size, b.host()};
}

void Arena::reset() { current_ = 0, used_ = 0; }

void Arena::release() {
  blocks_.clear();
  reset();
}

std::uint64_t Arena::reserved_bytes() const {
  std::uint64_t total = 0;
  for (const Block& b : blocks_) total += b.size();
  return total;
}

}  // namespace tapdiff::gpu
