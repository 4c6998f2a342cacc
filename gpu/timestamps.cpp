#include "gpu/timestamps.h"

#include <fmt/core.h>

#include "gpu/device.h"
#include "gpu/vk_error.h"
#include "model/errors.h"

namespace tapdiff::gpu {

Timestamps::Timestamps(const Device& device) : device_(&device) {
  const DeviceInfo& d = device.info();
  if (d.timestamp_valid_bits == 0 || !(d.timestamp_period_ns > 0))
    throw UsageError(fmt::format("{}: its compute queue keeps no timestamps, so it cannot be profiled", d.name));
  seconds_per_tick_ = static_cast<double>(d.timestamp_period_ns) * 1e-9;
  tick_mask_ = d.timestamp_valid_bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << d.timestamp_valid_bits) - 1;
}

Timestamps::~Timestamps() {
  for (VkQueryPool pool : pools_) vkDestroyQueryPool(device_->handle(), pool, nullptr);
}

void Timestamps::begin_batch(VkCommandBuffer cmd) {
  clear();
  for (VkQueryPool pool : pools_) vkCmdResetQueryPool(cmd, pool, 0, kPoolQueries);
  stamp(cmd);
}

void Timestamps::stamp(VkCommandBuffer cmd) {
  if (used_ == pools_.size() * kPoolQueries) {
    VkQueryPoolCreateInfo info{};
    info.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
    info.queryType = VK_QUERY_TYPE_TIMESTAMP;
    info.queryCount = kPoolQueries;
    VkQueryPool pool = VK_NULL_HANDLE;
    check(vkCreateQueryPool(device_->handle(), &info, nullptr, &pool), "vkCreateQueryPool");
    pools_.push_back(pool);
    vkCmdResetQueryPool(cmd, pool, 0, kPoolQueries);
  }
  vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pools_[used_ / kPoolQueries], used_ % kPoolQueries);
  ++used_;
}

void Timestamps::mark(VkCommandBuffer cmd, std::function<void(double)> done) {
  TAPDIFF_ASSERT(used_ > 0, "a timestamp mark before the batch's start");
  stamp(cmd);
  done_.push_back(std::move(done));
}

void Timestamps::collect() {
  std::vector<std::uint64_t> ticks(used_);
  for (std::uint32_t first = 0; first < used_; first += kPoolQueries) {
    const std::uint32_t count = std::min(kPoolQueries, used_ - first);
    check(vkGetQueryPoolResults(device_->handle(), pools_[first / kPoolQueries], 0, count,
                                count * sizeof(std::uint64_t), ticks.data() + first, sizeof(std::uint64_t),
                                VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
          "vkGetQueryPoolResults");
  }
  std::vector<std::function<void(double)>> done;
  done.swap(done_);
  for (std::size_t i = 0; i < done.size(); ++i)
    done[i](static_cast<double>((ticks[i + 1] - ticks[i]) & tick_mask_) * seconds_per_tick_);
  clear();
}

void Timestamps::clear() {
  used_ = 0;
  done_.clear();
}

}  // namespace tapdiff::gpu
