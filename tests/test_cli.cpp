// The tapdiff binary as a user runs it: exit codes, one-line errors, JSON summaries, dumps that
// `inspect` reads, deterministic synth models, and a run killed mid-way.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "dumps/dump_reader.h"
#include "tests/reference_fixtures.h"
#include "tests/test_support.h"

namespace tapdiff::testing {
namespace {

int count_lines(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

TEST(Cli, BadModelFilesExitWithCode2AndOneLine) {
  const auto dir = temp_dir("bad");
  std::ofstream(dir / "wrong_magic.gguf") << "GGUX and some more bytes";
  const std::string good = read_file(synth_model_path("tiny"));
  std::ofstream(dir / "truncated.gguf", std::ios::binary) << good.substr(0, good.size() / 2);
  for (const auto& [file, expected] : std::vector<std::pair<std::string, std::string>>{
           {"wrong_magic.gguf", "wrong_magic.gguf"}, {"truncated.gguf", "truncated"}, {"absent.gguf", "absent.gguf"}}) {
    const auto r = run_tapdiff("run --model '" + (dir / file).string() + "' --tokens 1,2,3");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_EQ(count_lines(r.output), 1) << r.output;
    EXPECT_NE(r.output.find(expected), std::string::npos) << r.output;
  }
}

TEST(Cli, BadOptionsExitWithCode2) {
  EXPECT_EQ(run_tapdiff("run --tokens 1,x").exit_code, 2);
  EXPECT_EQ(run_tapdiff("run --model synth:tiny --tokens 1 --taps 'q_proj['  --dump /tmp/x.h5").exit_code, 2);
  EXPECT_EQ(run_tapdiff("run --model synth:nope --tokens 1").exit_code, 2);
  EXPECT_EQ(run_tapdiff("run --dtype fp8 --tokens 1").exit_code, 2);
  EXPECT_EQ(run_tapdiff("inspect /nonexistent.h5").exit_code, 2);
}

TEST(Cli, RunWritesJsonSummaryAndADumpThatInspectReads) {
  const auto dir = temp_dir("run");
  const auto model = synth_model_path("tiny");
  const auto r =
      run_tapdiff("run --model '" + model.string() + "' --prompt 'the quick brown fox' --chunk 2 --generate 5 " +
                  "--dump '" + (dir / "a.h5").string() + "' --json '" + (dir / "a.json").string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto summary = nlohmann::json::parse(read_file(dir / "a.json"));
  EXPECT_EQ(summary["engine"], "ref");
  EXPECT_EQ(summary["generated"].size(), 5u);
  EXPECT_GT(summary["prompt"].size(), 1u);
  EXPECT_TRUE(summary["timings"].contains("prefill_seconds"));

  const dumps::DumpReader dump((dir / "a.h5").string());
  EXPECT_TRUE(dump.complete());
  EXPECT_EQ(dump.rows(), static_cast<std::int64_t>(summary["prompt"].size() + 4));  // the last token is not fed
  EXPECT_EQ(dump.summary()["generated"], summary["generated"]);

  const auto inspected = run_tapdiff("inspect '" + (dir / "a.h5").string() + "' --top-k 3 --slice 0/rope_k --rows 0:2");
  ASSERT_EQ(inspected.exit_code, 0) << inspected.output;
  EXPECT_NE(inspected.output.find("ffn_residual"), std::string::npos);
  EXPECT_NE(inspected.output.find("0/rope_k rows [0, 2)"), std::string::npos) << inspected.output;
}

TEST(Cli, SynthIsDeterministicAndSeedsDiffer) {
  const auto dir = temp_dir("synth");
  for (const char* name : {"a", "b"})
    ASSERT_EQ(
        run_tapdiff(std::string("synth --shape tiny --dtype q8_0 -o '") + (dir / name).string() + ".gguf'").exit_code,
        0);
  ASSERT_EQ(run_tapdiff("synth --shape tiny --dtype q8_0 --seed 2 -o '" + (dir / "c.gguf").string() + "'").exit_code,
            0);
  EXPECT_EQ(read_file(dir / "a.gguf"), read_file(dir / "b.gguf"));
  EXPECT_NE(read_file(dir / "a.gguf"), read_file(dir / "c.gguf"));
}

// model-info: what a dump writer outside tapdiff needs, the model_config exactly as a dump of
// `tapdiff run` records it, and every tap in graph order with its width.
TEST(Cli, ModelInfoGivesTheDumpsModelConfigAndEveryTap) {
  const auto info = run_tapdiff("model-info --model synth:tiny");
  ASSERT_EQ(info.exit_code, 0) << info.output;
  const auto json = nlohmann::json::parse(info.output);
  const auto dir = temp_dir("model-info");
  const auto run = run_tapdiff("run --model synth:tiny --tokens 1,2,3 --dump '" + (dir / "r.h5").string() + "'");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const dumps::DumpReader dump((dir / "r.h5").string());
  EXPECT_EQ(json["model_config"], dump.metadata().model_config);
  EXPECT_EQ(json["model_sha256"], dump.metadata().model_sha256);
  ASSERT_EQ(json["taps"].size(), dump.tensors().size());
  for (std::size_t i = 0; i < dump.tensors().size(); ++i) {
    const model::TensorId& id = dump.tensors()[i];
    EXPECT_EQ(json["taps"][i]["layer"], id.layer);
    EXPECT_EQ(json["taps"][i]["op"], model::op_name(id.op));
    EXPECT_EQ(json["taps"][i]["width"], dump.read(id, 0, 1).cols());
  }
}

TEST(Cli, GoldenTokensOfStories260KThroughTheBinary) {
  TAPDIFF_REQUIRE_STORIES();
  const auto dir = temp_dir("stories");
  const auto r = run_tapdiff("run --model '" + stories_gguf().string() +
                             "' --prompt 'Once upon a time' --generate 60 --json '" + (dir / "s.json").string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto summary = nlohmann::json::parse(read_file(dir / "s.json"));
  EXPECT_EQ(summary["prompt"].get<std::vector<int>>(), (std::vector<int>{1, 403, 407, 261, 378}));
  const auto golden = stories_golden_tokens();
  EXPECT_EQ(summary["generated"].get<std::vector<std::int32_t>>(), golden);
  EXPECT_EQ(summary["text"].get<std::string>().substr(0, 28), ", there was a little girl na");
}

// A run killed with SIGKILL while it streams leaves a dump readable up to its last finished chunk.
TEST(Cli, KilledRunLeavesAReadableIncompleteDump) {
  const auto dir = temp_dir("killed");
  const auto model = synth_model_path("small");
  const std::string common = "run --model '" + model.string() + "' --tokens 1,5,6,7,8,9,10,11 --chunk 1 --threads 1 ";
  // Yardstick: the same run, finished, with 8 + 29 rows. Its dump's size is reached by the endless
  // run only after it has written (and so flushed) most of those rows.
  const auto finished = dir / "finished.h5";
  ASSERT_EQ(run_tapdiff(common + "--generate 30 --dump '" + finished.string() + "'").exit_code, 0);
  const auto yardstick = std::filesystem::file_size(finished);

  const auto dump = dir / "killed.h5";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    execl(TAPDIFF_BINARY, "tapdiff", "run", "--model", model.c_str(), "--tokens", "1,5,6,7,8,9,10,11", "--chunk", "1",
          "--threads", "1", "--generate", "100000", "--dump", dump.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  auto size = [&] { return std::filesystem::exists(dump) ? std::filesystem::file_size(dump) : 0; };
  for (int i = 0; i < 6000 && size() < yardstick; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the run ended before it was killed";

  const dumps::DumpReader reader(dump.string());
  EXPECT_FALSE(reader.complete());
  EXPECT_GT(reader.rows(), 8);  // past the prompt: decode rows made it to disk
  // The rows it has are the rows of the finished run (same model, same tokens, same greedy path).
  const dumps::DumpReader reference(finished.string());
  const model::TensorId logits{model::Op::logits, 4};
  const std::int64_t common_rows = std::min(reader.rows(), reference.rows());
  const auto a = reader.read(logits, 0, common_rows);
  const auto b = reference.read(logits, 0, common_rows);
  EXPECT_EQ(nmse(a, b), 0.0);
  const auto inspected = run_tapdiff("inspect '" + dump.string() + "'");
  EXPECT_EQ(inspected.exit_code, 0) << inspected.output;
  EXPECT_NE(inspected.output.find("INCOMPLETE"), std::string::npos);
}

}  // namespace
}  // namespace tapdiff::testing
