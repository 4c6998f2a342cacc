#include "gpu/stream.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "gpu/device.h"
#include "gpu/vk_error.h"
#include "model/errors.h"

namespace tapdiff::gpu {
namespace {

constexpr std::uint64_t kStagingBlock = 16ull << 20;
constexpr VkPipelineStageFlags kWorkStages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
constexpr VkAccessFlags kWorkAccess =
    VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;

bool any_overlap(const std::vector<Region>& set, std::span<const Region> regions) {
  for (const Region& r : regions)
    for (const Region& s : set)
      if (r.overlaps(s)) return true;
  return false;
}

}  // namespace

Stream::Stream(const Device& device)
    : device_(&device),
      timeout_s_(gpu_timeout_seconds()),
      uploads_(device, "upload staging", MemoryKind::upload, kStagingBlock),
      readbacks_(device, "readback staging", MemoryKind::readback, kStagingBlock),
      descriptors_(device) {
  VkCommandPoolCreateInfo pool{};
  pool.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  pool.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
  pool.queueFamilyIndex = device.queue_family();
  check(vkCreateCommandPool(device.handle(), &pool, nullptr, &pool_), "vkCreateCommandPool");
}

Stream::~Stream() {
  if (recording_) vkEndCommandBuffer(cmd_);  // abandoned after an error: never submitted
  if (submitted_ > 0)                        // after an error: nothing is freed under the device
    vkWaitForFences(device_->handle(), 1, &fences_[submitted_ - 1], VK_TRUE,
                    static_cast<std::uint64_t>(timeout_s_ * 1e9));
  for (VkFence fence : fences_) vkDestroyFence(device_->handle(), fence, nullptr);
  vkDestroyCommandPool(device_->handle(), pool_, nullptr);
}

VkCommandBuffer Stream::cmd() {
  if (recording_) return cmd_;
  // A batch's first command buffer: the device is done with every earlier one.
  if (submitted_ == 0) check(vkResetCommandPool(device_->handle(), pool_, 0), "vkResetCommandPool");
  if (submitted_ == cmds_.size()) {
    VkCommandBufferAllocateInfo alloc{};
    alloc.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    alloc.commandPool = pool_;
    alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    alloc.commandBufferCount = 1;
    VkCommandBuffer buffer = VK_NULL_HANDLE;
    check(vkAllocateCommandBuffers(device_->handle(), &alloc, &buffer), "vkAllocateCommandBuffers");
    cmds_.push_back(buffer);
    VkFenceCreateInfo fence_info{};
    fence_info.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
    VkFence fence = VK_NULL_HANDLE;
    check(vkCreateFence(device_->handle(), &fence_info, nullptr, &fence), "vkCreateFence");
    fences_.push_back(fence);
  }
  cmd_ = cmds_[submitted_];
  VkCommandBufferBeginInfo begin{};
  begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vkBeginCommandBuffer(cmd_, &begin), "vkBeginCommandBuffer");
  recording_ = true;
  // Orders this command buffer after everything submitted before (earlier ones' writes).
  barrier(kWorkStages, kWorkAccess);
  if (submitted_ == 0 && timestamps_on_) timestamps_->begin_batch(cmd_);
  return cmd_;
}

void Stream::set_timestamps(bool on) {
  TAPDIFF_ASSERT(!recording_ && submitted_ == 0, "timestamps switched in the middle of a batch");
  if (on && !timestamps_) timestamps_ = std::make_unique<Timestamps>(*device_);
  timestamps_on_ = on;
}

void Stream::mark(std::function<void(double)> done) {
  TAPDIFF_ASSERT(timestamps_on_, "a timestamp mark with timestamps off");
  timestamps_->mark(cmd(), std::move(done));
}

void Stream::barrier(VkPipelineStageFlags dst_stages, VkAccessFlags dst_access) {
  VkMemoryBarrier b{};
  b.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  b.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  b.dstAccessMask = dst_access;
  vkCmdPipelineBarrier(cmd_, kWorkStages, dst_stages, 0, 1, &b, 0, nullptr, 0, nullptr);
  written_.clear();
  read_.clear();
  ++barriers_;
}

void Stream::order(std::span<const Region> reads, std::span<const Region> writes) {
  cmd();
  if (any_overlap(written_, reads) || any_overlap(written_, writes) || any_overlap(read_, writes))
    barrier(kWorkStages, kWorkAccess);
  read_.insert(read_.end(), reads.begin(), reads.end());
  written_.insert(written_.end(), writes.begin(), writes.end());
}

void Stream::copy(const Region& src, const Region& dst) {
  TAPDIFF_ASSERT(dst.size >= src.size, "copy of {} bytes into {}", src.size, dst.size);
  const Region target = dst.sub(0, src.size);
  order({src}, {target});
  const VkBufferCopy region{src.offset, target.offset, src.size};
  vkCmdCopyBuffer(cmd_, src.buffer, target.buffer, 1, &region);
}

void Stream::zero(const Region& dst) {
  TAPDIFF_ASSERT(dst.offset % 4 == 0 && dst.size % 4 == 0, "zero of {} bytes at {}", dst.size, dst.offset);
  order({}, {dst});
  vkCmdFillBuffer(cmd_, dst.buffer, dst.offset, dst.size, 0);
}

void Stream::upload(const void* data, std::uint64_t size, const Region& dst) {
  upload(size, dst, [&](std::span<std::byte> staging) { std::memcpy(staging.data(), data, size); });
}

void Stream::upload(std::uint64_t size, const Region& dst, const std::function<void(std::span<std::byte>)>& fill) {
  if (size == 0) return;
  const Region staging = uploads_.allocate(size, "an upload");
  fill(std::span<std::byte>(staging.host, size));  // coherent: visible to the device at submit
  copy(staging.sub(0, size), dst);
}

void Stream::download(const Region& src, std::function<void(const std::byte*)> done) {
  const Region staging = readbacks_.allocate(src.size, "a readback");
  copy(src, staging);
  has_downloads_ = true;
  completions_.push_back([host = staging.host, done = std::move(done)] { done(host); });
}

void Stream::finish_batch() {
  recording_ = false;
  has_downloads_ = false;
  submitted_ = 0;
  written_.clear();
  read_.clear();
  if (timestamps_) timestamps_->clear();
  uploads_.reset();
  readbacks_.reset();
  descriptors_.reset();
}

void Stream::submit() {
  if (!recording_) return;
  recording_ = false;
  written_.clear();
  read_.clear();
  check(vkEndCommandBuffer(cmd_), "vkEndCommandBuffer");
  VkFence fence = fences_[submitted_];
  VkSubmitInfo submit_info{};
  submit_info.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  submit_info.commandBufferCount = 1;
  submit_info.pCommandBuffers = &cmd_;
  check(vkResetFences(device_->handle(), 1, &fence), "vkResetFences");
  check(vkQueueSubmit(device_->queue(), 1, &submit_info, fence), "vkQueueSubmit");
  ++submitted_;
  ++submits_;
}

// A fence's signal covers every command submitted to the queue before it, so the last fence of
// the batch vouches for all of it.
void Stream::wait_for_batch() {
  if (submitted_ == 0) return;
  // A bounded wait: a device that never signals (a driver fault, a kernel that does not end) is
  // an error that says so, never a hang; its objects are then left alone, not freed under it.
  const VkResult waited = vkWaitForFences(device_->handle(), 1, &fences_[submitted_ - 1], VK_TRUE,
                                          static_cast<std::uint64_t>(timeout_s_ * 1e9));
  if (waited == VK_TIMEOUT) {
    abandon_device_objects();
    throw EnvironmentError(fmt::format(
        "vkWaitForFences: the GPU did not finish a chunk within {} s (set TAPDIFF_GPU_TIMEOUT_S to allow longer)",
        timeout_s_));
  }
  check(waited, "vkWaitForFences", [] { return std::string("waiting for the GPU to finish a chunk"); });
}

double gpu_timeout_seconds() {
  const char* text = std::getenv("TAPDIFF_GPU_TIMEOUT_S");
  if (text == nullptr || *text == '\0') return 600.0;
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(value > 0))
    throw UsageError(fmt::format("TAPDIFF_GPU_TIMEOUT_S: expected a positive number of seconds, found '{}'", text));
  return value;
}

void Stream::flush() {
  if (!recording_ && submitted_ == 0) {
    TAPDIFF_ASSERT(completions_.empty(), "{} completions without recorded work", completions_.size());
    return;
  }
  // Readbacks: make the copies' writes (in this or earlier command buffers) visible to the host.
  if (has_downloads_) {
    cmd();
    barrier(VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
  }
  std::vector<std::function<void()>> done;
  done.swap(completions_);
  struct Recycle {
    Stream* s;
    ~Recycle() { s->finish_batch(); }
  } recycle{this};  // also after an error, so the next chunk starts clean
  try {
    submit();
  } catch (...) {
    wait_for_batch();  // what went before is still running: nothing is recycled under it
    throw;
  }
  wait_for_batch();
  if (timestamps_on_) timestamps_->collect();
  for (auto& fn : done) fn();
}

void Stream::abandon() {
  if (!recording_ && submitted_ == 0) return;
  if (recording_) vkEndCommandBuffer(cmd_);
  recording_ = false;
  completions_.clear();
  wait_for_batch();
  finish_batch();
}

}  // namespace tapdiff::gpu
