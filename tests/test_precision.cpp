// Precision as a value (model/precision.def), the reference's bf16 emulation (f32 arithmetic, bf16
// weights and op outputs), and the precision read from a dump's values where it does not say.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include <fmt/core.h>

#include "bisect/compare/precision_evidence.h"
#include "dumps/dump_reader.h"
#include "formats/load_model.h"
#include "model/dtype.h"
#include "model/errors.h"
#include "model/precision.h"
#include "reference/cpu_engine.h"
#include "reference/rounding.h"
#include "tests/reference_fixtures.h"
#include "tests/test_support.h"

namespace tapdiff::testing {
namespace {

using model::Op;
using model::Precision;
using model::Scalar;

TEST(PrecisionTable, NamesParseBackAndTheOrderIsFinestFirst) {
  for (Precision p : model::kAllPrecisions) EXPECT_EQ(model::parse_precision(model::precision_name(p)), p);
  EXPECT_EQ(model::parse_precision("fp16"), std::nullopt);
  EXPECT_EQ(model::parse_precision(""), std::nullopt);
  EXPECT_EQ(model::precision_names(),
            "f64, f32, f16, f16_acc16, bf16, llama.cpp, llama.cpp-vulkan, fp8_e4m3, fp8_e5m2");
  EXPECT_EQ(model::unit_roundoff(Precision::bf16), std::ldexp(1.0, -8));
  EXPECT_EQ(model::unit_roundoff(Precision::f16), std::ldexp(1.0, -11));
  EXPECT_EQ(model::largest_finite(Precision::f16), 65504.0);
  EXPECT_EQ(model::largest_finite(Precision::bf16), static_cast<double>(model::bf16_to_f32(0x7F7F)));
  EXPECT_EQ(model::coarsest({Precision::f32, Precision::bf16, Precision::f16}), Precision::bf16);
}

bool same_bits_or_both_nan(float a, float b) {
  return (std::isnan(a) && std::isnan(b) && std::signbit(a) == std::signbit(b)) ||
         std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
}

TEST(RoundToBf16, MatchesTheBf16ConversionBitForBit) {
  std::vector<float> x;
  for (std::uint64_t u = 0; u < (std::uint64_t{1} << 32); u += 509)
    x.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(u)));
  for (float v : {0.0f, -0.0f, 1.0f + 0x1p-8f, 1.0f + 0x3p-8f, -1.0f - 0x1p-8f, std::numeric_limits<float>::max(),
                  std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::quiet_NaN(), 0x1p-133f})
    x.push_back(v);
  std::vector<float> rounded = x;
  reference::round_to_bf16(rounded);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float want = model::bf16_to_f32(model::f32_to_bf16(x[i]));
    ASSERT_TRUE(same_bits_or_both_nan(rounded[i], want))
        << std::hexfloat << x[i] << " -> " << rounded[i] << ", expected " << want;
  }
  // Ties to even: 1 + 2^-8 is half a bf16 step above 1 (down to 1), 1 + 3 x 2^-8 half above 1 + 2^-7
  // (up to 1 + 2^-6); the largest f32 rounds past the largest bf16 to inf.
  EXPECT_EQ(rounded[rounded.size() - 7], 1.0f);
  EXPECT_EQ(rounded[rounded.size() - 6], 1.0f + 0x1p-6f);
  EXPECT_EQ(rounded[rounded.size() - 4], std::numeric_limits<float>::infinity());
}

const reference::CpuEngineOptions kBf16{model::Precision::bf16, 0};
const reference::CpuEngineOptions kF16{model::Precision::f16, 0};

TEST(ReferenceBf16, EveryOpOutputIsABf16ValueAndItsErrorIsCoarserThanF16s) {
  const auto m = formats::load_model(synth_model_path("small"));
  const auto tokens = synth_prompt(60, m->config().vocab, 29);
  const auto engine = reference::make_cpu_engine(*m, kBf16);
  EXPECT_EQ(engine->compute_dtype(), "bf16");
  EXPECT_EQ(engine->kernel(Op::q_proj), "eigen-gemm+round-bf16");
  const auto exact = run_reference(*m, tokens, Scalar::f64, 20, 0);
  const auto bf16 = run_reference(*m, tokens, kBf16, 20, 0);
  const auto f16 = run_reference(*m, tokens, kF16, 20, 0);
  const model::Graph graph(m->config());
  for (const auto& step : graph.steps()) {
    const model::HostTensor& t = bf16->tap.get(step.output());
    for (float v : t.f32())
      ASSERT_EQ(std::bit_cast<std::uint32_t>(v) & 0xFFFFu, 0u) << model::to_string(step.output()) << ": " << v;
  }
  // bf16 keeps 3 significant bits fewer than f16: at the logits its error is some 10 to 100 times f16's.
  const model::TensorId logits{Op::logits, m->config().n_layers};
  const double e_bf16 = nmse(exact->tap.get(logits), bf16->tap.get(logits));
  const double e_f16 = nmse(exact->tap.get(logits), f16->tap.get(logits));
  EXPECT_GT(e_bf16, 10 * e_f16) << e_bf16 << " vs " << e_f16;
  EXPECT_LT(e_bf16, 1000 * e_f16) << e_bf16 << " vs " << e_f16;
}

// Dumps of the reference in each precision, read for what their values say (the HDF5 dump also
// states it; infer_precision does not look at that).
TEST(PrecisionEvidence, TheValuesOfComputedOpsTellBf16F16AndF32Apart) {
  const auto dir = temp_dir("precision-evidence");
  const std::string model = quoted(synth_model_path("tiny"));
  for (const auto& [dtype, expected] : {std::pair{"bf16", Precision::bf16}, std::pair{"f16", Precision::f16},
                                        std::pair{"f32", Precision::f32}, std::pair{"f64", Precision::f64}}) {
    const auto path = dir / (std::string(dtype) + ".h5");
    const auto r = run_tapdiff("run --model " + model + " --tokens 1,7,9,300,41,5,6,8 --dtype " + dtype + " --dump " +
                               quoted(path));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const dumps::DumpReader dump(path.string());
    const bisect::PrecisionOfB p = bisect::infer_precision(dump);
    EXPECT_EQ(p.value, expected) << dtype << ": " << p.evidence;
    EXPECT_EQ(p.from, bisect::PrecisionOfB::From::inferred) << dtype;
    EXPECT_EQ(bisect::precision_of(dump).from, bisect::PrecisionOfB::From::stated) << dtype;
  }
  // One row of a tiny model holds fewer values than the evidence needs: nothing is inferred.
  const auto one = dir / "one.h5";
  ASSERT_EQ(
      run_tapdiff("run --model " + model + " --tokens 1 --taps '0/(k_proj|v_proj)' --dump " + quoted(one)).exit_code,
      0);
  const bisect::PrecisionOfB unknown = bisect::infer_precision(dumps::DumpReader(one.string()));
  EXPECT_EQ(unknown.from, bisect::PrecisionOfB::From::unknown) << unknown.evidence;
}

}  // namespace
}  // namespace tapdiff::testing
