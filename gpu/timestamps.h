#pragma once
// Device timestamps between the commands of a batch (Stream::mark): how long the device took from
// one mark to the next, so a profile can say where a chunk's time goes on the GPU.
#include <cstdint>
#include <functional>
#include <vector>

#include "gpu/vk_api.h"

namespace tapdiff::gpu {

class Device;

class Timestamps {
 public:
  // UsageError naming the device when its compute queue keeps no timestamps.
  explicit Timestamps(const Device& device);
  ~Timestamps();
  Timestamps(const Timestamps&) = delete;
  Timestamps& operator=(const Timestamps&) = delete;

  // In the first command buffer of a batch: resets the queries and stamps the batch's start.
  void begin_batch(VkCommandBuffer cmd);
  // Stamps the moment the commands recorded so far are done; once the batch has run, done(s)
  // receives the device seconds since the stamp before (the batch's start for the first).
  void mark(VkCommandBuffer cmd, std::function<void(double)> done);
  // After the batch has finished on the device: runs each mark's done, in order.
  void collect();
  // Forgets the batch's marks (collected, or abandoned after an error).
  void clear();

 private:
  static constexpr std::uint32_t kPoolQueries = 1024;
  void stamp(VkCommandBuffer cmd);  // the next query; a new pool (reset in cmd) when all are used

  const Device* device_;
  double seconds_per_tick_;
  std::uint64_t tick_mask_;
  std::vector<VkQueryPool> pools_;
  std::uint32_t used_ = 0;  // queries stamped in this batch
  std::vector<std::function<void(double)>> done_;
};

}  // namespace tapdiff::gpu
