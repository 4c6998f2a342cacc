// The dump writer's thread: the write queue alone, then DumpWriter through it: values bit for bit
// over many chunks, a real HDF5 failure on the writer thread reaching the caller, interrupted runs.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <fstream>
#include <future>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <thread>

#include <fmt/core.h>

#include "dumps/dump_reader.h"
#include "dumps/dump_writer.h"
#include "dumps/write_queue.h"
#include "model/config.h"
#include "model/errors.h"
#include "tests/test_support.h"

namespace tapdiff {
namespace {

using dumps::DumpReader;
using dumps::DumpWriter;
using dumps::StorageType;
using dumps::TapFilter;
using dumps::WriteQueue;
using dumps::WriterOptions;
using model::ChunkInfo;
using model::Graph;
using model::HostTensor;
using model::Scalar;
using model::TensorId;

// --- WriteQueue -------------------------------------------------------------------------------

TEST(WriteQueue, RunsJobsInOrderOnItsOwnThread) {
  std::vector<int> order;
  std::thread::id ran_on;
  {
    WriteQueue queue(true, 1000);
    EXPECT_TRUE(queue.background());
    for (int i = 0; i < 100; ++i) {
      const std::array<int, 3> data{i, i + 1, i + 2};
      queue.push(std::as_bytes(std::span(data)), [&order, &ran_on](std::span<const std::byte> copy) {
        const auto* values = reinterpret_cast<const int*>(copy.data());
        ASSERT_EQ(copy.size(), 3 * sizeof(int));
        ASSERT_EQ(values[2], values[0] + 2);
        order.push_back(values[0]);
        ran_on = std::this_thread::get_id();
      });
    }
    queue.drain();
    EXPECT_EQ(order.size(), 100u);
  }
  for (int i = 0; i < 100; ++i) ASSERT_EQ(order[static_cast<std::size_t>(i)], i);
  EXPECT_NE(ran_on, std::this_thread::get_id());
}

// n bytes to queue, whose values do not matter.
std::span<const std::byte> some_bytes(std::size_t n) {
  static const std::vector<std::byte> zeros(4096);
  return std::span(zeros).first(n);
}

using Data = std::span<const std::byte>;

TEST(WriteQueue, ProducerWaitsWhileTheQueueHoldsItsCapacity) {
  WriteQueue queue(true, 100);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  queue.push(some_bytes(60), [released](Data) { released.wait(); });  // holds its 60 bytes until released
  queue.push(some_bytes(40), [](Data) {});                            // fits: 100 bytes held
  std::atomic<bool> pushed{false};
  std::thread producer([&] {
    queue.push(some_bytes(1), [](Data) {});  // would make 101
    pushed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(pushed.load());
  release.set_value();
  producer.join();
  EXPECT_TRUE(pushed.load());
  queue.drain();
}

TEST(WriteQueue, DataLargerThanTheCapacityWaitsForAnEmptyQueue) {
  WriteQueue queue(true, 10);
  std::atomic<int> done{0};
  for (int i = 0; i < 5; ++i) queue.push(some_bytes(1000), [&done](Data data) { done += data.size() == 1000; });
  queue.drain();
  EXPECT_EQ(done.load(), 5);
}

TEST(WriteQueue, AFailureIsRethrownByEveryLaterCallAndDropsTheRest) {
  WriteQueue queue(true, 1000);
  std::atomic<int> ran{0};
  queue.push({}, [](Data) { throw EnvironmentError("run.h5: cannot flush the file (HDF5: disk full)"); });
  for (int i = 0; i < 50; ++i) {
    try {
      queue.push(some_bytes(1), [&ran](Data) { ++ran; });
    } catch (const EnvironmentError&) {
      break;
    }
  }
  for (int i = 0; i < 3; ++i) {
    try {
      queue.drain();
      ADD_FAILURE() << "drain() after a failed job did not throw";
    } catch (const EnvironmentError& e) {
      EXPECT_STREQ(e.what(), "run.h5: cannot flush the file (HDF5: disk full)");
    }
  }
  EXPECT_THROW(queue.check(), EnvironmentError);
  EXPECT_THROW(queue.push(some_bytes(1), [&ran](Data) { ++ran; }), EnvironmentError);
  const int before = ran.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(ran.load(), before);  // nothing runs after the failure
}

TEST(WriteQueue, DestructorRunsWhatIsQueued) {
  std::atomic<int> ran{0};
  {
    WriteQueue queue(true, 1 << 20);
    for (int i = 0; i < 20; ++i)
      queue.push(some_bytes(100), [&ran](Data) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        ++ran;
      });
  }
  EXPECT_EQ(ran.load(), 20);
}

TEST(WriteQueue, WithoutABackgroundThreadPushRunsTheJobOnTheCallersBytes) {
  WriteQueue queue(false, 0);
  EXPECT_FALSE(queue.background());
  std::thread::id ran_on;
  const Data data = some_bytes(123);
  queue.push(data, [&](Data seen) {
    EXPECT_EQ(seen.data(), data.data());  // no copy
    ran_on = std::this_thread::get_id();
  });
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_THROW(queue.push({}, [](Data) { throw FormatError("bad"); }), FormatError);
  EXPECT_THROW(queue.drain(), FormatError);
  EXPECT_THROW(queue.push({}, [](Data) {}), FormatError);
}

// --- DumpWriter through its thread ---------------------------------------------------------------

model::ModelConfig config(int dim, int vocab) {
  model::ModelConfig c;
  c.n_layers = 2;
  c.dim = dim;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.head_dim = dim / 2;
  c.ffn_dim = dim + dim / 2;
  c.vocab = vocab;
  return c;
}

dumps::RunMetadata metadata(const model::ModelConfig& c) {
  dumps::RunMetadata m;
  m.engine = "fake";
  m.model_config = model::to_json(c);
  m.prompt_tokens = {1, 2, 3};
  m.created = "2024-05-01T12:34:56Z";  // fixed: two writes of one run give the same bytes
  return m;
}

// The bits of a finite float for (tensor, position, column): every sign, exponent and mantissa
// occurs, so a conversion or a lost row shows.
std::uint32_t value_bits(const TensorId& id, int pos, int col) {
  std::uint32_t x = static_cast<std::uint32_t>((id.layer + 2) * 1000003 + static_cast<int>(id.op) * 7919) ^
                    static_cast<std::uint32_t>(pos * 65537 + col * 257);
  x ^= x >> 16, x *= 0x7feb352dU, x ^= x >> 15, x *= 0x846ca68bU, x ^= x >> 16;
  if (((x >> 23) & 0xffU) == 0xffU) x &= ~(1U << 30);  // no inf or NaN
  return x;
}

HostTensor values(const Graph& graph, const TensorId& id, const ChunkInfo& chunk) {
  HostTensor t(Scalar::f32, chunk.rows, graph.width(id));
  for (std::int64_t r = 0; r < t.rows(); ++r)
    for (std::int64_t c = 0; c < t.cols(); ++c)
      t.f32()[static_cast<std::size_t>(r * t.cols() + c)] =
          std::bit_cast<float>(value_bits(id, chunk.first_pos + static_cast<int>(r), static_cast<int>(c)));
  return t;
}

// n_chunks chunks of 1 to 9 rows (decode steps, 1 row, every third), every wanted op recorded.
std::vector<ChunkInfo> chunks(int n_chunks) {
  std::vector<ChunkInfo> out;
  int pos = 0;
  for (int k = 0; k < n_chunks; ++k) {
    const bool decode = k % 3 == 2;
    const int rows = decode ? 1 : 1 + (k * 5) % 9;
    out.push_back({k, pos, rows, decode});
    pos += rows;
  }
  return out;
}

std::int32_t token_at(int pos) { return 3 + pos % 97; }

// Records every wanted op of the chunks and ends each; then the first partial_ops of one more.
void feed(model::Tap& tap, const Graph& graph, const std::vector<ChunkInfo>& run, int partial_ops = 0) {
  for (std::size_t k = 0; k < run.size(); ++k) {
    const ChunkInfo& chunk = run[k];
    const bool last_partial = partial_ops > 0 && k + 1 == run.size();
    int recorded = 0;
    for (const model::Step& step : graph.steps()) {
      const model::TapKey key{step.output(), chunk};
      if (last_partial && recorded == partial_ops) break;
      if (!tap.wants(key)) continue;
      tap.record(key, values(graph, key.id, chunk));
      ++recorded;
    }
    if (last_partial) break;
    std::vector<std::int32_t> tokens;
    for (int r = 0; r < chunk.rows; ++r) tokens.push_back(token_at(chunk.first_pos + r));
    tap.end_chunk(chunk, tokens);
  }
}

// Every tap of rows [0, rows) holds exactly the recorded bits.
void expect_values(const DumpReader& reader, std::int64_t rows) {
  ASSERT_EQ(reader.rows(), rows);
  for (const TensorId& id : reader.tensors()) {
    const HostTensor t = reader.read(id, 0, rows);
    ASSERT_EQ(t.scalar(), Scalar::f32);
    ASSERT_EQ(t.rows(), rows) << model::to_string(id);
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < t.cols(); ++c)
        ASSERT_EQ(std::bit_cast<std::uint32_t>(t.f32()[static_cast<std::size_t>(r * t.cols() + c)]),
                  value_bits(id, static_cast<int>(r), static_cast<int>(c)))
            << model::to_string(id) << " row " << r << " col " << c;
  }
  for (std::int64_t r = 0; r < rows; ++r) {
    ASSERT_EQ(reader.positions()[static_cast<std::size_t>(r)], r);
    ASSERT_EQ(reader.tokens()[static_cast<std::size_t>(r)], token_at(static_cast<int>(r)));
  }
}

int rows_of(const std::vector<ChunkInfo>& run) { return run.back().first_pos + run.back().rows; }

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(DumpWriterThread, ValuesMatchBitForBitOverManyChunks) {
  const auto dir = testing::temp_dir("dumps");
  const model::ModelConfig c = config(32, 100);
  const Graph graph(c);
  const std::vector<ChunkInfo> run = chunks(60);
  // A queue smaller than one chunk's tensors: the producer waits on the writer thread often.
  for (const std::size_t queue_bytes : {std::size_t{512} << 20, std::size_t{4096}}) {
    const std::string path = (dir / fmt::format("run-{}.h5", queue_bytes)).string();
    {
      DumpWriter writer(path, metadata(c), graph, TapFilter("all"), WriterOptions{.queue_bytes = queue_bytes});
      feed(writer, graph, run);
      EXPECT_EQ(writer.rows(), rows_of(run));
      writer.finish({{"generated", {1}}});
    }
    const DumpReader reader(path);
    EXPECT_TRUE(reader.complete());
    EXPECT_EQ(reader.chunks().back(), 59);
    EXPECT_EQ(reader.decode_flags()[static_cast<std::size_t>(rows_of(run) - 1)], 1);
    EXPECT_EQ(reader.tensors().size(), graph.steps().size());
    expect_values(reader, rows_of(run));
  }
}

// The thread changes when HDF5 is called, not what it is told: the files are the same bytes.
TEST(DumpWriterThread, WritesTheSameBytesAsTheCallersThread) {
  const auto dir = testing::temp_dir("dumps");
  const model::ModelConfig c = config(32, 100);
  const Graph graph(c);
  std::vector<std::string> files;
  for (const bool background : {true, false}) {
    const std::string path = (dir / (background ? "thread.h5" : "caller.h5")).string();
    DumpWriter writer(path, metadata(c), graph, TapFilter("all"),
                      WriterOptions{.storage = StorageType::f16, .background = background});
    feed(writer, graph, chunks(12));
    writer.finish(nullptr);
    files.push_back(read_bytes(path));
  }
  ASSERT_GT(files[0].size(), 10000u);
  EXPECT_TRUE(files[0] == files[1]);
}

TEST(DumpWriterThread, DestroyedWithAFullQueueWritesTheEndedChunks) {
  const std::string path = (testing::temp_dir("dumps") / "interrupted.h5").string();
  const model::ModelConfig c = config(64, 2000);
  const Graph graph(c);
  std::vector<ChunkInfo> run = chunks(20);
  {
    DumpWriter writer(path, metadata(c), graph, TapFilter("all"), WriterOptions{.queue_bytes = 64 << 10});
    feed(writer, graph, run, 9);  // 19 chunks, then 9 ops of the 20th
  }
  const DumpReader reader(path);
  EXPECT_FALSE(reader.complete());
  run.pop_back();
  expect_values(reader, rows_of(run));
}

// A child writes 40 chunks, then queues the tensors of a 41st much larger than the others and
// dies by SIGKILL while its writer thread still writes them: the file holds the 40 chunks.
TEST(DumpWriterThread, ProcessKilledWhileTheThreadWritesKeepsTheEndedChunks) {
  const std::string path = (testing::temp_dir("dumps") / "killed.h5").string();
  const model::ModelConfig c = config(64, 8000);
  std::vector<ChunkInfo> run = chunks(40);
  run.push_back({40, rows_of(run), 256, false});
  const testing::KilledChild child = testing::kill_after([&] {
    const Graph graph(c);
    DumpWriter writer(path, metadata(c), graph, TapFilter("all"));
    feed(writer, graph, run, 1000);  // every op of the last chunk, not ended
  });
  ASSERT_TRUE(child.reached) << "the child failed before the last chunk";
  ASSERT_TRUE(child.killed);

  const DumpReader reader(path);
  EXPECT_FALSE(reader.complete());
  run.pop_back();
  expect_values(reader, rows_of(run));
}

// --- A real HDF5 failure on the writer thread ----------------------------------------------------

// In a child process whose files may not grow past 256 KiB (RLIMIT_FSIZE; the SIGXFSZ it would
// get is ignored, so write() fails with EFBIG), writes chunks until a call throws. Returns what
// the child reports, '|'-separated: the first message, "same" when the next record(), end_chunk()
// and finish() threw that message again, and "clean" once the writer was destroyed.
std::string fail_in_child(const std::string& path, bool background) {
  std::array<int, 2> out{};
  if (::pipe(out.data()) != 0) return "pipe failed";
  const pid_t child = ::fork();
  if (child < 0) return "fork failed";
  if (child == 0) {
    ::close(out[0]);
    ::alarm(60);
    std::string report = "no error";
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{256 << 10, 256 << 10};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    try {
      const model::ModelConfig c = config(64, 2000);
      const Graph graph(c);
      const std::vector<ChunkInfo> run = chunks(400);
      std::optional<DumpWriter> writer;
      writer.emplace(path, metadata(c), graph, TapFilter("all"),
                     WriterOptions{.queue_bytes = 256 << 10, .background = background});
      try {
        feed(*writer, graph, run);
        writer->finish(nullptr);
      } catch (const EnvironmentError& e) {
        report = e.what();
        auto same = [&](auto call) {
          try {
            call();
          } catch (const EnvironmentError& again) {
            return report == again.what();
          }
          return false;
        };
        const ChunkInfo next{1000, 100000, 1, true};
        const bool again =
            same([&] {
              writer->record({{model::Op::embed, -1}, next}, values(graph, {model::Op::embed, -1}, next));
            }) &&
            same([&] { writer->end_chunk(next, std::vector<std::int32_t>{1}); }) &&
            same([&] { writer->finish(nullptr); });
        report += again ? "|same" : "|different";
      }
      writer.reset();
      report += "|clean";
    } catch (const std::exception& e) {
      report = std::string("unexpected: ") + e.what();
    }
    const bool sent = ::write(out[1], report.data(), report.size()) == static_cast<ssize_t>(report.size());
    ::_exit(sent ? 0 : 1);
  }
  ::close(out[1]);
  std::string report;
  std::array<char, 4096> buffer{};
  for (ssize_t n = 0; (n = ::read(out[0], buffer.data(), buffer.size())) > 0;)
    report.append(buffer.data(), static_cast<std::size_t>(n));
  ::close(out[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) report += fmt::format("|child status {}", status);
  return report;
}

// "<path>: cannot flush the file (HDF5: file write failed: time = ..., buf = 0x..., ...)": the part
// before HDF5's own text, which holds the time and a buffer address.
std::string without_hdf5_detail(const std::string& message) { return message.substr(0, message.find(" (HDF5: ")); }

TEST(DumpWriterThread, AWriteFailureOnTheThreadIsRethrownOnTheCallersThread) {
#if defined(__SANITIZE_ADDRESS__)
  // The forked child's file-size limit also stops AddressSanitizer's runtime, which then exits the
  // child before the writer fails; the normal build runs this test.
  GTEST_SKIP() << "RLIMIT_FSIZE in a forked child does not work under AddressSanitizer";
#endif
  const auto dir = testing::temp_dir("dumps");
  const std::string threaded = (dir / "threaded.h5").string();
  const std::string caller = (dir / "caller.h5").string();
  const std::string got = fail_in_child(threaded, true);
  const std::string expected = fail_in_child(caller, false);
  const std::string first = got.substr(0, got.find('|'));
  EXPECT_TRUE(first.starts_with(threaded + ": ")) << got;
  EXPECT_NE(first.find("(HDF5: "), std::string::npos) << got;
  EXPECT_TRUE(got.ends_with("|same|clean")) << got;
  EXPECT_TRUE(expected.ends_with("|same|clean")) << expected;
  // The same failure as when the caller's thread writes: the same call of the same object.
  std::string expected_first = expected.substr(0, expected.find('|'));
  expected_first.replace(0, caller.size(), threaded);
  EXPECT_EQ(without_hdf5_detail(first), without_hdf5_detail(expected_first));
}

}  // namespace
}  // namespace tapdiff
