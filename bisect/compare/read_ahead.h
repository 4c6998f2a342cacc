#pragma once
// Reads the blocks a comparison will ask two sources for ahead of it, on a thread of its own.
// compare_dumps knows every block it will read, in order (the plan), so while one pair of blocks
// is compared the next pairs are read: the dump reads (HDF5, the page cache, fresh memory) overlap
// the element pass instead of adding to it. At most `depth` pairs wait, read; from the start to
// the destructor, only the thread reads the sources.
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "bisect/compare/comparator.h"

namespace tapdiff::bisect {

class ReadAhead {
 public:
  struct Request {
    model::TensorId id;
    std::int64_t row_a = 0, row_b = 0, count = 0;  // rows [row_a, row_a + count) of a, likewise of b
  };
  ReadAhead(const TensorSource& a, const TensorSource& b, std::vector<Request> plan, std::size_t depth = 2);
  ~ReadAhead();  // stops reading and joins the thread
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  // The two sources as the comparison reads them: for each request of the plan in turn, a's block,
  // then b's (a request out of the plan's order is an internal error). A failed read is rethrown
  // here, at the block it failed on.
  const TensorSource& a() const { return side_a_; }
  const TensorSource& b() const { return side_b_; }

  // The blocks of compare_tensor for one op (its runs of rows consecutive in both sources, at most
  // block_rows(width, block_bytes) long), appended to plan in the order compare_tensor reads them.
  static void plan_op(const model::TensorId& id, int width, const RowAlignment& alignment, std::size_t block_bytes,
                      std::vector<Request>& plan);

 private:
  class Side final : public TensorSource {
   public:
    Side(ReadAhead& owner, bool is_a) : owner_(owner), is_a_(is_a) {}
    model::HostTensor read(const model::TensorId& id, std::int64_t first_row, std::int64_t count) const override {
      return owner_.take(is_a_, id, first_row, count);
    }

   private:
    ReadAhead& owner_;
    bool is_a_;
  };
  struct Pair {
    model::HostTensor a, b;
  };

  void read_all(const TensorSource& a, const TensorSource& b);  // the thread
  model::HostTensor take(bool is_a, const model::TensorId& id, std::int64_t first_row, std::int64_t count);

  const std::vector<Request> plan_;
  const std::size_t depth_;
  Side side_a_{*this, true}, side_b_{*this, false};
  std::mutex mutex_;
  std::condition_variable changed_;  // a pair was read or taken, a read failed, or stopping
  std::deque<Pair> ready_;           // read, not yet taken whole: requests next_taken_ ..
  std::size_t next_taken_ = 0;       // the plan's request the comparison asks for next
  bool a_taken_ = false;             // ready_.front().a was handed out
  bool stopping_ = false;
  std::exception_ptr failure_;  // the read that threw; the thread stops there
  std::thread thread_;          // last: starts once the members above exist
};

}  // namespace tapdiff::bisect
