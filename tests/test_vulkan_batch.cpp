// Ragged batches on the Vulkan engine: several sequences of different lengths in one forward pass,
// each with its own KV cache and positions. Every sequence must come out as it does alone: the
// same logits at every position and the same greedy continuation.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <memory>

#include "formats/load_model.h"
#include "gpu/vulkan_engine.h"
#include "model/batch_runner.h"
#include "model/errors.h"
#include "model/memory_tap.h"
#include "model/runner.h"
#include "tests/reference_fixtures.h"
#include "tests/test_support.h"
#include "tests/vulkan_fixtures.h"

namespace tapdiff::testing {
namespace {

using model::Op;
using model::TensorId;

bool logits_only(const TensorId& id) { return id.op == Op::logits; }

// Runs the prompts as one ragged batch, then each alone on a fresh engine, and compares every
// sequence's logits (all positions) and greedy tokens. Returns the worst NMSE.
double expect_batch_matches_alone(const model::Model& m, const std::vector<std::vector<std::int32_t>>& prompts,
                                  int chunk, int generate) {
  const model::Graph graph(m.config());
  const TensorId logits{Op::logits, m.config().n_layers};
  const auto batch_engine = validated_vulkan_engine(m);
  std::vector<std::unique_ptr<model::MemoryTap>> taps;
  std::vector<model::Tap*> tap_ptrs;
  for (std::size_t s = 0; s < prompts.size(); ++s) {
    taps.push_back(std::make_unique<model::MemoryTap>(logits_only));
    tap_ptrs.push_back(taps.back().get());
  }
  model::BatchRunOptions options;
  options.chunk = chunk;
  options.generate = generate;
  const model::BatchRunResult batch = model::run_batch(*batch_engine, graph, prompts, options, tap_ptrs);
  EXPECT_EQ(batch.sequences.size(), prompts.size());

  const auto alone_engine = validated_vulkan_engine(m);
  double worst = 0;
  for (std::size_t s = 0; s < prompts.size(); ++s) {
    model::MemoryTap alone_tap(logits_only);
    model::RunOptions run_options;
    run_options.chunk = chunk;
    run_options.generate = generate;
    const model::RunResult alone = model::run_sequence(*alone_engine, graph, prompts[s], run_options, alone_tap);
    EXPECT_EQ(batch.sequences[s].generated, alone.generated) << "sequence " << s << " of " << prompts.size();
    const model::HostTensor& a = alone_tap.get(logits);
    const model::HostTensor& b = taps[s]->get(logits);
    EXPECT_EQ(a.rows(), static_cast<std::int64_t>(prompts[s].size()) + generate - 1) << "sequence " << s;
    if (a.rows() != b.rows()) {
      ADD_FAILURE() << "sequence " << s << ": " << b.rows() << " logits rows in the batch, " << a.rows() << " alone";
      continue;
    }
    const double e = nmse(a, b);
    EXPECT_LE(e, 1e-9) << "sequence " << s << " (" << prompts[s].size() << " tokens)";
    worst = std::max(worst, e);
  }
  expect_clean(*batch_engine);
  expect_clean(*alone_engine);
  return worst;
}

TEST(VulkanBatch, RaggedBatchOf25_96_379_702MatchesEachSequenceAlone) {
  const auto m = formats::load_model(synth_model_path("tiny"));
  std::vector<std::vector<std::int32_t>> prompts;
  std::uint32_t seed = 1;
  for (int length : {25, 96, 379, 702}) prompts.push_back(synth_prompt(length, m->config().vocab, seed++));
  for (int chunk : {0, 128}) {
    const double worst = expect_batch_matches_alone(*m, prompts, chunk, 8);
    std::printf("ragged batch 25/96/379/702, chunk %d, 8 generated: worst logits NMSE vs alone %.1e\n", chunk, worst);
  }
}

// Batch sizes 3 to 15, lengths mixed from 1 to 60 tokens, prefill in chunks of 16.
TEST(VulkanBatch, BatchSizesFrom3To15WithMixedLengthsMatchAlone) {
  const auto m = formats::load_model(synth_model_path("tiny"));
  for (int size : {3, 5, 7, 9, 12, 15}) {
    std::vector<std::vector<std::int32_t>> prompts;
    for (int s = 0; s < size; ++s) {
      const int length = 1 + (s * 37 + size * 11) % 60;
      prompts.push_back(synth_prompt(length, m->config().vocab, static_cast<std::uint32_t>(100 * size + s)));
    }
    const double worst = expect_batch_matches_alone(*m, prompts, 16, 5);
    std::printf("batch of %d: worst logits NMSE vs alone %.1e\n", size, worst);
  }
}

// The same in f16: each sequence's f16 logits equal its f16 logits alone.
TEST(VulkanBatch, F16RaggedBatchMatchesAlone) {
  const auto m = formats::load_model(synth_model_path("tiny"));
  gpu::VulkanEngineOptions options;
  options.f16 = true;
  const auto batch_engine = validated_vulkan_engine(*m, options);
  const auto alone_engine = validated_vulkan_engine(*m, options);
  const model::Graph graph(m->config());
  std::vector<std::vector<std::int32_t>> prompts;
  for (int length : {7, 40, 3, 19}) prompts.push_back(synth_prompt(length, m->config().vocab, 7));
  model::BatchRunOptions batch_options;
  batch_options.chunk = 8, batch_options.generate = 6;
  const model::BatchRunResult batch = model::run_batch(*batch_engine, graph, prompts, batch_options);
  for (std::size_t s = 0; s < prompts.size(); ++s) {
    model::NullTap tap;
    model::RunOptions run_options;
    run_options.chunk = 8, run_options.generate = 6;
    EXPECT_EQ(batch.sequences[s].generated,
              model::run_sequence(*alone_engine, graph, prompts[s], run_options, tap).generated)
        << "sequence " << s;
  }
}

TEST(VulkanBatch, BadBatchesAreUsageErrors) {
  const auto m = formats::load_model(synth_model_path("tiny"));
  const auto engine = validated_vulkan_engine(*m);
  const model::Graph graph(m->config());
  EXPECT_THROW(model::run_batch(*engine, graph, {}, {}), UsageError);
  EXPECT_THROW(model::run_batch(*engine, graph, {{1, 2}, {}}, {}), UsageError);
  engine->set_sequences(2);
  const std::vector<std::int32_t> tokens{1, 2};
  const std::vector<model::BatchPart> twice{{0, tokens, 0, false}, {0, tokens, 0, false}};
  EXPECT_THROW(engine->begin_batch(0, twice), UsageError);
  const std::vector<model::BatchPart> past{{2, tokens, 0, false}};
  EXPECT_THROW(engine->begin_batch(0, past), UsageError);
  const std::vector<model::BatchPart> gap{{1, tokens, 5, false}};
  try {
    engine->begin_batch(0, gap);
    FAIL() << "expected an error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("sequence 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(engine->set_sequences(0), UsageError);
}

// `run --batch-prompts`: one dump per sequence, each comparing clean against the reference run
// of that prompt alone; the wrong engine and a bad line are usage errors naming what is wrong.
TEST(VulkanBatchCli, BatchPromptsWriteOneDumpPerSequence) {
  const auto dir = temp_dir("vulkan-batch-cli");
  const std::string prompts = (dir / "prompts.txt").string(), dump = (dir / "batch.h5").string();
  std::ofstream(prompts) << "tokens: 1, 5, 9, 12, 40\n\ntokens: 7\ntokens: 3 4 5 6 7 8 9 10 11 12 13\n";
  const CommandResult r = run_tapdiff("run --engine vulkan --model synth:tiny --batch-prompts '" + prompts +
                                      "' --chunk 4 --generate 3 --dump '" + dump + "'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("3 sequences"), std::string::npos) << r.output;
  const std::string alone = (dir / "alone.h5").string();
  ASSERT_EQ(run_tapdiff("run --model synth:tiny --tokens 3,4,5,6,7,8,9,10,11,12,13 --chunk 4 --generate 3 --dump '" +
                        alone + "'")
                .exit_code,
            0);
  const CommandResult cmp = run_tapdiff("compare '" + alone + "' '" + (dir / "batch.seq2.h5").string() + "'");
  EXPECT_EQ(cmp.exit_code, 0) << cmp.output;
  EXPECT_NE(cmp.output.find("the same 3 generated tokens"), std::string::npos) << cmp.output;

  const CommandResult ref = run_tapdiff("run --model synth:tiny --batch-prompts '" + prompts + "'");
  EXPECT_EQ(ref.exit_code, 2) << ref.output;
  EXPECT_NE(ref.output.find("--engine vulkan"), std::string::npos) << ref.output;
  std::ofstream(prompts) << "tokens: 1, 2\ntokens: 1, x\n";
  const CommandResult bad = run_tapdiff("run --engine vulkan --model synth:tiny --batch-prompts '" + prompts + "'");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("line 2"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace tapdiff::testing
