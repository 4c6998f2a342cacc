// The in-process bisection: no false positive on correct engines, and an engine with one wrong op
// is pinned to that op, position, head and channel, with the symptom, the culprit and the tokens.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "bisect/drive/bisect.h"
#include "bisect/judge/diagnosis.h"
#include "formats/load_model.h"
#include "formats/synth.h"
#include "gpu/vulkan_engine.h"
#include "reference/cpu_engine.h"
#include "tests/reference_fixtures.h"
#include "tests/test_support.h"

namespace tapdiff::testing {
namespace {

using bisect::BisectOptions;
using bisect::BisectResult;
using model::Op;
using model::TensorId;

// A correct f32 engine with one planted error: after computing `target`, adds `delta` to one element
// (position, column) in the engine's own buffer, so later ops read it, as a kernel bug would.
class PerturbedEngine final : public model::Engine {
 public:
  PerturbedEngine(std::unique_ptr<model::Engine> inner, TensorId target, int position, int col, double delta)
      : inner_(std::move(inner)), target_(target), position_(position), col_(col), delta_(delta) {}
  std::string name() const override { return "perturbed"; }
  std::string device() const override { return inner_->device(); }
  std::string compute_dtype() const override { return inner_->compute_dtype(); }
  std::string kernel(Op op) const override { return inner_->kernel(op); }
  model::Scalar scalar() const override { return inner_->scalar(); }
  void reset() override { inner_->reset(); }
  void begin_chunk(std::span<const std::int32_t> tokens, const model::ChunkInfo& chunk) override {
    chunk_ = chunk;
    inner_->begin_chunk(tokens, chunk);
  }
  void execute(const model::Step& step, const model::Deliver& deliver) override {
    inner_->execute(step, {});
    const int row = position_ - chunk_.first_pos;
    if (step.output() == target_ && row >= 0 && row < chunk_.rows) {
      model::HostTensor value = inner_->read(target_);
      value.f32()[static_cast<std::size_t>(row * value.cols() + col_)] += static_cast<float>(delta_);
      inner_->write(target_, value);
    }
    if (deliver) deliver(inner_->read(step.output()));
  }
  void end_chunk() override { inner_->end_chunk(); }
  model::HostTensor read(const TensorId& id) override { return inner_->read(id); }
  void write(const TensorId& id, const model::HostTensor& v) override { inner_->write(id, v); }
  model::HostTensor read_kv(int layer, bool value) override { return inner_->read_kv(layer, value); }
  void write_kv(int layer, bool value, const model::HostTensor& rows) override { inner_->write_kv(layer, value, rows); }

 private:
  std::unique_ptr<model::Engine> inner_;
  TensorId target_;
  int position_, col_;
  double delta_;
  model::ChunkInfo chunk_;
};

std::unique_ptr<model::Engine> reference(const model::Model& m, model::Scalar scalar) {
  return reference::make_cpu_engine(m, exact_options(scalar));
}

struct Bisection {
  std::unique_ptr<model::Model> model;
  BisectResult result;
  std::vector<bisect::Diagnosis> diagnoses;
};

Bisection bisect_with(const std::string& shape, int prompt_len, int chunk, int generate,
                      const std::function<std::unique_ptr<model::Engine>(const model::Model&)>& make_b) {
  Bisection out;
  out.model = formats::load_model(synth_model_path(shape));
  const auto truth = reference(*out.model, model::Scalar::f64);
  const auto floor = reference(*out.model, model::Scalar::f32);
  const auto b = make_b(*out.model);
  BisectOptions options;
  options.chunk = chunk;
  options.generate = generate;
  const auto prompt = synth_prompt(prompt_len, out.model->config().vocab, 7);
  out.result = bisect::run_bisect(out.model->config(), {*truth, floor.get(), *b}, prompt, options);
  out.diagnoses = bisect::diagnose(out.result);
  return out;
}

bool has_code(const std::vector<bisect::Diagnosis>& d, const std::string& code) {
  return std::any_of(d.begin(), d.end(),
                     [&](const bisect::Diagnosis& x) { return model::diagnosis_name(x.code) == code; });
}

TEST(Bisect, ReferenceF32AgainstF64MatchesChunkedWithGeneration) {
  const Bisection r =
      bisect_with("small", 150, 64, 4, [](const model::Model& m) { return reference(m, model::Scalar::f32); });
  EXPECT_TRUE(r.result.match()) << r.result.run.ops[*r.result.run.first].violations.front().text();
  EXPECT_EQ(r.result.run.alignment.rows.size(), 153u);  // 150 prompt rows + 3 decode steps
  EXPECT_EQ(r.result.run.ops.size(), r.model->config().n_layers * 15u + 3u);
  EXPECT_TRUE(r.result.local.empty());
  EXPECT_FALSE(r.result.culprit);
  EXPECT_EQ(r.result.tokens.a, r.result.tokens.b);
  EXPECT_EQ(r.result.tokens.a.size(), 4u);
  EXPECT_FALSE(r.result.tokens.first_mismatch_step);
  // Calibrated: each op's bound is k times its measured floor (here B is the floor engine: error == floor).
  for (const auto& op : r.result.run.ops) EXPECT_NE(op.tolerance.source.find("calibrated"), std::string::npos);
}

TEST(Bisect, VulkanF32MatchesOnLavapipe) {
  const Bisection r = bisect_with(
      "tiny", 40, 16, 3, [](const model::Model& m) { return gpu::make_vulkan_engine(m, gpu::VulkanEngineOptions{}); });
  ASSERT_TRUE(r.result.match()) << r.result.run.ops[*r.result.run.first].violations.front().text();
  EXPECT_EQ(r.result.tokens.a, r.result.tokens.b);
  EXPECT_EQ(r.result.run.b.metadata.engine, "vulkan");
}

TEST(Bisect, APlantedErrorIsTheCulpritAtItsPositionHeadAndChannel) {
  const TensorId target{Op::rope_q, 1};
  const int position = 70, head = 2, channel = 5;
  Bisection r = bisect_with("small", 100, 32, 2, [&](const model::Model& m) {
    const int col = head * m.config().head_dim + channel;
    return std::make_unique<PerturbedEngine>(reference(m, model::Scalar::f32), target, position, col, 0.5);
  });
  const BisectResult& res = r.result;
  ASSERT_FALSE(res.match());
  const auto& first = res.run.ops[*res.run.first];
  EXPECT_EQ(first.id, target);
  EXPECT_EQ(first.first_bad_row.position, position);
  EXPECT_EQ(first.first_bad_row.chunk_b, position / 32);
  ASSERT_TRUE(res.culprit);
  const auto& culprit = res.local[*res.culprit];
  EXPECT_EQ(culprit.id, target);
  EXPECT_EQ(culprit.worst.position, position);
  EXPECT_EQ(culprit.worst.head, head);
  EXPECT_EQ(culprit.worst.channel, channel);
  EXPECT_TRUE(res.symptom_is_culprit());
  // The forced scan stops at the symptom's chunk, and every op before the culprit is locally clean.
  EXPECT_EQ(res.local_rows.back().position, 95);
  for (std::size_t i = 0; i < *res.culprit; ++i) EXPECT_TRUE(res.local[i].pass()) << model::to_string(res.local[i].id);
  // Later ops inherit: attn of layer 1 is past tolerance end to end, but not on A's inputs.
  const auto attn = std::find_if(res.run.ops.begin(), res.run.ops.end(), [](const auto& op) {
    return op.id == TensorId{Op::attn, 1};
  });
  EXPECT_FALSE(attn->pass());
  EXPECT_TRUE(res.local[static_cast<std::size_t>(attn - res.run.ops.begin())].pass());
  EXPECT_TRUE(has_code(r.diagnoses, "some-heads"));
}

// --layers-first: on a clean run only the layer outputs and updates are compared (embed, each
// o_proj, ffn_down and ffn_residual, final_norm, logits); with a planted fault the free run is repeated with every op,
// and the symptom and culprit are those of the plain bisection. (Not rope-off-by-one: shifting q and k alike leaves
// every attention score, so every layer output, as it was.)
TEST(Bisect, LayersFirstComparesLayerOutputsThenEveryOpOnADivergence) {
  const auto m = formats::load_model(synth_model_path("tiny"));
  const auto truth = reference(*m, model::Scalar::f64);
  const auto floor = reference(*m, model::Scalar::f32);
  const auto prompt = synth_prompt(40, m->config().vocab, 5);
  BisectOptions options;
  options.chunk = 16;
  options.generate = 2;
  options.layers_first = true;
  gpu::VulkanEngineOptions clean_options;
  const auto clean = gpu::make_vulkan_engine(*m, clean_options);
  const BisectResult match = bisect::run_bisect(m->config(), {*truth, floor.get(), *clean}, prompt, options);
  EXPECT_TRUE(match.match());
  EXPECT_TRUE(match.layers_only);
  EXPECT_EQ(match.run.ops.size(), static_cast<std::size_t>(3 * m->config().n_layers + 3));

  gpu::VulkanEngineOptions faulty;
  faulty.inject = "gqa-head-map@1";
  const auto b = gpu::make_vulkan_engine(*m, faulty);
  const BisectResult layers_first = bisect::run_bisect(m->config(), {*truth, floor.get(), *b}, prompt, options);
  options.layers_first = false;
  const BisectResult plain = bisect::run_bisect(m->config(), {*truth, floor.get(), *b}, prompt, options);
  ASSERT_FALSE(layers_first.match());
  EXPECT_FALSE(layers_first.layers_only);
  EXPECT_EQ(layers_first.run.ops.size(), plain.run.ops.size());
  ASSERT_TRUE(layers_first.culprit && plain.culprit);
  EXPECT_EQ(layers_first.run.ops[*layers_first.run.first].id, plain.run.ops[*plain.run.first].id);
  EXPECT_EQ(layers_first.local[*layers_first.culprit].id, (TensorId{Op::attn, 1}));
}

// A wrong attention update far smaller than the stream: 4 residual channels 30 times the others
// carry most of its energy, so RoPE positions restarting at the second chunk move layer 1's output
// by NMSE ~2e-7, under f16's 1e-4, while the update itself (o_proj) is off by ~1e-3. Judging the
// layer outputs alone, --layers-first said "match".
TEST(Bisect, LayersFirstJudgesWhatEachBlockAddsNotOnlyTheStream) {
  formats::SynthOptions synth;
  synth.config = formats::synth_shape("tiny");
  synth.outlier_channels = 4;
  const auto m = formats::load_model(synth_model_path(synth, "synth-tiny-outliers"));
  const auto truth = reference(*m, model::Scalar::f64);
  BisectOptions options;
  options.chunk = 16;
  options.layers_first = true;
  options.calibration = std::nullopt;
  options.precision = model::Precision::f16;
  gpu::VulkanEngineOptions faulty;
  faulty.f16 = true;
  faulty.inject = "rope-chunk-reset@1";
  const auto b = gpu::make_vulkan_engine(*m, faulty);
  const BisectResult r =
      bisect::run_bisect(m->config(), {*truth, nullptr, *b}, synth_prompt(48, m->config().vocab, 3), options);
  ASSERT_FALSE(r.match());
  EXPECT_FALSE(r.layers_only);
  const auto find = [&](TensorId id) {
    return *std::find_if(r.run.ops.begin(), r.run.ops.end(), [&](const bisect::OpResult& o) { return o.id == id; });
  };
  EXPECT_TRUE(find({Op::ffn_residual, 1}).pass());  // the layer output alone: diluted
  EXPECT_FALSE(find({Op::o_proj, 1}).pass());
  ASSERT_TRUE(r.culprit);
  EXPECT_EQ(r.local[*r.culprit].id, (TensorId{Op::rope_q, 1}));
}

TEST(Bisect, AnErrorInTheKvPathShowsInAttentionOfTheNextChunk) {
  // rope_k of layer 0 perturbed at position 10: the cache row it writes is read by every later row.
  const TensorId target{Op::rope_k, 0};
  Bisection r = bisect_with("small", 64, 16, 0, [&](const model::Model& m) {
    return std::make_unique<PerturbedEngine>(reference(m, model::Scalar::f32), target, 10, 3, 1.0);
  });
  ASSERT_FALSE(r.result.match());
  ASSERT_TRUE(r.result.culprit);
  EXPECT_EQ(r.result.local[*r.result.culprit].id, target);
  EXPECT_EQ(r.result.local[*r.result.culprit].first_bad_row.position, 10);
}

TEST(Bisect, TokenImpactNamesTheFirstDifferentStepWithTopK) {
  // A large error in the logits of the last prompt row changes the next token.
  const int n = 30;
  Bisection r = bisect_with("tiny", n, 0, 3, [&](const model::Model& m) {
    return std::make_unique<PerturbedEngine>(reference(m, model::Scalar::f32),
                                             TensorId{Op::logits, m.config().n_layers}, n - 1, 11, 1e3);
  });
  const auto& t = r.result.tokens;
  ASSERT_TRUE(t.first_mismatch_step);
  EXPECT_EQ(*t.first_mismatch_step, 0);
  EXPECT_EQ(t.b.front(), 11);
  EXPECT_EQ(t.top_b.front().id, 11);
  EXPECT_NE(t.top_a.front().id, 11);
  EXPECT_EQ(t.a.size(), 3u);
  EXPECT_EQ(t.b.size(), 3u);  // B's own generation after it parted
  ASSERT_TRUE(r.result.culprit);
  EXPECT_EQ(r.result.local[*r.result.culprit].id.op, Op::logits);
}

TEST(BisectCli, MatchThroughTheBinaryWithJsonAndDumps) {
  const auto dir = temp_dir("bisect_cli");
  const auto res = run_tapdiff(
      "bisect --model synth:tiny --tokens 1,5,9,200,31,7,7,8,100,42 --chunk 4 --generate 2 "
      "--json '" +
      (dir / "r.json").string() + "' --html '" + (dir / "r.html").string() + "' --dump-dir '" + (dir / "d").string() +
      "'");
  ASSERT_EQ(res.exit_code, 0) << res.output;
  std::ifstream in(dir / "r.json");
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["verdict"], "match");
  EXPECT_TRUE(j["first"].is_null());
  EXPECT_TRUE(j["culprit"].is_null());
  EXPECT_EQ(j["tokens"]["a"], j["tokens"]["b"]);
  EXPECT_EQ(j["runs"]["b"]["engine"], "vulkan");
  EXPECT_TRUE(std::filesystem::exists(dir / "r.html"));
  // The kept dumps compare the same way offline.
  const auto cmp =
      run_tapdiff("compare '" + (dir / "d" / "a.h5").string() + "' '" + (dir / "d" / "b.h5").string() + "'");
  EXPECT_EQ(cmp.exit_code, 0) << cmp.output;
}

TEST(BisectCli, AVulkanF32TruthFindsAPlantedFaultOfAnF16Engine) {
  // The truth on the GPU (for models whose f64 passes take the CPU too long): a clean f16 engine
  // matches it, a planted fault is the culprit at its layer and op.
  const auto dir = temp_dir("bisect_gpu_truth");
  const std::string common =
      "bisect --model synth:tiny --engine-a vulkan --dtype f16 --chunk 8 --generate 2 "
      "--tokens 1,5,9,200,31,7,7,8,100,42,17,3,99,250,64,12,5,5,400,301 ";
  const auto clean = run_tapdiff(common + "--json '" + (dir / "clean.json").string() + "'");
  ASSERT_EQ(clean.exit_code, 0) << clean.output;
  std::ifstream clean_in(dir / "clean.json");
  const auto c = nlohmann::json::parse(clean_in);
  EXPECT_EQ(c["runs"]["a"]["engine"], "vulkan");
  EXPECT_EQ(c["runs"]["a"]["compute_dtype"], "f32");
  EXPECT_EQ(c["runs"]["b"]["compute_dtype"], "f16");

  const auto faulty = run_tapdiff(common + "--inject gqa-head-map@1 --json '" + (dir / "fault.json").string() + "'");
  ASSERT_EQ(faulty.exit_code, 1) << faulty.output;
  std::ifstream fault_in(dir / "fault.json");
  const auto f = nlohmann::json::parse(fault_in);
  ASSERT_TRUE(f["culprit"].is_object()) << f.dump(2);
  EXPECT_EQ(f["culprit"]["layer"], 1);
  EXPECT_EQ(f["culprit"]["op"], "attn");
}

TEST(BisectCli, BadInputExitsWith2) {
  auto res = run_tapdiff("bisect --model synth:tiny --tokens 1,2,3 --engine-a cuda");
  EXPECT_EQ(res.exit_code, 2);
  EXPECT_NE(res.output.find("engine A is the truth"), std::string::npos) << res.output;
  res = run_tapdiff("bisect --model synth:tiny --tokens 1,2,3 --engine-a vulkan --dtype f32");
  EXPECT_EQ(res.exit_code, 2);
  EXPECT_NE(res.output.find("no truth for a B in --dtype f32"), std::string::npos) << res.output;
  res = run_tapdiff("bisect --model synth:tiny --tokens 1,2,3 --tolerances /nonexistent.toml");
  EXPECT_EQ(res.exit_code, 2) << res.output;
  res = run_tapdiff("bisect --model synth:tiny --tokens 1,999999");
  EXPECT_EQ(res.exit_code, 2) << res.output;
}

}  // namespace
}  // namespace tapdiff::testing
