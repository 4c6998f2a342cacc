// The Vulkan engine in llama.cpp's precision (--dtype llama.cpp) as a whole: a model's every op
// against the reference's emulation and the f64 truth, the kernels it names, what it refuses, and
// bisect with it as engine B. Op by op on random inputs: tests/test_vulkan_ops.cpp
// (LlamaCppPrecision); against llama.cpp itself: tests/conformance/test_llama_cpp_taps.py.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "formats/load_model.h"
#include "gpu/device.h"
#include "gpu/vulkan_engine.h"
#include "model/errors.h"
#include "model/graph.h"
#include "model/memory_tap.h"
#include "model/runner.h"
#include "reference/cpu_engine.h"
#include "tests/reference_fixtures.h"
#include "tests/test_support.h"
#include "tests/vulkan_fixtures.h"

namespace tapdiff::testing {
namespace {

using model::Op;
using model::TensorId;

gpu::VulkanEngineOptions llama_cpp_options() {
  gpu::VulkanEngineOptions options;
  options.llama_cpp = true;
  return options;
}

// 100 tokens in chunks of 33, then 4 decode steps, on Q8_0 and Q4_1 weights (Q8_1 inputs). Against the f64
// truth each op of the engine is as far as the reference's emulation is (both round the same
// values; their f32 sums in another order move an 8-bit rounding now and then, so past the first
// layer they are two draws of the same rounding noise), and layer 0's first product, whose input
// both compute alike, is the emulation's to the last bits.
TEST(VulkanLlamaCpp, AWholeModelIsAsFarFromTheTruthAsTheReferenceEmulation) {
  for (const std::string dtype : {"q8_0", "q4_1"}) {
    const auto m = formats::load_model(synth_model_path("small", dtype));
    const auto tokens = synth_prompt(100, m->config().vocab, 11);
    const auto truth = run_reference(*m, tokens, model::Scalar::f64, 33, 4);
    const auto emulation =
        run_reference(*m, tokens, reference::CpuEngineOptions{model::Precision::llama_cpp, 0}, 33, 4);
    const auto engine = validated_vulkan_engine(*m, llama_cpp_options());
    model::MemoryTap tap;
    model::RunOptions options;
    options.chunk = 33;
    options.generate = 4;
    const model::Graph graph(m->config());
    const model::RunResult run = model::run_sequence(*engine, graph, tokens, options, tap);
    // The rows all three runs fed the same tokens: the prompt and the decode steps before the
    // first generated token that differs (a near tie may part them; each run's rows after it saw
    // other inputs).
    std::int64_t rows = static_cast<std::int64_t>(tokens.size());
    for (std::size_t i = 0; i + 1 < run.generated.size() && run.generated[i] == truth->result.generated[i] &&
                            run.generated[i] == emulation->result.generated[i];
         ++i)
      ++rows;
    const auto common = [&](const model::HostTensor& t) { return t.slice_rows(0, rows); };
    const auto err = [&](const model::HostTensor& a, const model::HostTensor& b) { return nmse(common(a), common(b)); };
    const TensorId first{Op::v_proj, 0};
    EXPECT_LE(err(emulation->tap.get(first), tap.get(first)), 1e-12) << dtype;
    double worst_ratio = 0, least_ratio = 1e30;
    for (const model::Step& step : graph.steps()) {
      const TensorId id = step.output();
      const double own = err(truth->tap.get(id), tap.get(id)), base = err(truth->tap.get(id), emulation->tap.get(id));
      EXPECT_LE(own, 4 * base + 1e-12) << dtype << " " << model::to_string(id) << ": engine " << own << ", emulation "
                                       << base;
      if (model::op_class(step.op) == model::OpClass::gemm) {  // it rounds: the products are not the exact ones
        EXPECT_GE(own, 0.25 * base) << dtype << " " << model::to_string(id);
        least_ratio = std::min(least_ratio, own / base);
      }
      worst_ratio = std::max(worst_ratio, own / std::max(base, 1e-30));
    }
    std::printf(
        "synth:small %s, %lld positions: engine/emulation NMSE against f64: products at least %.2f, every op at "
        "most %.2f\n",
        dtype.c_str(), static_cast<long long>(rows), least_ratio, worst_ratio);
    expect_clean(*engine);
  }
}

TEST(VulkanLlamaCpp, NamesItsRoundingsAndRefusesWhatItDoesNotEmulate) {
  const auto m = formats::load_model(synth_model_path("tiny", "q8_0"));
  const auto engine = validated_vulkan_engine(*m, llama_cpp_options());
  EXPECT_EQ(engine->compute_dtype(), "f32");
  EXPECT_EQ(engine->kernel(Op::q_proj), "matmul-tiled-64x64/q8_0+llama.cpp-q8_0, matvec-subgroup/q8_0+llama.cpp-q8_0");
  EXPECT_EQ(engine->kernel(Op::attn), "attention-two-pass+llama.cpp-f16-kv");
  EXPECT_EQ(engine->kernel(Op::attn_norm), "rms_norm-ggml");
  EXPECT_EQ(engine->kernel(Op::attn_residual), "add");
  // Teacher-forced cache rows are held as llama.cpp holds them: f16 values.
  model::HostTensor rows(model::Scalar::f32, 3, m->config().kv_dim());
  for (std::size_t i = 0; i < rows.f32().size(); ++i) rows.f32()[i] = 1.0f + static_cast<float>(i) * 1e-4f;
  engine->write_kv(0, false, rows);
  const model::HostTensor held = engine->read_kv(0, false);
  for (std::size_t i = 0; i < rows.f32().size(); ++i)
    ASSERT_EQ(held.f32()[i], model::f16_to_f32(model::f32_to_f16(rows.f32()[i]))) << i;
  expect_clean(*engine);

  const auto refusal = [](const model::Model& model, gpu::VulkanEngineOptions options) -> std::string {
    try {
      gpu::make_vulkan_engine(model, options);
      return "";
    } catch (const UsageError& e) {
      return e.what();
    }
  };
  gpu::VulkanEngineOptions options = llama_cpp_options();
  options.f16 = true;
  EXPECT_NE(refusal(*m, options).find("in f32, not with f16 or bf16 activations"), std::string::npos);
  options = llama_cpp_options();
  options.inject = "rope-base@0";
  EXPECT_NE(refusal(*m, options).find("--inject rope-base@0: faults are planted in the f32 and f16 kernels"),
            std::string::npos);
  options = llama_cpp_options();
  options.kernels = "attention=flash";
  EXPECT_NE(refusal(*m, options).find("expected attention=auto|two-pass"), std::string::npos);
  const auto moe = formats::load_model(synth_model_path("tiny-moe"));
  EXPECT_NE(refusal(*moe, llama_cpp_options()).find("does not round a mixture of experts' products"),
            std::string::npos);
  model::ModelConfig gemma = m->config();
  gemma.block.norm_offset = 1;
  EXPECT_NE(refusal(model::Model("gemma.gguf", gemma), llama_cpp_options())
                .find("gemma.gguf: the norms scale by (1 + w); llama.cpp's converter stores that sum"),
            std::string::npos);
}

TEST(VulkanLlamaCpp, ADeviceWithoutDoublesIsAClearError) {
  gpu::DeviceInfo info;
  info.name = "Example GPU";
  info.api_version = VK_API_VERSION_1_2;
  info.compute_queue_family = 0;
  gpu::DeviceNeeds needs;
  needs.float64 = true;
  try {
    gpu::check_device_offers(info, needs);
    FAIL() << "expected an error";
  } catch (const EnvironmentError& e) {
    EXPECT_NE(std::string(e.what()).find("Example GPU"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--dtype llama.cpp needs the shaderFloat64 feature"), std::string::npos)
        << e.what();
  }
  info.shader_float64 = true;
  EXPECT_NO_THROW(gpu::check_device_offers(info, needs));
}

// bisect with the engine as B: calibrated against the reference's emulation, every op within its
// floor; exact and llama.cpp-precision tokens may part only at a near tie.
TEST(VulkanLlamaCpp, BisectsAsEngineBAgainstTheReferenceEmulation) {
  const auto model = synth_model_path("small", "q8_0");
  std::string tokens;
  for (std::int32_t t : synth_prompt(40, 2048, 5)) tokens += (tokens.empty() ? "" : ",") + std::to_string(t);
  const CommandResult r = run_tapdiff("bisect --engine-b vulkan --dtype llama.cpp --model " + quoted(model) +
                                      " --tokens " + tokens + " --chunk 16 --generate 4");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("calibrated against ref llama.cpp"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("match: "), std::string::npos) << r.output;
}

}  // namespace
}  // namespace tapdiff::testing
