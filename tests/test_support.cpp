#include "tests/test_support.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "dumps/dump_writer.h"
#include "dumps/tap_filter.h"

namespace tapdiff::testing {

std::filesystem::path stories_gguf() {
  const std::filesystem::path p = std::filesystem::path(TAPDIFF_SHARED_MODELS) / "stories260K" / "stories260K.gguf";
  return std::filesystem::exists(p) ? p : std::filesystem::path{};
}

std::filesystem::path stories_hf() {
  const std::filesystem::path p = std::filesystem::path(TAPDIFF_SHARED_MODELS) / "stories260K" / "hf";
  return std::filesystem::exists(p / "config.json") ? p : std::filesystem::path{};
}

std::filesystem::path temp_dir(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string unique = name;
  if (info != nullptr) unique = std::string(info->test_suite_name()) + "." + info->name() + "." + name;
  const auto dir = std::filesystem::temp_directory_path() / "tapdiff-tests" / unique;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

CommandResult run_tapdiff(const std::string& args) {
  return run_command(std::string("'") + TAPDIFF_BINARY + "' " + args);
}

std::string quoted(const std::filesystem::path& p) { return "'" + p.string() + "'"; }

CommandResult run_command(const std::string& command_line) {
  const std::string command = command_line + " 2>&1";
  CommandResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.output.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

bool same_bits(const model::HostTensor& a, const model::HostTensor& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         std::memcmp(a.f32().data(), b.f32().data(), a.f32().size_bytes()) == 0;
}

KilledChild kill_after(const std::function<void()>& work) {
  std::array<int, 2> ready{};
  if (::pipe(ready.data()) != 0) return {};
  const pid_t child = ::fork();
  if (child < 0) return {};
  if (child == 0) {
    ::close(ready[0]);
    ::alarm(60);  // never outlive a broken parent
    try {
      work();
      const char byte = 'r';
      if (::write(ready[1], &byte, 1) == 1)
        for (;;) ::pause();
    } catch (...) {
    }
    ::_exit(1);
  }
  ::close(ready[1]);
  char byte = 0;
  const ssize_t got = ::read(ready[0], &byte, 1);
  ::close(ready[0]);
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  return {got == 1, WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL};
}

std::string python_with_h5py() {
  for (const char* python : {"python3", "/usr/bin/python3"})
    if (std::system((std::string(python) + " -c 'import h5py, numpy' >/dev/null 2>&1").c_str()) == 0) return python;
  return {};
}

ScopedEnv::ScopedEnv(std::string name, const std::string& value) : name_(std::move(name)) {
  if (const char* old = std::getenv(name_.c_str())) saved_ = old;
  ::setenv(name_.c_str(), value.c_str(), 1);
}

ScopedEnv::~ScopedEnv() {
  if (saved_)
    ::setenv(name_.c_str(), saved_->c_str(), 1);
  else
    ::unsetenv(name_.c_str());
}

// --- A fake run for the dump tests ---------------------------------------------------------------

model::ModelConfig fake_config() {
  model::ModelConfig c;
  c.n_layers = 2;
  c.dim = 8;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.head_dim = 4;
  c.ffn_dim = 12;
  c.vocab = 16;
  return c;
}

double fake_value(const model::TensorId& id, int pos, int col) {
  const double v = (id.layer + 1) * 64 + static_cast<int>(id.op) * 2 + pos + col * 0.25;
  return col % 2 != 0 ? -v : v;
}

model::HostTensor fake_tensor(const model::Graph& graph, const model::TensorId& id, const model::ChunkInfo& chunk,
                              model::Scalar scalar, double extra) {
  model::HostTensor t(scalar, chunk.rows, graph.width(id));
  for (std::int64_t r = 0; r < t.rows(); ++r)
    for (std::int64_t c = 0; c < t.cols(); ++c) {
      const double v = fake_value(id, chunk.first_pos + static_cast<int>(r), static_cast<int>(c)) + extra;
      const auto i = static_cast<std::size_t>(r * t.cols() + c);
      if (scalar == model::Scalar::f32)
        t.f32()[i] = static_cast<float>(v);
      else
        t.f64()[i] = v;
    }
  return t;
}

void feed_fake_run(model::Tap& tap, const model::Graph& graph, const FakeRun& run, std::size_t n_chunks,
                   model::Scalar scalar, int partial_ops, double extra) {
  for (std::size_t k = 0; k < n_chunks + (partial_ops > 0 ? 1 : 0); ++k) {
    const model::ChunkInfo& chunk = run.chunks[k];
    int recorded = 0;
    for (const model::Step& step : graph.steps()) {
      const model::TapKey key{step.output(), chunk};
      if (k == n_chunks && recorded == partial_ops) break;
      if (!tap.wants(key)) continue;
      tap.record(key, fake_tensor(graph, key.id, chunk, scalar, extra));
      ++recorded;
    }
    if (k < n_chunks)
      tap.end_chunk(chunk,
                    std::span(run.tokens)
                        .subspan(static_cast<std::size_t>(chunk.first_pos), static_cast<std::size_t>(chunk.rows)));
  }
}

dumps::RunMetadata fake_metadata(const model::ModelConfig& config) {
  dumps::RunMetadata m;
  m.tool_version = "0.1.0";
  m.engine = "fake";
  m.device = "test device";
  m.compute_dtype = "f32";
  m.kernels = {{"q_proj", "tiled"}, {"attn", "naive"}};
  m.model_path = "/models/tiny.gguf";
  m.model_sha256 = std::string(64, 'a');
  m.model_config = model::to_json(config);
  m.prompt_tokens = FakeRun{}.prompt();
  m.chunk_size = 3;
  m.command_line = "tapdiff run --chunk 3";
  return m;
}

void write_fake_dump(const std::string& path, dumps::StorageType storage, const std::string& taps, model::Scalar scalar,
                     dumps::RunMetadata metadata, std::vector<std::int32_t> tokens) {
  const model::Graph graph(fake_config());
  FakeRun run;
  run.tokens = std::move(tokens);
  dumps::DumpWriter writer(path, std::move(metadata), graph, dumps::TapFilter(taps), storage);
  feed_fake_run(writer, graph, run, run.chunks.size(), scalar);
  writer.finish({{"generated", {4, 6, 8}}});
}

std::string dump_path(const std::string& name) {
  static std::string test;
  static std::filesystem::path dir;
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  if (info == nullptr || info->name() != test) {
    test = info != nullptr ? info->name() : "";
    dir = temp_dir("dumps");
  }
  return (dir / name).string();
}

}  // namespace tapdiff::testing
