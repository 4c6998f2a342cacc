// The reference's emulations of fp8 engines (fp8 weights and activations with per-row scales, an
// fp8 KV cache, bf16 between ops) and of f16 engines with f16 sums (reference/emulation.h).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "formats/load_model.h"
#include "model/errors.h"
#include "model/graph.h"
#include "reference/cpu_engine.h"
#include "reference/kernels.h"
#include "reference/rounding.h"
#include "tests/reference_fixtures.h"
#include "tests/test_support.h"

namespace tapdiff::testing {
namespace {

using model::Op;
using model::Precision;
using reference::Storage;

// Every finite value of an fp8 format, decoded from its bits as the OCP 8-bit floating point
// specification defines them: E4M3 (bias 7, no inf, S.1111.111 is NaN) and E5M2 (bias 15, IEEE).
std::vector<float> fp8_values(Storage format) {
  const int mantissa = format == Storage::fp8_e4m3 ? 3 : 2, bias = format == Storage::fp8_e4m3 ? 7 : 15;
  std::vector<float> values;
  for (int bits = 0; bits < 128; ++bits) {
    const int e = bits >> mantissa, m = bits & ((1 << mantissa) - 1);
    if (format == Storage::fp8_e4m3 && bits == 127) continue;     // NaN
    if (format == Storage::fp8_e5m2 && e == 31) continue;         // inf, NaN
    const double v = e == 0 ? std::ldexp(m, 1 - bias - mantissa)  // subnormal
                            : std::ldexp((1 << mantissa) + m, e - bias - mantissa);
    values.push_back(static_cast<float>(v));
  }
  return values;
}

// A row whose largest magnitude is the format's largest value has scale 1: each of its values
// rounds to the nearest fp8 value, ties to the even one, saturating.
TEST(RoundToFp8, EveryValueStaysAndMidpointsTieToTheEvenNeighbour) {
  for (const Storage format : {Storage::fp8_e4m3, Storage::fp8_e5m2}) {
    const std::vector<float> values = fp8_values(format);
    const float largest = values.back();
    EXPECT_EQ(largest, format == Storage::fp8_e4m3 ? 448.0f : 57344.0f);
    std::vector<float> row = values;
    row.push_back(-largest);
    reference::round_row_to_fp8(format, row);
    for (std::size_t i = 0; i < values.size(); ++i) ASSERT_EQ(row[i], values[i]) << i;
    for (std::size_t i = 0; i + 1 < values.size(); ++i) {
      const float mid = (values[i] + values[i + 1]) / 2;  // exact: one more bit
      std::vector<float> tie = {mid, largest};
      reference::round_row_to_fp8(format, tie);
      // The even neighbour: the one whose last mantissa bit (its index's lowest bit) is 0.
      ASSERT_EQ(tie[0], values[i % 2 == 0 ? i : i + 1]) << "between " << values[i] << " and " << values[i + 1];
      std::vector<float> near = {std::nextafter(mid, values[i + 1]), largest};
      reference::round_row_to_fp8(format, near);
      ASSERT_EQ(near[0], values[i + 1]);
    }
  }
}

TEST(RoundToFp8, EachRowHasItsOwnScale) {
  // Row 1 scaled by 1/448: 1 becomes 448 (exact), 0.3 becomes 134.4, rounded to 128 (E4M3 has
  // steps of 16 in [128, 256)), scaled back; row 2 is the same values times 1000.
  reference::Mat<float> m(2, 3);
  m << 1.0f, 0.3f, -0.5f, 1000.0f, 300.0f, -500.0f;
  reference::round_matrix(Storage::fp8_e4m3, m);
  EXPECT_FLOAT_EQ(m(0, 0), 1.0f);
  EXPECT_FLOAT_EQ(m(0, 1), 128.0f / 448.0f);
  EXPECT_FLOAT_EQ(m(0, 2), -0.5f);  // 224: exact
  EXPECT_FLOAT_EQ(m(1, 1), 1000.0f * 128.0f / 448.0f);
  std::vector<float> zeros(4, 0.0f);
  reference::round_row_to_fp8(Storage::fp8_e5m2, zeros);
  EXPECT_EQ(zeros, std::vector<float>(4, 0.0f));
  std::vector<float> with_nan = {1.0f, std::numeric_limits<float>::quiet_NaN()};
  reference::round_row_to_fp8(Storage::fp8_e5m2, with_nan);
  EXPECT_TRUE(std::isnan(with_nan[0]));
}

// f16 sums: past 2048 an f16 steps by 2. Products of 1/4 added one at a time into 2048 are lost at
// each rounding; added in runs of 16 (4 at a time) they are not. The f32 product keeps them all.
TEST(MatmulF16Sums, SumsRoundToF16AfterEveryRunOfProducts) {
  const int in = 64;
  reference::Mat<float> x(1, in), w(1, in);
  x.setConstant(1.0f);
  w.setConstant(0.25f);
  w(0, 0) = 2048.0f;
  const reference::ConstMatMap<float> map(w.data(), 1, in);
  reference::Mat<float> one, sixteen, f32;
  reference::matmul_f16_sums(x, map, nullptr, 1, one);
  reference::matmul_f16_sums(x, map, nullptr, 16, sixteen);
  reference::matmul<float>(x, map, nullptr, f32);
  EXPECT_EQ(f32(0, 0), 2048.0f + 63 * 0.25f);
  EXPECT_EQ(one(0, 0), 2048.0f);  // 2048.25 rounds to 2048, 63 times
  // 2048 + 15/4 = 2051.75 -> 2052; then + 4 three times: 2064.
  EXPECT_EQ(sixteen(0, 0), 2064.0f);
  // A sum past the largest finite f16 is clamped to it, as llama.cpp's Vulkan kernels store it.
  w.setConstant(60000.0f);
  reference::matmul_f16_sums(x, map, nullptr, 1, one);
  EXPECT_EQ(one(0, 0), 65504.0f);
}

// Whole models: bf16 between ops, fp8 products and KV cache; the error against the exact answer
// orders as the formats' precisions do, op by op where the products differ.
TEST(ReferenceEmulations, Fp8AndF16SumsSitBetweenTheirNeighboursAtEveryProduct) {
  const auto m = formats::load_model(synth_model_path("small"));
  const auto tokens = synth_prompt(48, m->config().vocab, 5);
  const auto exact = run_reference(*m, tokens, model::Scalar::f64, 16, 0);
  const auto run = [&](Precision p) { return run_reference(*m, tokens, reference::CpuEngineOptions{p, 0}, 16, 0); };
  const auto f16 = run(Precision::f16), acc16 = run(Precision::f16_acc16), bf16 = run(Precision::bf16),
             e4m3 = run(Precision::fp8_e4m3), e5m2 = run(Precision::fp8_e5m2);
  const model::Graph graph(m->config());
  int products = 0;
  for (const auto& step : graph.steps()) {
    const model::TensorId id = step.output();
    const auto err = [&](const auto& r) { return nmse(exact->tap.get(id), r->tap.get(id)); };
    for (float v : e4m3->tap.get(id).f32())  // op outputs are bf16 values
      ASSERT_EQ(std::bit_cast<std::uint32_t>(v) & 0xFFFFu, 0u) << model::to_string(id);
    if (model::op_class(id.op) != model::OpClass::gemm || id.op == Op::logits) continue;
    ++products;
    EXPECT_GT(err(acc16), err(f16)) << model::to_string(id);
    EXPECT_GT(err(e4m3), 3 * err(bf16)) << model::to_string(id);
    EXPECT_GT(err(e5m2), 2 * err(e4m3)) << model::to_string(id);
  }
  EXPECT_EQ(products, 7 * m->config().n_layers);
  const auto engine = reference::make_cpu_engine(*m, {Precision::fp8_e4m3, 0});
  EXPECT_EQ(engine->compute_dtype(), "fp8_e4m3");
  EXPECT_EQ(engine->kernel(Op::ffn_up), "eigen-gemm+round-bf16+fp8_e4m3-products");
  EXPECT_EQ(engine->kernel(Op::attn), "eigen-attention-per-head+round-bf16+fp8_e4m3-kv");
  EXPECT_EQ(reference::make_cpu_engine(*m, {Precision::f16_acc16, 0})->kernel(Op::q_proj),
            "eigen-gemm+round-f16+f16-sums");
  // The experts' products are not emulated: a mixture of experts is refused, by name.
  const auto moe = formats::load_model(synth_model_path("tiny-moe"));
  for (const Precision p : {Precision::fp8_e4m3, Precision::f16_acc16}) {
    try {
      reference::make_cpu_engine(*moe, {p, 0});
      ADD_FAILURE() << "expected a refusal";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("experts' products"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace tapdiff::testing
