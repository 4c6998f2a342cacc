// The mixture of experts below the conformance tests: the checkpoint layouts of the experts, the
// reference's routing and mixture against their definitions, the routing arbiter's near ties and
// flips, and the experts in a dump's model config.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>

#include <nlohmann/json.hpp>

#include "bisect/compare/routing.h"
#include "dumps/schema.h"
#include "formats/load_model.h"
#include "model/errors.h"
#include "model/graph.h"
#include "model/weights.h"
#include "reference/kernels.h"
#include "reference/moe_kernels.h"
#include "tests/model_file_fixtures.h"
#include "tests/test_support.h"

namespace tapdiff::testing {
namespace {

using model::WeightKind;
using reference::Mat;

constexpr int kExperts = 4, kExpertFfn = 24;

std::vector<std::byte> f32_bytes(const std::vector<float>& v) {
  std::vector<std::byte> out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// Values that name their place: expert e, row r, column c of projection p.
float value(int p, int e, std::int64_t r, std::int64_t c) {
  return static_cast<float>(p * 1000 + e * 100) + static_cast<float>(r) * 0.5f + static_cast<float>(c) * 0.001f;
}

std::vector<float> expert_values(int p, int e, std::int64_t rows, std::int64_t cols) {
  std::vector<float> v;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) v.push_back(value(p, e, r, c));
  return v;
}

// tiny_hf() as a Qwen3-MoE: its MLP tensors replaced by the experts, per expert or fused.
TinyHf tiny_moe(bool fused) {
  TinyHf hf = tiny_hf();
  hf.config["model_type"] = "qwen3_moe";
  hf.config["num_experts"] = kExperts;
  hf.config["num_experts_per_tok"] = 2;
  hf.config["moe_intermediate_size"] = kExpertFfn;
  hf.config["norm_topk_prob"] = true;
  hf.config["head_dim"] = 16;
  std::erase_if(hf.tensors, [](const StEntry& t) { return t.name.find(".mlp.") != std::string::npos; });
  const std::int64_t dim = 64, f = kExpertFfn;
  for (int l = 0; l < 2; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    hf.tensors.push_back(
        {p + "mlp.gate.weight", "F32", {kExperts, dim}, f32_bytes(expert_values(9, l, kExperts, dim))});
    for (const char* norm : {"self_attn.q_norm.weight", "self_attn.k_norm.weight"})
      hf.tensors.push_back({p + norm, "F32", {16}, f32_bytes(std::vector<float>(16, 1.0f))});
    if (fused) {
      std::vector<float> gate_up, down;
      for (int e = 0; e < kExperts; ++e) {
        for (int proj : {0, 1}) {
          const auto v = expert_values(proj, e, f, dim);
          gate_up.insert(gate_up.end(), v.begin(), v.end());
        }
        const auto v = expert_values(2, e, dim, f);
        down.insert(down.end(), v.begin(), v.end());
      }
      hf.tensors.push_back({p + "mlp.experts.gate_up_proj", "F32", {kExperts, 2 * f, dim}, f32_bytes(gate_up)});
      hf.tensors.push_back({p + "mlp.experts.down_proj", "F32", {kExperts, dim, f}, f32_bytes(down)});
      continue;
    }
    for (int e = 0; e < kExperts; ++e) {
      const std::string x = p + "mlp.experts." + std::to_string(e) + ".";
      hf.tensors.push_back({x + "gate_proj.weight", "F32", {f, dim}, f32_bytes(expert_values(0, e, f, dim))});
      hf.tensors.push_back({x + "up_proj.weight", "F32", {f, dim}, f32_bytes(expert_values(1, e, f, dim))});
      hf.tensors.push_back({x + "down_proj.weight", "F32", {dim, f}, f32_bytes(expert_values(2, e, dim, f))});
    }
  }
  return hf;
}

float element(const model::WeightTensor& t, std::int64_t r, std::int64_t c) {
  std::vector<float> row(static_cast<std::size_t>(t.cols));
  model::dequantize_row(t.dtype, t.row(r), row.data(), t.cols);
  return row[static_cast<std::size_t>(c)];
}

std::string load_error(const TinyHf& hf) {
  const auto folder = temp_dir("moe-bad");
  write_hf_folder(folder, hf);
  try {
    formats::load_model(folder);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "(loaded)";
}

TEST(MoeCheckpoint, PerExpertAndFusedLayoutsStackTheSameExperts) {
  for (const bool fused : {false, true}) {
    const auto folder = temp_dir(fused ? "moe-fused" : "moe-per-expert");
    write_hf_folder(folder, tiny_moe(fused));
    const auto m = formats::load_model(folder);
    const model::Experts& e = m->config().experts;
    EXPECT_EQ(e.count, kExperts);
    EXPECT_EQ(e.active, 2);
    EXPECT_EQ(e.ffn_dim, kExpertFfn);
    EXPECT_TRUE(e.normalize);
    for (int layer : {0, 1}) {
      EXPECT_EQ(m->weight(WeightKind::moe_router, layer).rows, kExperts);
      for (const auto& [kind, proj, rows, cols] : {std::tuple{WeightKind::expert_gate, 0, kExpertFfn, 64},
                                                   std::tuple{WeightKind::expert_up, 1, kExpertFfn, 64},
                                                   std::tuple{WeightKind::expert_down, 2, 64, kExpertFfn}}) {
        const model::WeightTensor& t = m->weight(kind, layer);
        ASSERT_EQ(t.rows, std::int64_t{kExperts} * rows) << t.name;
        ASSERT_EQ(t.cols, cols) << t.name;
        for (int x = 0; x < kExperts; ++x)
          for (const std::int64_t r : {std::int64_t{0}, std::int64_t{rows - 1}})
            EXPECT_EQ(element(t, x * rows + r, cols - 1), value(proj, x, r, cols - 1))
                << t.name << " expert " << x << " row " << r << (fused ? " (fused)" : "");
      }
    }
    EXPECT_EQ(model::Graph(m->config()).steps().size(), 1 + 2 * 17 + 2u);
  }
}

TEST(MoeCheckpoint, AMissingExpertOrOneTooManyIsNamed) {
  TinyHf missing = tiny_moe(false);
  std::erase_if(missing.tensors,
                [](const StEntry& t) { return t.name == "model.layers.1.mlp.experts.2.up_proj.weight"; });
  EXPECT_NE(load_error(missing).find("layer 1: expected expert_up of each of the 4 experts, found none for expert 2"),
            std::string::npos)
      << load_error(missing);
  TinyHf extra = tiny_moe(false);
  StEntry fifth = extra.tensors.back();
  fifth.name = "model.layers.1.mlp.experts.4.down_proj.weight";
  extra.tensors.push_back(fifth);
  EXPECT_NE(load_error(extra).find("expected an expert below the config's 4 experts, found expert 4"),
            std::string::npos)
      << load_error(extra);
  TinyHf wrong = tiny_moe(true);
  for (StEntry& t : wrong.tensors)
    if (t.name == "model.layers.0.mlp.experts.down_proj") t.shape = {kExperts, kExpertFfn, 64};
  EXPECT_NE(load_error(wrong).find("expected shape [4, 64, 24] for this config, found shape [4, 24, 64]"),
            std::string::npos)
      << load_error(wrong);
}

TEST(MoeCheckpoint, DenseLayersAndTheExpertsCountKeys) {
  TinyHf hf = tiny_moe(false);
  hf.config["mlp_only_layers"] = {1};
  std::erase_if(hf.tensors, [](const StEntry& t) {
    return t.name.starts_with("model.layers.1.mlp.experts.") || t.name == "model.layers.1.mlp.gate.weight";
  });
  const TinyHf dense_source = tiny_hf();
  for (const StEntry& t : dense_source.tensors)
    if (t.name.starts_with("model.layers.1.mlp.")) hf.tensors.push_back(t);
  const auto folder = temp_dir("moe-dense-layer");
  write_hf_folder(folder, hf);
  const auto m = formats::load_model(folder);
  EXPECT_EQ(m->config().experts.layers, (std::vector<bool>{true, false}));
  EXPECT_EQ(m->weight(WeightKind::ffn_gate, 1).rows, 96);
  TinyHf both = tiny_moe(false);
  both.config["num_local_experts"] = kExperts;
  EXPECT_NE(load_error(both).find("'num_local_experts': expected either num_experts or num_local_experts, found both"),
            std::string::npos)
      << load_error(both);
}

TEST(MoeReference, TopExpertsAscendByIdAndBreakTiesTowardTheLowerId) {
  Mat<double> logits(2, 5);
  logits << 0.1, 3.0, -1.0, 3.0, 2.5,  //
      1.0, 1.0, 1.0, 1.0, 1.0;
  Mat<double> ids;
  reference::top_experts<double>(logits, 3, 1, 1, 2, ids);
  EXPECT_EQ(ids.row(0), (Eigen::RowVector3d(1, 3, 4)));
  EXPECT_EQ(ids.row(1), (Eigen::RowVector3d(0, 1, 2)));
}

TEST(MoeReference, WeightsAreTheSoftmaxOverAllExpertsRenormalisedWhereAsked) {
  Mat<double> logits(1, 4), ids(1, 2);
  logits << 0.5, 2.0, -1.0, 1.0;
  ids << 1, 3;
  const double total = std::exp(0.5) + std::exp(2.0) + std::exp(-1.0) + std::exp(1.0);
  Mat<double> w;
  model::Experts experts;
  reference::expert_weights<double>(logits, ids, experts, w);
  EXPECT_NEAR(w(0, 0), std::exp(2.0) / total, 1e-15);
  EXPECT_NEAR(w(0, 1), std::exp(1.0) / total, 1e-15);
  experts.normalize = true;
  reference::expert_weights<double>(logits, ids, experts, w);
  EXPECT_NEAR(w(0, 0), std::exp(2.0) / (std::exp(2.0) + std::exp(1.0)), 1e-15);
  EXPECT_NEAR(w(0, 0) + w(0, 1), 1.0, 1e-15);
  ids(0, 1) = 4;
  EXPECT_THROW(reference::expert_weights<double>(logits, ids, experts, w), UsageError);
}

// Gemma 4's router: the renormalised top-k weights, each times its own expert's per_expert_scale.
TEST(MoeReference, EachWeightTimesItsExpertsLearnedScale) {
  Mat<double> logits(2, 4), ids(2, 2), w;
  logits << 0.5, 2.0, -1.0, 1.0, 1.0, 0.0, 3.0, 0.5;
  ids << 1, 3, 0, 2;
  const double scales[4] = {0.5, 1.5, 2.0, -0.25};
  model::Experts experts;
  experts.normalize = true, experts.expert_scales = true;
  reference::expert_weights<double>(logits, ids, experts, w, scales);
  const double first = std::exp(2.0) / (std::exp(2.0) + std::exp(1.0));
  EXPECT_NEAR(w(0, 0), 1.5 * first, 1e-15);
  EXPECT_NEAR(w(0, 1), -0.25 * (1 - first), 1e-15);
  const double second = std::exp(1.0) / (std::exp(1.0) + std::exp(3.0));
  EXPECT_NEAR(w(1, 0), 0.5 * second, 1e-15);
  EXPECT_NEAR(w(1, 1), 2.0 * (1 - second), 1e-15);
}

// DeepSeek-V3's noaux_tc as transformers' Glm4MoeTopkRouter computes it: the choice on sigmoid
// scores plus the selection bias, limited to the groups whose two best sum highest; the weights
// are the unbiased sigmoids, renormalised, times the routed scale.
TEST(MoeReference, SigmoidRoutingChoosesOnBiasedScoresWithinTheBestGroups) {
  Mat<double> logits(1, 6);
  logits << 2.0, -1.0, 0.5, 0.4, 1.5, -3.0;
  const double bias[6] = {0.0, 0.0, 0.0, 0.0, -0.9, 0.0};
  Mat<double> scores, ids, w;
  reference::expert_scores<double>(logits, model::RouterScore::sigmoid, bias, scores);
  const auto sigmoid = [](double x) { return 1 / (1 + std::exp(-x)); };
  EXPECT_DOUBLE_EQ(scores(0, 4), sigmoid(1.5) - 0.9);
  reference::top_experts<double>(scores, 2, 1, 1, 2, ids);  // ungrouped: the bias moves expert 4 below 2 and 3
  EXPECT_EQ(ids.row(0), (Eigen::RowVector2d(0, 2)));
  // Three groups of two: {0, 1} sums 1.15, {2, 3} 1.22, {4, 5} -0.03; the best group alone holds 2 and 3.
  reference::top_experts<double>(scores, 2, 3, 1, 2, ids);
  EXPECT_EQ(ids.row(0), (Eigen::RowVector2d(2, 3)));
  // DeepSeek-V2's group_limited_greedy scores a group by its best: {0, 1} (0.88) beats {2, 3} (0.62).
  Mat<double> best_ids;
  reference::top_experts<double>(scores, 2, 3, 1, 1, best_ids);
  EXPECT_EQ(best_ids.row(0), (Eigen::RowVector2d(0, 1)));
  model::Experts experts;
  experts.score = model::RouterScore::sigmoid, experts.normalize = true, experts.scale = 2.5;
  reference::expert_weights<double>(logits, ids, experts, w);
  EXPECT_NEAR(w(0, 0), 2.5 * sigmoid(0.5) / (sigmoid(0.5) + sigmoid(0.4)), 1e-15);
  EXPECT_NEAR(w(0, 0) + w(0, 1), 2.5, 1e-15);
}

// PhiMoE's sparsemixer as transformers' sparsemixer computes it at inference: each chosen expert's
// softmax over the experts within 2 eps of its logit, relative to max(|s|, its logit); the second
// without the first.
TEST(MoeReference, TheSparsemixerWeighsEachChoiceOverTheExpertsNearIt) {
  Mat<double> logits(1, 5), ids(1, 2), w;
  logits << 2.0, 1.9, -0.5, 1.0, 1.5;
  ids << 0, 4;  // experts 0 (2.0, the first) and 4 (1.5)
  model::Experts experts;
  experts.active = 2, experts.sparsemixer = true, experts.mixer_eps = 0.1;
  reference::expert_weights<double>(logits, ids, experts, w);
  // Within 0.2 of 2.0 relative: 2.0 and 1.9 ((2 - 1.9) / 2 = 0.05); 1.5 is 0.25 away.
  EXPECT_NEAR(w(0, 0), 1 / (1 + std::exp(-0.1)), 1e-15);
  // Within 0.2 of 1.5, expert 0 left out: 1.9 (its own |s| the larger: -0.4 / 1.9), 1.5, and 1.0
  // is (1.5 - 1.0) / 1.5 = 0.33 away.
  EXPECT_NEAR(w(0, 1), 1 / (std::exp(0.4) + 1), 1e-15);
  logits(0, 4) = 2.5;  // now expert 4 is the first and expert 0 the second
  reference::expert_weights<double>(logits, ids, experts, w);
  EXPECT_NEAR(w(0, 1), 1 / (1 + std::exp(-0.5)), 1e-15);  // 2.5 and 2.0 ((2.5 - 2.0) / 2.5 = 0.2, not above)
  EXPECT_NEAR(w(0, 0), 1 / (1 + std::exp(-0.1)), 1e-15);  // 2.0 and 1.9, expert 4 left out
}

TEST(MoeReference, TheMixtureIsTheWeightedSumOfTheChosenExpertsFfn) {
  const int dim = 6, f = 5, count = 3;
  Mat<double> gate(count * f, dim), up(count * f, dim), down(count * dim, f), x(2, dim), ids(2, 2), weights(2, 2);
  std::iota(gate.data(), gate.data() + gate.size(), 0.0);
  gate = (gate.array() * 0.01).sin().matrix();
  up = (gate.array() * 1.7 + 0.3).cos().matrix();
  for (Eigen::Index i = 0; i < down.size(); ++i) down.data()[i] = std::sin(0.37 * static_cast<double>(i));
  for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = std::cos(0.91 * static_cast<double>(i));
  ids << 0, 2, 1, 2;
  weights << 0.25, 0.75, 0.6, 0.4;
  Mat<double> out;
  const reference::ExpertMatrices<double> experts{reference::ConstMatMap<double>(gate.data(), count * f, dim),
                                                  reference::ConstMatMap<double>(up.data(), count * f, dim),
                                                  reference::ConstMatMap<double>(down.data(), count * dim, f), f};
  reference::mixture<double>(x, ids, weights, experts, model::Block{}, false, reference::Storage::f32, out);
  for (int t = 0; t < 2; ++t) {
    Eigen::RowVectorXd want = Eigen::RowVectorXd::Zero(dim);
    for (int j = 0; j < 2; ++j) {
      const int e = static_cast<int>(ids(t, j));
      const Eigen::RowVectorXd g = x.row(t) * gate.middleRows(e * f, f).transpose();
      const Eigen::RowVectorXd u = x.row(t) * up.middleRows(e * f, f).transpose();
      const Eigen::RowVectorXd h = (g.array() / (1 + (-g.array()).exp()) * u.array()).matrix();
      want += weights(t, j) * (h * down.middleRows(e * dim, dim).transpose());
    }
    EXPECT_LT((out.row(t) - want).norm(), 1e-12 * want.norm()) << "row " << t;
  }
}

// A one-layer MoE config of 4 experts, 2 per token, for the arbiter.
model::ModelConfig arbiter_config() {
  model::ModelConfig c;
  c.n_layers = 1, c.dim = 64, c.n_heads = 4, c.n_kv_heads = 4, c.head_dim = 16, c.ffn_dim = 32, c.vocab = 16;
  c.experts = {4, 2, 32, true, {}};
  return c;
}

model::HostTensor tensor(std::int64_t rows, std::int64_t cols, std::vector<double> v) {
  model::HostTensor t(model::Scalar::f64, rows, cols);
  std::copy(v.begin(), v.end(), t.f64().begin());
  return t;
}

TEST(RoutingArbiter, SettlesANearTieWithTheTruthsChoiceAndLeavesAFarFlip) {
  const model::ModelConfig c = arbiter_config();
  // Row 0: experts 1 and 2 within 1e-4 of each other at the k-th place; row 1: 2.0 apart.
  const auto truth_logits = tensor(2, 4, {3.0, 1.0001, 1.0, -2.0, 3.0, 1.0, -1.0, -2.0});
  const auto floor_logits = tensor(2, 4, {3.0, 1.0001 - 3e-3, 1.0 + 3e-3, -2.0, 3.0, 1.0, -1.0, -2.0});
  const auto b_logits = tensor(2, 4, {3.0, 1.0, 1.0002, -2.0, 3.0, -1.5, -1.0, -2.0});
  bisect::RoutingArbiter arbiter(c, model::Precision::f16, true);
  arbiter.hold_router(0, truth_logits, &floor_logits, b_logits);
  const auto truth_ids = tensor(2, 2, {0, 1, 0, 1});
  const auto b_ids = tensor(2, 2, {0, 2, 0, 2});
  const std::vector<bisect::RowPlace> places = {{0, 7}, {0, 8}};
  const bisect::RoutingArbiter::Settled s = arbiter.settle(0, truth_ids, &truth_ids, b_ids, places);
  EXPECT_TRUE(s.b_changed);
  EXPECT_FALSE(s.floor_changed);
  EXPECT_EQ(s.b.at(0, 1), 1.0) << "the near tie continues with A's choice";
  EXPECT_EQ(s.b.at(1, 1), 2.0) << "the far flip stays B's";
  ASSERT_EQ(arbiter.flips().size(), 2u);
  const bisect::RoutingFlip& near = arbiter.flips()[0];
  EXPECT_TRUE(near.near_tie());
  EXPECT_EQ(near.position, 7);
  EXPECT_NEAR(near.margin, 1e-4, 1e-12);
  EXPECT_NEAR(near.noise, 3e-3, 1e-12);  // the floor's error, above f16's rounding of 3.0 (1.5e-3)
  EXPECT_EQ(near.ids_b, (std::vector<int>{0, 2}));
  const bisect::RoutingFlip& far = arbiter.flips()[1];
  EXPECT_FALSE(far.near_tie());
  EXPECT_NEAR(far.margin, 2.0, 1e-12);
  EXPECT_NE(far.text().find("layer 0 position 8: A chose experts 0,1, B 0,2"), std::string::npos) << far.text();
  EXPECT_TRUE(near.settled);
  EXPECT_FALSE(far.settled);

  bisect::RoutingArbiter recorder(c, model::Precision::f16, false);  // two dumps: flips recorded, nothing settled
  recorder.hold_router(0, truth_logits, nullptr, b_logits);
  const bisect::RoutingArbiter::Settled kept = recorder.settle(0, truth_ids, nullptr, b_ids, places);
  EXPECT_FALSE(kept.b_changed);
  EXPECT_EQ(kept.b.at(0, 1), 2.0);
  ASSERT_EQ(recorder.flips().size(), 2u);
  EXPECT_FALSE(recorder.flips()[0].settled);
  // Without a floor the noise is f16's rounding of the row's largest logit times sqrt(dim).
  EXPECT_NEAR(recorder.flips()[0].noise, 3.0 * std::ldexp(1.0, -11) * 8.0, 1e-12);
}

// An engine that writes an id naming no expert (100 of 4, -20, 1.5, NaN) made a fault whatever A's
// margin: never a near tie, never settled, and the comparison reads no value at that id.
TEST(RoutingArbiter, AnIdThatNamesNoExpertIsAFaultNotATie) {
  const model::ModelConfig c = arbiter_config();
  const auto logits =
      tensor(4, 4, {3.0, 1.0001, 1.0, -2.0, 3.0, 1.0001, 1.0, -2.0, 3.0, 1.0001, 1.0, -2.0, 3.0, 1.0001, 1.0, -2.0});
  bisect::RoutingArbiter arbiter(c, model::Precision::f16, true);
  arbiter.hold_router(0, logits, nullptr, logits);
  const auto truth_ids = tensor(4, 2, {0, 1, 0, 1, 0, 1, 0, 1});
  const auto b_ids = tensor(4, 2, {0, 100, -20, 1, 0, 1.5, 0, std::nan("")});
  const std::vector<bisect::RowPlace> places = {{0, 0}, {0, 1}, {0, 2}, {0, 3}};
  const bisect::RoutingArbiter::Settled s = arbiter.settle(0, truth_ids, nullptr, b_ids, places);
  EXPECT_FALSE(s.b_changed);
  ASSERT_EQ(arbiter.flips().size(), 4u);
  for (const bisect::RoutingFlip& f : arbiter.flips()) {
    EXPECT_TRUE(f.not_an_expert);
    EXPECT_FALSE(f.near_tie()) << f.text();
    EXPECT_EQ(f.ids_b.front(), -1) << f.text();
    EXPECT_NE(f.text().find("no expert's id"), std::string::npos) << f.text();
  }
  EXPECT_EQ(arbiter.flips()[0].logits.size(), 2u) << "experts 0 and 1 only";
}

TEST(MoeDumpConfig, TheExpertsRoundTripThroughTheModelConfigJson) {
  model::ModelConfig c = arbiter_config();
  c.n_layers = 3;
  c.experts.layers = {true, false, true};
  const model::ModelConfig back = dumps::config_from_json(model::to_json(c), "dump.h5");
  EXPECT_EQ(back.experts, c.experts);
  EXPECT_EQ(model::op_width(back, {model::Op::moe_router, 0}), 4);
  EXPECT_EQ(model::op_width(back, {model::Op::moe_ids, 0}), 2);
  nlohmann::json bad = model::to_json(c);
  bad["experts"]["layers"] = {true};
  EXPECT_THROW(dumps::config_from_json(bad, "dump.h5"), FormatError);
  c.experts.layers = {};
  c.experts.beside_dense = c.experts.expert_scales = true;  // Gemma 4's MoE block
  const model::ModelConfig beside = dumps::config_from_json(model::to_json(c), "dump.h5");
  EXPECT_EQ(beside.experts, c.experts);
  EXPECT_EQ(model::Graph(beside).steps().size(), model::Graph(c).steps().size());
  bad = model::to_json(c);
  bad["experts"]["beside_dense"] = "yes";
  EXPECT_THROW(dumps::config_from_json(bad, "dump.h5"), FormatError);
}

// What else shapes the graph reads back too: a dump alone gives the ops its model ran.
TEST(DumpConfig, LayerFlagsChunksTemperatureAndLatentAttentionRoundTrip) {
  model::ModelConfig c = arbiter_config();
  c.n_layers = 3;
  c.experts.layers = {false, true, true};
  c.rope_layers = {true, false, true};
  c.attention_chunk = 6;
  c.chunked_layers = {true, false, true};
  c.query_temperature = {.beta = 0.1, .length = 8, .offset = 1, .nope_layers = true};
  const model::ModelConfig back = dumps::config_from_json(model::to_json(c), "dump.h5");
  EXPECT_EQ(back.rope_layers, c.rope_layers);
  EXPECT_EQ(back.attention_chunk, 6);
  EXPECT_EQ(back.chunked_layers, c.chunked_layers);
  EXPECT_EQ(back.query_temperature, c.query_temperature);
  EXPECT_EQ(model::Graph(back).steps().size(), model::Graph(c).steps().size());
  model::ModelConfig mla = arbiter_config();
  mla.head_dim = 12, mla.n_kv_heads = mla.n_heads, mla.rotary_dim = 4;
  mla.mla = {.q_rank = 6, .kv_rank = 5, .nope_dim = 8, .rope_dim = 4, .v_dim = 3, .biases = true, .norm_eps = 1e-5};
  const model::ModelConfig latent = dumps::config_from_json(model::to_json(mla), "dump.h5");
  EXPECT_EQ(latent.mla, mla.mla);
  EXPECT_EQ(model::op_width(latent, {model::Op::attn, 0}), mla.n_heads * 3);
  nlohmann::json bad = model::to_json(mla);
  bad["mla"].erase("norm_eps");
  EXPECT_THROW(dumps::config_from_json(bad, "dump.h5"), FormatError);
  model::ModelConfig shaped = arbiter_config();  // Gemma 4's
  shaped.n_layers = 2;
  shaped.experts = {};
  shaped.layer_shapes = {{shaped.n_kv_heads, shaped.head_dim}, {1, 2 * shaped.head_dim}};
  shaped.values_from_keys = {false, true};
  shaped.kv_sources = {0, 1};
  shaped.layer_inputs = {.dim = 4, .vocab = 9};
  shaped.ffn_dims = {shaped.ffn_dim, 2 * shaped.ffn_dim};
  shaped.block.v_norm = shaped.block.layer_scale = true;
  const model::ModelConfig gemma4 = dumps::config_from_json(model::to_json(shaped), "dump.h5");
  EXPECT_EQ(gemma4.layer_shapes, shaped.layer_shapes);
  EXPECT_EQ(gemma4.values_from_keys, shaped.values_from_keys);
  EXPECT_EQ(gemma4.kv_sources, shaped.kv_sources);
  EXPECT_EQ(gemma4.layer_inputs, shaped.layer_inputs);
  EXPECT_EQ(gemma4.ffn_dims, shaped.ffn_dims);
  EXPECT_EQ(model::op_width(gemma4, {model::Op::ffn_act, 1}), 2 * shaped.ffn_dim);
  EXPECT_EQ(gemma4.block, shaped.block);
  EXPECT_EQ(model::op_width(gemma4, {model::Op::rope_k, 1}), 2 * shaped.head_dim);
  nlohmann::json no_heads = model::to_json(shaped);
  no_heads["layer_shapes"][1]["n_kv_heads"] = 0;
  EXPECT_THROW(dumps::config_from_json(no_heads, "dump.h5"), FormatError);
  nlohmann::json bad_widths = model::to_json(shaped);
  bad_widths["ffn_dims"] = {4, -1};
  EXPECT_THROW(dumps::config_from_json(bad_widths, "dump.h5"), FormatError);
}

}  // namespace
}  // namespace tapdiff::testing
