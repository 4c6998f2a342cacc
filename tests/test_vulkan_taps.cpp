// Taps of the Vulkan engine: an f16 engine dumped as f16 hands its bits to the dump unconverted
// (Tap::record_f16), and the dump holds exactly what the widened path writes.
#include <gtest/gtest.h>

#include "dumps/dump_reader.h"
#include "dumps/dump_writer.h"
#include "formats/load_model.h"
#include "model/runner.h"
#include "model/weights.h"
#include "tests/reference_fixtures.h"
#include "tests/test_support.h"
#include "tests/vulkan_fixtures.h"

namespace tapdiff::testing {
namespace {

// Forwards to a tap, counting what reached it each way; with f16 hidden it refuses every f16
// offer, so the engine delivers widened values (the path of every tap but a dump stored as f16).
class CountingTap final : public model::Tap {
 public:
  CountingTap(model::Tap& inner, bool f16) : inner_(&inner), f16_(f16) {}
  bool wants(const model::TapKey& key) const override { return inner_->wants(key); }
  void record(const model::TapKey& key, const model::HostTensor& value) override {
    ++values;
    inner_->record(key, value);
  }
  bool record_f16(const model::TapKey& key, const model::HalfRows& value) override {
    const bool taken = f16_ && inner_->record_f16(key, value);
    halves += taken ? 1 : 0;
    return taken;
  }
  void end_chunk(const model::ChunkInfo& chunk, std::span<const std::int32_t> tokens) override {
    inner_->end_chunk(chunk, tokens);
  }
  int values = 0;
  int halves = 0;

 private:
  model::Tap* inner_;
  bool f16_;
};

struct TappedRun {
  int values = 0;
  int halves = 0;
};

// synth:tiny on the f16 engine, 7 tokens in chunks of 3, then 2 greedy tokens, every op dumped.
TappedRun dump_f16_run(const model::Model& m, const std::string& path, dumps::StorageType storage, bool offer_f16) {
  gpu::VulkanEngineOptions options;
  options.f16 = true;
  const auto engine = validated_vulkan_engine(m, options);
  const model::Graph graph(m.config());
  dumps::DumpWriter writer(path, fake_metadata(m.config()), graph, dumps::TapFilter("all"), storage);
  CountingTap tap(writer, offer_f16);
  model::RunOptions run;
  run.chunk = 3;
  run.generate = 2;
  model::run_sequence(*engine, graph, synth_prompt(7, m.config().vocab, 3), run, tap);
  writer.finish({});
  expect_clean(*engine);
  return {tap.values, tap.halves};
}

TEST(VulkanTaps, F16DumpOfTheF16EngineTakesTheBitsUnconvertedAndEqualsTheWidenedPath) {
  const auto m = formats::load_model(synth_model_path("tiny"));
  const auto dir = temp_dir("vulkan-taps-f16");
  const std::string direct = (dir / "direct.h5").string(), widened = (dir / "widened.h5").string();
  const TappedRun d = dump_f16_run(*m, direct, dumps::StorageType::f16, true);
  const TappedRun w = dump_f16_run(*m, widened, dumps::StorageType::f16, false);
  const int steps = static_cast<int>(model::Graph(m->config()).steps().size());
  const int passes = 3 + 1;  // chunks of 3, 3, 1, then the decode step of the second token
  EXPECT_EQ(d.halves, steps * passes);
  EXPECT_EQ(d.values, 0);
  EXPECT_EQ(w.halves, 0);
  EXPECT_EQ(w.values, steps * passes);

  const dumps::DumpReader a(direct), b(widened);
  ASSERT_EQ(a.rows(), 8);
  ASSERT_EQ(a.tensors(), b.tensors());
  for (const model::TensorId& id : a.tensors()) {
    const model::HostTensor x = a.read(id, 0, a.rows()), y = b.read(id, 0, b.rows());
    ASSERT_EQ(x.rows(), 8) << model::to_string(id);
    ASSERT_EQ(x.cols(), y.cols());
    for (std::int64_t r = 0; r < x.rows(); ++r)
      for (std::int64_t c = 0; c < x.cols(); ++c)
        ASSERT_EQ(x.at(r, c), y.at(r, c)) << model::to_string(id) << " (" << r << ", " << c << ")";
  }
}

// An f32 dump of the f16 engine refuses the offer and stores the widened values.
TEST(VulkanTaps, F32DumpOfTheF16EngineTakesWidenedValues) {
  const auto m = formats::load_model(synth_model_path("tiny"));
  const auto dir = temp_dir("vulkan-taps-f32");
  const std::string path = (dir / "f32.h5").string();
  const TappedRun r = dump_f16_run(*m, path, dumps::StorageType::f32, true);
  EXPECT_EQ(r.halves, 0);
  EXPECT_GT(r.values, 0);
  EXPECT_EQ(dumps::DumpReader(path).metadata().storage_dtype, "f32");
}

}  // namespace
}  // namespace tapdiff::testing
