// Bisecting a ragged batch: engine B (Vulkan) runs the prompts in one pass per step, the reference
// runs each alone (model::PerSequenceEngine), and every row is compared with its own sequence's.
// A clean batch matches; batch-seq-leak (tests/test_bisect_faults.cpp has the library case) is
// found from the CLI with the sequence where it shows; batches the command cannot take are usage
// errors that say why.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "bisect/drive/bisect.h"
#include "formats/load_model.h"
#include "model/errors.h"
#include "model/per_sequence_engine.h"
#include "reference/cpu_engine.h"
#include "tests/reference_fixtures.h"
#include "tests/test_support.h"
#include "tests/vulkan_fixtures.h"

namespace tapdiff::testing {
namespace {

// Four prompts of 50, 17, 33 and 1 tokens in chunks of 16, 3 generated tokens each: every op
// matches under calibrated tolerances, each sequence's greedy tokens are the same in both engines,
// and every row of every sequence is compared (prompt rows and 2 decode rows each).
TEST(BisectBatch, CleanRaggedBatchMatchesSequenceBySequence) {
  const auto m = formats::load_model(synth_model_path("tiny"));
  const int vocab = m->config().vocab;
  const model::Prompts prompts{synth_prompt(50, vocab, 1), synth_prompt(17, vocab, 2), synth_prompt(33, vocab, 3),
                               synth_prompt(1, vocab, 4)};
  const auto truth = reference_per_sequence(*m, model::Scalar::f64, prompts.size());
  const auto floor = reference_per_sequence(*m, model::Scalar::f32, prompts.size());
  const auto b = validated_vulkan_engine(*m);
  bisect::BisectOptions options;
  options.chunk = 16;
  options.generate = 3;
  const bisect::BisectResult r = bisect::run_bisect(m->config(), {*truth, floor.get(), *b}, prompts, options);
  EXPECT_TRUE(r.match());
  ASSERT_EQ(r.sequence_tokens.size(), prompts.size());
  std::size_t rows = 0;
  for (std::size_t s = 0; s < prompts.size(); ++s) {
    EXPECT_EQ(r.sequence_tokens[s].a.size(), 3u);
    EXPECT_EQ(r.sequence_tokens[s].a, r.sequence_tokens[s].b) << "sequence " << s;
    EXPECT_EQ(r.prompt_lengths[s], prompts[s].size());
    rows += prompts[s].size() + 2;
  }
  ASSERT_EQ(r.run.alignment.rows.size(), rows);
  std::vector<std::size_t> per_sequence(prompts.size(), 0);
  for (const bisect::RowInfo& row : r.run.alignment.rows) ++per_sequence[static_cast<std::size_t>(row.sequence)];
  for (std::size_t s = 0; s < prompts.size(); ++s) EXPECT_EQ(per_sequence[s], prompts[s].size() + 2);
  expect_clean(*b);
}

// A batch of more sequences than the per-sequence engine holds, or of an engine without batches,
// is refused before anything runs.
TEST(BisectBatch, EnginesThatCannotRunTheBatchAreRefused) {
  const auto m = formats::load_model(synth_model_path("tiny"));
  const model::Prompts prompts{{1, 2, 3}, {4, 5}};
  const auto truth = reference::make_cpu_engine(*m, {model::Precision::f64, 0});
  const auto b = validated_vulkan_engine(*m);
  bisect::BisectOptions options;
  options.calibration.reset();
  try {
    bisect::run_bisect(m->config(), {*truth, nullptr, *b}, prompts, options);
    FAIL() << "expected an error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("engine ref does not run ragged batches"), std::string::npos) << e.what();
  }
  std::vector<std::unique_ptr<model::Engine>> engines;
  engines.push_back(reference::make_cpu_engine(*m, {model::Precision::f64, 0}));
  model::PerSequenceEngine one(std::move(engines));
  EXPECT_THROW(one.set_sequences(2), UsageError);
  EXPECT_THROW(bisect::run_bisect(m->config(), {*truth, nullptr, *b}, model::Prompts{{1, 2}, {}}, options), UsageError);
}

// `bisect --batch-prompts`: the planted batch-seq-leak is the culprit, first showing in sequence 1
// with the some-sequences diagnosis; without it the batch matches; --dump-dir and engine B ref
// refuse a batch.
TEST(BisectBatchCli, FindsTheSequenceAndOpOfABatchLeak) {
  const auto dir = temp_dir("bisect-batch-cli");
  const std::string prompts = (dir / "prompts.txt").string(), json = (dir / "r.json").string();
  std::ofstream(prompts) << "tokens: 1, 5, 9, 12, 40, 41, 42, 43\ntokens: 7, 8, 9, 10, 11, 12\ntokens: 3 4 5\n";
  const std::string common = "bisect --model synth:tiny --batch-prompts '" + prompts + "' --chunk 4 --generate 2";
  const CommandResult leak = run_tapdiff(common + " --inject batch-seq-leak@1 --json '" + json + "'");
  ASSERT_EQ(leak.exit_code, 1) << leak.output;
  const auto report = nlohmann::json::parse(std::ifstream(json));
  EXPECT_EQ(report["culprit"]["layer"], 1);
  EXPECT_EQ(report["culprit"]["op"], "attn");
  EXPECT_EQ(report["first"]["sequence"], 1);
  bool some_sequences = false;
  for (const auto& d : report["diagnosis"]) some_sequences = some_sequences || d["code"] == "some-sequences";
  EXPECT_TRUE(some_sequences) << report["diagnosis"].dump();
  ASSERT_EQ(report["batch"]["sequences"].size(), 3u);
  EXPECT_EQ(report["batch"]["sequences"][0]["symptom_rows_over"], 0);
  EXPECT_GT(report["batch"]["sequences"][1]["symptom_rows_over"].get<int>(), 0);
  EXPECT_NE(leak.output.find("3 sequences"), std::string::npos) << leak.output;

  const CommandResult clean = run_tapdiff(common);
  EXPECT_EQ(clean.exit_code, 0) << clean.output;
  const CommandResult dumps = run_tapdiff(common + " --dump-dir '" + (dir / "d").string() + "'");
  EXPECT_EQ(dumps.exit_code, 2) << dumps.output;
  EXPECT_NE(dumps.output.find("--dump-dir"), std::string::npos) << dumps.output;
  const CommandResult ref = run_tapdiff(common + " --engine-b ref");
  EXPECT_EQ(ref.exit_code, 2) << ref.output;
  EXPECT_NE(ref.output.find("does not run ragged batches"), std::string::npos) << ref.output;
}

}  // namespace
}  // namespace tapdiff::testing
