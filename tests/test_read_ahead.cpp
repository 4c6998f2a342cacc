// Reading ahead of a comparison (bisect/compare/read_ahead.h): the comparison through it is the same as
// reading the sources directly, the reads run on the read-ahead thread at most `depth` pairs
// ahead, and a failed read reaches the comparison at the block it failed on.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <thread>

#include "bisect/compare/read_ahead.h"
#include "model/errors.h"

namespace tapdiff::bisect {
namespace {

using model::HostTensor;
using model::Op;
using model::Scalar;
using model::TensorId;

constexpr std::int64_t kRows = 300, kWidth = 16;

// One op's rows, values from the row, column and `shift`; counts its reads and the threads they ran on.
class MemorySource final : public TensorSource {
 public:
  explicit MemorySource(float shift, std::int64_t fail_at_row = -1)
      : tensor_(Scalar::f32, kRows, kWidth), fail_at_row_(fail_at_row) {
    for (std::int64_t r = 0; r < kRows; ++r)
      for (std::int64_t c = 0; c < kWidth; ++c)
        tensor_.f32()[static_cast<std::size_t>(r * kWidth + c)] =
            static_cast<float>(r % 17 - c) + shift * static_cast<float>(c % 3);
  }
  HostTensor read(const TensorId&, std::int64_t first, std::int64_t count) const override {
    ++reads;
    if (std::this_thread::get_id() == caller) ++reads_on_caller;
    if (fail_at_row_ >= first && fail_at_row_ < first + count)
      throw EnvironmentError("rows " + std::to_string(first) + "..: the disk went away");
    return tensor_.slice_rows(first, count);
  }
  mutable std::atomic<int> reads = 0, reads_on_caller = 0;
  std::thread::id caller = std::this_thread::get_id();

 private:
  HostTensor tensor_;
  std::int64_t fail_at_row_ = -1;
};

RowAlignment all_rows() {
  RowAlignment al;
  for (std::int64_t r = 0; r < kRows; ++r) {
    al.rows.push_back({static_cast<std::int32_t>(r)});
    al.row_a.push_back(r), al.row_b.push_back(r);
  }
  return al;
}

constexpr std::size_t kBlockBytes = 40 * kWidth * 8;  // blocks of 40 rows: 8 per op
const TensorId kOps[] = {{Op::attn_norm, 0}, {Op::ffn_act, 0}, {Op::attn_norm, 1}};

TEST(ReadAhead, ComparesAsTheSourcesReadDirectlyOnItsOwnThread) {
  const MemorySource a(0), b(0.001f);
  const RowAlignment al = all_rows();
  std::vector<ReadAhead::Request> plan;
  for (const TensorId& id : kOps) ReadAhead::plan_op(id, kWidth, al, kBlockBytes, plan);
  ASSERT_EQ(plan.size(), 3u * 8u);
  std::vector<OpResult> ahead_results;
  {
    const ReadAhead ahead(a, b, plan);
    for (const TensorId& id : kOps)
      ahead_results.push_back(compare_tensor(id, kWidth, ahead.a(), ahead.b(), al, {}, {}, kBlockBytes));
  }
  EXPECT_EQ(a.reads, 24);
  EXPECT_EQ(a.reads_on_caller, 0);
  EXPECT_EQ(b.reads_on_caller, 0);
  for (std::size_t i = 0; i < std::size(kOps); ++i) {
    const OpResult direct = compare_tensor(kOps[i], kWidth, a, b, al, {}, {}, kBlockBytes);
    const OpResult& through = ahead_results[i];
    EXPECT_EQ(through.metrics.count, kRows * kWidth);
    EXPECT_GT(through.metrics.max_abs, 0.0);
    EXPECT_EQ(through.metrics.nmse, direct.metrics.nmse);
    EXPECT_EQ(through.metrics.max_abs, direct.metrics.max_abs);
    EXPECT_EQ(through.worst.index, direct.worst.index);
    ASSERT_EQ(through.rows.size(), direct.rows.size());
    for (std::size_t r = 0; r < direct.rows.size(); ++r) EXPECT_EQ(through.rows[r].nmse, direct.rows[r].nmse);
  }
}

TEST(ReadAhead, ReadsAtMostDepthPairsAhead) {
  const MemorySource a(0), b(0);
  std::vector<ReadAhead::Request> plan;
  ReadAhead::plan_op(kOps[0], kWidth, all_rows(), kBlockBytes, plan);
  const ReadAhead ahead(a, b, plan, 2);
  for (std::size_t taken = 0; taken < plan.size(); ++taken) {
    const ReadAhead::Request& r = plan[taken];
    ahead.a().read(r.id, r.row_a, r.count);
    EXPECT_LE(a.reads, static_cast<int>(taken) + 1 + 2) << "block " << taken;
    EXPECT_EQ(ahead.b().read(r.id, r.row_b, r.count).rows(), r.count);
  }
  EXPECT_EQ(a.reads, 8);
}

TEST(ReadAhead, AFailedReadReachesTheComparisonAtItsBlock) {
  const MemorySource a(0), b(0, 130);  // b's fourth block of 40 rows fails
  const RowAlignment al = all_rows();
  std::vector<ReadAhead::Request> plan;
  ReadAhead::plan_op(kOps[0], kWidth, al, kBlockBytes, plan);
  const ReadAhead ahead(a, b, plan);
  for (std::size_t i = 0; i < 3; ++i) {
    ahead.a().read(plan[i].id, plan[i].row_a, plan[i].count);
    ahead.b().read(plan[i].id, plan[i].row_b, plan[i].count);
  }
  try {
    ahead.a().read(plan[3].id, plan[3].row_a, plan[3].count);
    FAIL() << "expected the failed read";
  } catch (const EnvironmentError& e) {
    EXPECT_NE(std::string(e.what()).find("rows 120..: the disk went away"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tapdiff::bisect
