// Profiling the Vulkan engine: device timestamps after every op give each op its device time,
// within the run's wall time, and nothing while profiling is off.
#include <gtest/gtest.h>

#include <algorithm>

#include <chrono>

#include "formats/load_model.h"
#include "model/runner.h"
#include "model/weights.h"
#include "tests/reference_fixtures.h"
#include "tests/vulkan_fixtures.h"

namespace tapdiff::testing {
namespace {

TEST(VulkanProfile, EveryOpGetsDeviceTimeWithinTheWallTime) {
  const auto m = formats::load_model(synth_model_path("tiny"));
  const auto engine = validated_vulkan_engine(*m);
  const model::Graph graph(m->config());
  const auto tokens = synth_prompt(9, m->config().vocab, 4);
  model::NullTap tap;
  model::run_chunk(*engine, graph, tokens, {0, 0, 9, false}, tap);  // pipelines made, untimed
  for (const double s : engine->stats().op_seconds) EXPECT_EQ(s, 0.0);

  engine->reset();
  engine->set_profiling(true);
  const auto start = std::chrono::steady_clock::now();
  model::run_chunk(*engine, graph, tokens, {0, 0, 9, false}, tap);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto profiled = engine->stats().op_seconds;
  double sum = 0;
  for (const model::Op op : model::kAllOps) {
    const double s = profiled[static_cast<std::size_t>(op)];
    const bool in_graph =
        std::any_of(graph.steps().begin(), graph.steps().end(), [&](const model::Step& step) { return step.op == op; });
    if (in_graph)
      EXPECT_GT(s, 0.0) << model::op_name(op);
    else
      EXPECT_EQ(s, 0.0) << model::op_name(op) << " is not in the model's graph";
    sum += s;
  }
  EXPECT_LT(sum, wall);

  engine->set_profiling(false);
  model::run_chunk(*engine, graph, std::vector<std::int32_t>{5}, {1, 9, 1, true}, tap);
  EXPECT_EQ(engine->stats().op_seconds, profiled);
  expect_clean(*engine);
}

}  // namespace
}  // namespace tapdiff::testing
