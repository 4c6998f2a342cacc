// The Eigen reference engine: golden tokens of a real model, chunking invariance, the f64/f32
// noise floor, and teacher forcing.
#include <gtest/gtest.h>

#include <cmath>

#include "formats/load_model.h"
#include "formats/synth.h"
#include "model/errors.h"
#include "reference/cpu_engine.h"
#include "reference/kernels.h"
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
  const auto m = formats::load_model(path);
  const auto run = run_reference(*m, kOnceUponATime, scalar, chunk, 60, [](const TensorId&) { return false; });
  EXPECT_EQ(run->result.generated, stories_golden_tokens());
}

std::string golden_case_name(const ::testing::TestParamInfo<StoriesGolden::ParamType>& p) {
  const auto& [layout, scalar, chunk] = p.param;
  return layout + (scalar == Scalar::f32 ? "_f32" : "_f64") + (chunk > 0 ? "_chunk" + std::to_string(chunk) : "_whole");
}

INSTANTIATE_TEST_SUITE_P(AllLayoutsDtypesAndChunks, StoriesGolden,
                         ::testing::Combine(::testing::Values("gguf", "hf"),
                                            ::testing::Values(Scalar::f32, Scalar::f64),
                                            ::testing::Values(1, 2, 3, 7, 0)),
                         golden_case_name);

// Chunks change the f32 summation order of the attention rows: the logits differ by f32 rounding
// (NMSE up to 7e-12 per row on synth:small, a relative error of 3e-6); a chunk that missed the
// previous chunks' KV cache would be ~1e-2.
TEST(ReferenceEngine, ChunkedPrefillEqualsUnchunkedPrefill) {
  const auto m = formats::load_model(synth_model_path("small"));
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
      ASSERT_LE(e, 1e-10) << "chunk " << chunk << ", position " << pos;
    }
  }
}

TEST(ReferenceEngine, F32DiffersFromF64GoldenByASmallNoiseFloorInEveryOp) {
  const auto m = formats::load_model(synth_model_path("small"));
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

// Every op's output is the same, bit for bit, whatever the number of threads and run after run:
// the products split their work in blocks of a fixed size, never by the thread count. (Eigen's own
// parallel GEMM gave some f64 runs wrong rows, built at -O1 with two threads or more.)
TEST(ReferenceEngine, OutputsAreTheSameBitForBitWhateverTheThreadCount) {
  const auto m = formats::load_model(synth_model_path("small"));
  const auto tokens = synth_prompt(64, m->config().vocab, 3);
  const model::Graph graph(m->config());
  for (const model::Precision precision : {model::Precision::f64, model::Precision::f32}) {
    const auto one = run_reference(*m, tokens, reference::CpuEngineOptions{precision, 1}, 16, 2);
    for (const int threads : {3, 8, 8, 8}) {
      const auto many = run_reference(*m, tokens, reference::CpuEngineOptions{precision, threads}, 16, 2);
      EXPECT_EQ(one->result.generated, many->result.generated);
      for (const auto& step : graph.steps())
        ASSERT_EQ(nmse(one->tap.get(step.output()), many->tap.get(step.output())), 0.0)
            << model::to_string(step.output()) << ", " << threads << " threads, " << model::precision_name(precision);
    }
  }
}

// Weights past the budget are dequantized a layer at a time, once per pass: the same numbers.
TEST(ReferenceEngine, StreamedWeightsGiveTheSameOutputsBitForBit) {
  const auto m = formats::load_model(synth_model_path("small"));
  const auto tokens = synth_prompt(40, m->config().vocab, 11);
  const model::Graph graph(m->config());
  for (const reference::CpuEngineOptions held :
       {reference::CpuEngineOptions{model::Precision::f64, 0}, reference::CpuEngineOptions{model::Precision::f16, 0}}) {
    reference::CpuEngineOptions streamed = held;
    streamed.weight_budget = 1;  // no copy fits
    EXPECT_EQ(reference::make_cpu_engine(*m, held)->device().find("streamed"), std::string::npos);
    EXPECT_NE(reference::make_cpu_engine(*m, streamed)->device().find("weights streamed per layer"), std::string::npos);
    const auto a = run_reference(*m, tokens, held, 16, 4);
    const auto b = run_reference(*m, tokens, streamed, 16, 4);
    EXPECT_EQ(a->result.generated, b->result.generated);
    for (const auto& step : graph.steps())
      EXPECT_EQ(nmse(a->tap.get(step.output()), b->tap.get(step.output())), 0.0) << model::to_string(step.output());
  }
}

TEST(ReferenceEngine, TeacherForcedOpReproducesItsOutput) {
  const auto m = formats::load_model(synth_model_path("tiny"));
  const auto tokens = synth_prompt(12, m->config().vocab, 5);
  const auto run = run_reference(*m, tokens, Scalar::f64, 0, 0);
  // Layer 1's attention alone, on a fresh engine fed with the recorded inputs (one chunk, so the
  // KV cache is exactly the chunk's rope_k and v_proj).
  const auto engine = reference::make_cpu_engine(*m, {model::Precision::f64, 1});
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
  const auto m = formats::load_model(synth_model_path("tiny"));
  try {
    run_reference(*m, {1, 5, 100000}, Scalar::f32, 0, 0);
    FAIL() << "expected an error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("token id 100000"), std::string::npos) << e.what();
  }
}

// Attention written as plainly as possible: for each head, row and visible key, in double.
reference::Mat<double> naive_attention(const reference::Mat<double>& q, const reference::Mat<double>& k,
                                       const reference::Mat<double>& v, int first_pos, int heads, int kv_heads, int hd,
                                       int window, int chunk = 0) {
  reference::Mat<double> out = reference::Mat<double>::Zero(q.rows(), q.cols());
  for (int h = 0; h < heads; ++h) {
    const int g = h / (heads / kv_heads);
    for (Eigen::Index t = 0; t < q.rows(); ++t) {
      const Eigen::Index pos = first_pos + t;
      std::vector<double> w;
      std::vector<Eigen::Index> keys;
      for (Eigen::Index j = 0; j <= pos; ++j) {
        if (window > 0 && pos - j >= window) continue;
        if (chunk > 0 && j / chunk != pos / chunk) continue;
        double dot = 0;
        for (int c = 0; c < hd; ++c) dot += q(t, h * hd + c) * k(j, g * hd + c);
        w.push_back(dot / std::sqrt(static_cast<double>(hd)));
        keys.push_back(j);
      }
      const double mx = *std::max_element(w.begin(), w.end());
      double sum = 0;
      for (double& x : w) sum += (x = std::exp(x - mx));
      for (std::size_t i = 0; i < keys.size(); ++i)
        for (int c = 0; c < hd; ++c) out(t, h * hd + c) += w[i] / sum * v(keys[i], g * hd + c);
    }
  }
  return out;
}

TEST(ReferenceKernels, AttentionMatchesANaiveLoopWithGqaOffsetAndSlidingWindow) {
  const int heads = 6, kv_heads = 2, hd = 8, first_pos = 5, T = 7, P = first_pos + T;
  const reference::Mat<double> q = reference::Mat<double>::Random(T, heads * hd);
  const reference::Mat<double> k = reference::Mat<double>::Random(P, kv_heads * hd);
  const reference::Mat<double> v = reference::Mat<double>::Random(P, kv_heads * hd);
  for (int window : {0, 1, 4}) {
    reference::Mat<double> out;
    reference::attention<double>(q, k, v, first_pos, heads, kv_heads, hd, hd, {.window = window},
                                 1.0 / std::sqrt(double(hd)), 0.0, {}, {}, out);
    EXPECT_LT((out - naive_attention(q, k, v, first_pos, heads, kv_heads, hd, window)).cwiseAbs().maxCoeff(), 1e-12)
        << "window " << window;
  }
}

// Llama 4's chunked layers: a query sees the keys of its own chunk only (transformers' chunked_overlay).
TEST(ReferenceKernels, ChunkedAttentionSeesItsOwnChunkOnly) {
  const int heads = 4, kv_heads = 2, hd = 8, first_pos = 3, T = 9, P = first_pos + T;
  const reference::Mat<double> q = reference::Mat<double>::Random(T, heads * hd);
  const reference::Mat<double> k = reference::Mat<double>::Random(P, kv_heads * hd);
  const reference::Mat<double> v = reference::Mat<double>::Random(P, kv_heads * hd);
  for (int chunk : {1, 4, 5, 100}) {
    reference::Mat<double> out;
    reference::attention<double>(q, k, v, first_pos, heads, kv_heads, hd, hd, {.chunk = chunk},
                                 1.0 / std::sqrt(double(hd)), 0.0, {}, {}, out);
    EXPECT_LT((out - naive_attention(q, k, v, first_pos, heads, kv_heads, hd, 0, chunk)).cwiseAbs().maxCoeff(), 1e-12)
        << "chunk " << chunk;
  }
  EXPECT_EQ((model::KeySpan{.chunk = 4}.first(11)), 8);
  EXPECT_EQ((model::KeySpan{.chunk = 4}.first(8)), 8);
  EXPECT_EQ((model::KeySpan{.window = 4}.first(11)), 8);
  EXPECT_EQ((model::KeySpan{.window = 4}.first(2)), 0);
}

TEST(ReferenceKernels, RopeConventionsPairDifferentChannels) {
  // One head of 4 channels at position 1: pair 0 and pair 1 rotate by 1 rad.
  reference::Mat<double> x(1, 4);
  x << 1, 2, 3, 4;
  reference::Mat<double> inter, half;
  const model::RopeFrequencies one{{1.0, 1.0}, 1.0, std::nullopt, {}};
  reference::rope<double>(x, 4, 1, one, model::RopeStyle::interleaved, inter);
  reference::rope<double>(x, 4, 1, one, model::RopeStyle::rotate_half, half);
  const double c = std::cos(1.0), s = std::sin(1.0);
  EXPECT_NEAR(inter(0, 0), 1 * c - 2 * s, 1e-6);  // (x0, x1) rotate together
  EXPECT_NEAR(inter(0, 1), 1 * s + 2 * c, 1e-6);
  EXPECT_NEAR(half(0, 0), 1 * c - 3 * s, 1e-6);  // (x0, x2) rotate together
  EXPECT_NEAR(half(0, 2), 1 * s + 3 * c, 1e-6);
}

TEST(ReferenceKernels, PartialRotaryTurnsTheLeadingChannelsScaledByTheAttentionFactor) {
  // rotary_dim 2 of a head of 4: the pair (x0, x1) turns by 2 rad at position 2, x2 and x3 pass.
  reference::Mat<double> x(1, 4);
  x << 1, 2, 3, 4;
  reference::Mat<double> out;
  reference::rope<double>(x, 4, 2, model::RopeFrequencies{{1.0}, 1.5, std::nullopt, {}}, model::RopeStyle::rotate_half,
                          out);
  const double c = 1.5 * std::cos(2.0), s = 1.5 * std::sin(2.0);
  EXPECT_DOUBLE_EQ(out(0, 0), 1 * c - 2 * s);
  EXPECT_DOUBLE_EQ(out(0, 1), 1 * s + 2 * c);
  EXPECT_EQ(out(0, 2), 3);
  EXPECT_EQ(out(0, 3), 4);
}

TEST(ReferenceEngine, Qwen2StyleModelIsChunkInvariant) {
  const auto dir = temp_dir("qwen2");
  formats::SynthOptions options;
  options.config = formats::synth_shape("tiny");
  options.config.family = model::Family::qwen2;
  options.config.rope_base = 1e6;
  formats::write_synth_model(dir / "q.gguf", options);
  const auto m = formats::load_model(dir / "q.gguf");
  ASSERT_TRUE(m->config().block.qkv_bias);
  ASSERT_EQ(m->config().rope_style, model::RopeStyle::rotate_half);
  const auto tokens = synth_prompt(40, m->config().vocab, 11);
  const TensorId logits{Op::logits, m->config().n_layers};
  const auto whole = run_reference(*m, tokens, Scalar::f64, 0, 0);
  const auto chunked = run_reference(*m, tokens, Scalar::f64, 7, 0);
  EXPECT_LT(nmse(whole->tap.get(logits), chunked->tap.get(logits)), 1e-24);
}

TEST(ReferenceEngine, Stories260KGgufAndHfLayoutsGiveTheSameLogits) {
  TAPDIFF_REQUIRE_STORIES();
  const auto gguf = formats::load_model(stories_gguf());
  const auto hf = formats::load_model(stories_hf());
  const auto tokens = synth_prompt(50, 512, 13);
  const TensorId logits{Op::logits, 5};
  const auto only = [&](const TensorId& id) { return id == logits; };
  const auto a = run_reference(*gguf, tokens, Scalar::f64, 16, 0, only);
  const auto b = run_reference(*hf, tokens, Scalar::f64, 16, 0, only);
  // Interleaved-pair RoPE on the GGUF rows and rotate-half on the permuted HF rows is the same math.
  EXPECT_LT(nmse(a->tap.get(logits), b->tap.get(logits)), 1e-24);
}

}  // namespace
}  // namespace tapdiff::testing
