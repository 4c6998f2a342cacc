// The Eigen reference engine: golden tokens of a real model, chunking invariance, the f64/f32
// noise floor, and teacher forcing.
#include <gtest/gtest.h>

#include <cmath>

#include "model/errors.h"
#include "reference/cpu_engine.h"
#include "tests/reference_fixtures.h"
#include "tests/test_support.h"

namespace tapdiff::testing {
namespace {

using model::Op;
using model::Scalar;
using model::TensorId;

const std::vector<std::int32_t> kOnceUponATime = {1, 403, 407, 261, 378};

class StoriesGolden : public ::testing::TestWithParam<std::tuple<std::string, Scalar, int>> {};

TEST_P(StoriesGolden, GreedyTokensMatchTheKnownOutput) {
  TAPDIFF_REQUIRE_STORIES();
  const auto& [layout, scalar, chunk] = GetParam();
  const auto path = layout == "gguf" ? stories_gguf() : stories_hf();
  const auto m = model::load_model(path);
  const auto run = run_reference(*m, kOnceUponATime, scalar, chunk, 60, [](const TensorId&) { return false; });
  EXPECT_EQ(run->result.generated, stories_golden_tokens());
}

std::string golden_case_name(const ::testing::TestParamInfo<StoriesGolden::ParamType>& p) {
  const auto& [layout, scalar, chunk] = p.param;
  return layout + (scalar == Scalar::f32 ? "_f32" : "_f64") + (chunk > 0 ? "_chunk" + std::to_string(chunk) : "_whole");
}

INSTANTIATE_TEST_SUITE_P(AllLayoutsDtypesAndChunks, StoriesGolden,
                         ::testing::Combine(::testing::Values("gguf", "hf"), ::testing::Values(Scalar::f32, Scalar::f64),
                                            ::testing::Values(1, 2, 3, 7, 0)),
                         golden_case_name);

std::vector<std::int32_t> synth_prompt(int n, int vocab, std::uint32_t seed) {
  std::vector<std::int32_t> tokens{1};
  std::uint32_t x = seed;
  while (static_cast<int>(tokens.size()) < n) {
    x = x * 1664525u + 1013904223u;
    tokens.push_back(static_cast<std::int32_t>(3 + (x >> 8) % static_cast<std::uint32_t>(vocab - 3)));
  }
  return tokens;
}

TEST(ReferenceEngine, ChunkedPrefillEqualsUnchunkedPrefill) {
  const auto m = model::load_model(synth_model_path("small"));
  const auto tokens = synth_prompt(300, m->config().vocab, 7);
  const TensorId logits{Op::logits, m->config().n_layers};
  auto only_logits = [&](const TensorId& id) { return id == logits; };
  const auto whole = run_reference(*m, tokens, Scalar::f32, 0, 0, only_logits);
  ASSERT_EQ(whole->tap.get(logits).rows(), 300);
  for (int chunk : {1, 64, 100}) {
    const auto chunked = run_reference(*m, tokens, Scalar::f32, chunk, 0, only_logits);
    const auto& a = whole->tap.get(logits);
    const auto& b = chunked->tap.get(logits);
    ASSERT_EQ(b.rows(), 300);
    for (std::int64_t pos = 0; pos < 300; ++pos) {
      const double e = nmse(a.slice_rows(pos, 1), b.slice_rows(pos, 1));
      ASSERT_LE(e, 1e-12) << "chunk " << chunk << ", position " << pos;
    }
  }
}

TEST(ReferenceEngine, F32DiffersFromF64GoldenByASmallNoiseFloorInEveryOp) {
  const auto m = model::load_model(synth_model_path("small"));
  const auto tokens = synth_prompt(64, m->config().vocab, 3);
  const auto golden = run_reference(*m, tokens, Scalar::f64, 16, 0);
  const auto f32 = run_reference(*m, tokens, Scalar::f32, 16, 0);
  const model::Graph graph(m->config());
  double worst = 0;
  int nonzero = 0;
  for (const auto& step : graph.steps()) {
    const double e = nmse(golden->tap.get(step.output()), f32->tap.get(step.output()));
    EXPECT_LT(e, 1e-9) << model::to_string(step.output());
    worst = std::max(worst, e);
    nonzero += e > 0;
  }
  // Real rounding differences, not two identical computations.
  EXPECT_GT(nonzero, static_cast<int>(graph.steps().size()) / 2);
  std::printf("f32 vs f64 noise floor on synth:small: worst op NMSE %.3g\n", worst);
}

TEST(ReferenceEngine, TeacherForcedOpReproducesItsOutput) {
  const auto m = model::load_model(synth_model_path("tiny"));
  const auto tokens = synth_prompt(12, m->config().vocab, 5);
  const auto run = run_reference(*m, tokens, Scalar::f64, 0, 0);
  // Layer 1's attention alone, on a fresh engine fed with the recorded inputs (one chunk, so the
  // KV cache is exactly the chunk's rope_k and v_proj).
  const auto engine = reference::make_cpu_engine(*m, {Scalar::f64, 1});
  const model::Graph graph(m->config());
  engine->reset();
  engine->begin_chunk(tokens, {0, 0, 12, false});
  for (const auto& step : graph.steps()) {
    if (step.layer != 1 || step.op != Op::attn) continue;
    for (const TensorId& in : step.inputs) engine->write(in, run->tap.get(in));
    engine->execute(step, {});
    EXPECT_EQ(nmse(run->tap.get(step.output()), engine->read(step.output())), 0.0);
  }
}

TEST(ReferenceEngine, TokenOutsideTheVocabularyIsAClearError) {
  const auto m = model::load_model(synth_model_path("tiny"));
  try {
    run_reference(*m, {1, 5, 100000}, Scalar::f32, 0, 0);
    FAIL() << "expected an error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("token id 100000"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tapdiff::testing
