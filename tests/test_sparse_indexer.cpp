// DeepSeek-V3.2's sparse attention indexer (model/config.h SparseIndexer): its kernels against a
// plain loop, its graph, the attention over the kept positions, and the arbiter's near ties of its
// choice (bisect/compare/routing.h). Its agreement with transformers' float64 forward:
// tests/conformance/test_transformers.py (the deepseek-v32 cases).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "bisect/compare/routing.h"
#include "formats/load_model.h"
#include "model/errors.h"
#include "model/graph.h"
#include "model/memory_tap.h"
#include "model/runner.h"
#include "reference/cpu_engine.h"
#include "reference/indexer_kernels.h"
#include "reference/kernels.h"
#include "tests/reference_fixtures.h"
#include "tests/test_support.h"
#include "tests/vulkan_fixtures.h"

namespace tapdiff {
namespace {

using reference::Mat;
using testing::nmse;
using testing::synth_prompt;
using testing::temp_dir;

model::ModelConfig sparse_config(int top_k) {
  model::ModelConfig c;
  c.n_layers = 1, c.dim = 32, c.n_heads = 2, c.n_kv_heads = 2, c.head_dim = 12, c.rotary_dim = 4, c.ffn_dim = 16,
  c.vocab = 16;
  c.mla = {.q_rank = 8, .kv_rank = 6, .nope_dim = 8, .rope_dim = 4, .v_dim = 6};
  c.indexer = {.heads = 3, .head_dim = 6, .top_k = top_k};
  return c;
}

TEST(SparseIndexer, ScoresAreTheWeightedSumOfEachHeadsReluAndLaterPositionsAreOut) {
  const model::SparseIndexer x{.heads = 3, .head_dim = 4, .top_k = 2};
  const int first_pos = 2, T = 3, P = first_pos + T;
  const Mat<double> q = Mat<double>::Random(T, x.heads * x.head_dim);
  const Mat<double> keys = Mat<double>::Random(P + 2, x.head_dim);  // rows past P: capacity, unread
  const Mat<double> w = Mat<double>::Random(T, x.heads);
  const Mat<double> s = reference::index_scores<double>(q, keys, w, first_pos, x);
  ASSERT_EQ(s.rows(), T);
  ASSERT_EQ(s.cols(), P);
  for (int t = 0; t < T; ++t)
    for (int p = 0; p < P; ++p) {
      if (p > first_pos + t) {
        EXPECT_EQ(s(t, p), -std::numeric_limits<double>::infinity());
        continue;
      }
      double want = 0;
      for (int h = 0; h < x.heads; ++h) {
        const double dot = q.row(t).segment(h * x.head_dim, x.head_dim).dot(keys.row(p)) / std::sqrt(4.0);
        want += w(t, h) / std::sqrt(3.0) * std::max(dot, 0.0);
      }
      EXPECT_NEAR(s(t, p), want, 1e-14) << t << "," << p;
    }
}

TEST(SparseIndexer, KeepsTheBestPositionsAscendingWithTiesToTheEarlierAndPadsShortRows) {
  const double out = -std::numeric_limits<double>::infinity();
  Mat<double> s(3, 5);           // first_pos 2: rows see positions [0, 2], [0, 3], [0, 4]
  s << 0.5, 2.0, 1.0, out, out,  //
      1.0, 1.0, 3.0, 1.0, out,   // a tie at the k-th place between positions 0, 1 and 3
      0.0, 4.0, -1.0, 2.0, 5.0;
  Mat<double> ids, scores;
  reference::kept_positions<double>(s, 2, 3, ids);
  reference::kept_scores<double>(s, 2, 3, scores);
  EXPECT_EQ(ids.row(0), (Mat<double>(1, 3) << 0, 1, 2).finished()) << "three positions, all kept";
  EXPECT_EQ(ids.row(1), (Mat<double>(1, 3) << 0, 1, 2).finished()) << "the earlier of the tied";
  EXPECT_EQ(ids.row(2), (Mat<double>(1, 3) << 1, 3, 4).finished());
  EXPECT_EQ(scores.row(0), (Mat<double>(1, 4) << 2.0, 1.0, 0.5, 0.0).finished()) << "none left out: 0";
  EXPECT_EQ(scores.row(1), (Mat<double>(1, 4) << 3.0, 1.0, 1.0, 1.0).finished());
  EXPECT_EQ(scores.row(2), (Mat<double>(1, 4) << 5.0, 4.0, 2.0, 0.0).finished());

  Mat<double> short_ids;
  reference::kept_positions<double>(s.topRows(1), 0, 4, short_ids);  // row 0 at position 0 sees one position
  EXPECT_EQ(short_ids.row(0), (Mat<double>(1, 4) << 0, -1, -1, -1).finished());
}

TEST(SparseIndexer, AttentionSeesOnlyTheKeptPositions) {
  const int heads = 2, hd = 4, first_pos = 3, T = 2, P = first_pos + T;
  const Mat<double> q = Mat<double>::Random(T, heads * hd);
  const Mat<double> k = Mat<double>::Random(P, heads * hd), v = Mat<double>::Random(P, heads * hd);
  Mat<double> kept(T, 2);
  kept << 1, 3, 0, -1;  // row 1 keeps position 0 alone
  Mat<double> out, only_1_and_3, only_0;
  reference::attention<double>(q, k, v, first_pos, heads, heads, hd, hd, {}, 0.5, 0.0, {.kept = &kept}, {}, out);
  // The same as attending over a cache of the kept rows alone, each at a position the query sees.
  Mat<double> k13(2, heads * hd), v13(2, heads * hd);
  k13 << k.row(1), k.row(3);
  v13 << v.row(1), v.row(3);
  reference::attention<double>(q.topRows(1), k13, v13, 1, heads, heads, hd, hd, {}, 0.5, 0.0, {}, {}, only_1_and_3);
  EXPECT_LT((out.row(0) - only_1_and_3.row(0)).cwiseAbs().maxCoeff(), 1e-14);
  EXPECT_LT((out.row(1) - v.row(0)).cwiseAbs().maxCoeff(), 1e-14) << "one position: its value";
}

TEST(SparseIndexer, TheGraphScoresAndKeepsBeforeTheAttentionThatReadsTheKeptPositions) {
  const model::Graph g(sparse_config(5));
  const model::Step& attn = g.steps()[g.position({model::Op::attn, 0})];
  EXPECT_EQ(attn.inputs.back(), (model::TensorId{model::Op::idx_ids, 0}));
  EXPECT_LT(g.position({model::Op::idx_scores, 0}), g.position({model::Op::idx_ids, 0}));
  EXPECT_EQ(g.steps()[g.position({model::Op::idx_q_proj, 0})].inputs.front(),
            (model::TensorId{model::Op::q_a_norm, 0}));
  EXPECT_EQ(g.width({model::Op::idx_rope_q, 0}), 18);
  EXPECT_EQ(g.width({model::Op::idx_weights, 0}), 3);
  EXPECT_EQ(g.width({model::Op::idx_scores, 0}), 6);
  EXPECT_EQ(g.width({model::Op::idx_ids, 0}), 5);
  EXPECT_EQ(model::head_layout({model::Op::idx_rope_q, 0}, g.config()).heads, 3);
}

TEST(SparseIndexer, TheArbiterSettlesANearTieOfKeptPositionsAndLeavesAFlipOrAShortRowsOtherChoice) {
  const model::ModelConfig c = sparse_config(2);
  // Rows at positions 5, 6 and 1: the k-th and next scores 1e-4 apart, 2.0 apart, and a row of two
  // positions that keeps both.
  const auto tensor = [](std::int64_t rows, std::int64_t cols, std::vector<double> v) {
    model::HostTensor t(model::Scalar::f64, rows, cols);
    std::copy(v.begin(), v.end(), t.f64().begin());
    return t;
  };
  const auto truth_scores = tensor(3, 3, {3.0, 1.0001, 1.0, 3.0, 1.0, -1.0, 2.0, 0.5, 0.0});
  const auto floor_scores = tensor(3, 3, {3.0, 1.0002, 1.0001, 3.0, 1.0, -1.0, 2.0, 0.5, 0.0});
  const auto truth_ids = tensor(3, 2, {2, 4, 0, 6, 0, 1});
  const auto b_ids = tensor(3, 2, {2, 5, 0, 3, 1, -1});
  const std::vector<bisect::RowPlace> places = {{0, 5}, {0, 6}, {0, 1}};
  bisect::RoutingArbiter arbiter(c, model::Precision::f16, true);
  EXPECT_FALSE(arbiter.holds(model::Op::idx_ids, 0));
  arbiter.hold_index_scores(0, truth_scores, &floor_scores);
  EXPECT_TRUE(arbiter.holds(model::Op::idx_ids, 0));
  const bisect::RoutingArbiter::Settled s = arbiter.settle_kept(0, truth_ids, &truth_ids, b_ids, places);
  EXPECT_FALSE(arbiter.holds(model::Op::idx_ids, 0)) << "settling takes the held scores";
  EXPECT_TRUE(s.b_changed);
  EXPECT_EQ(s.b.at(0, 1), 4.0) << "the near tie continues with A's choice";
  EXPECT_EQ(s.b.at(1, 1), 3.0) << "the far flip stays B's";
  ASSERT_EQ(arbiter.flips().size(), 3u);
  const bisect::RoutingFlip &near = arbiter.flips()[0], &far = arbiter.flips()[1], &short_row = arbiter.flips()[2];
  EXPECT_EQ(near.op, model::Op::idx_ids);
  EXPECT_TRUE(near.near_tie()) << near.text();
  EXPECT_NEAR(near.margin, 1e-4, 1e-12);
  EXPECT_NEAR(near.noise, 3.0 * std::ldexp(1.0, -11), 1e-12) << "f16's rounding of 3.0 above the floor's 1e-4";
  EXPECT_FALSE(far.near_tie());
  EXPECT_NE(far.text().find("layer 0 position 6: positions kept by A only 6, by B only 3 (A kept 2)"),
            std::string::npos)
      << far.text();
  EXPECT_FALSE(short_row.near_tie()) << "a row that keeps every position made no choice";
  EXPECT_TRUE(std::isinf(short_row.margin));
  EXPECT_EQ(short_row.ids_b, (std::vector<int>{1}));
  EXPECT_EQ(s.b.at(2, 0), 1.0);
}

TEST(SparseIndexer, APositionTheRowCannotSeeIsAFaultNotATie) {
  const model::ModelConfig c = sparse_config(2);
  model::HostTensor scores(model::Scalar::f64, 1, 3), truth(model::Scalar::f64, 1, 2), b(model::Scalar::f64, 1, 2);
  std::vector<double> s = {2.0, 1.0, 1.0}, a = {0, 1}, wrong = {0, 9};  // position 9 after the row's 4
  std::copy(s.begin(), s.end(), scores.f64().begin());
  std::copy(a.begin(), a.end(), truth.f64().begin());
  std::copy(wrong.begin(), wrong.end(), b.f64().begin());
  bisect::RoutingArbiter arbiter(c, model::Precision::f16, true);
  arbiter.hold_index_scores(0, scores, nullptr);
  const std::vector<bisect::RowPlace> places = {{0, 4}};
  const bisect::RoutingArbiter::Settled settled = arbiter.settle_kept(0, truth, nullptr, b, places);
  EXPECT_FALSE(settled.b_changed);
  ASSERT_EQ(arbiter.flips().size(), 1u);
  EXPECT_TRUE(arbiter.flips()[0].not_an_expert);
  EXPECT_FALSE(arbiter.flips()[0].near_tie());
  EXPECT_NE(arbiter.flips()[0].text().find("no position of the row"), std::string::npos) << arbiter.flips()[0].text();
}

// The Vulkan engine's indexer (index_topk.comp) and its attention over the kept positions
// (attention-two-pass) against the reference, in chunks of 7 (the kept positions span chunks)
// and decode steps: the same positions, the scores and logits to f32 rounding.
TEST(SparseIndexer, TheVulkanEngineKeepsTheReferencesPositionsAcrossChunksAndDecode) {
  const auto m = formats::load_model(testing::write_sparse_model(temp_dir("sparse-indexer") / "model", 2));
  const model::Graph graph(m->config());
  const auto tokens = synth_prompt(30, m->config().vocab, 5);
  const auto cpu = reference::make_cpu_engine(*m, {model::Precision::f32, 1});
  const auto engine = testing::validated_vulkan_engine(*m);
  model::MemoryTap a, b;
  const model::RunOptions options{.chunk = 7, .generate = 4};
  const model::RunResult ran_a = model::run_sequence(*cpu, graph, tokens, options, a);
  const model::RunResult ran_b = model::run_sequence(*engine, graph, tokens, options, b);
  EXPECT_EQ(ran_a.generated, ran_b.generated);
  for (int l = 0; l < 2; ++l) {
    const model::TensorId ids{model::Op::idx_ids, l}, scores{model::Op::idx_scores, l};
    EXPECT_EQ(nmse(a.get(ids), b.get(ids)), 0.0) << "layer " << l;
    EXPECT_LT(nmse(a.get(scores), b.get(scores)), 1e-10) << "layer " << l;
    EXPECT_GE(a.get(ids).at(29, 11), 0.0) << "position 29 keeps 12 of its 30 positions";
    EXPECT_EQ(a.get(ids).at(5, 5), 5.0) << "position 5 keeps all 6 of its positions";
    EXPECT_EQ(a.get(ids).at(5, 6), -1.0);
  }
  EXPECT_LT(nmse(a.get({model::Op::logits, 2}), b.get({model::Op::logits, 2})), 1e-10);
  EXPECT_NE(engine->kernel(model::Op::idx_ids).find("index-topk"), std::string::npos);
  EXPECT_NE(engine->kernel(model::Op::attn).find("attention-two-pass"), std::string::npos);
  EXPECT_THROW(engine->write_kv(0, false, cpu->read_kv(0, false)), UsageError);
  testing::expect_clean(*engine);
}

}  // namespace
}  // namespace tapdiff
