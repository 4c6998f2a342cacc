// The Vulkan engine in bf16 (--dtype bf16: bf16 weights and activations held in f32 words, f32
// arithmetic) running whole models: every op output a bf16 value and as far from the exact answer
// as the reference's bf16 emulation is (op by op on the same inputs: test_vulkan_ops.cpp, Bf16);
// `bisect` of it against that emulation.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstdio>

#include "formats/load_model.h"
#include "model/graph.h"
#include "model/memory_tap.h"
#include "model/runner.h"
#include "tests/reference_fixtures.h"
#include "tests/test_support.h"
#include "tests/vulkan_fixtures.h"

namespace tapdiff::testing {
namespace {

using model::Op;

class VulkanBf16 : public ::testing::TestWithParam<std::string> {};

TEST_P(VulkanBf16, EveryOpIsABf16ValueAsFarFromTheExactAnswerAsTheEmulation) {
  const auto m = formats::load_model(synth_model_path("small", GetParam()));
  const auto tokens = synth_prompt(40, m->config().vocab, 23);
  gpu::VulkanEngineOptions options;
  options.bf16 = true;
  const auto engine = validated_vulkan_engine(*m, options);
  EXPECT_EQ(engine->compute_dtype(), "bf16");
  const model::Graph graph(m->config());
  model::MemoryTap tap;
  model::run_sequence(*engine, graph, tokens, {/*chunk=*/16, /*generate=*/3}, tap);
  EXPECT_EQ(engine->kernel(Op::q_proj).find(".bf16/"), engine->kernel(Op::q_proj).find('.'))
      << engine->kernel(Op::q_proj);
  const auto emulated = run_reference(*m, tokens, {model::Precision::bf16, 0}, 16, 3);
  const auto exact = run_reference(*m, tokens, model::Scalar::f64, 16, 3);
  int identical = 0;
  for (const auto& step : graph.steps()) {
    const model::HostTensor& b = tap.get(step.output());
    for (float v : b.f32())
      ASSERT_EQ(std::bit_cast<std::uint32_t>(v) & 0xFFFFu, 0u) << model::to_string(step.output()) << ": " << v;
    // Running freely, a sum in another order moves a value across a rounding boundary now and then,
    // and the runs drift apart as two draws of bf16's noise: each as far from the exact answer.
    const model::HostTensor& truth = exact->tap.get(step.output());
    const double ratio = nmse(truth, b) / nmse(truth, emulated->tap.get(step.output()));
    if (step.op != Op::embed) {
      EXPECT_GT(ratio, 0.5) << model::to_string(step.output());
      EXPECT_LT(ratio, 2.0) << model::to_string(step.output());
    }
    identical += nmse(emulated->tap.get(step.output()), b) == 0 ? 1 : 0;
  }
  EXPECT_GE(identical, 1) << "not one op equal to the emulation's";
  std::printf("%s weights: %d of %zu ops equal to the emulation's\n", GetParam().c_str(), identical,
              graph.steps().size());
  expect_clean(*engine);
}

INSTANTIATE_TEST_SUITE_P(Weights, VulkanBf16, ::testing::Values("f32", "f16", "q8_0", "q4_0"));

TEST(VulkanBf16Cli, BisectAgainstTheEmulationMatchesAndTheDumpSaysBf16) {
  const auto dump = temp_dir("vulkan-bf16") / "vk.h5";
  const CommandResult run = run_tapdiff(
      "run --engine vulkan --dtype bf16 --model synth:tiny --tokens 1,5,9,12 "
      "--chunk 3 --generate 2 --dump " +
      quoted(dump));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const CommandResult inspect = run_tapdiff("inspect " + quoted(dump));
  EXPECT_NE(inspect.output.find(", bf16; stored as f32"), std::string::npos) << inspect.output;
  const CommandResult bisect = run_tapdiff(
      "bisect --engine-b vulkan --dtype bf16 --model synth:small --tokens 1,5,9,12,40,41,42,7,8,9,10,11 --chunk 5 "
      "--generate 4");
  EXPECT_EQ(bisect.exit_code, 0) << bisect.output;
  EXPECT_NE(bisect.output.find("calibrated against ref bf16 (k = 10)"), std::string::npos) << bisect.output;
}

}  // namespace
}  // namespace tapdiff::testing
