#pragma once
// Recording and submitting work: one command buffer at a time (one per chunk, as a rule), with
// memory barriers only where data flows, staged uploads and readbacks, and completions that run
// once the submit has finished.
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <span>
#include <vector>

#include "gpu/memory.h"
#include "gpu/pipelines.h"

namespace tapdiff::gpu {

class Device;

// Seconds a chunk may run on the device before it is reported as hung: TAPDIFF_GPU_TIMEOUT_S,
// default 600. UsageError when the variable is not a positive number.
double gpu_timeout_seconds();

class Stream {
 public:
  explicit Stream(const Device& device);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // The command buffer being recorded; starts one (after a barrier against everything submitted
  // before) when none is.
  VkCommandBuffer cmd();
  bool recording() const { return recording_; }

  // Called before recording a command that reads `reads` and writes `writes`: records a
  // compute/transfer -> compute/transfer memory barrier when the command reads or writes what a
  // command since the last barrier wrote, or writes what one read; none otherwise (independent
  // ops, such as q/k/v projections of the same input, run without one between them).
  void order(std::span<const Region> reads, std::span<const Region> writes);
  void order(std::initializer_list<Region> reads, std::initializer_list<Region> writes) {
    order(std::span<const Region>(reads.begin(), reads.size()), std::span<const Region>(writes.begin(), writes.size()));
  }

  // Device copy of src.size bytes (dst.size >= src.size), ordered.
  void copy(const Region& src, const Region& dst);
  // Host bytes to a device region, staged through host-visible memory, in stream order.
  void upload(const void* data, std::uint64_t size, const Region& dst);
  // After the next flush, done(bytes) receives a host copy of src (valid during the call only).
  void download(const Region& src, std::function<void(const std::byte*)> done);
  // Runs after the next flush has waited for the device, in the order registered.
  void on_complete(std::function<void()> fn) { completions_.push_back(std::move(fn)); }

  DescriptorSets& descriptor_sets() { return descriptors_; }

  // Submits what was recorded, waits for it, then runs the completions; staging memory and
  // descriptor sets are recycled. Nothing to do when nothing was recorded.
  void flush();
  // Frees the staging memory kept between flushes (after a large upload such as the weights).
  void trim() {
    flush();
    uploads_.release();
    readbacks_.release();
  }
  // Drops what was recorded and its completions, unsubmitted (after an error mid-chunk).
  void abandon();

  // Work recorded so far, for statistics and tests.
  std::uint64_t barriers() const { return barriers_; }
  std::uint64_t submits() const { return submits_; }

 private:
  void barrier(VkPipelineStageFlags dst_stages, VkAccessFlags dst_access);
  void finish_batch();

  const Device* device_;
  double timeout_s_;  // the longest wait for one submission
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  bool recording_ = false;
  bool has_downloads_ = false;
  std::vector<Region> written_;  // written by commands since the last barrier
  std::vector<Region> read_;     // read by commands since the last barrier
  Arena uploads_;
  Arena readbacks_;
  DescriptorSets descriptors_;
  std::vector<std::function<void()>> completions_;
  std::uint64_t barriers_ = 0;
  std::uint64_t submits_ = 0;
};

}  // namespace tapdiff::gpu
