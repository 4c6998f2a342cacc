#include "bisect/compare/read_ahead.h"

#include <algorithm>
#include <utility>

#include "dumps/dump_file.h"
#include "model/errors.h"

namespace tapdiff::bisect {

ReadAhead::ReadAhead(const TensorSource& a, const TensorSource& b, std::vector<Request> plan, std::size_t depth)
    : plan_(std::move(plan)), depth_(std::max<std::size_t>(depth, 1)), thread_([this, &a, &b] { read_all(a, b); }) {}

ReadAhead::~ReadAhead() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void ReadAhead::plan_op(const model::TensorId& id, int width, const RowAlignment& alignment, std::size_t block_bytes,
                        std::vector<Request>& plan) {
  for (const BlockRun& run : block_runs(alignment, block_rows(width, block_bytes)))
    plan.push_back({id, alignment.row_a[static_cast<std::size_t>(run.begin)],
                    alignment.row_b[static_cast<std::size_t>(run.begin)], run.end - run.begin});
}

void ReadAhead::read_all(const TensorSource& a, const TensorSource& b) {
  dumps::quiet_hdf5_errors_on_this_thread();  // a failed read reaches the comparison as its exception only
  for (const Request& r : plan_) {
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || ready_.size() < depth_; });
      if (stopping_) return;
    }
    Pair pair;
    try {
      pair.a = a.read(r.id, r.row_a, r.count);
      pair.b = b.read(r.id, r.row_b, r.count);
    } catch (...) {
      const std::lock_guard lock(mutex_);
      failure_ = std::current_exception();
      changed_.notify_all();
      return;
    }
    const std::lock_guard lock(mutex_);
    ready_.push_back(std::move(pair));
    changed_.notify_all();
  }
}

model::HostTensor ReadAhead::take(bool is_a, const model::TensorId& id, std::int64_t first_row, std::int64_t count) {
  std::unique_lock lock(mutex_);
  TAPDIFF_ASSERT(next_taken_ < plan_.size(), "{}: a read past the plan's {} blocks", model::to_string(id),
                 plan_.size());
  const Request& r = plan_[next_taken_];
  TAPDIFF_ASSERT(r.id == id && (is_a ? r.row_a : r.row_b) == first_row && r.count == count && a_taken_ != is_a,
                 "{}: rows {} + {} of {} read, the plan's next block is {} rows {} + {} of a, {} + {} of b",
                 model::to_string(id), first_row, count, is_a ? "a" : "b", model::to_string(r.id), r.row_a, r.count,
                 r.row_b, r.count);
  changed_.wait(lock, [&] { return !ready_.empty() || failure_; });
  if (ready_.empty()) std::rethrow_exception(failure_);
  if (is_a) {
    a_taken_ = true;
    return std::move(ready_.front().a);
  }
  model::HostTensor block = std::move(ready_.front().b);
  ready_.pop_front();
  a_taken_ = false;
  ++next_taken_;
  changed_.notify_all();
  return block;
}

}  // namespace tapdiff::bisect
