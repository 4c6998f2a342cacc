#pragma once
// A queue of write jobs run in order by one background thread, each on its own copy of some bytes,
// bounded in the memory those copies take: a producer (an engine's run loop) hands off a tensor
// and goes on computing while memory stays bounded. A failed job's exception reaches the producer
// at its next call.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

namespace tapdiff::dumps {

class WriteQueue {
 public:
  // Runs on the queue's copy of the bytes given to push(), valid during the call.
  using Job = std::function<void(std::span<const std::byte> data)>;

  // background: run jobs on a thread of the queue's own; otherwise push() runs each job at once on
  // the caller's thread, on the caller's bytes (same ordering and error rules, no overlap).
  // capacity_bytes: the most memory that the copies of queued jobs and the recycled buffers hold.
  WriteQueue(bool background, std::size_t capacity_bytes);
  // Runs the jobs still queued (none after a failure), then ends the thread.
  ~WriteQueue();
  WriteQueue(const WriteQueue&) = delete;
  WriteQueue& operator=(const WriteQueue&) = delete;

  bool background() const { return thread_.joinable(); }

  // Copies data and queues job to run on the copy. Blocks while the copy would take the queue over
  // its capacity (data larger than the capacity waits for an empty queue). When an earlier job
  // failed, rethrows its exception instead; every later call does the same, and queued jobs are
  // dropped.
  void push(std::span<const std::byte> data, Job job);
  // Waits until every queued job has run; rethrows a failure as push() does.
  void drain();
  // Rethrows a failure as push() does, without waiting.
  void check();

  // Where the time went, so far: whether the writer keeps up with the producer.
  struct Stats {
    double job_seconds = 0;   // inside jobs (on the thread, or in push() without one)
    double wait_seconds = 0;  // push() waiting for room and drain() for the jobs: the producer held up
    double copy_seconds = 0;  // push() copying the bytes
  };
  Stats stats();

 private:
  // Memory for copies, recycled: a fresh allocation costs a page fault per 4 KiB on first touch,
  // several times the copy itself, and a run repeats the same few tensor sizes.
  struct Buffer {
    std::unique_ptr<std::byte[]> bytes;
    std::size_t capacity = 0;
  };
  struct Entry {
    Job job;
    Buffer buffer;
    std::size_t size = 0;  // bytes of the copy in buffer
  };

  using Clock = std::chrono::steady_clock;
  static void add_seconds(double& total, Clock::time_point since);         // mutex_ held (or no thread)
  void run_jobs();                                                         // the thread's loop
  void rethrow_failure() const;                                            // mutex_ held
  void run_one(const Job& job, std::span<const std::byte> data) noexcept;  // records a failure
  Buffer take_buffer(std::size_t size);  // mutex_ held: a recycled buffer, or a new one
  void recycle(Buffer buffer);           // mutex_ held
  void drop_queued();                    // mutex_ held: after a failure, nothing more runs

  const std::size_t capacity_;
  std::mutex mutex_;
  std::condition_variable queued_;  // a job was queued, or the queue is stopping
  std::condition_variable done_;    // a job finished or was dropped: room, an idle queue, or a failure
  std::deque<Entry> jobs_;
  std::vector<Buffer> free_;    // recycled buffers
  std::size_t held_bytes_ = 0;  // capacity of the buffers of queued jobs and of the running one
  std::size_t free_bytes_ = 0;  // capacity of free_
  bool running_ = false;        // the thread is inside a job
  bool stopping_ = false;
  std::exception_ptr failure_;  // the first job that threw
  Stats stats_;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace tapdiff::dumps
