// The fast subset of the fault matrix (docs/faults.md): every planted fault of gpu/faults.h, at the
// middle layer of its synth model (tests/vulkan_fixtures.h fault_synth_model) on lavapipe, is named by `bisect` as
// the culprit (its layer and one of its ops) with the diagnosis the catalogue promises. softmax-no-max changes nothing
// where scores stay far below exp's overflow, so there it must be silent (a "match"), not a false alarm. No other fault
// is taken for collapsed (uniform) attention. batch-seq-leak acts only in a ragged batch: it is bisected on a batch of
// three prompts, engine B running them together and the reference each alone.
#include <gtest/gtest.h>

#include <algorithm>

#include <fmt/core.h>

#include "bisect/drive/bisect.h"
#include "bisect/judge/diagnosis.h"
#include "formats/load_model.h"
#include "gpu/faults.h"
#include "gpu/vulkan_engine.h"
#include "reference/cpu_engine.h"
#include "tests/reference_fixtures.h"
#include "tests/test_support.h"
#include "tests/vulkan_fixtures.h"

namespace tapdiff::testing {
namespace {

class BisectFault : public ::testing::TestWithParam<gpu::Fault> {};

TEST_P(BisectFault, IsTheCulpritWithItsDiagnosis) {
  const gpu::FaultInfo& info = gpu::fault_info(GetParam());
  const formats::SynthOptions synth = fault_synth_model(info);
  const auto m =
      info.fault == gpu::Fault::indexer_relu_dropped  // no GGUF holds a sparse attention
          ? formats::load_model(write_sparse_model(temp_dir("sparse-model") / "model", 2))
          : load_fault_model(synth_model_path(synth, fmt::format("synth-{}", family_name(synth.config.family))), synth);
  const int layer = m->config().n_layers / 2;
  const bool batched = info.diagnosis == model::DiagnosisCode::some_sequences;
  const model::Prompts prompts =
      batched ? model::Prompts{synth_prompt(64, m->config().vocab, 11), synth_prompt(40, m->config().vocab, 12),
                               synth_prompt(23, m->config().vocab, 13)}
              : model::Prompts{synth_prompt(64, m->config().vocab, 11)};
  const auto truth = reference_per_sequence(*m, model::Scalar::f64, prompts.size());
  const auto floor = reference_per_sequence(*m, model::Scalar::f32, prompts.size());
  gpu::VulkanEngineOptions options;
  options.inject = fmt::format("{}@{}", info.name, layer);
  const auto b = validated_vulkan_engine(*m, options);
  bisect::BisectOptions bisect_options;
  const bool chunked = info.diagnosis == model::DiagnosisCode::chunk_start;
  bisect_options.chunk = chunked ? 16 : 0;
  bisect_options.generate = 3;
  const bisect::BisectResult r = bisect::run_bisect(m->config(), {*truth, floor.get(), *b}, prompts, bisect_options);
  if (GetParam() == gpu::Fault::softmax_no_max) {
    EXPECT_TRUE(r.match()) << "scores are far below 88 here: the max subtraction changes only rounding";
    return;
  }
  ASSERT_FALSE(r.match());
  ASSERT_TRUE(r.culprit) << "no culprit for " << info.name;
  const bisect::OpResult& culprit = r.local[*r.culprit];
  EXPECT_EQ(culprit.id.layer, layer) << info.name;
  EXPECT_NE(std::find(info.ops.begin(), info.ops.end(), culprit.id.op), info.ops.end())
      << info.name << ": culprit " << model::to_string(culprit.id);
  // Every op of every earlier layer is clean end to end.
  for (const bisect::OpResult& op : r.run.ops) {
    if (op.id.layer < layer) {
      EXPECT_TRUE(op.pass()) << info.name << ": " << model::to_string(op.id);
    }
  }
  std::vector<std::string> codes;
  for (const auto& d : bisect::diagnose(r)) codes.push_back(std::string(model::diagnosis_name(d.code)));
  if (info.diagnosis) {
    const std::string expected(model::diagnosis_name(*info.diagnosis));
    EXPECT_NE(std::find(codes.begin(), codes.end(), expected), codes.end()) << info.name << ": expected " << expected;
  }
  // Attention that merely changed (a flatter scale, a wrong head, a mask) is not "uniform".
  if (info.diagnosis != model::DiagnosisCode::attention_uniform) {
    EXPECT_EQ(std::find(codes.begin(), codes.end(), "attention-uniform"), codes.end()) << info.name;
  }
  if (batched) {
    EXPECT_EQ(r.run.ops[*r.run.first].first_bad_row.sequence, 1) << "the first sequence has no neighbour before it";
    EXPECT_FALSE(r.sequence_tokens[0].first_mismatch_step);
  }
  expect_clean(*b);
}

std::vector<gpu::Fault> all_faults() {
  std::vector<gpu::Fault> out;
  for (const gpu::FaultInfo& f : gpu::fault_catalogue()) out.push_back(f.fault);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Catalogue, BisectFault, ::testing::ValuesIn(all_faults()),
                         [](const ::testing::TestParamInfo<gpu::Fault>& p) {
                           std::string name(gpu::fault_info(p.param).name);
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace tapdiff::testing
