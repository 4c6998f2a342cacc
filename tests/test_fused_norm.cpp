// The residual adds run with the norms after them (Kernels::add_rms_norm, norm=auto) against every
// add and norm in a dispatch of its own (norm=apart): the same bits in every op of whole runs, with
// f32 and f16 activations and rows read 8, 4 and 1 values at a time; and a norm fed a value of its
// own between the two steps normalises that value, not the add's.
#include <gtest/gtest.h>

#include <span>
#include <string>
#include <vector>

#include "formats/load_model.h"
#include "formats/synth.h"
#include "model/graph.h"
#include "model/memory_tap.h"
#include "model/runner.h"
#include "model/weights.h"
#include "tests/reference_fixtures.h"
#include "tests/test_support.h"
#include "tests/vulkan_fixtures.h"

namespace tapdiff {
namespace {

using model::Op;
using model::TensorId;

// A 2-layer synth model of residual width `dim` (4 heads of 16).
std::filesystem::path model_of_width(int dim) {
  formats::SynthOptions o;
  o.config = formats::synth_shape("tiny");
  o.config.dim = dim;
  o.config.n_layers = 2;
  return testing::synth_model_path(o, "fused-norm-dim" + std::to_string(dim));
}

gpu::VulkanEngineOptions options_of(bool f16, const std::string& norm) {
  gpu::VulkanEngineOptions options;
  options.f16 = f16;
  options.kernels = "norm=" + norm;
  return options;
}

struct Width {
  int dim;
  const char* reads;  // how rms_norm.comp reads a row of f16 activations
};

class FusedNorm : public ::testing::TestWithParam<Width> {};

// A 37-token prompt in chunks of 16 (the third a short one), then 3 decode steps: every op of
// every chunk and step, fused and apart, f32 and f16 activations.
TEST_P(FusedNorm, EveryOpHasTheBitsOfTheAddAndNormApart) {
  const auto m = formats::load_model(model_of_width(GetParam().dim));
  const model::Graph graph(m->config());
  const auto tokens = testing::synth_prompt(37, m->config().vocab, 3);
  for (const bool f16 : {false, true}) {
    SCOPED_TRACE(f16 ? "f16 activations" : "f32 activations");
    const auto fused = testing::validated_vulkan_engine(*m, options_of(f16, "auto"));
    const auto apart = testing::validated_vulkan_engine(*m, options_of(f16, "apart"));
    model::RunOptions run;
    run.chunk = 16;
    run.generate = 4;
    model::MemoryTap fused_tap, apart_tap;
    const model::RunResult fused_run = model::run_sequence(*fused, graph, tokens, run, fused_tap);
    const model::RunResult apart_run = model::run_sequence(*apart, graph, tokens, run, apart_tap);
    EXPECT_EQ(fused_run.generated, apart_run.generated);
    for (const model::Step& step : graph.steps()) {
      const TensorId id = step.output();
      EXPECT_TRUE(testing::same_bits(fused_tap.get(id), apart_tap.get(id))) << model::to_string(id);
    }
    const std::string suffix = f16 ? ".f16" : "";
    EXPECT_EQ(fused->kernel(Op::attn_residual), "add+rms_norm-tree" + suffix);
    EXPECT_EQ(fused->kernel(Op::ffn_norm), "add+rms_norm-tree" + suffix);
    // layer 0's attn_norm reads the embedding, the later ones a residual add
    EXPECT_EQ(fused->kernel(Op::attn_norm), "rms_norm-tree" + suffix + ", add+rms_norm-tree" + suffix);
    EXPECT_EQ(fused->kernel(Op::final_norm), "add+rms_norm-tree" + suffix);
    EXPECT_EQ(apart->kernel(Op::ffn_residual), "add" + suffix);
    EXPECT_EQ(apart->kernel(Op::ffn_norm), "rms_norm-tree" + suffix);
    testing::expect_clean(*fused);
    testing::expect_clean(*apart);
  }
}

INSTANTIATE_TEST_SUITE_P(Widths, FusedNorm,
                         ::testing::Values(Width{64, "octets"}, Width{68, "quads"}, Width{66, "values"}),
                         [](const ::testing::TestParamInfo<Width>& p) { return std::string(p.param.reads); });

// Runs the chunk's steps up to layer 0's attn_residual, writes `fed` (when given) as that add's
// output, runs ffn_norm and returns what it wrote.
model::HostTensor norm_after(gpu::VulkanEngine& engine, const model::Graph& graph,
                             const std::vector<std::int32_t>& tokens, const model::HostTensor* fed) {
  engine.reset();
  engine.begin_chunk(tokens, {0, 0, static_cast<int>(tokens.size()), false});
  for (const model::Step& step : graph.steps()) {
    if (step.op == Op::ffn_norm) {
      if (fed != nullptr) engine.write(step.inputs[0], *fed);
      engine.execute(step, {});
      break;
    }
    engine.execute(step, {});
  }
  model::HostTensor out = engine.read({Op::ffn_norm, 0});
  engine.end_chunk();
  return out;
}

TEST(FusedNormWrite, ANormFedItsOwnInputNormalisesThatInput) {
  const auto m = formats::load_model(model_of_width(64));
  const model::Graph graph(m->config());
  const auto tokens = testing::synth_prompt(9, m->config().vocab, 5);
  const auto fused = testing::validated_vulkan_engine(*m, options_of(false, "fused"));
  const auto apart = testing::validated_vulkan_engine(*m, options_of(false, "apart"));
  model::HostTensor fed(model::Scalar::f32, static_cast<std::int64_t>(tokens.size()), m->config().dim);
  const std::span<float> values = fed.f32();
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
  const model::HostTensor own = norm_after(*fused, graph, tokens, nullptr);
  const model::HostTensor fused_fed = norm_after(*fused, graph, tokens, &fed);
  const model::HostTensor apart_fed = norm_after(*apart, graph, tokens, &fed);
  EXPECT_TRUE(testing::same_bits(fused_fed, apart_fed));
  EXPECT_FALSE(testing::same_bits(fused_fed, own));
  // the first run's norm ran with the add, the fed ones on their own
  EXPECT_EQ(fused->kernel(Op::ffn_norm), "add+rms_norm-tree, rms_norm-tree");
  testing::expect_clean(*fused);
  testing::expect_clean(*apart);
}

}  // namespace
}  // namespace tapdiff
