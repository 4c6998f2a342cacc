// Op conformance of the Vulkan engine, in the spirit of llama.cpp's test-backend-ops: every op
// kernel against the reference op on the same random inputs (teacher forcing: both engines get
// the inputs by write(), run the one op, and are read back), over awkward shapes: T = 1, 2, 3, 5,
// 7, 33, 100; a 2-token chunk then a 5-token chunk on one KV cache; decode steps after a prefill;
// heads/KV heads 8/4, 6/6, 32/8, 32/4; head_dim 8, 16, 64, 128; widths that are multiples of no
// tile size; every weight dtype; both RoPE conventions, QKV bias, a sliding window, tied output;
// and the forced kernel variants (GEMM, matrix-vector, flash and two-pass attention). The
// cooperative-matrix GEMM (f16 only) runs where the device has
// VK_NV_cooperative_matrix; elsewhere (lavapipe) its cases are skipped, saying why.
//
// Bound: NMSE <= 1e-9 per op in f32, for every op. Both engines compute in f32 from identical
// (bit-exact) dequantized weights, so what differs is only the order of f32 roundings (sums over
// K of a GEMM, the softmax sum, exp/sqrt/division accurate to a few ulp): relative errors of
// ~1e-7 * sqrt(K), an NMSE below ~1e-12 for every op here; the 1e-9 bound leaves room and still
// catches any real bug (a wrong mask entry or head mapping gives NMSE >> 1e-4).
//
// f16 (--dtype f16, the *_act_f16 cases) against the reference's f16 emulation: both read the
// same f16 inputs and f16 weights, compute in f32 and round the output to f16. The f32 results
// differ by ~1e-7 relative as above; an element comes out different only where that difference
// straddles an f16 rounding boundary, and then by one f16 ulp (2^-11 to 2^-10 relative), so most
// ops agree exactly (NMSE 0). But one such flip in a small output weighs a lot: in a decode row of
// n = 200 values, one element at 3x the rms off by 2^-10 relative gives (3 * 2^-10)^2 / 200 = 4e-8.
// Bound: 1e-7. A real bug lands far above it (>> 1e-4), and so does an op that accumulates in f16
// instead of f32 (relative errors of 2^-11 * sqrt(K): NMSE ~ 1e-5 for K = 96).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <functional>
#include <map>
#include <numeric>
#include <random>

#include <fmt/core.h>

#include "formats/family_spec.h"
#include "formats/load_model.h"
#include "formats/synth.h"
#include "gpu/vulkan_engine.h"
#include "model/errors.h"
#include "reference/cpu_engine.h"
#include "tests/reference_fixtures.h"
#include "tests/test_support.h"
#include "tests/vulkan_fixtures.h"

namespace tapdiff::testing {
namespace {

using model::DType;
using model::HostTensor;
using model::Op;
using model::TensorId;

constexpr double kMaxNmse = 1e-9;
constexpr double kMaxNmseF16 = 1e-7;
// bf16 keeps 3 significant bits fewer than f16: a value on the other side of a rounding boundary
// weighs 64 times more.
constexpr double kMaxNmseBf16 = 64 * kMaxNmseF16;

struct OpCase {
  std::string name;
  int heads, kv_heads, head_dim, dim, ffn, vocab;
  DType dtype = DType::f32;
  std::vector<std::vector<int>> chunkings;  // chunk sizes run one after another on one KV cache
  std::string arch = "llama";
  int window = 0;
  bool tied = false;
  std::string kernels;               // --kernels overrides
  bool f16 = false;                  // --dtype f16 against the reference's f16 emulation
  bool bf16 = false;                 // --dtype bf16 against the reference's bf16 emulation
  bool llama_cpp = false;            // --dtype llama.cpp against the reference's llama.cpp emulation
  int rotary_dim = 0;                // RoPE on the leading channels of a head only (0: all)
  double rope_attention_factor = 0;  // YaRN's cos/sin scale (0: none)
  model::Experts experts = {};       // count > 0: a mixture of experts (arch qwen3moe)
  // The block of a Gemma 2 GGUF where synth's weights allow: GELU (tanh form), an attention
  // soft-cap, arch gemma2 (whose llama.cpp graph scales q before the attention)
  bool gemma_block = false;
  // GPT-NeoX's block where synth's weights allow: LayerNorms (layer_norm.comp), a plain FFN with
  // relu2 (its gate unused), attention and FFN in parallel from norms of their own
  bool layer_norm_block = false;
  model::Activation plain_activation = model::Activation::relu2;  // that block's (xielu: each layer's scalars)
  double clip_qkv = 0;                                            // OLMo's clamp of q, k and v
  model::QueryTemperature temperature = {};                       // Ministral 3's, in q's RoPE table
  int chunk = 0;  // Llama 4's attention in chunks of this many positions
  // Llama 4's layer: q and k normed after RoPE without weights, the experts reading their inputs
  // times their sigmoids; one without RoPE, its q scaled by the temperature, where !rotates
  bool llama4 = false;
  bool rotates = true;
  model::LatentAttention mla = {};  // kv_rank > 0: DeepSeek's latent attention (arch deepseek2, a mixture)
};

std::ostream& operator<<(std::ostream& os, const OpCase& c) { return os << c.name; }

OpCase op_case(std::string name, std::array<int, 6> shape, DType dtype, std::vector<std::vector<int>> chunkings,
               std::string arch = "llama", int window = 0, bool tied = false, std::string kernels = "") {
  const auto [heads, kv_heads, head_dim, dim, ffn, vocab] = shape;
  return {std::move(name), heads,  kv_heads, head_dim,          dim, ffn, vocab, dtype, std::move(chunkings),
          std::move(arch), window, tied,     std::move(kernels)};
}

// The case with f16 weights and activations.
OpCase act_f16(OpCase c) {
  c.name += "_act_f16";
  c.f16 = true;
  return c;
}

// The case with bf16 weights and activations.
OpCase act_bf16(OpCase c) {
  c.name += "_act_bf16";
  c.bf16 = true;
  return c;
}

// The case as a mixture of experts (synth's qwen3moe): `count` experts of FFN width `ffn`, `active`
// per token.
OpCase experts(OpCase c, int count, int active, int ffn) {
  c.arch = "qwen3moe";
  c.experts = {count, active, ffn, true, {}};
  return c;
}

// The case as gpt-oss (synth's): sinks in every attention kernel that has them, the clamped SwiGLU,
// biases on the router and the experts, a window of 8; `count` experts of FFN width `ffn`, `active`
// per token.
OpCase gpt_oss(OpCase c, int count, int active, int ffn) {
  c.arch = "gpt-oss";
  c.experts = {count, active, ffn, true, {}};
  return c;
}

// The case with Llama 4's chunked attention: a row sees the keys of its own chunk of `size` positions.
OpCase chunked(OpCase c, int size) {
  c.chunk = size;
  return c;
}

// The case as a Llama 4 layer (OpCase::llama4) whose mixture has `count` experts of FFN width `ffn`,
// `active` per token; without RoPE where !rotates.
OpCase llama4(OpCase c, int count, int active, int ffn, bool rotates) {
  c = experts(std::move(c), count, active, ffn);
  c.llama4 = true;
  c.rotates = rotates;
  return c;
}

// The case as DeepSeek-V3 (synth's deepseek2): latent attention of `mla`'s ranks and widths (heads'
// head_dim nope_dim + rope_dim), beside 8 experts of FFN width 32, 2 per token.
OpCase latent(OpCase c, model::LatentAttention mla) {
  c.arch = "deepseek2";
  c.experts = {8, 2, 32, true, {}};
  c.mla = mla;
  c.kv_heads = c.heads, c.head_dim = mla.nope_dim + mla.rope_dim;
  return c;
}

// A 1-layer synth model of the case's shape (the per-op kernels do not depend on depth).
std::filesystem::path write_case_model(const OpCase& c) {
  formats::SynthOptions o;
  o.config.family = *formats::family_named(c.arch);
  o.config.experts = c.experts;
  o.config.n_layers = 1;
  o.config.n_heads = c.heads, o.config.n_kv_heads = c.kv_heads, o.config.head_dim = c.head_dim;
  o.config.mla = c.mla;
  if (c.mla.kv_rank > 0) o.config.rotary_dim = c.mla.rope_dim;
  o.config.dim = c.dim, o.config.ffn_dim = c.ffn, o.config.vocab = c.vocab;
  o.config.context_length = 4096;
  o.config.tied_output = c.tied;
  o.config.rope_base = c.arch == "qwen2" ? 1e6 : 1e4;
  o.dtype = c.dtype;
  const auto dir = std::filesystem::temp_directory_path() / "tapdiff-tests" / "vulkan-ops";
  std::filesystem::create_directories(dir);
  const auto path = dir / (c.name + ".gguf");
  formats::write_synth_model(path, o);
  return path;
}

// Partial rotary RoPE (rotary_dim of the head's channels), scaled by an attention factor.
OpCase partial_rotary(OpCase c, int rotary_dim, double attention_factor) {
  c.rotary_dim = rotary_dim;
  c.rope_attention_factor = attention_factor;
  return c;
}

// The case with GPT-NeoX's block (OpCase::layer_norm_block), its FFN's activation `act`.
OpCase layer_norm_block(OpCase c, model::Activation act = model::Activation::relu2) {
  c.layer_norm_block = true;
  c.plain_activation = act;
  return c;
}

// Whether the case runs the weights under a config that synth does not write.
bool edits_config(const OpCase& c) {
  return c.window > 0 || c.rotary_dim > 0 || c.rope_attention_factor > 0 || c.gemma_block || c.layer_norm_block ||
         c.clip_qkv > 0 || c.temperature.beta > 0 || c.chunk > 0 || c.llama4;
}

// The same weights under the case's config edits: the sliding window, partial rotary, YaRN's
// attention factor (scaling the frequencies too), Gemma's block and a LayerNorm block, which synth
// has no options for.
std::unique_ptr<model::Model> with_config_edits(const model::Model& base, const OpCase& c) {
  model::ModelConfig config = base.config();
  config.sliding_window = c.window;
  config.rotary_dim = c.rotary_dim;
  if (c.rope_attention_factor > 0) {
    config.rope_scaling.type = model::RopeType::yarn;
    config.rope_scaling.factor = 4.0;
    config.rope_scaling.original_context = 32;
    config.rope_scaling.attention_factor = c.rope_attention_factor;
  }
  if (c.gemma_block) {
    config.family = model::Family::gemma2;
    config.block.activation = model::Activation::gelu_tanh;
    config.block.attention_softcap = 20;
  }
  if (c.layer_norm_block) {
    config.block.norm = model::NormKind::layer;
    config.block.ffn = model::Ffn::plain;
    config.block.activation = c.plain_activation;
    config.block.parallel = model::Parallel::own_norm;
  }
  config.block.clip_qkv = c.clip_qkv;
  config.query_temperature = c.temperature;
  config.attention_chunk = c.chunk;
  if (c.llama4) {
    config.block.qk_norm = model::QkNorm::per_head_plain;
    config.block.qk_norm_after_rope = true;
    config.experts.score = model::RouterScore::sigmoid;
    config.experts.normalize = false;
    config.experts.weights_scale_input = true;
    if (!c.rotates) {
      config.rope_layers = {false};
      config.query_temperature = {.beta = 0.3, .length = 3, .offset = 1, .nope_layers = true};
    }
  }
  auto m = model_with_config(base, config, [&](model::WeightKind kind) {  // Llama 4's q/k norms have no weight
    return !c.llama4 || (kind != model::WeightKind::q_norm && kind != model::WeightKind::k_norm);
  });
  if (config.block.activation == model::Activation::xielu)  // scalars apart per layer, near transformers' init
    for (int l = 0; l < config.n_layers; ++l)
      for (const auto& [kind, value] :
           {std::pair{model::WeightKind::xielu_alpha_p, 0.4f + 0.2f * static_cast<float>(l)},
            std::pair{model::WeightKind::xielu_alpha_n, 0.7f - 0.1f * static_cast<float>(l)},
            std::pair{model::WeightKind::xielu_beta, 0.5f}, std::pair{model::WeightKind::xielu_eps, -1e-6f}})
        m->add_values(kind, l, "xielu scalar", std::span(&value, 1));
  model::add_unit_head_norms(*m);
  return m;
}

HostTensor random_tensor(std::mt19937_64& rng, std::int64_t rows, std::int64_t cols) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  HostTensor t(model::Scalar::f32, rows, cols);
  for (float& v : t.f32()) v = normal(rng);
  return t;
}

// Random expert choices: per row `cols` distinct ids of `experts`, ascending (what moe_ids holds).
HostTensor random_ids(std::mt19937_64& rng, std::int64_t rows, std::int64_t cols, int experts) {
  HostTensor t(model::Scalar::f32, rows, cols);
  std::vector<int> all(static_cast<std::size_t>(experts));
  for (std::int64_t r = 0; r < rows; ++r) {
    std::iota(all.begin(), all.end(), 0);
    std::shuffle(all.begin(), all.end(), rng);
    std::sort(all.begin(), all.begin() + cols);
    for (std::int64_t j = 0; j < cols; ++j)
      t.f32()[static_cast<std::size_t>(r * cols + j)] = static_cast<float>(all[static_cast<std::size_t>(j)]);
  }
  return t;
}

// Gives every engine the same fresh random inputs of `step` (rows of the current chunk), runs the
// step on each and returns their outputs, in the engines' order.
std::vector<HostTensor> run_step(std::initializer_list<model::Engine*> engines, const model::Graph& graph,
                                 const model::Step& step, int rows, std::mt19937_64& rng) {
  for (const TensorId& in : step.inputs) {
    const HostTensor x = in.op == model::Op::moe_ids
                             ? random_ids(rng, rows, graph.width(in), graph.width({model::Op::moe_router, in.layer}))
                             : random_tensor(rng, rows, graph.width(in));
    for (model::Engine* e : engines) e->write(in, x);
  }
  std::vector<HostTensor> outputs;
  for (model::Engine* e : engines) {
    e->execute(step, {});
    outputs.push_back(e->read(step.output()));
  }
  return outputs;
}

// Runs the chunks one after another on one KV cache; in each, every step of the graph gets fresh
// random inputs on both engines and its output is compared, held to bound(op). worst[op] collects
// the largest NMSE.
void compare_chunks(model::Engine& cpu, model::Engine& gpu, const model::Graph& graph, const std::vector<int>& chunks,
                    int vocab, const std::function<double(Op)>& bound, std::mt19937_64& rng,
                    std::map<std::string, double>& worst) {
  cpu.reset(), gpu.reset();
  int pos = 0;
  for (std::size_t ci = 0; ci < chunks.size(); ++ci) {
    const int rows = chunks[ci];
    std::vector<std::int32_t> tokens(static_cast<std::size_t>(rows));
    for (auto& t : tokens) t = static_cast<std::int32_t>(rng() % static_cast<std::uint64_t>(vocab));
    const model::ChunkInfo chunk{static_cast<int>(ci), pos, rows, ci > 0 && rows == 1};
    cpu.begin_chunk(tokens, chunk), gpu.begin_chunk(tokens, chunk);
    for (const model::Step& step : graph.steps()) {
      const std::vector<HostTensor> out = run_step({&cpu, &gpu}, graph, step, rows, rng);
      const double e = nmse(out[0], out[1]);
      EXPECT_LE(e, bound(step.op)) << model::to_string(step.output()) << " chunk " << ci << " of "
                                   << ::testing::PrintToString(chunks) << " (rows " << rows << ", first_pos " << pos
                                   << "), kernel " << gpu.kernel(step.op);
      double& w = worst[std::string(model::op_name(step.op))];
      w = std::max(w, e);
    }
    cpu.end_chunk(), gpu.end_chunk();
    pos += rows;
  }
}

// The UsageError's message when making an engine of `m` with these options fails with one; "" when
// the engine is made.
std::string usage_error_of(const model::Model& m, const gpu::VulkanEngineOptions& options) {
  try {
    gpu::make_vulkan_engine(m, options);
    return "";
  } catch (const UsageError& e) {
    return e.what();
  }
}

// Whether `kernels` forces matmul-coop2 or attention-coop2. Their engines run without the validation
// layer: Debian 12's (1.3.239) predates VK_NV_cooperative_matrix2 and rejects the kernels' structs
// and SPIR-V (the engine turns them off while validating). Their ops are checked against the
// reference all the same.
bool forces_coop2(const std::string& kernels) {
  return kernels.find("matmul=coop2") != std::string::npos || kernels.find("attention=coop2") != std::string::npos;
}

// validated_vulkan_engine, or for the coop2 kernels an engine without the layer.
std::unique_ptr<gpu::VulkanEngine> engine_for(const model::Model& m, gpu::VulkanEngineOptions options) {
  if (!forces_coop2(options.kernels)) return validated_vulkan_engine(m, options);
  options.validation = false;
  return gpu::make_vulkan_engine(m, options);
}

// expect_clean for engine_for's engines that have the layer.
void expect_clean_if_validated(const gpu::VulkanEngine& engine, const std::string& kernels) {
  if (!forces_coop2(kernels)) expect_clean(engine);
}

// The UsageError of forcing `kernels` on an engine of synth:tiny (head_dim 16) in f16 or f32 mode,
// made as engine_for makes it; "" when made.
std::string forcing_error(const std::string& kernels, bool f16) {
  gpu::VulkanEngineOptions options;
  options.f16 = f16;
  if (forces_coop2(kernels)) options.validation = false;
  options.kernels = kernels;
  return usage_error_of(*formats::load_model(synth_model_path("tiny")), options);
}
std::string f16_forcing_error(const std::string& kernels) { return forcing_error(kernels, true); }

// Why this device cannot run the cooperative-matrix GEMM, as forcing it says; "" when it can.
const std::string& coop_gemm_missing() {
  static const std::string why = f16_forcing_error("matmul=coop");
  return why;
}

// Likewise matmul-coop2 (VK_NV_cooperative_matrix2).
const std::string& coop2_gemm_missing() {
  static const std::string why = f16_forcing_error("matmul=coop2");
  return why;
}

// Why this device cannot run the cooperative-matrix attention for models of synth:tiny's head_dim
// (16); "" when it can.
const std::string& coop_attention_missing() {
  static const std::string why = f16_forcing_error("attention=coop");
  return why;
}

// Likewise attention-coop2 (VK_NV_cooperative_matrix2 with its reductions).
const std::string& coop2_attention_missing() {
  static const std::string why = f16_forcing_error("attention=coop2");
  return why;
}

// Why this device cannot run the cooperative-matrix kernels the case forces; "" when it can (or
// when it forces none).
std::string coop_missing(const OpCase& c) {
  if (c.kernels.find("attention=coop2") != std::string::npos) return coop2_attention_missing();
  if (forces_coop2(c.kernels)) return coop2_gemm_missing();
  if (c.kernels.find("matmul=coop") != std::string::npos && !coop_gemm_missing().empty()) return coop_gemm_missing();
  if (c.kernels.find("attention=coop") != std::string::npos) return coop_attention_missing();
  return "";
}

class VulkanOps : public ::testing::TestWithParam<OpCase> {};

TEST_P(VulkanOps, EveryOpMatchesTheReferenceOnRandomInputs) {
  const OpCase& c = GetParam();
  if (const std::string why = coop_missing(c); !why.empty()) GTEST_SKIP() << why;
  const auto base = formats::load_model(write_case_model(c));
  const auto m = edits_config(c) ? with_config_edits(*base, c) : nullptr;
  const model::Model& model = m ? *m : *base;
  const model::Graph graph(model.config());
  reference::CpuEngineOptions cpu_options{model::Precision::f32, 1};
  cpu_options.precision = c.f16         ? model::Precision::f16
                          : c.bf16      ? model::Precision::bf16
                          : c.llama_cpp ? model::Precision::llama_cpp
                                        : model::Precision::f32;
  const auto cpu = reference::make_cpu_engine(model, cpu_options);
  gpu::VulkanEngineOptions options;
  options.kernels = c.kernels;
  options.f16 = c.f16;
  options.bf16 = c.bf16;
  options.llama_cpp = c.llama_cpp;
  const auto gpu = engine_for(model, options);

  std::mt19937_64 rng(12345);
  std::map<std::string, double> worst;  // per op
  // llama.cpp's norms, RMSNorm and LayerNorm, are ggml's to the last bit in both engines (their
  // outputs are what the products round to 8 bits)
  const auto bound = [&](Op op) {
    if (c.llama_cpp && model::op_class(op) == model::OpClass::norm) return 0.0;
    if (c.llama_cpp && (c.gemma_block || c.layer_norm_block) && op == Op::ffn_act)
      return 0.0;  // a table lookup (and a product)
    // the soft-cap's tanh is the device's, not the CPU's: some probabilities round to the other f16
    // value (5.7e-10 on lavapipe; q rounded before its scale instead: 1e-7)
    if (c.llama_cpp && c.gemma_block && op == Op::attn) return 1e-8;
    return c.f16 ? kMaxNmseF16 : c.bf16 ? kMaxNmseBf16 : kMaxNmse;
  };
  for (const std::vector<int>& chunks : c.chunkings)
    compare_chunks(*cpu, *gpu, graph, chunks, c.vocab, bound, rng, worst);
  std::string line;
  for (const auto& [op, e] : worst) line += fmt::format(" {} {:.1e}", op, e);
  std::printf("[%s] worst NMSE per op:%s\n", c.name.c_str(), line.c_str());
  // matmul=coop2 runs the products of its shapes on it (q_proj's always are), the others on coop
  if (c.kernels.find("matmul=coop2") != std::string::npos) {
    const std::string tile = c.kernels.find("matmul=coop2-128x256") != std::string::npos ? "128x256" : "128x128";
    EXPECT_NE(gpu->kernel(model::Op::q_proj).find("matmul-coop2-" + tile), std::string::npos)
        << gpu->kernel(model::Op::q_proj);
  }
  // attention=coop2 runs the passes of 16 rows or more (the last one here, where it has them)
  if (c.kernels.find("attention=coop2") != std::string::npos && c.chunkings.back().back() >= 16) {
    EXPECT_NE(gpu->kernel(model::Op::attn).find("attention-coop2-"), std::string::npos) << gpu->kernel(model::Op::attn);
  }
  if (c.llama_cpp && c.layer_norm_block) {  // ggml's LayerNorm, a plain FFN's GELU from the table
    EXPECT_EQ(gpu->kernel(model::Op::attn_norm), "layer_norm-ggml");
    EXPECT_EQ(gpu->kernel(model::Op::ffn_act), "gelu_tanh+llama.cpp-f16-gelu-table");
    EXPECT_EQ(cpu->kernel(model::Op::ffn_act), "eigen-rowwise+llama.cpp-f16-gelu-table");
  }
  if (c.llama_cpp && c.gemma_block) {
    EXPECT_EQ(gpu->kernel(model::Op::ffn_act), "gelu_tanh_mul+llama.cpp-f16-gelu-table");
    EXPECT_EQ(cpu->kernel(model::Op::ffn_act), "eigen-rowwise+llama.cpp-f16-gelu-table");
  }
  expect_clean_if_validated(*gpu, c.kernels);
}

const std::vector<std::vector<int>> kAllRows = {{1}, {2}, {3}, {5}, {7}, {33}, {100}, {2, 5}, {7, 1, 1}};
// Flash over partial and whole tiles, chunks after chunks, and split-KV: decode steps and a short
// chunk after 100 to 200 positions (4 to 7 splits of 32).
const std::vector<std::vector<int>> kFlashRows = {{1},   {2},    {5},         {31},        {32},    {33},
                                                  {100}, {2, 5}, {40, 40, 1}, {200, 1, 1}, {100, 7}};

INSTANTIATE_TEST_SUITE_P(
    Shapes, VulkanOps,
    ::testing::Values(
        // {heads, kv_heads, head_dim, dim, ffn, vocab}: widths off every tile (64) and, where the
        // dtype allows, block (32) size
        op_case("gqa8x4_hd16_f32_all_rows", {8, 4, 16, 72, 136, 301}, DType::f32, kAllRows),
        op_case("mha6x6_hd8_f16", {6, 6, 8, 40, 100, 259}, DType::f16, {{1}, {5}, {33}, {2, 5}}),
        op_case("gqa32x8_hd64_bf16", {32, 8, 64, 96, 200, 300}, DType::bf16, {{1}, {7}, {2, 5}}),
        op_case("gqa32x4_hd128_q8_0", {32, 4, 128, 96, 160, 300}, DType::q8_0, {{3}, {33}, {2, 5}}),
        op_case("gqa8x4_hd16_q4_0_tied", {8, 4, 16, 96, 224, 300}, DType::q4_0, {{1}, {5}, {100}, {2, 5}}, "llama", 0,
                true),
        op_case("qwen2_rotate_half_bias", {8, 4, 16, 72, 136, 301}, DType::f32, {{1}, {7}, {2, 5}}, "qwen2"),
        op_case("sliding_window_3", {8, 4, 16, 72, 136, 301}, DType::f32, {{7}, {2, 5}, {5, 1, 1, 1}}, "llama", 3),
        partial_rotary(op_case("partial_rotary_interleaved", {8, 4, 16, 72, 136, 301}, DType::f32, {{7}, {2, 5, 1}}), 8,
                       1.25),
        partial_rotary(op_case("partial_rotary_rotate_half", {8, 4, 16, 72, 136, 301}, DType::f32, {{7}, {2, 5, 1}},
                               "qwen2"),
                       6, 0),
        layer_norm_block(op_case("layer_norm_plain_parallel", {8, 4, 16, 72, 136, 301}, DType::f32,
                                 {{1}, {7}, {2, 5}})),
        act_f16(layer_norm_block(op_case("layer_norm_plain_parallel", {6, 6, 8, 40, 100, 259}, DType::f16,
                                         {{1}, {33}, {2, 5}}))),
        [] {  // Apertus' activation and OLMo's clamp
          OpCase c = layer_norm_block(
              op_case("layer_norm_xielu_clipped", {8, 4, 16, 72, 136, 301}, DType::f32, {{1}, {7}, {2, 5}}),
              model::Activation::xielu);
          c.clip_qkv = 0.6;
          return c;
        }(),
        [] {  // Ministral 3's temperature, stepping every 3 positions
          OpCase c = op_case("query_temperature", {8, 4, 16, 72, 136, 301}, DType::f32, {{1}, {7}, {2, 5, 1}});
          c.temperature = {.beta = 0.3, .length = 3};
          return c;
        }(),
        op_case("forced_matvec_shared", {8, 4, 16, 72, 136, 301}, DType::f32, {{1}, {5}, {2, 5}}, "llama", 0, false,
                "matmul=matvec,matvec=shared"),
        op_case("forced_matvec_subgroup_q4_0", {8, 4, 16, 96, 224, 300}, DType::q4_0, {{3}, {2, 5}}, "llama", 0, false,
                "matmul=matvec,matvec=subgroup"),
        op_case("forced_matvec_subgroup_bf16", {32, 8, 64, 96, 200, 300}, DType::bf16, {{5}, {2, 5}}, "llama", 0, false,
                "matmul=matvec,matvec=subgroup"),
        op_case("forced_matvec_subgroup_f16", {6, 6, 8, 40, 100, 259}, DType::f16, {{5}, {2, 5}}, "llama", 0, false,
                "matmul=matvec,matvec=subgroup"),
        op_case("forced_tiled_q8_0", {6, 6, 16, 96, 160, 300}, DType::q8_0, {{1}, {2, 5}}, "llama", 0, false,
                "matmul=tiled"),
        // Mixtures of experts: the router, its choice and the experts' products on random ids
        // (decode rows and prefill rows, chunks after chunks; 300 rows: two tiles of pairs per
        // expert), f32 and block weights, f16 activations; the products per pair in prefill
        // (experts=matvec, the shared-memory build) and grouped in tiles in decode (experts=tiled)
        experts(op_case("moe_8x2_f32", {8, 4, 16, 72, 136, 301}, DType::f32, {{1}, {7}, {33}, {300}, {2, 5}}), 8, 2,
                40),
        experts(op_case("moe_16x4_q8_0", {8, 4, 16, 96, 160, 300}, DType::q8_0, {{1}, {5}, {100}, {2, 5}}), 16, 4, 64),
        act_f16(experts(op_case("moe_8x2_f16", {8, 4, 16, 72, 136, 301}, DType::f16, {{1}, {7}, {130}, {2, 5}}), 8, 2,
                        40)),
        experts(op_case("moe_forced_matvec_shared", {8, 4, 16, 72, 136, 301}, DType::f32, {{1}, {5}, {70}}, "llama", 0,
                        false, "matvec=shared,experts=matvec"),
                6, 3, 24),
        experts(op_case("moe_forced_tiled_decode", {8, 4, 16, 72, 136, 301}, DType::f32, {{1}, {2, 1, 1}}, "llama", 0,
                        false, "experts=tiled"),
                6, 3, 24),
        // gpt-oss: attention sinks in two-pass, flash, flash's split-KV and the decode kernel's combine
        gpt_oss(op_case("gpt_oss_two_pass", {8, 4, 16, 72, 136, 301}, DType::f32, {{1}, {7}, {33}, {2, 5}}, "llama", 0,
                        false, "attention=two-pass"),
                6, 2, 40),
        gpt_oss(op_case("gpt_oss_flash", {8, 4, 16, 72, 136, 301}, DType::f32, kFlashRows, "llama", 0, false,
                        "attention=flash,decode-attention=flash-split"),
                6, 2, 40),
        gpt_oss(op_case("gpt_oss_decode_split", {8, 4, 16, 72, 136, 301}, DType::f32, {{40, 40, 1}, {200, 1, 1}},
                        "llama", 0, false, "decode-attention=decode-split"),
                6, 2, 40),
        act_f16(gpt_oss(op_case("gpt_oss", {8, 4, 16, 72, 136, 301}, DType::f32, {{1}, {7}, {130}, {2, 5}}), 6, 2, 40)),
        // Llama 4: chunks of 5 in two-pass, flash, flash's split-KV and the decode kernel; its
        // layers with and without RoPE (the temperature stepping at positions 2, 5, ...), in f16 too
        chunked(op_case("chunked_two_pass", {8, 4, 16, 72, 136, 301}, DType::f32, {{1}, {7}, {33}, {2, 5}}, "llama", 0,
                        false, "attention=two-pass"),
                5),
        chunked(op_case("chunked_flash", {8, 4, 16, 72, 136, 301}, DType::f32, kFlashRows, "llama", 0, false,
                        "attention=flash,decode-attention=flash-split"),
                5),
        chunked(op_case("chunked_decode_split", {8, 4, 16, 72, 136, 301}, DType::f32, {{40, 40, 1}, {200, 1, 1}},
                        "llama", 0, false, "decode-attention=decode-split"),
                37),
        chunked(llama4(op_case("llama4_rope_layer", {8, 4, 16, 72, 136, 301}, DType::f32, {{1}, {7}, {33}, {2, 5}}), 6,
                       2, 40, true),
                5),
        act_f16(chunked(llama4(op_case("llama4_rope_layer", {8, 4, 16, 72, 136, 301}, DType::f32, {{7}, {33}, {2, 5}}),
                               6, 1, 40, true),
                        5)),
        llama4(op_case("llama4_nope_layer", {8, 4, 16, 72, 136, 301}, DType::f32, {{1}, {7}, {2, 5, 1}}), 6, 2, 40,
               false),
        // DeepSeek's latent attention: the latent and the shared key part gathered apart, q turned
        // after its no-RoPE channels (interleaved pairs), keys and values cached at the wider head
        // (values of 16 padded to 24; without a q rank, keys of 10 and q padded to values of 12)
        latent(op_case("latent_q_rank", {4, 4, 24, 64, 96, 200}, DType::f32, {{1}, {7}, {33}, {2, 5, 1}}),
               {.q_rank = 32, .kv_rank = 32, .nope_dim = 16, .rope_dim = 8, .v_dim = 16}),
        latent(op_case("latent_values_wider", {6, 6, 10, 64, 96, 200}, DType::f32, {{7}, {2, 5, 1}}),
               {.q_rank = 0, .kv_rank = 24, .nope_dim = 6, .rope_dim = 4, .v_dim = 12}),
        act_f16(latent(op_case("latent_q_rank", {4, 4, 24, 64, 96, 200}, DType::f32, {{7}, {33}, {2, 5, 1}}),
                       {.q_rank = 32, .kv_rank = 32, .nope_dim = 16, .rope_dim = 8, .v_dim = 16})),
        // Both attention kernels at every row count: flash tiles of 32 rows and 32 keys (16 keys at
        // head_dim 128 on lavapipe's 32 KiB of shared memory) over partial tiles, chunks after
        // chunks and decode steps; two-pass over the long chunks auto gives to flash
        op_case("flash_gqa8x4_hd16_f32", {8, 4, 16, 72, 136, 301}, DType::f32, kFlashRows, "llama", 0, false,
                "attention=flash"),
        op_case("flash_gqa32x4_hd128_q8_0", {32, 4, 128, 96, 160, 300}, DType::q8_0, {{3}, {33}, {40, 40, 1}, {150, 1}},
                "llama", 0, false, "attention=flash"),
        op_case("flash_mha6x6_hd8_f16", {6, 6, 8, 40, 100, 259}, DType::f16, {{1}, {100}, {40, 40, 1}}, "llama", 0,
                false, "attention=flash"),
        op_case("flash_sliding_window_3", {8, 4, 16, 72, 136, 301}, DType::f32, {{7}, {40}, {33, 33, 1}, {100, 1, 1}},
                "llama", 3, false, "attention=flash"),
        op_case("two_pass_gqa32x8_hd64", {32, 8, 64, 96, 200, 300}, DType::f32, {{100}, {40, 40, 1}}, "llama", 0, false,
                "attention=two-pass"),
        // Heads of 144: three vec4 columns per flash invocation, 16 keys a tile in lavapipe's shared
        // memory; its decode steps on flash's split-KV (the decode kernel takes heads up to 128)
        op_case("flash_heads_of_144", {4, 2, 144, 64, 96, 100}, DType::f32, {{1}, {7}, {40, 40, 1}, {70, 1}}, "llama",
                0, false, "attention=flash"),
        // Decode steps: the decode kernel (auto's) over 1 to 33 splits of 32 or 64 positions, a head
        // of 2 to 32 vec4 channels (key groups of 16, 10, 8, 2 and 1, lanes left over), GQA groups of
        // 1 to 8, a sliding window; flash's split-KV forced for them
        op_case("decode_gqa8x4_hd16_f32", {8, 4, 16, 72, 136, 301}, DType::f32, {{1, 1}, {40, 40, 1}, {2100, 1, 1}},
                "llama", 0, false, "decode-attention=decode-split"),
        op_case("decode_mha6x6_hd8_f16", {6, 6, 8, 40, 100, 259}, DType::f16, {{1}, {31, 1, 1}, {200, 1, 1}}, "llama",
                0, false, "decode-attention=decode-split"),
        op_case("decode_gqa4x2_hd12", {4, 2, 12, 40, 64, 100}, DType::f32, {{40, 40, 1}, {70, 1}}, "llama", 0, false,
                "decode-attention=decode-split"),
        op_case("decode_gqa2x1_hd80", {2, 1, 80, 64, 96, 100}, DType::f32, {{40, 40, 1}, {70, 1}}, "llama", 0, false,
                "decode-attention=decode-split"),
        op_case("decode_gqa32x4_hd128_q8_0", {32, 4, 128, 96, 160, 300}, DType::q8_0, {{40, 40, 1}, {150, 1}}, "llama",
                0, false, "decode-attention=decode-split"),
        op_case("decode_sliding_window_3", {8, 4, 16, 72, 136, 301}, DType::f32, {{40, 1, 1}, {100, 1, 1}}, "llama", 3,
                false, "decode-attention=decode-split"),
        op_case("flash_split_decode_gqa8x4_hd16_f32", {8, 4, 16, 72, 136, 301}, DType::f32,
                {{40, 40, 1}, {200, 1, 1}, {100, 1}}, "llama", 0, false, "decode-attention=flash-split"),
        // f16 weights and activations: f32 and bf16 matrices stored as f16, F16 kept, Q8_0 and Q4_0
        // rounded as dequantized
        act_f16(op_case("gqa8x4_hd16_f32", {8, 4, 16, 72, 136, 301}, DType::f32, kAllRows)),
        act_f16(partial_rotary(
            op_case("partial_rotary_rotate_half", {8, 4, 16, 72, 136, 301}, DType::f32, {{7}}, "qwen2"), 10, 1.5)),
        act_f16(op_case("gqa32x8_hd64_bf16", {32, 8, 64, 96, 200, 300}, DType::bf16, {{1}, {7}, {2, 5}})),
        act_f16(op_case("mha6x6_hd8_f16", {6, 6, 8, 40, 100, 259}, DType::f16, {{1}, {33}, {2, 5}})),
        act_f16(op_case("gqa32x4_hd128_q8_0", {32, 4, 128, 96, 160, 300}, DType::q8_0, {{3}, {33}, {2, 5}})),
        act_f16(op_case("gqa8x4_hd16_q4_0_tied", {8, 4, 16, 96, 224, 300}, DType::q4_0, {{1}, {100}, {2, 5}}, "llama",
                        0, true)),
        act_f16(op_case("qwen2_rotate_half_bias", {8, 4, 16, 72, 136, 301}, DType::f32, {{1}, {7}, {2, 5}}, "qwen2")),
        act_f16(op_case("forced_matvec_shared", {8, 4, 16, 72, 136, 301}, DType::f32, {{1}, {2, 5}}, "llama", 0, false,
                        "matmul=matvec,matvec=shared")),
        act_f16(op_case("forced_matvec_subgroup", {8, 4, 16, 72, 136, 301}, DType::f32, {{5}, {2, 5}}, "llama", 0,
                        false, "matmul=matvec,matvec=subgroup")),
        act_f16(op_case("flash_gqa32x8_hd64_bf16", {32, 8, 64, 96, 200, 300}, DType::bf16, kFlashRows, "llama", 0,
                        false, "attention=flash")),
        act_f16(op_case("flash_gqa32x4_hd128_q8_0", {32, 4, 128, 96, 160, 300}, DType::q8_0, {{5}, {100}, {40, 40, 1}},
                        "llama", 0, false, "attention=flash")),
        act_f16(op_case("decode_gqa32x8_hd64_bf16", {32, 8, 64, 96, 200, 300}, DType::bf16, {{40, 40, 1}, {200, 1, 1}},
                        "llama", 0, false, "decode-attention=decode-split")),
        act_f16(op_case("flash_split_decode_gqa32x8_hd64_bf16", {32, 8, 64, 96, 200, 300}, DType::bf16,
                        {{40, 40, 1}, {200, 1, 1}}, "llama", 0, false, "decode-attention=flash-split")),
        // The cooperative-matrix GEMM on every weight dtype (its tiles: 128 x 128, K in
        // slices of 32): rows from 1 to 100, widths off every tile, K = 40, 48 and 100 (not multiples
        // of 8: the element-wise path), QKV bias
        act_f16(op_case("coop_gqa8x4_hd16_f32", {8, 4, 16, 72, 136, 301}, DType::f32, kAllRows, "llama", 0, false,
                        "matmul=coop")),
        act_f16(op_case("coop_mha6x6_hd8_f16", {6, 6, 8, 40, 100, 259}, DType::f16, {{1}, {33}, {100}, {2, 5}}, "llama",
                        0, false, "matmul=coop")),
        act_f16(op_case("coop_gqa32x8_hd64_bf16", {32, 8, 64, 96, 200, 300}, DType::bf16, {{7}, {65}, {2, 5}}, "llama",
                        0, false, "matmul=coop")),
        act_f16(op_case("coop_gqa32x4_hd128_q8_0", {32, 4, 128, 96, 160, 300}, DType::q8_0, {{3}, {33}, {2, 5}},
                        "llama", 0, false, "matmul=coop")),
        act_f16(op_case("coop_gqa8x4_hd16_q4_0_tied", {8, 4, 16, 96, 224, 300}, DType::q4_0, {{1}, {100}, {2, 5}},
                        "llama", 0, true, "matmul=coop")),
        act_f16(op_case("coop_qwen2_rotate_half_bias", {8, 4, 16, 72, 136, 301}, DType::f32, {{1}, {7}, {2, 5}},
                        "qwen2", 0, false, "matmul=coop")),
        // Tiles inside Y (f16 weights, every width a multiple of 128, K of 32), read without bounds
        // checks: 256 rows (all inside), then 130 + 2 (one row tile inside, one not)
        act_f16(op_case("coop_inside_tiles_f16", {8, 4, 32, 256, 384, 384}, DType::f16, {{256}, {130, 2}}, "llama", 0,
                        false, "matmul=coop")),
        act_f16(op_case("coop_k16_inside_tiles_f16", {8, 4, 32, 256, 384, 384}, DType::f16, {{256}, {130, 2}}, "llama",
                        0, false, "matmul=coop-k16")),
        // matmul-coop2 (f16 weights; tiles of 128 x 128, K in passes of 4 x 64): tiles inside Y with
        // K = 256 (one pass) and edge tiles (130 + 2 rows); K = 384 (not whole passes: every tile
        // through the clamped layouts); rows from 1 to 100 with K = 72 and widths off every tile;
        // K = 40 and N = 100, 259 (not multiples of 8: those products run matmul-coop); QKV bias
        act_f16(op_case("coop2_inside_tiles_f16", {8, 4, 32, 256, 384, 384}, DType::f16, {{256}, {130, 2}}, "llama", 0,
                        false, "matmul=coop2")),
        act_f16(op_case("coop2_gqa8x4_hd16_f16", {8, 4, 16, 72, 136, 264}, DType::f16, kAllRows, "llama", 0, false,
                        "matmul=coop2")),
        act_f16(op_case("coop2_mha6x6_hd8_f16", {6, 6, 8, 40, 100, 259}, DType::f16, {{1}, {33}, {100}, {2, 5}},
                        "llama", 0, false, "matmul=coop2")),
        act_f16(op_case("coop2_qwen2_rotate_half_bias", {8, 4, 16, 72, 136, 304}, DType::f16, {{1}, {7}, {2, 5}},
                        "qwen2", 0, false, "matmul=coop2")),
        // ... its wide tile (128 x 256) forced: inside and edge tiles, a bias
        act_f16(op_case("coop2_wide_inside_tiles_f16", {8, 4, 32, 256, 512, 520}, DType::f16, {{256}, {130, 2}},
                        "llama", 0, false, "matmul=coop2-128x256")),
        act_f16(op_case("coop2_wide_qwen2_rotate_half_bias", {8, 4, 16, 72, 136, 304}, DType::f16,
                        {{1}, {7}, {2, 5}, {100}}, "qwen2", 0, false, "matmul=coop2-128x256")),
        // Its build with K slices of 16 (run when forced): K = 40, 96 and 100, widths off every
        // tile, every weight dtype class
        act_f16(op_case("coop_k16_mha6x6_hd8_f16", {6, 6, 8, 40, 100, 259}, DType::f16, {{1}, {33}, {100}, {2, 5}},
                        "llama", 0, false, "matmul=coop-k16")),
        act_f16(op_case("coop_k16_gqa32x8_hd64_bf16", {32, 8, 64, 96, 200, 300}, DType::bf16, {{7}, {65}, {2, 5}},
                        "llama", 0, false, "matmul=coop-k16")),
        act_f16(op_case("coop_k16_gqa8x4_hd16_q4_0_tied", {8, 4, 16, 96, 224, 300}, DType::q4_0, {{1}, {100}, {2, 5}},
                        "llama", 0, true, "matmul=coop-k16")),
        act_f16(op_case("coop_k16_qwen2_rotate_half_bias", {8, 4, 16, 72, 136, 301}, DType::f32, {{7}, {2, 5}}, "qwen2",
                        0, false, "matmul=coop-k16")),
        // The cooperative-matrix attention (tiles of 64 pairs and 32 keys; split-KV flash for the
        // short passes): partial and whole tiles, GQA groups of 2, 4 and 8 and none, head_dim 16,
        // 64 and 128, chunks after chunks, a sliding window
        act_f16(op_case("coop_attention_gqa8x4_hd16_f32", {8, 4, 16, 72, 136, 301}, DType::f32, kFlashRows, "llama", 0,
                        false, "attention=coop")),
        act_f16(op_case("coop_attention_gqa32x8_hd64_bf16", {32, 8, 64, 96, 200, 300}, DType::bf16,
                        {{16}, {100}, {130}, {40, 40, 1}, {100, 7}, {64, 64, 64}}, "llama", 0, false,
                        "attention=coop")),
        act_f16(op_case("coop_attention_gqa32x4_hd128_q8_0", {32, 4, 128, 96, 160, 300}, DType::q8_0,
                        {{5}, {100}, {40, 40, 1}, {150}}, "llama", 0, false, "attention=coop")),
        act_f16(op_case("coop_attention_mha6x6_hd16_f16", {6, 6, 16, 40, 100, 259}, DType::f16,
                        {{1}, {33}, {100}, {40, 40, 1}}, "llama", 0, false, "attention=coop")),
        act_f16(op_case("coop_attention_sliding_window_3", {8, 4, 16, 72, 136, 301}, DType::f32,
                        {{7}, {40}, {33, 33, 1}, {100, 1, 1}}, "llama", 3, false, "attention=coop")),
        act_f16(chunked(op_case("coop_attention_chunked", {8, 4, 16, 72, 136, 301}, DType::f32,
                                {{7}, {40}, {33, 33, 1}, {100, 1, 1}}, "llama", 0, false, "attention=coop"),
                        6)),
        // attention=coop2 on a chunked model: its chunked layers take attention-coop
        act_f16(chunked(op_case("coop2_attention_chunked", {8, 4, 16, 72, 136, 301}, DType::f32, {{40}, {33, 33, 1}},
                                "llama", 0, false, "attention=coop2"),
                        6)),
        // attention-coop2 (tiles of 64 pairs and 64 keys through VK_NV_cooperative_matrix2):
        // partial and whole tiles, masked and unmasked tiles, GQA groups of 4, 8 and none,
        // head_dim 16, 64 and 128, chunks after chunks, a sliding window
        act_f16(op_case("coop2_attention_gqa8x4_hd16_f32", {8, 4, 16, 72, 136, 301}, DType::f32, kFlashRows, "llama", 0,
                        false, "attention=coop2")),
        act_f16(op_case("coop2_attention_gqa32x8_hd64_bf16", {32, 8, 64, 96, 200, 300}, DType::bf16,
                        {{16}, {100}, {130}, {40, 40, 1}, {100, 7}, {64, 64, 64}, {200, 70}}, "llama", 0, false,
                        "attention=coop2")),
        act_f16(op_case("coop2_attention_gqa32x4_hd128_q8_0", {32, 4, 128, 96, 160, 300}, DType::q8_0,
                        {{5}, {100}, {40, 40, 1}, {150}}, "llama", 0, false, "attention=coop2")),
        act_f16(op_case("coop2_attention_mha6x6_hd16_f16", {6, 6, 16, 40, 100, 259}, DType::f16,
                        {{1}, {33}, {100}, {40, 40, 1}, {17, 30}}, "llama", 0, false, "attention=coop2")),
        act_f16(op_case("coop2_attention_sliding_window_3", {8, 4, 16, 72, 136, 301}, DType::f32,
                        {{7}, {40}, {33, 33, 1}, {100, 1, 1}, {20, 90}}, "llama", 3, false, "attention=coop2"))),
    [](const ::testing::TestParamInfo<OpCase>& p) { return p.param.name; });

// Every other block format (model/quant_blocks.h) in the f32 and f16 pipelines, through the
// matrix-vector kernel (1 row), the tiled GEMM (5 rows, 2 + 5) and, in f16, the cooperative GEMM
// where the device has one; widths a multiple of the format's block (256 for the super-blocks).
std::vector<OpCase> block_format_cases() {
  std::vector<OpCase> cases;
  for (const DType t : model::all_dtypes()) {
    if (!model::is_quantized(t) || t == DType::q8_0 || t == DType::q4_0) continue;  // in the shapes above
    const bool super_block = model::block_size(t) == 256;
    const std::array<int, 6> shape =
        super_block ? std::array{8, 4, 32, 256, 512, 300} : std::array{8, 4, 16, 96, 224, 300};
    const OpCase c = op_case(fmt::format("block_{}", model::dtype_name(t)), shape, t, {{1}, {5}, {2, 5}});
    cases.push_back(c);
    cases.push_back(act_f16(c));
    OpCase coop = op_case(fmt::format("coop_block_{}", model::dtype_name(t)), shape, t, {{5}, {33}}, "llama", 0, false,
                          "matmul=coop");
    cases.push_back(act_f16(coop));
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(BlockFormats, VulkanOps, ::testing::ValuesIn(block_format_cases()),
                         [](const ::testing::TestParamInfo<OpCase>& p) { return p.param.name; });

// bf16 weights and activations (bf16 values in f32 words) against the reference's bf16
// emulation: float weights converted on the host (f32, f16) or kept (bf16), block weights rounded
// as the kernels dequantize them, RoPE's and the elementwise kernels' vector stores, the matrix-vector
// kernels, a mixture of experts.
INSTANTIATE_TEST_SUITE_P(
    Bf16, VulkanOps,
    ::testing::Values(
        act_bf16(op_case("gqa8x4_hd16_f32", {8, 4, 16, 72, 136, 301}, DType::f32, {{1}, {5}, {33}, {2, 5}})),
        act_bf16(op_case("mha6x6_hd8_f16", {6, 6, 8, 40, 100, 259}, DType::f16, {{1}, {5}, {2, 5}})),
        act_bf16(op_case("gqa32x8_hd64_bf16", {32, 8, 64, 96, 200, 300}, DType::bf16, {{1}, {7}, {2, 5}})),
        act_bf16(op_case("gqa32x4_hd128_q8_0", {32, 4, 128, 96, 160, 300}, DType::q8_0, {{3}, {33}, {2, 5}})),
        act_bf16(op_case("block_q4_k", {8, 4, 32, 256, 512, 300}, DType::q4_k, {{1}, {5}, {2, 5}})),
        act_bf16(op_case("qwen2_rotate_half_bias", {8, 4, 16, 72, 136, 301}, DType::f32, {{1}, {7}, {2, 5}}, "qwen2")),
        act_bf16(op_case("forced_matvec_shared", {8, 4, 16, 72, 136, 301}, DType::f32, {{1}, {5}, {2, 5}}, "llama", 0,
                         false, "matmul=matvec,matvec=shared")),
        act_bf16(op_case("forced_matvec_subgroup_f16", {6, 6, 8, 40, 100, 259}, DType::f16, {{5}, {2, 5}}, "llama", 0,
                         false, "matmul=matvec,matvec=subgroup")),
        act_bf16(experts(op_case("moe_8x2_f32", {8, 4, 16, 72, 136, 301}, DType::f32, {{1}, {7}, {33}, {2, 5}}), 8, 2,
                         40))),
    [](const ::testing::TestParamInfo<OpCase>& p) { return p.param.name; });

// llama.cpp's precision (--dtype llama.cpp) against the reference's emulation of it, for every
// weight type: each product's input rounded to the type's dot-product type (F16, BF16, Q8_0, Q8_1
// with its sums, Q8_K), the norms as ggml's, the f16 KV cache, q and the probabilities; decode rows,
// prefill rows, a chunk after a chunk; Gemma 2's block. Both engines round the same inputs to the
// same bits, so a product differs only by its sums' order: one value on the other side of an 8-bit
// rounding boundary would move a row by a quantum (NMSE ~1e-6 / rows for K = 256), past the 1e-9
// bound; the norms and the GELU table must agree to the last bit.
std::vector<OpCase> llama_cpp_cases() {
  std::vector<OpCase> cases;
  for (const DType t : model::all_dtypes()) {
    const std::array<int, 6> shape =
        model::block_size(t) == 256 ? std::array{8, 4, 32, 256, 512, 300} : std::array{8, 4, 16, 96, 224, 300};
    OpCase c = op_case(fmt::format("llama_cpp_{}", model::dtype_name(t)), shape, t, {{1}, {5}, {33}, {2, 5, 1}});
    c.llama_cpp = true;
    cases.push_back(c);
  }
  // Gemma 2's block (head_dim 24: q scaled by 1/sqrt(24) before its rounding to f16, as llama.cpp's
  // graph does; GELU from llama.cpp's f16 table, bit for bit)
  OpCase gemma = op_case("llama_cpp_gemma2_block_q8_0", {8, 4, 24, 96, 224, 300}, DType::q8_0, {{1}, {5}, {2, 5, 1}});
  gemma.llama_cpp = gemma.gemma_block = true;
  // GPT-NeoX's block: LayerNorms, a plain FFN whose GELU is llama.cpp's f16 table
  OpCase neox = layer_norm_block(
      op_case("llama_cpp_layer_norm_gelu_q8_0", {8, 4, 16, 96, 224, 300}, DType::q8_0, {{1}, {5}, {2, 5, 1}}),
      model::Activation::gelu_tanh);
  neox.llama_cpp = true;
  cases.push_back(neox);
  cases.push_back(gemma);
  return cases;
}

INSTANTIATE_TEST_SUITE_P(LlamaCppPrecision, VulkanOps, ::testing::ValuesIn(llama_cpp_cases()),
                         [](const ::testing::TestParamInfo<OpCase>& p) { return p.param.name; });

// The variant that ran is reported per op: a tile for prefill, a matrix-vector kernel for decode.
TEST(VulkanKernels, GemmVariantDependsOnRowsAndIsReported) {
  const auto m = formats::load_model(synth_model_path("tiny"));
  gpu::VulkanEngineOptions options;
  const auto gpu = validated_vulkan_engine(*m, options);
  const std::string planned = gpu->kernel(Op::q_proj);
  EXPECT_NE(planned.find("matmul-tiled-64x64/f32"), std::string::npos) << planned;
  EXPECT_NE(planned.find("matvec-"), std::string::npos) << planned;
  const model::Graph graph(m->config());
  model::NullTap tap;
  model::run_chunk(*gpu, graph, std::vector<std::int32_t>{1, 2, 3}, {0, 0, 3, false}, tap);
  EXPECT_EQ(gpu->kernel(Op::q_proj), "matmul-tiled-64x64/f32");
  model::run_chunk(*gpu, graph, std::vector<std::int32_t>{4}, {1, 3, 1, true}, tap);
  EXPECT_EQ(gpu->kernel(Op::q_proj), "matmul-tiled-64x64/f32, matvec-subgroup/f32");  // lavapipe has subgroup adds
  EXPECT_EQ(gpu->kernel(Op::attn), "attention-flash-32x32, attention-decode-split");
  EXPECT_EQ(gpu->kernel(Op::embed), "embed-gather/f32");
  expect_clean(*gpu);
}

// Attention: flash; split-KV flash for passes of fewer than 16 rows per sequence over more than 32
// positions; the decode kernel for decode steps (one row per sequence); two-pass when forced, or
// where flash cannot run: a head_dim it does not take leaves auto on two-pass and makes forcing
// flash an error.
TEST(VulkanKernels, AttentionVariantDependsOnRowsAndHeadDim) {
  const auto m = formats::load_model(synth_model_path("tiny"));
  const model::Graph graph(m->config());
  gpu::VulkanEngineOptions options;
  const auto gpu = validated_vulkan_engine(*m, options);
  EXPECT_EQ(gpu->kernel(Op::attn), "attention-flash-32x32, attention-flash-split-32x32, attention-decode-split");
  model::NullTap tap;
  std::vector<std::int32_t> tokens(100);
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<std::int32_t>(i + 1);
  model::run_chunk(*gpu, graph, std::span(tokens).first(20), {0, 0, 20, false}, tap);
  model::run_chunk(*gpu, graph, std::span(tokens).first(10), {1, 20, 10, false}, tap);  // 30 positions: one split
  EXPECT_EQ(gpu->kernel(Op::attn), "attention-flash-32x32");
  model::run_chunk(*gpu, graph, std::span(tokens).first(10), {2, 30, 10, false}, tap);  // 40: two splits
  EXPECT_EQ(gpu->kernel(Op::attn), "attention-flash-32x32, attention-flash-split-32x32");
  model::run_chunk(*gpu, graph, std::span(tokens).first(1), {3, 40, 1, true}, tap);
  EXPECT_EQ(gpu->kernel(Op::attn),  // every variant that ran
            "attention-flash-32x32, attention-flash-split-32x32, attention-decode-split");
  expect_clean(*gpu);

  options.kernels = "decode-attention=flash-split";
  EXPECT_EQ(validated_vulkan_engine(*m, options)->kernel(Op::attn),
            "attention-flash-32x32, attention-flash-split-32x32");
  options.kernels = "attention=two-pass";
  EXPECT_EQ(validated_vulkan_engine(*m, options)->kernel(Op::attn), "attention-two-pass");
  options.kernels = "attention=two-pass,decode-attention=decode-split";
  EXPECT_EQ(validated_vulkan_engine(*m, options)->kernel(Op::attn), "attention-two-pass, attention-decode-split");
  options.kernels = "";

  // Heads of 160: flash where the device has the shared memory for 32 rows and 16 keys of them
  // (not lavapipe's 32 KiB), two-pass elsewhere; the decode kernel takes heads up to 128.
  const OpCase wide = op_case("head_dim_160", {2, 1, 160, 64, 96, 100}, DType::f32, {});
  const auto wide_model = formats::load_model(write_case_model(wide));
  const auto automatic = validated_vulkan_engine(*wide_model, options);
  const auto flash_bytes = [](std::uint32_t keys) {
    return (32 + keys) * (160 / 4 + 1) * 16 + 32 * (keys + 1) * 4 + 32 * 24 + 4;
  };
  const std::uint32_t shared = automatic->device_info().max_shared_memory, flash160 = flash_bytes(16);
  const bool fits = shared >= flash160;
  const int keys = shared >= flash_bytes(32) ? 32 : 16;
  EXPECT_EQ(automatic->kernel(Op::attn),
            fits ? fmt::format("attention-flash-32x{0}, attention-flash-split-32x{0}", keys) : "attention-two-pass");
  options.kernels = "attention=flash";
  if (!fits) {
    EXPECT_NE(usage_error_of(*wide_model, options).find(fmt::format("{} bytes of shared memory", flash160)),
              std::string::npos);
  }
  options.kernels = "decode-attention=decode-split";
  EXPECT_EQ(usage_error_of(*wide_model, options),
            fits ? "--kernels decode-attention=decode-split: the decode attention takes head_dim up to 128, the model "
                   "has 160"
                 : fmt::format("--kernels decode-attention=decode-split: {} cannot run 128-invocation workgroups with "
                               "{} bytes of shared memory",
                               automatic->device_info().name, flash160));
}

// With f16 activations every variant's name carries ".f16"; after the slash, the weights as
// stored: synth:tiny's f32 matrices are held as f16, in about half the bytes.
TEST(VulkanKernels, F16EngineNamesItsVariantsAndStoresF16Weights) {
  const auto m = formats::load_model(synth_model_path("tiny"));
  gpu::VulkanEngineOptions options;
  const auto f32 = validated_vulkan_engine(*m, options);
  options.f16 = true;
  const auto f16 = validated_vulkan_engine(*m, options);
  EXPECT_EQ(f16->compute_dtype(), "f16");
  EXPECT_EQ(f32->compute_dtype(), "f32");
  model::NullTap tap;
  model::run_chunk(*f16, model::Graph(m->config()), std::vector<std::int32_t>{1, 2, 3}, {0, 0, 3, false}, tap);
  // (validated: matmul-coop2 is off; engine_for's engines without the layer run it)
  EXPECT_EQ(f16->kernel(Op::q_proj),
            coop_gemm_missing().empty() ? "matmul-coop-128x128.f16/f16" : "matmul-tiled-64x64.f16/f16");
  EXPECT_EQ(f16->kernel(Op::embed), "embed-gather.f16/f16");
  EXPECT_EQ(f16->kernel(Op::attn),
            coop_attention_missing().empty() ? "attention-coop-64x32.f16" : "attention-flash-32x32.f16");
  // layer 0's reads the embedding; layer 1's is run by the residual add before it
  EXPECT_EQ(f16->kernel(Op::attn_norm), "rms_norm-tree.f16, add+rms_norm-tree.f16");
  const double ratio = static_cast<double>(f16->stats().weight_bytes) / static_cast<double>(f32->stats().weight_bytes);
  EXPECT_GT(ratio, 0.45);
  EXPECT_LT(ratio, 0.55);
  expect_clean(*f32);
  expect_clean(*f16);
}

TEST(VulkanKernels, UnknownKernelOverrideIsAUsageError) {
  const auto m = formats::load_model(synth_model_path("tiny"));
  gpu::VulkanEngineOptions options;
  options.kernels = "matmul=fast";
  const std::string error = usage_error_of(*m, options);
  EXPECT_NE(error.find("matmul=fast"), std::string::npos) << error;
  EXPECT_NE(error.find("matmul=auto|tiled|coop|coop-k16|coop2|coop2-128x128|coop2-128x256|matvec"), std::string::npos)
      << error;
  EXPECT_NE(error.find("attention=auto|coop2|coop|flash|two-pass"), std::string::npos) << error;
  EXPECT_NE(error.find("decode-attention=auto|decode-split|flash-split"), std::string::npos) << error;
  EXPECT_NE(error.find("norm=auto|fused|apart"), std::string::npos) << error;
  EXPECT_NE(error.find("experts=auto|tiled|matvec"), std::string::npos) << error;
}

// Forcing a cooperative-matrix kernel (`kernels`) in f32 mode is an error on any device: the
// tensor cores multiply f16 values. The error names the override and the f16 mode; returned for
// more checks.
std::string expect_f32_forcing_error(const std::string& kernels) {
  const std::string error = forcing_error(kernels, false);
  EXPECT_NE(error.find("--kernels " + kernels + ": "), std::string::npos) << error;
  EXPECT_NE(error.find("f16 mode only (--dtype f16)"), std::string::npos) << error;
  return error;
}

TEST(VulkanKernels, ForcingCoopGemmInF32ModeIsAUsageError) { expect_f32_forcing_error("matmul=coop"); }

TEST(VulkanKernels, ForcingCoop2GemmInF32ModeIsAUsageError) {
  expect_f32_forcing_error("matmul=coop2");
  expect_f32_forcing_error("matmul=coop2-128x128");
  expect_f32_forcing_error("matmul=coop2-128x256");
}

// An engine made as the tapdiff process makes it (gpu::make_vulkan_engine), after one prefill chunk
// of `rows` tokens.
std::unique_ptr<gpu::VulkanEngine> engine_after_one_chunk(const model::Model& m,
                                                          const gpu::VulkanEngineOptions& options, int rows) {
  auto engine = gpu::make_vulkan_engine(m, options);
  model::NullTap tap;
  model::run_chunk(*engine, model::Graph(m.config()), std::vector<std::int32_t>(static_cast<std::size_t>(rows), 1),
                   {0, 0, rows, false}, tap);
  return engine;
}

// Where the device has VK_NV_cooperative_matrix2, matmul-coop2 is the f16 mode's prefill GEMM
// (without the validation layer, which turns it off, saying why).
TEST(VulkanKernels, Coop2IsTheF16PrefillGemmWhereTheDeviceHasIt) {
  if (!coop2_gemm_missing().empty()) GTEST_SKIP() << coop2_gemm_missing();
  const auto m = formats::load_model(synth_model_path("tiny"));
  gpu::VulkanEngineOptions options;
  options.f16 = true;
  options.validation = false;
  EXPECT_EQ(engine_after_one_chunk(*m, options, 3)->kernel(Op::q_proj), "matmul-coop2-128x128.f16/f16");
  options.validation = true;
  options.kernels = "matmul=coop2";
  EXPECT_NE(usage_error_of(*m, options).find("matmul-coop2 is off while validating"), std::string::npos)
      << usage_error_of(*m, options);
}

TEST(VulkanKernels, ForcingCoop2AttentionInF32ModeIsAUsageError) {
  const std::string error = expect_f32_forcing_error("attention=coop2");
  EXPECT_NE(error.find("the VK_NV_cooperative_matrix2 attention runs in the f16 mode only"), std::string::npos)
      << error;
}

// Where the device has VK_NV_cooperative_matrix2 with its reductions, attention-coop2 is the f16
// mode's prefill attention; a planted attention fault runs on attention-coop-64x32, which has the
// faults attention-coop2 lacks.
TEST(VulkanKernels, Coop2AttentionIsTheF16PrefillAttentionWhereTheDeviceHasIt) {
  if (!coop2_attention_missing().empty()) GTEST_SKIP() << coop2_attention_missing();
  const auto m = formats::load_model(synth_model_path("tiny"));
  gpu::VulkanEngineOptions options;
  options.f16 = true;
  options.validation = false;
  EXPECT_EQ(engine_after_one_chunk(*m, options, 20)->kernel(Op::attn), "attention-coop2-64x32.f16");
  options.inject = "softmax-no-max";
  const std::string faulty = engine_after_one_chunk(*m, options, 20)->kernel(Op::attn);
  EXPECT_NE(faulty.find("attention-coop-64x32.f16"), std::string::npos) << faulty;
}

TEST(VulkanKernels, ForcingCoopAttentionInF32ModeIsAUsageError) {
  const std::string error = expect_f32_forcing_error("attention=coop");
  EXPECT_NE(error.find("--kernels attention=coop: the cooperative-matrix attention runs in the f16 mode only"),
            std::string::npos)
      << error;
}

// On a device without VK_NV_cooperative_matrix (lavapipe) forcing it in f16 mode is an error that
// names the device and the extension, and `auto` keeps the tiled GEMM.
TEST(VulkanKernels, ForcingCoopGemmWithoutTheExtensionIsAUsageError) {
  const auto m = formats::load_model(synth_model_path("tiny"));
  gpu::VulkanEngineOptions options;
  options.f16 = true;
  const auto automatic = validated_vulkan_engine(*m, options);
  if (automatic->device_info().nv_cooperative_matrix) GTEST_SKIP() << "this device offers VK_NV_cooperative_matrix";
  EXPECT_EQ(automatic->kernel(Op::q_proj).find("matmul-coop"), std::string::npos) << automatic->kernel(Op::q_proj);
  options.kernels = "matmul=coop";
  const std::string error = usage_error_of(*m, options);
  EXPECT_NE(error.find("--kernels matmul=coop: " + automatic->device_info().name +
                       " does not offer VK_NV_cooperative_matrix"),
            std::string::npos)
      << error;
  expect_clean(*automatic);
}

// gemm-f16-accum in a cooperative-matrix GEMM (`kernels` forces it, `ran` is its name): f16 sum
// matrices put ffn_down, where the fault is planted, far outside the f16 bound, while the clean
// kernel on the same inputs stays within it. The tensor cores round the f16 sums once per 16
// values of K, so K = 1000 (63 roundings of ~2^-12 relative: NMSE ~ 3e-6) makes the fault plain.
void expect_f16_sums_miss_the_f16_bound(const std::string& kernels, const std::string& ran_name) {
  const OpCase c = act_f16(op_case("coop_f16_sums", {8, 4, 16, 72, 1000, 301}, DType::f32, {}));
  const auto m = formats::load_model(write_case_model(c));
  const model::Graph graph(m->config());
  reference::CpuEngineOptions cpu_options{model::Precision::f16, 1};
  const auto cpu = reference::make_cpu_engine(*m, cpu_options);
  gpu::VulkanEngineOptions options;
  options.f16 = true;
  options.kernels = kernels;
  const auto clean = engine_for(*m, options);
  options.inject = "gemm-f16-accum";
  const auto faulty = engine_for(*m, options);

  const int rows = 70;  // two tiles of rows
  const std::vector<std::int32_t> tokens(static_cast<std::size_t>(rows), 1);
  const std::initializer_list<model::Engine*> engines = {cpu.get(), clean.get(), faulty.get()};
  for (model::Engine* e : engines) e->begin_chunk(tokens, {0, 0, rows, false});
  const auto down = std::find_if(graph.steps().begin(), graph.steps().end(),
                                 [](const model::Step& s) { return s.op == Op::ffn_down; });
  ASSERT_NE(down, graph.steps().end());
  std::mt19937_64 rng(99);
  const auto out = run_step(engines, graph, *down, rows, rng);
  for (model::Engine* e : engines) e->end_chunk();
  const double clean_nmse = nmse(out[0], out[1]), faulty_nmse = nmse(out[0], out[2]);
  std::printf("ffn_down NMSE vs the f16 reference: clean %.1e, f16 sums %.1e\n", clean_nmse, faulty_nmse);
  EXPECT_LE(clean_nmse, kMaxNmseF16);
  EXPECT_GT(faulty_nmse, 10 * kMaxNmseF16);
  EXPECT_LT(faulty_nmse, 1e-3);  // still the product, rounded more often
  const std::string ran = faulty->kernel(Op::ffn_down);
  EXPECT_NE(ran.find(ran_name), std::string::npos) << ran;
  EXPECT_NE(ran.find("+inject:gemm-f16-accum"), std::string::npos) << ran;
  expect_clean_if_validated(*clean, kernels);
  expect_clean_if_validated(*faulty, kernels);
}

TEST(VulkanKernels, CoopGemmWithF16SumsMissesTheF16Bound) {
  if (!coop_gemm_missing().empty()) GTEST_SKIP() << coop_gemm_missing();
  expect_f16_sums_miss_the_f16_bound("matmul=coop", "matmul-coop-128x128.f16/f16");
}

// The same fault in matmul-coop2: a build of its own with f16 sum matrices (ffn_down: K = 1000, N
// = 72, both multiples of 8, through the edge tiles' clamped loads).
TEST(VulkanKernels, Coop2GemmWithF16SumsMissesTheF16Bound) {
  if (!coop2_gemm_missing().empty()) GTEST_SKIP() << coop2_gemm_missing();
  expect_f16_sums_miss_the_f16_bound("matmul=coop2", "matmul-coop2-128x128.f16/f16");
}

}  // namespace
}  // namespace tapdiff::testing
