#pragma once
// Recording and submitting work: a batch (one per chunk, as a rule) of command buffers recorded
// one at a time, each submitted without waiting (submit()) so that the device runs it while the
// next is recorded, with memory barriers only where data flows, staged uploads and readbacks, and
// completions that run once flush() has waited for the whole batch.
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <vector>

#include "gpu/memory.h"
#include "gpu/pipelines.h"
#include "gpu/timestamps.h"

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
  // Ends the command buffer being recorded and submits it without waiting; the next command
  // starts another. Staging memory, descriptor sets and completions stay with the batch until
  // flush(). Nothing to do when nothing is being recorded.
  void submit();

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
  // Zero bytes into `dst` (offset and size multiples of 4), ordered.
  void zero(const Region& dst);
  // Host bytes to a device region, staged through host-visible memory, in stream order.
  void upload(const void* data, std::uint64_t size, const Region& dst);
  // The same with the bytes written by fill straight into the staging memory (size bytes).
  void upload(std::uint64_t size, const Region& dst, const std::function<void(std::span<std::byte>)>& fill);
  // After the next flush, done(bytes) receives a host copy of src (valid during the call only).
  void download(const Region& src, std::function<void(const std::byte*)> done);
  // Runs after the next flush has waited for the device, in the order registered.
  void on_complete(std::function<void()> fn) { completions_.push_back(std::move(fn)); }
  // Device timestamps (profiles), switched between batches (UsageError where the device keeps
  // none): while on, mark(done) stamps the moment the commands recorded so far are done, and the
  // next flush gives done the device seconds since the batch's previous stamp (its start for the
  // first), before the completions run.
  void set_timestamps(bool on);
  bool timestamps() const { return timestamps_on_; }
  void mark(std::function<void(double)> done);

  DescriptorSets& descriptor_sets() { return descriptors_; }

  // Submits what is being recorded, waits for the whole batch, then runs the completions; staging
  // memory and descriptor sets are recycled. Nothing to do when nothing was recorded.
  void flush();
  // Frees the staging memory kept between flushes (after a large upload such as the weights).
  void trim() {
    flush();
    uploads_.release();
    readbacks_.release();
  }
  // Drops what is being recorded and the batch's completions, after waiting for what the batch
  // submitted already (after an error mid-chunk).
  void abandon();

  // Work recorded and submitted so far (command buffers), for statistics and tests.
  std::uint64_t barriers() const { return barriers_; }
  std::uint64_t submits() const { return submits_; }

 private:
  void barrier(VkPipelineStageFlags dst_stages, VkAccessFlags dst_access);
  // Waits (bounded by timeout_s_) for the batch's last submission, and with it, in submission
  // order, for every earlier one.
  void wait_for_batch();
  void finish_batch();

  const Device* device_;
  double timeout_s_;  // the longest wait for one batch
  VkCommandPool pool_ = VK_NULL_HANDLE;
  // Per submission of a batch, made as needed and reused by every batch: command buffers (reset
  // with the pool once a batch is done) and fences.
  std::vector<VkCommandBuffer> cmds_;
  std::vector<VkFence> fences_;
  std::size_t submitted_ = 0;  // submissions of the current batch
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
  bool recording_ = false;
  bool has_downloads_ = false;
  std::vector<Region> written_;  // written by commands since the last barrier
  std::vector<Region> read_;     // read by commands since the last barrier
  Arena uploads_;
  Arena readbacks_;
  DescriptorSets descriptors_;
  std::unique_ptr<Timestamps> timestamps_;  // made when first switched on
  bool timestamps_on_ = false;
  std::vector<std::function<void()>> completions_;
  std::uint64_t barriers_ = 0;
  std::uint64_t submits_ = 0;
};

}  // namespace tapdiff::gpu
