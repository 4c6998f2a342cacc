#pragma once
// Helpers shared by the tests: paths to the shared models and the tapdiff binary, temp folders,
// running the CLI and other commands, and a fake run for the dump tests.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dumps/schema.h"
#include "model/config.h"
#include "model/engine.h"

namespace tapdiff::testing {

// ../shared/models/stories260K/stories260K.gguf, or empty when the shared folder is absent.
std::filesystem::path stories_gguf();
// ../shared/models/stories260K/hf, or empty when absent.
std::filesystem::path stories_hf();
// A fresh, empty folder under the system temp dir, unique to this test.
std::filesystem::path temp_dir(const std::string& name);

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};
// Runs a shell command line, capturing its stdout and stderr together.
CommandResult run_command(const std::string& command);
// Runs the tapdiff binary with the given arguments (a shell-quoted string).
CommandResult run_tapdiff(const std::string& args);
// A path as one shell word: in single quotes.
std::string quoted(const std::filesystem::path& p);
// A python3 that imports h5py and numpy (the one on PATH may be a virtualenv without them), or ""
// when there is none.
std::string python_with_h5py();

// Runs work() in a forked child which then signals the parent and waits to be killed with SIGKILL
// (no destructor, no atexit handler runs: a crash mid-run). reached: the child got through work()
// without throwing; killed: it died by that SIGKILL.
struct KilledChild {
  bool reached = false;
  bool killed = false;
};
KilledChild kill_after(const std::function<void()>& work);

// Whether two f32 tensors have the same shape and the same bits (NaNs included).
bool same_bits(const model::HostTensor& a, const model::HostTensor& b);

// Sets an environment variable for its lifetime (so child processes see it), then restores it.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, const std::string& value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> saved_;
};

// --- A fake run for the dump tests ---------------------------------------------------------------

// 2 layers, dim 8, 2 query heads and 1 KV head of 4 channels, ffn 12, vocab 16.
model::ModelConfig fake_config();

// What the fake engine computes for (op, position, column): exact in f16 (|v| < 512, step 1/4).
double fake_value(const model::TensorId& id, int pos, int col);

// The fake engine's output of one op over one chunk, `extra` added to every value.
model::HostTensor fake_tensor(const model::Graph& graph, const model::TensorId& id, const model::ChunkInfo& chunk,
                              model::Scalar scalar, double extra = 0);

// A prompt of 7 tokens prefilled in chunks of 3, 3, 1, then 2 decode steps: 9 rows.
struct FakeRun {
  std::vector<model::ChunkInfo> chunks{
      {0, 0, 3, false}, {1, 3, 3, false}, {2, 6, 1, false}, {3, 7, 1, true}, {4, 8, 1, true}};
  std::vector<std::int32_t> tokens{1, 5, 9, 2, 7, 3, 11, 4, 6};
  std::vector<std::int32_t> prompt() const { return {tokens.begin(), tokens.begin() + 7}; }
};

// Feeds chunks [0, n_chunks) through the tap as model::run_chunk does; then, when partial_ops > 0,
// records the first partial_ops wanted ops of the next chunk without ending it.
void feed_fake_run(model::Tap& tap, const model::Graph& graph, const FakeRun& run, std::size_t n_chunks,
                   model::Scalar scalar, int partial_ops = 0, double extra = 0);

// The metadata of a fake run: engine "fake", kernels q_proj=tiled and attn=naive, chunk size 3.
dumps::RunMetadata fake_metadata(const model::ModelConfig& config);

// Writes the whole fake run (fake_config()) into path, its summary {"generated": [4, 6, 8]}.
void write_fake_dump(const std::string& path, dumps::StorageType storage = dumps::StorageType::f32,
                     const std::string& taps = "all", model::Scalar scalar = model::Scalar::f32,
                     dumps::RunMetadata metadata = fake_metadata(fake_config()),
                     std::vector<std::int32_t> tokens = FakeRun{}.tokens);

// A path in this test's own temp folder, emptied on the test's first call.
std::string dump_path(const std::string& name);

}  // namespace tapdiff::testing

// Skips the current test with a clear message when the shared stories260K model is absent.
#define TAPDIFF_REQUIRE_STORIES()                                                             \
  do {                                                                                        \
    if (::tapdiff::testing::stories_gguf().empty())                                           \
      GTEST_SKIP() << "../shared/models/stories260K is absent: skipping the real-model test"; \
  } while (0)

// Declares `python`, a python3 with h5py and numpy, or skips the current test when there is none.
#define TAPDIFF_REQUIRE_H5PY(python)                                 \
  const std::string python = ::tapdiff::testing::python_with_h5py(); \
  if (python.empty()) GTEST_SKIP() << "python3 with h5py and numpy is not importable: skipping"
