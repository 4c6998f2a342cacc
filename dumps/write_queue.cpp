#include "dumps/write_queue.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace tapdiff::dumps {

WriteQueue::WriteQueue(bool background, std::size_t capacity_bytes) : capacity_(capacity_bytes) {
  if (background) thread_ = std::thread([this] { run_jobs(); });
}

WriteQueue::~WriteQueue() {
  if (!thread_.joinable()) return;
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  queued_.notify_all();
  thread_.join();
}

void WriteQueue::push(std::span<const std::byte> data, Job job) {
  if (!background()) {
    check();
    const Clock::time_point start = Clock::now();
    run_one(job, data);
    add_seconds(stats_.job_seconds, start);
    check();
    return;
  }
  const Clock::time_point start = Clock::now();
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return failure_ || held_bytes_ == 0 || held_bytes_ + data.size() <= capacity_; });
  rethrow_failure();
  Entry entry{std::move(job), take_buffer(data.size()), data.size()};
  held_bytes_ += entry.buffer.capacity;
  add_seconds(stats_.wait_seconds, start);
  lock.unlock();
  const Clock::time_point copy = Clock::now();
  if (!data.empty()) std::memcpy(entry.buffer.bytes.get(), data.data(), data.size());
  lock.lock();
  add_seconds(stats_.copy_seconds, copy);
  jobs_.push_back(std::move(entry));
  lock.unlock();
  queued_.notify_one();
}

void WriteQueue::drain() {
  const Clock::time_point start = Clock::now();
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return failure_ || (jobs_.empty() && !running_); });
  add_seconds(stats_.wait_seconds, start);
  rethrow_failure();
}

WriteQueue::Stats WriteQueue::stats() {
  const std::lock_guard lock(mutex_);
  return stats_;
}

void WriteQueue::add_seconds(double& total, Clock::time_point since) {
  total += std::chrono::duration<double>(Clock::now() - since).count();
}

void WriteQueue::check() {
  const std::lock_guard lock(mutex_);
  rethrow_failure();
}

void WriteQueue::run_jobs() {
  std::unique_lock lock(mutex_);
  for (;;) {
    queued_.wait(lock, [&] { return !jobs_.empty() || stopping_; });
    if (jobs_.empty()) return;  // stopping, and every job has run
    Entry entry = std::move(jobs_.front());
    jobs_.pop_front();
    running_ = true;
    lock.unlock();
    const Clock::time_point start = Clock::now();
    run_one(entry.job, {entry.buffer.bytes.get(), entry.size});
    entry.job = nullptr;  // whatever the job captured goes before its memory counts as free
    lock.lock();
    add_seconds(stats_.job_seconds, start);
    running_ = false;
    held_bytes_ -= entry.buffer.capacity;
    recycle(std::move(entry.buffer));
    if (failure_) drop_queued();
    done_.notify_all();
  }
}

void WriteQueue::rethrow_failure() const {
  if (failure_) std::rethrow_exception(failure_);
}

void WriteQueue::run_one(const Job& job, std::span<const std::byte> data) noexcept {
  try {
    job(data);
  } catch (...) {
    const std::lock_guard lock(mutex_);
    if (!failure_) failure_ = std::current_exception();
  }
}

WriteQueue::Buffer WriteQueue::take_buffer(std::size_t size) {
  if (size == 0) return {};
  // The smallest free buffer that fits without wasting more than half of itself.
  auto best = free_.end();
  for (auto it = free_.begin(); it != free_.end(); ++it)
    if (it->capacity >= size && it->capacity / 2 <= size && (best == free_.end() || it->capacity < best->capacity))
      best = it;
  if (best != free_.end()) {
    Buffer buffer = std::move(*best);
    free_.erase(best);
    free_bytes_ -= buffer.capacity;
    return buffer;
  }
  while (!free_.empty() && held_bytes_ + free_bytes_ + size > capacity_) {  // make room
    free_bytes_ -= free_.back().capacity;
    free_.pop_back();
  }
  return {std::make_unique_for_overwrite<std::byte[]>(size), size};
}

void WriteQueue::recycle(Buffer buffer) {
  if (buffer.capacity == 0 || failure_ || held_bytes_ + free_bytes_ + buffer.capacity > capacity_) return;
  free_bytes_ += buffer.capacity;
  free_.push_back(std::move(buffer));
}

void WriteQueue::drop_queued() {
  for (const Entry& entry : jobs_) held_bytes_ -= entry.buffer.capacity;
  jobs_.clear();
  free_.clear();
  free_bytes_ = 0;
}

}  // namespace tapdiff::dumps
