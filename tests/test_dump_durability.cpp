// Dumps that a run leaves when it dies: killed (SIGKILL) at many moments, plain and compressed,
// every row below rows_complete must decode to what was recorded.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <new>
#include <span>
#include <stdexcept>
#include <thread>

#include <fmt/core.h>

#include "dumps/dump_reader.h"
#include "dumps/dump_writer.h"
#include "model/errors.h"
#include "tests/reference_fixtures.h"
#include "tests/test_support.h"

namespace tapdiff::testing {
namespace {

using dumps::DumpReader;
using dumps::DumpWriter;
using dumps::TapFilter;
using dumps::WriterOptions;
using model::ChunkInfo;
using model::Graph;
using model::TensorId;

// A run of deep_config() (every op tapped): prefill chunks of 1 to 7 rows, every fourth chunk a
// decode step, so that HDF5 chunks of up to 64 rows fill over several flushes.
FakeRun long_run(int n_chunks) {
  FakeRun run;
  run.chunks.clear();
  run.tokens.clear();
  int pos = 0;
  for (int k = 0; k < n_chunks; ++k) {
    const bool decode = k % 4 == 3;
    const int rows = decode ? 1 : 1 + (k * 5) % 7;
    run.chunks.push_back({k, pos, rows, decode});
    for (int r = 0; r < rows; ++r) run.tokens.push_back(3 + (pos + r) % 13);
    pos += rows;
  }
  return run;
}

// fake_config() with 24 layers: 387 tap datasets, so that each chunk takes a while to write.
model::ModelConfig deep_config() {
  model::ModelConfig config = fake_config();
  config.n_layers = 24;
  return config;
}

// Passes everything on to `inner`, counting the chunks it has ended in `ended`.
class ProgressTap : public model::Tap {
 public:
  ProgressTap(model::Tap& inner, std::atomic<int>& ended) : inner_(inner), ended_(ended) {}
  bool wants(const model::TapKey& key) const override { return inner_.wants(key); }
  void record(const model::TapKey& key, const model::HostTensor& value) override { inner_.record(key, value); }
  void end_chunk(const model::ChunkInfo& chunk, std::span<const std::int32_t> tokens) override {
    inner_.end_chunk(chunk, tokens);
    ++ended_;
  }

 private:
  model::Tap& inner_;
  std::atomic<int>& ended_;
};

void write_long_run(const std::string& path, const FakeRun& run, int compress_level, std::atomic<int>& ended) {
  const Graph graph(deep_config());
  DumpWriter writer(path, fake_metadata(deep_config()), graph, TapFilter("all"),
                    WriterOptions{.compress_level = compress_level});
  ProgressTap tap(writer, ended);
  feed_fake_run(tap, graph, run, run.chunks.size(), model::Scalar::f32);
  writer.finish({{"generated", {1}}});
}

// A counter in memory that a forked child shares with this process.
class SharedCounter {
 public:
  SharedCounter()
      : memory_(::mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0)) {
    if (memory_ == MAP_FAILED) throw std::runtime_error("mmap of a shared counter failed");
    value_ = new (memory_) std::atomic<int>(0);
  }
  ~SharedCounter() { ::munmap(memory_, sizeof(std::atomic<int>)); }
  SharedCounter(const SharedCounter&) = delete;
  SharedCounter& operator=(const SharedCounter&) = delete;
  std::atomic<int>& value() { return *value_; }

 private:
  void* memory_;
  std::atomic<int>* value_;
};

// The moment to kill a writer at: when it has ended `chunks` chunks (counted in `ended`).
struct KillAt {
  std::atomic<int>& ended;
  int chunks = 0;
};

// Runs work() in a forked child, SIGKILLed once it has ended kill_at's chunks (looked at every
// millisecond) unless it ends first: moments spread over the writer's own progress, however busy
// the machine is.
void run_child(const std::function<void()>& work, const std::optional<KillAt>& kill_at) {
  const pid_t child = ::fork();
  if (child == 0) {
    ::alarm(120);  // never outlive a broken parent
    try {
      work();
    } catch (...) {
      ::_exit(1);
    }
    ::_exit(0);
  }
  if (child < 0) return;
  int status = 0;
  while (kill_at && ::waitpid(child, &status, WNOHANG) == 0) {
    if (kill_at->ended.load() >= kill_at->chunks) {
      ::kill(child, SIGKILL);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ::waitpid(child, &status, 0);
}

// Rows of the dump at path that DumpReader vouches for, each checked against the fake run; or -1
// when there is no file or the reader refuses it as an incomplete dump (a child killed before its
// first flush).
std::int64_t checked_rows(const std::string& path, const FakeRun& run) {
  if (!std::filesystem::exists(path)) return -1;
  std::optional<DumpReader> reader;
  try {
    reader.emplace(path);
  } catch (const FormatError& e) {
    const std::string message = e.what();
    EXPECT_TRUE(message.starts_with(path + ": ")) << message;
    EXPECT_NE(message.find("incomplete"), std::string::npos) << message;
    return -1;
  }
  const std::int64_t rows = reader->rows();
  for (const TensorId& id : reader->tensors()) {
    const model::HostTensor t = reader->read(id, 0, rows);  // throws when HDF5 cannot decode a row
    EXPECT_EQ(t.rows(), rows);
    for (std::int64_t r = 0; r < t.rows(); ++r)
      for (std::int64_t c = 0; c < t.cols(); ++c)
        if (t.at(r, c) != static_cast<float>(fake_value(id, static_cast<int>(r), static_cast<int>(c)))) {
          ADD_FAILURE() << path << ": " << model::to_string(id) << " row " << r << " col " << c << " is " << t.at(r, c)
                        << " (rows_complete " << rows << ")";
          return rows;
        }
  }
  for (std::int64_t r = 0; r < rows; ++r) {
    EXPECT_EQ(reader->positions()[static_cast<std::size_t>(r)], r);
    EXPECT_EQ(reader->tokens()[static_cast<std::size_t>(r)], run.tokens[static_cast<std::size_t>(r)]);
  }
  return rows;
}

// How many moments kill_at_many_moments() kills a writer at: 14, or TAPDIFF_KILL_POINTS (the
// figures of docs/dump-format.md come from a run with many more).
int kill_points() {
  const char* value = std::getenv("TAPDIFF_KILL_POINTS");
  return value != nullptr ? std::max(1, std::atoi(value)) : 14;
}

// SIGKILLs the writer at kill_points() moments spread evenly over one whole run of n_chunks
// chunks (by the chunks it has handed to its writer), then decodes every row below rows_complete
// of each file left behind.
void kill_at_many_moments(int compress_level, int n_chunks) {
  const int points = kill_points();
  const auto dir = temp_dir(fmt::format("durability-{}", compress_level));
  const FakeRun run = long_run(n_chunks);
  const std::string whole = (dir / "whole.h5").string();
  SharedCounter ended;
  run_child([&] { write_long_run(whole, run, compress_level, ended.value()); }, std::nullopt);
  ASSERT_EQ(checked_rows(whole, run), run.tokens.size());
  int with_rows = 0;
  for (int i = 0; i < points; ++i) {
    const std::string path = (dir / fmt::format("killed-{}.h5", i)).string();
    const int chunks = static_cast<int>(n_chunks * (i + 0.5) / points);
    ended.value() = 0;
    run_child([&] { write_long_run(path, run, compress_level, ended.value()); }, KillAt{ended.value(), chunks});
    SCOPED_TRACE(fmt::format("killed after {} of {} chunks", chunks, n_chunks));
    try {
      with_rows += checked_rows(path, run) > 0 ? 1 : 0;
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
    }
  }
  EXPECT_GE(with_rows, points / 2) << "too few kills left rows to check: the run is too short";
}

// 18 chunks: 60 rows, each HDF5 chunk (64 rows) filled over many flushes.
TEST(DumpDurability, KilledPlainDumpKeepsEveryRowBelowRowsComplete) { kill_at_many_moments(0, 18); }

// --- A full disk: files may not grow past a limit (RLIMIT_FSIZE, SIGXFSZ ignored: EFBIG) -------

int count_lines(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

// `tapdiff run --dump` whose dump may not grow past limit bytes, then `tapdiff inspect` of it.
std::pair<CommandResult, CommandResult> run_on_a_full_disk(const std::string& dump, std::uintmax_t limit,
                                                           bool compress) {
  const std::string run =
      fmt::format("run --model '{}' --tokens 1,2,3,4,5,6,7,8,9,10,11,12 --chunk 5 --generate 6 --dump '{}'{}",
                  synth_model_path("tiny").string(), dump, compress ? " --compress" : "");
  const CommandResult ran =
      run_command(fmt::format("trap '' XFSZ; exec prlimit --fsize={} '{}' {}", limit, TAPDIFF_BINARY, run));
  return {ran, run_tapdiff("inspect '" + dump + "'")};
}

// The run stops with exit 3 and one line naming the dump, never a crash; inspect then reads the
// dump it left (complete = 0) or refuses it as incomplete, with exit 2 and one line.
void expect_a_clean_stop(const std::string& dump, std::uintmax_t limit, bool compress) {
  SCOPED_TRACE(fmt::format("{} limited to {} bytes", dump, limit));
  const auto [ran, inspected] = run_on_a_full_disk(dump, limit, compress);
  EXPECT_EQ(ran.exit_code, 3) << ran.output;
  EXPECT_EQ(count_lines(ran.output), 1) << ran.output;
  EXPECT_TRUE(ran.output.starts_with("tapdiff: error: " + dump + ": ")) << ran.output;
  if (!std::filesystem::exists(dump)) return;  // the limit stopped its creation
  if (inspected.exit_code == 0) {
    EXPECT_NE(inspected.output.find("INCOMPLETE: the run stopped early"), std::string::npos) << inspected.output;
    return;
  }
  EXPECT_EQ(inspected.exit_code, 2) << inspected.output;
  EXPECT_EQ(count_lines(inspected.output), 1) << inspected.output;
  EXPECT_TRUE(inspected.output.starts_with("tapdiff: error: " + dump + ": ")) << inspected.output;
  EXPECT_NE(inspected.output.find("incomplete"), std::string::npos) << inspected.output;
}

void stop_at_many_sizes(bool compress) {
  const auto dir = temp_dir(compress ? "full-disk-compressed" : "full-disk");
  const std::string whole = (dir / "whole.h5").string();
  const auto [ran, inspected] = run_on_a_full_disk(whole, std::uintmax_t{1} << 30, compress);
  ASSERT_EQ(ran.exit_code, 0) << ran.output;
  const std::uintmax_t size = std::filesystem::file_size(whole);
  constexpr int kPoints = 16;
  for (int i = 0; i < kPoints; ++i)
    expect_a_clean_stop((dir / fmt::format("full-{}.h5", i)).string(), size * i / kPoints, compress);
}

TEST(DumpDurability, AFullDiskStopsTheRunCleanlyAndInspectSaysIncomplete) { stop_at_many_sizes(false); }

TEST(DumpDurability, AFullDiskStopsACompressedRunCleanlyAndInspectSaysIncomplete) { stop_at_many_sizes(true); }

// 48 chunks: 156 rows, so every dataset's chunk index (one row a chunk) grows past its first
// node and the flushes that split one are among the moments.
TEST(DumpDurability, KilledCompressedDumpKeepsEveryRowBelowRowsComplete) { kill_at_many_moments(1, 48); }

}  // namespace
}  // namespace tapdiff::testing
