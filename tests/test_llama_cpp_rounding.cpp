// The reference's llama.cpp emulation (reference/llama_cpp_rounding.h): each weight type's
// dot-product type, the conversions' values on blocks whose answers are known by hand, the Q8_1
// sum correction against ggml's Q4_1 product formula, and the engine's options and names. Its
// values against llama.cpp's own: tests/conformance/test_llama_cpp.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <numbers>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>
#include "model/dtype.h"

#include "formats/llama_cpp_precision.h"
#include "formats/load_model.h"
#include "model/errors.h"
#include "model/half_float.h"
#include "reference/cpu_engine.h"
#include "reference/llama_cpp_rounding.h"
#include "tests/reference_fixtures.h"
#include "tests/test_support.h"

namespace tapdiff::testing {
namespace {

using model::DType;
using model::Op;
using reference::DotType;
using reference::Mat;

const reference::CpuEngineOptions kLlamaCpp{model::Precision::llama_cpp, 0};

TEST(LlamaCppRounding, EachWeightTypeConvertsActivationsToGgmlsDotType) {
  const std::vector<std::pair<DType, DotType>> table = {
      {DType::f32, DotType::f32},     {DType::f16, DotType::f16},   {DType::bf16, DotType::bf16},
      {DType::q8_0, DotType::q8_0},   {DType::q4_0, DotType::q8_0}, {DType::q5_0, DotType::q8_0},
      {DType::iq4_nl, DotType::q8_0}, {DType::q4_1, DotType::q8_1}, {DType::q5_1, DotType::q8_1},
      {DType::q2_k, DotType::q8_k},   {DType::q3_k, DotType::q8_k}, {DType::q4_k, DotType::q8_k},
      {DType::q5_k, DotType::q8_k},   {DType::q6_k, DotType::q8_k}, {DType::iq4_xs, DotType::q8_k},
      {DType::mxfp4, DotType::q8_0}};
  ASSERT_EQ(table.size(), model::all_dtypes().size());
  for (const auto& [weights, dot] : table) EXPECT_EQ(formats::dot_type(weights), dot) << model::dtype_name(weights);
}

// One row of a block: its largest magnitude 127 makes the scale 1, so each value rounds to an
// integer, halves to even.
TEST(LlamaCppRounding, Q8_0RoundsHalvesToEvenWithAnF16Scale) {
  Mat<float> x = Mat<float>::Zero(1, 32);
  x.row(0).head(6) << 127.0f, 0.5f, 1.5f, 2.5f, -2.5f, 3.4f;
  reference::round_to_dot_type(DotType::q8_0, x);
  EXPECT_EQ(x(0, 0), 127.0f);
  EXPECT_EQ(x(0, 1), 0.0f);
  EXPECT_EQ(x(0, 2), 2.0f);
  EXPECT_EQ(x(0, 3), 2.0f);
  EXPECT_EQ(x(0, 4), -2.0f);
  EXPECT_EQ(x(0, 5), 3.0f);
  // A scale max/127 that is no f16 value is stored as f16: the values are its integer multiples.
  Mat<float> y = Mat<float>::Constant(1, 32, 0.3f);
  y(0, 0) = 1.0f;
  reference::round_to_dot_type(DotType::q8_0, y);
  const float d = model::f16_to_f32(model::f32_to_f16(1.0f / 127.0f));
  EXPECT_EQ(y(0, 0), 127.0f * d);
  EXPECT_EQ(y(0, 1), 38.0f * d);  // 0.3 * 127 = 38.1
}

// Q8_K: blocks of 256 scaled by -127 / (the value of largest magnitude), its sign kept.
TEST(LlamaCppRounding, Q8_KScalesBy127OverTheSignedMaximumPerSuperBlock) {
  Mat<float> x = Mat<float>::Zero(2, 256);
  x(0, 7) = -254.0f;  // scale -127 / -254 = 0.5: values become multiples of 2
  x(0, 8) = 3.0f;     // 1.5 -> 2 -> 4
  x(0, 9) = 5.0f;     // 2.5 -> 2 -> 4
  x(1, 0) = 1.0f;     // a block of its own: a positive maximum
  x(1, 1) = 0.25f;    // -31.75 -> -32 -> 32 * (-1/127) * ... = 0.2519...
  reference::round_to_dot_type(DotType::q8_k, x);
  EXPECT_EQ(x(0, 7), -254.0f);
  EXPECT_EQ(x(0, 8), 4.0f);
  EXPECT_EQ(x(0, 9), 4.0f);
  const float d = 1.0f / (-127.0f / 1.0f);
  EXPECT_EQ(x(1, 0), -127.0f * d);
  EXPECT_EQ(x(1, 1), -32.0f * d);
  EXPECT_EQ(x(1, 2), 0.0f);
}

TEST(LlamaCppRounding, F16AndBf16RoundToNearestEven) {
  Mat<float> x(1, 3);
  x << 1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 1.0f + 0x1p-8f;
  Mat<float> h = x, b = x;
  reference::round_to_dot_type(DotType::f16, h);
  reference::round_to_dot_type(DotType::bf16, b);
  EXPECT_EQ(h(0, 0), 1.0f);            // halfway between 1 and 1 + 2^-10: to even
  EXPECT_EQ(h(0, 1), 1.0f + 0x1p-9f);  // halfway between 1 + 2^-10 and 1 + 2^-9: to even
  EXPECT_EQ(b(0, 2), 1.0f);            // bf16 keeps 7 bits: 2^-8 is half its step, to even
  EXPECT_EQ(b(0, 0), 1.0f);
}

// ggml's Q4_1 x Q8_1 product per block: d_w * d_x * sum(q_w * q_x) + m_w * s_x, with d_x the f16
// scale and s_x = f16(d * sum(q_x)) from the unrounded d. The emulation's product on the rounded
// values plus the correction gives it.
TEST(LlamaCppRounding, Q4_1ProductsTakeTheStoredBlockSum) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int in = 64, out = 3;
  std::vector<float> w(static_cast<std::size_t>(in * out));
  for (float& v : w) v = normal(rng) + 0.7f;  // a minimum far from 0
  const std::size_t row_bytes = model::row_bytes(DType::q4_1, in);
  std::vector<std::byte> bytes(row_bytes * out);
  for (int r = 0; r < out; ++r)
    model::quantize_row(DType::q4_1, &w[static_cast<std::size_t>(r * in)], &bytes[row_bytes * r], in);
  model::WeightTensor tensor{"w", DType::q4_1, out, in, bytes, {}};
  Mat<float> x(2, in);
  for (float& v : x.reshaped()) v = normal(rng);

  Mat<float> rounded = x;
  const Mat<float> correction = reference::q8_1_sum_correction(x, tensor);
  reference::round_to_dot_type(DotType::q8_1, rounded);
  Mat<float> dequantized(out, in);
  for (int r = 0; r < out; ++r)
    model::dequantize_row(DType::q4_1, &bytes[row_bytes * r], dequantized.row(r).data(), in);
  const Mat<double> emulated =
      (rounded.cast<double>() * dequantized.cast<double>().transpose()) + correction.cast<double>();

  for (int t = 0; t < 2; ++t) {
    for (int o = 0; o < out; ++o) {
      double ggml = 0.0;
      for (int b = 0; b < in / 32; ++b) {
        const std::byte* block = &bytes[row_bytes * o + 20 * static_cast<std::size_t>(b)];
        std::uint16_t dw = 0, mw = 0;
        std::memcpy(&dw, block, 2);
        std::memcpy(&mw, block + 2, 2);
        float amax = 0.0f;
        for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(x(t, b * 32 + j)));
        const float dx = amax / 127.0f;
        double dot = 0.0, sum = 0.0;
        for (int j = 0; j < 32; ++j) {
          const auto nibble = static_cast<std::uint8_t>(block[4 + (j % 16)]);
          const int qw = j < 16 ? (nibble & 0xF) : (nibble >> 4);
          const double qx = std::nearbyint(x(t, b * 32 + j) * (127.0f / amax));
          dot += qw * qx;
          sum += qx;
        }
        const double s = model::f16_to_f32(model::f32_to_f16(dx * static_cast<float>(sum)));
        ggml += model::f16_to_f32(dw) * model::f16_to_f32(model::f32_to_f16(dx)) * dot + model::f16_to_f32(mw) * s;
      }
      EXPECT_NEAR(emulated(t, o), ggml, 1e-5 * std::fabs(ggml) + 1e-6) << "row " << t << " output " << o;
    }
  }
  // Without the correction the product misses by the sums' f16 rounding: the test can tell.
  const Mat<double> uncorrected = rounded.cast<double>() * dequantized.cast<double>().transpose();
  EXPECT_GT((uncorrected - emulated).cwiseAbs().maxCoeff(), 1e-4);
}

TEST(LlamaCppRounding, TheEngineNamesItsRoundingsAndRefusesF64ExpertsAndWhatItCannotEmulate) {
  const auto m = formats::load_model(synth_model_path("tiny", "q8_0"));
  const auto engine = reference::make_cpu_engine(*m, kLlamaCpp);
  EXPECT_EQ(engine->compute_dtype(), "f32");
  EXPECT_EQ(engine->kernel(Op::q_proj), "eigen-gemm+llama.cpp-dot-type");
  EXPECT_EQ(engine->kernel(Op::attn), "eigen-attention-per-head+llama.cpp-f16-kv");
  EXPECT_NE(engine->device().find("rounding as llama.cpp's CPU backend"), std::string::npos) << engine->device();
  const auto moe = formats::load_model(synth_model_path("tiny-moe"));
  EXPECT_THROW(reference::make_cpu_engine(*moe, kLlamaCpp), UsageError);
  // Norms scaled by (1 + w) (a Hugging Face Gemma folder; llama.cpp's converter stores the sum,
  // rounded) and GELU's erf form (no llama.cpp graph computes it): refused by name. Gemma 2's
  // block otherwise (post-norms, soft-caps, GELU's tanh form) is emulated.
  const auto refusal = [&](const model::ModelConfig& config) -> std::string {
    try {
      reference::make_cpu_engine(model::Model("gemma.gguf", config), kLlamaCpp);
      return "";
    } catch (const UsageError& e) {
      return e.what();
    }
  };
  model::ModelConfig gemma = m->config();
  gemma.block.norm_offset = 1;
  EXPECT_NE(refusal(gemma).find("gemma.gguf: the norms scale by (1 + w); llama.cpp's converter stores that sum"),
            std::string::npos)
      << refusal(gemma);
  gemma.block.norm_offset = 0, gemma.block.activation = model::Activation::gelu;
  EXPECT_NE(refusal(gemma).find("gemma.gguf: GELU in its erf form"), std::string::npos) << refusal(gemma);
  model::ModelConfig gemma2 = m->config();
  gemma2.family = model::Family::gemma2, gemma2.block.post_norms = true, gemma2.block.attention_softcap = 50;
  gemma2.block.activation = model::Activation::gelu_tanh;
  EXPECT_NO_THROW(formats::require_llama_cpp_precision(model::Model("gemma2.gguf", gemma2)));
  // LayerNorm blocks in parallel with plain FFNs (GPT-NeoX) are emulated; q/k norms beside
  // LayerNorms (StableLM's and Command R's, per head with weights of their own) are not.
  model::ModelConfig neox = m->config();
  neox.block.norm = model::NormKind::layer, neox.block.norm_bias = true, neox.block.ffn = model::Ffn::plain;
  neox.block.parallel = model::Parallel::own_norm, neox.block.activation = model::Activation::gelu_tanh;
  EXPECT_NO_THROW(formats::require_llama_cpp_precision(model::Model("gptneox.gguf", neox)));
  neox.block.qk_norm = model::QkNorm::per_head;
  EXPECT_NE(refusal(neox).find("q/k norms in a LayerNorm block"), std::string::npos) << refusal(neox);
}

// ggml's LayerNorm (ggml_compute_forward_norm_f32, then the weight and the bias): its steps in f32
// from sums in double, within f32's rounding of the exact norm, and the bias where given.
TEST(LlamaCppRounding, LayerNormIsGgmlsSteps) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.5f, 2.0f);
  Mat<float> x(4, 48), out, unbiased;
  for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = normal(rng);
  reference::Vec<float> w(48), b(48);
  for (Eigen::Index i = 0; i < w.size(); ++i) w(i) = 1.0f + 0.3f * normal(rng), b(i) = 0.1f * normal(rng);
  const Eigen::Map<const reference::Vec<float>> weight(w.data(), w.size());
  const double eps = 3e-5;
  reference::layer_norm_as_llama_cpp(x, weight, b.data(), eps, out);
  reference::layer_norm_as_llama_cpp(x, weight, nullptr, eps, unbiased);
  for (Eigen::Index t = 0; t < x.rows(); ++t) {
    const Eigen::RowVectorXd row = x.row(t).cast<double>();
    const double mean = row.mean(), variance = (row.array() - mean).square().mean();
    float f32_sum = 0;  // the steps: the mean and the variance in f32 from sums in double
    double sum = 0, squares = 0;
    for (Eigen::Index c = 0; c < x.cols(); ++c) sum += static_cast<double>(x(t, c));
    const float f32_mean = static_cast<float>(sum) / 48.0f;
    for (Eigen::Index c = 0; c < x.cols(); ++c) {
      const float v = x(t, c) - f32_mean;
      squares += static_cast<double>(v * v);
      f32_sum += v;
    }
    const float scale = 1.0f / std::sqrt(static_cast<float>(squares / 48.0) + static_cast<float>(eps));
    for (Eigen::Index c = 0; c < x.cols(); ++c) {
      EXPECT_EQ(unbiased(t, c), ((x(t, c) - f32_mean) * scale) * w(c));
      EXPECT_EQ(out(t, c), unbiased(t, c) + b(c));
      const double exact = (row(c) - mean) / std::sqrt(variance + eps) * w(c) + b(c);
      EXPECT_NEAR(out(t, c), exact, 1e-5 * (1 + std::fabs(exact)));
    }
    EXPECT_LT(std::fabs(f32_sum), 1e-4);
  }
}

// ggml-cpu's GELU (GGML_GELU_FP16): the tanh form at x rounded to f16, from a table of f16 values;
// exactly 0 at and below -10, x times up at and above 10.
TEST(LlamaCppRounding, GeluIsGgmlsF16Table) {
  const auto& table = formats::llama_cpp_gelu_table();
  const auto gelu = [](double x) {
    return 0.5 * x * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
  };
  for (std::uint32_t h = 0; h < table.size(); ++h) {
    const float x = model::widen_f16(static_cast<std::uint16_t>(h));
    if (!(std::fabs(x) < 10.0f)) continue;  // NaN, inf and the ends, where no table is read
    const float g = formats::llama_cpp_gelu_mul(x, 1.0f);
    ASSERT_EQ(g, model::widen_f16(table[h])) << x;
    // an f16 value, within half an f16 step (and f32 tanh's error, times x) of the exact GELU
    const double exact = gelu(x), step = std::ldexp(1.0, std::max(std::ilogb(exact), -14) - 10);
    ASSERT_EQ(model::widen_f16(model::narrow_f16(g)), g) << x;
    ASSERT_LE(std::fabs(g - exact), 0.5 * step + 2e-7 * std::fabs(x)) << x;
  }
  // ggml's builds with FMA fuse the innermost product and sum: at x = -1.999 that decides the f16
  EXPECT_EQ(table[0xbfff], 0xa9d3);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> wide(-10.0f, 10.0f);
  int rounded = 0;
  for (int i = 0; i < 10000; ++i) {
    const float x = wide(rng);
    EXPECT_EQ(formats::llama_cpp_gelu_mul(x, 1.0f),
              formats::llama_cpp_gelu_mul(model::widen_f16(model::narrow_f16(x)), 1.0f))
        << x;
    rounded += formats::llama_cpp_gelu_mul(x, 1.0f) != static_cast<float>(gelu(x)) ? 1 : 0;
  }
  EXPECT_GT(rounded, 8000);                 // what it is for: at most inputs it is not the f32 GELU (8653 of 10000)
  for (const float x : {-10.0f, -12.5f}) {  // exactly +0, whatever up is (ggml writes 0.0f)
    EXPECT_EQ(formats::llama_cpp_gelu_mul(x, -3.0f), 0.0f);
    EXPECT_FALSE(std::signbit(formats::llama_cpp_gelu_mul(x, -3.0f)));
  }
  EXPECT_EQ(formats::llama_cpp_gelu_mul(10.0f, 3.0f), 30.0f);
  EXPECT_EQ(formats::llama_cpp_gelu_mul(11.5f, 2.0f), 23.0f);
  EXPECT_TRUE(std::isnan(formats::llama_cpp_gelu_mul(std::nanf(""), 2.0f)));
  // the emulation's ffn_act: that, per value
  Mat<float> gate(3, 5), up(3, 5), out;
  for (Eigen::Index i = 0; i < gate.size(); ++i) gate.data()[i] = 1.2f * wide(rng), up.data()[i] = wide(rng);
  reference::gelu_mul_as_llama_cpp(gate, up, out);
  for (Eigen::Index i = 0; i < gate.size(); ++i)
    EXPECT_EQ(out.data()[i], formats::llama_cpp_gelu_mul(gate.data()[i], up.data()[i]));
  // and a plain FFN's: gelu(x) alone, the table's value inside (-10, 10)
  reference::gelu_as_llama_cpp(gate, out);
  for (Eigen::Index i = 0; i < gate.size(); ++i)
    EXPECT_EQ(out.data()[i], formats::llama_cpp_gelu_mul(gate.data()[i], 1.0f)) << gate.data()[i];
}

// The attention's scale as llama.cpp computes it in f32: 1.0f / sqrtf(head_dim), which for head_dim
// 96 (Phi-3 mini) is not 1 / sqrt(96) rounded to f32; Gemma 2/3's largest models' 1.0f /
// sqrtf(n_embd / n_head); a scale read from the file, its f32 value.
TEST(LlamaCppRounding, TheAttentionScaleIsComputedInF32AsLlamaCppComputesIt) {
  model::ModelConfig c;
  c.dim = 3072, c.n_heads = 32, c.head_dim = 96;
  EXPECT_EQ(formats::llama_cpp_attention_scale(c), 1.0f / std::sqrt(96.0f));
  EXPECT_NE(formats::llama_cpp_attention_scale(c), static_cast<float>(1.0 / std::sqrt(96.0)));
  c.family = model::Family::gemma2, c.dim = 4608, c.head_dim = 128,
  c.block.attention_scale = 1.0 / std::sqrt(4608.0 / 32);
  EXPECT_EQ(formats::llama_cpp_attention_scale(c), 1.0f / std::sqrt(144.0f));
  c.family = model::Family::granite, c.block.attention_scale = 0.0078125;
  EXPECT_EQ(formats::llama_cpp_attention_scale(c), 0.0078125f);
}

// On Q8_0 weights the emulation's products part from the f32 reference's by the activations'
// 8-bit rounding (NMSE near 1e-5); on F32 weights only by ggml's norm rounding (the last bit of
// some values) and, far more, the f16 KV cache in attention.
TEST(LlamaCppRounding, ItsProductsPartFromF32ByTheActivationsRounding) {
  for (const std::string dtype : {"q8_0", "f32"}) {
    const auto m = formats::load_model(synth_model_path("small", dtype));
    const auto tokens = synth_prompt(40, m->config().vocab, 3);
    const auto f32 = run_reference(*m, tokens, model::Scalar::f32, 0, 0);
    const auto emulated = run_reference(*m, tokens, kLlamaCpp, 0, 0);
    const model::TensorId v{Op::v_proj, 0};
    const double error = nmse(emulated->tap.get(v), f32->tap.get(v));
    if (dtype == "q8_0") {
      EXPECT_GT(error, 3e-6) << dtype;
      EXPECT_LT(error, 1e-4) << dtype;
    } else {
      EXPECT_LT(error, 1e-12) << dtype;
      EXPECT_GT(nmse(emulated->tap.get({Op::attn, 0}), f32->tap.get({Op::attn, 0})), 1e-9) << dtype;
    }
  }
}

// Exact and llama.cpp-precision greedy tokens part only where two tokens are closer than
// llama.cpp's rounding moves logits: bisect reports such a step as a near tie with A's margin, and
// the runs as a match (every op within the floor the emulation sets for itself).
TEST(LlamaCppRounding, BisectReportsWhereExactAndLlamaCppTokensPartAsANearTie) {
  const auto model = synth_model_path("small", "q8_0");
  const auto dir = temp_dir("llama-cpp-near-tie");
  for (std::uint32_t seed = 1; seed <= 40; ++seed) {
    std::string tokens;
    for (std::int32_t t : synth_prompt(64, 2048, seed)) tokens += (tokens.empty() ? "" : ",") + std::to_string(t);
    const auto report = dir / ("r" + std::to_string(seed) + ".json");
    const auto r = run_tapdiff("bisect --model " + quoted(model) + " --tokens " + tokens +
                               " --generate 24 --engine-b ref --dtype llama.cpp --json " + quoted(report));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::ifstream in(report);
    const auto json = nlohmann::json::parse(in);
    if (json["tokens"]["first_mismatch_step"].is_null()) continue;
    EXPECT_EQ(json["verdict"], "match") << r.output;
    const auto& tie = json["tokens"]["tie"];
    ASSERT_TRUE(tie.is_object()) << r.output;
    EXPECT_EQ(tie["near_tie"], true) << r.output;
    EXPECT_EQ(tie["step"], json["tokens"]["first_mismatch_step"]);
    EXPECT_EQ(tie["position"], 63 + tie["step"].get<int>());
    ASSERT_TRUE(tie["margin"].is_number()) << r.output;
    EXPECT_GE(tie["margin"].get<double>(), 0.0);
    EXPECT_LT(tie["margin"].get<double>(), 0.05) << r.output;  // logits of magnitude 1 to 10
    EXPECT_NE(r.output.find("a near tie for B's precision"), std::string::npos) << r.output;
    std::printf("prompt seed %u: the tokens part at step %d, A's margin %.3g\n", seed, tie["step"].get<int>(),
                tie["margin"].get<double>());
    return;
  }
  FAIL() << "no prompt of 40 made exact and llama.cpp-precision tokens part in 24 steps";
}

// RoPE's angles as ggml steps them in f32 (ggml_rope_cache_init): theta from the position, times
// powf(base, -2/d) pair after pair. At position 4000 of heads of 128 (base 10000) they are off the
// exact angles by up to a few 1e-4 in cos and sin, and each is the f32 recurrence's.
TEST(LlamaCppRounding, RopeAnglesAreGgmlsF32Steps) {
  model::ModelConfig c;
  c.n_layers = 1, c.dim = 128, c.n_heads = 1, c.n_kv_heads = 1, c.head_dim = 128, c.rope_base = 10000.0;
  const model::RopeFrequencies exact = model::rope_frequencies(c, 0, c.rope_base, 4001);
  const model::RopeFrequencies ggml = formats::llama_cpp_rope_frequencies(c, 0, c.rope_base, 4001);
  ASSERT_TRUE(ggml.ggml.has_value());
  EXPECT_EQ(ggml.inv_freq, exact.inv_freq);
  std::vector<double> cos_sin(2 * ggml.inv_freq.size());
  model::rope_cos_sin(ggml, 4000, cos_sin);
  const float theta_scale = std::pow(10000.0f, -2.0f / 128.0f);
  float theta = 4000.0f;
  double worst = 0;
  for (std::size_t i = 0; i < ggml.inv_freq.size(); ++i) {
    EXPECT_EQ(cos_sin[2 * i], std::cos(theta)) << i;
    EXPECT_EQ(cos_sin[2 * i + 1], std::sin(theta)) << i;
    worst = std::max(worst, std::abs(cos_sin[2 * i] - std::cos(4000.0 * exact.inv_freq[i])));
    theta *= theta_scale;
  }
  EXPECT_GT(worst, 1e-5);
  EXPECT_LT(worst, 1e-2);
  // YaRN's f32 steps are not modelled: its angles stay exact.
  c.rope_scaling.type = model::RopeType::yarn, c.rope_scaling.factor = 4, c.rope_scaling.original_context = 512;
  EXPECT_FALSE(formats::llama_cpp_rope_frequencies(c, 0, c.rope_base, 4001).ggml.has_value());
}

}  // namespace
}  // namespace tapdiff::testing
