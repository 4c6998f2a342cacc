// The fault catalogue of --inject (gpu/faults.h): each fault, planted at layer 0 and at a middle
// layer of a 4-layer model, leaves every op before its target op bit-identical to a clean run of
// the same engine (deterministic kernels) and makes the target op differ, in the rows where the
// bug acts and only there. Also: the parser's errors, the reported kernel variants, the ref
// engine refusing --inject, and `tapdiff faults`.
//
// Runs: a 40-token prompt in chunks of 16 (rows 0-15, 16-31, 32-39), then 3 decode steps (rows
// 40-42) with fixed tokens, so the clean and the injected run see the same tokens throughout.
// "Differs": NMSE over the rows where the fault acts > 1e-6, except where noted at kCases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "dumps/dump_reader.h"
#include "formats/load_model.h"
#include "formats/synth.h"
#include "gpu/faults.h"
#include "gpu/vulkan_engine.h"
#include "model/batch_runner.h"
#include "model/errors.h"
#include "tests/reference_fixtures.h"
#include "tests/test_support.h"
#include "tests/vulkan_fixtures.h"

namespace tapdiff::testing {
namespace {

using gpu::Fault;
using model::HostTensor;
using model::Op;
using model::TensorId;

constexpr int kLayers = 4;
constexpr int kMiddleLayer = 2;
constexpr int kPrompt = 40;
constexpr int kChunk = 16;
constexpr int kTotal = 43;  // the prompt and 3 decode steps
constexpr double kDiffers = 1e-6;

struct Rows {
  int begin, end;
};
constexpr Rows kAll{0, kTotal}, kChunk0{0, kChunk}, kFirstOfChunk1{kChunk, kChunk + 1}, kPrefill{0, kPrompt},
    kDecode{kPrompt, kTotal}, kPosition0{0, 1}, kAfterPosition0{1, kTotal}, kAfterChunk0{kChunk, kTotal};

// The fault's synth model (fault_synth_model) with 4 layers, so a middle layer has clean layers on
// both sides.
std::filesystem::path fault_model(const gpu::FaultInfo& fault) {
  if (fault.fault == Fault::indexer_relu_dropped)
    return write_sparse_model(temp_dir("fault-model-deepseek_v32") / "deepseek_v32-4-layers", kLayers);
  formats::SynthOptions options = fault_synth_model(fault);
  formats::set_synth_layers(options.config, kLayers);
  const std::string name = fmt::format("{}-{}", model::family_name(options.config.family), options.config.dim);
  const auto file = temp_dir("fault-model-" + name) / (name + "-4-layers.gguf");
  formats::write_synth_model(file, options);
  return file;
}

std::unique_ptr<gpu::VulkanEngine> engine_with(const model::Model& m, const std::string& inject,
                                               const std::string& kernels = "") {
  gpu::VulkanEngineOptions options;
  options.inject = inject;
  options.kernels = kernels;
  return validated_vulkan_engine(m, options);
}

// The prompt in chunks of kChunk, then decode steps fed the fixed tokens after it; every op tapped.
std::unique_ptr<model::MemoryTap> run_tapped(model::Engine& engine, const model::Graph& graph) {
  const std::vector<std::int32_t> tokens = synth_prompt(kTotal, 512, 7);
  const std::span<const std::int32_t> all(tokens);
  auto tap = std::make_unique<model::MemoryTap>();
  engine.reset();
  int index = 0;
  for (int first = 0; first < kPrompt; first += kChunk) {
    const int rows = std::min(kChunk, kPrompt - first);
    model::run_chunk(engine, graph, all.subspan(first, rows), {index++, first, rows, false}, *tap);
  }
  for (int pos = kPrompt; pos < kTotal; ++pos)
    model::run_chunk(engine, graph, all.subspan(pos, 1), {index++, pos, 1, true}, *tap);
  return tap;
}

struct Fixture {
  std::unique_ptr<model::Model> model;
  model::Graph graph;
  std::unique_ptr<model::MemoryTap> clean;
};

Fixture make_fixture(const gpu::FaultInfo& fault) {
  auto m = load_fault_model(fault_model(fault), fault_synth_model(fault));
  model::Graph graph(m->config());
  const auto engine = engine_with(*m, "");
  auto clean = run_tapped(*engine, graph);
  expect_clean(*engine);
  return Fixture{std::move(m), std::move(graph), std::move(clean)};
}

// The model a fault is planted in and its clean run, once per process and model.
const Fixture& fixture(Fault fault = Fault::rope_base) {
  static std::map<std::string, Fixture> made;
  const gpu::FaultInfo& info = gpu::fault_info(fault);
  const model::ModelConfig config = fault_synth_model(info).config;
  const std::string key =
      fmt::format("{}-{}-{}", model::family_name(config.family), config.dim, config.attention_chunk);
  auto it = made.find(key);
  if (it == made.end()) it = made.emplace(key, make_fixture(info)).first;
  return it->second;
}

bool identical(const HostTensor& a, const HostTensor& b, Rows rows, int col_begin = 0, int col_end = -1) {
  if (col_end < 0) col_end = static_cast<int>(a.cols());
  for (int r = rows.begin; r < rows.end; ++r) {
    const std::size_t at =
        static_cast<std::size_t>(r) * static_cast<std::size_t>(a.cols()) + static_cast<std::size_t>(col_begin);
    const auto bytes = static_cast<std::size_t>(col_end - col_begin) * sizeof(float);
    if (std::memcmp(a.f32().data() + at, b.f32().data() + at, bytes) != 0) return false;
  }
  return true;
}

double nmse_of(const HostTensor& a, const HostTensor& b, Rows rows) {
  return nmse(a.slice_rows(rows.begin, rows.end - rows.begin), b.slice_rows(rows.begin, rows.end - rows.begin));
}

struct Differs {
  Rows rows;
  double above = kDiffers;  // NMSE bound
};

// What a fault does to its target op(s), beyond leaving every earlier op alone.
struct FaultCase {
  Fault fault;
  std::vector<Differs> differ;  // each: NMSE over the rows > the bound, in every target op
  std::vector<Rows> same;       // each: bit-identical rows in every target op
};

std::ostream& operator<<(std::ostream& os, const FaultCase& c) { return os << gpu::fault_info(c.fault).name; }

// Two bounds are lower, for what the fault really does on this model:
// - gemm-f16-accum in decode rows: a matvec kernel rounds fewer, shorter sums per output (one
//   product per invocation where K = 192 < its 256 invocations, then the reduction's partial sums)
//   than the tiled kernel's 192 running sums: NMSE ~6e-7 against ~4e-6.
// - rmsnorm-eps: 1/(sqrt(m) + eps) against 1/sqrt(m + eps) is a relative change of
//   eps/sqrt(m) - eps/(2m) = 5e-6 for these activations (m ~ 1, eps 1e-5): NMSE ~2.5e-11. It grows
//   where activations are small, as trained models' embeddings are (RmsnormEpsShowsOnSmallActivations).
const std::vector<FaultCase> kCases = {
    {Fault::rope_off_by_one, {{kAll}}, {}},
    {Fault::rope_chunk_reset, {{kFirstOfChunk1}, {{kChunk, kPrompt}}}, {kChunk0, kDecode}},
    {Fault::rope_pairing, {{kAfterPosition0}}, {kPosition0}},
    {Fault::rope_base, {{kAfterPosition0}}, {kPosition0}},
    {Fault::mask_kv_offset, {{kFirstOfChunk1}, {kAfterChunk0}}, {kChunk0}},
    {Fault::kv_stale_chunk, {{kFirstOfChunk1}, {kAfterChunk0}}, {kChunk0}},
    {Fault::gqa_head_map, {{kAll}}, {}},
    {Fault::softmax_no_max, {}, {}},  // rounding only (NMSE ~2e-14) below overflow: see SoftmaxNoMax below
    {Fault::gemm_f16_accum, {{kPrefill}, {kDecode, 1e-7}}, {}},
    {Fault::rmsnorm_eps, {{kAll, 1e-11}}, {}},
    {Fault::silu_approx, {{kAll}}, {}},
    {Fault::attn_scale, {{kAfterPosition0}}, {kPosition0}},
    {Fault::decode_position, {{kDecode}, {{kPrompt, kPrompt + 1}}}, {kPrefill}},
    {Fault::batch_seq_leak, {}, {kAll}},  // one sequence: no neighbour to leak from (BatchSeqLeak below)
    {Fault::attn_scale_int, {{kAfterPosition0}}, {kPosition0}},
    {Fault::router_softmax_axis, {{kAll}}, {}},
    {Fault::topk_off_by_one, {{kAll}}, {}},
    {Fault::weights_unnormalised, {{kAll}}, {}},
    {Fault::expert_index, {{kAll}}, {}},
    {Fault::shared_gate_dropped, {{kAll}}, {}},
    {Fault::selection_bias_sign, {{kAll}}, {}},
    {Fault::group_limit_ignored, {{kAll}}, {}},
    {Fault::sinks_dropped, {{kAll}}, {}},
    {Fault::swiglu_unclamped, {{kAll}}, {}},
    {Fault::chunk_boundary, {{{6, kTotal}}}, {{0, 6}}},  // chunks of 6: from the second chunk on
    {Fault::mla_rope_channels, {{kAfterPosition0}}, {kPosition0}},
    {Fault::mscale_missing, {{kAfterPosition0}}, {kPosition0}},
    {Fault::indexer_relu_dropped, {{kAll}}, {}},
};

class PlantedFault : public ::testing::TestWithParam<std::tuple<FaultCase, int>> {};

TEST_P(PlantedFault, LeavesEarlierOpsBitIdenticalAndChangesItsTarget) {
  const auto& [c, layer] = GetParam();
  const gpu::FaultInfo& info = gpu::fault_info(c.fault);
  const Fixture& f = fixture(c.fault);
  const std::string spec = fmt::format("{}@{}", info.name, layer);
  const auto engine = engine_with(*f.model, spec);
  const auto injected = run_tapped(*engine, f.graph);
  expect_clean(*engine);

  const TensorId first_target{info.ops.front(), layer};
  bool before = true;
  for (const model::Step& step : f.graph.steps()) {
    if (step.output() == first_target) before = false;
    if (!before) break;
    EXPECT_TRUE(identical(f.clean->get(step.output()), injected->get(step.output()), kAll))
        << model::to_string(step.output()) << " precedes " << model::to_string(first_target);
  }
  EXPECT_FALSE(before) << "no step " << model::to_string(first_target);

  for (Op op : info.ops) {
    const TensorId id{op, layer};
    const HostTensor &a = f.clean->get(id), &b = injected->get(id);
    for (const Rows& rows : c.same)
      EXPECT_TRUE(identical(a, b, rows)) << model::to_string(id) << " rows " << rows.begin << "-" << rows.end - 1;
    for (const Differs& d : c.differ) {
      const double e = nmse_of(a, b, d.rows);
      EXPECT_GT(e, d.above) << model::to_string(id) << " rows " << d.rows.begin << "-" << d.rows.end - 1;
      std::printf("%s: %s rows %d-%d NMSE %.2e\n", spec.c_str(), model::to_string(id).c_str(), d.rows.begin,
                  d.rows.end - 1, e);
    }
    if (c.differ.empty())
      std::printf("%s: %s rows 0-%d NMSE %.2e\n", spec.c_str(), model::to_string(id).c_str(), kTotal - 1, nmse(a, b));
    EXPECT_NE(engine->kernel(op).find("+inject:" + spec), std::string::npos) << engine->kernel(op);
  }
}

std::string case_name(const ::testing::TestParamInfo<PlantedFault::ParamType>& p) {
  std::string name(gpu::fault_info(std::get<0>(p.param).fault).name);
  std::replace(name.begin(), name.end(), '-', '_');
  return name + "_layer" + std::to_string(std::get<1>(p.param));
}

INSTANTIATE_TEST_SUITE_P(Catalogue, PlantedFault,
                         ::testing::Combine(::testing::ValuesIn(kCases), ::testing::Values(0, kMiddleLayer)),
                         case_name);

TEST(PlantedFault, EveryFaultHasACase) {
  ASSERT_EQ(kCases.size(), static_cast<std::size_t>(gpu::kFaultCount));
  for (std::size_t i = 0; i < kCases.size(); ++i) EXPECT_EQ(static_cast<std::size_t>(kCases[i].fault), i);
}

// gqa-head-map with 4 query heads on 2 KV heads: heads 0 and 3 read their own KV head either way
// (0/2 = 0 % 2, 3/2 = 3 % 2); heads 1 and 2 read the other one.
TEST(PlantedFault, GqaHeadMapChangesOnlyTheHeadsItRemaps) {
  const Fixture& f = fixture();
  const auto& c = f.model->config();
  ASSERT_EQ(c.n_heads, 4);
  ASSERT_EQ(c.n_kv_heads, 2);
  const auto engine = engine_with(*f.model, fmt::format("gqa-head-map@{}", kMiddleLayer));
  const auto injected = run_tapped(*engine, f.graph);
  const TensorId attn{Op::attn, kMiddleLayer};
  const HostTensor &a = f.clean->get(attn), &b = injected->get(attn);
  const int group = c.n_heads / c.n_kv_heads;
  for (int h = 0; h < c.n_heads; ++h) {
    const int begin = h * c.head_dim, end = begin + c.head_dim;
    if (h / group == h % c.n_kv_heads) {
      EXPECT_TRUE(identical(a, b, kAll, begin, end)) << "head " << h;
    } else {
      EXPECT_FALSE(identical(a, b, kPosition0, begin, end)) << "head " << h;
    }
  }
  expect_clean(*engine);
}

// batch-seq-leak in a ragged batch of three prompts (chunks of 16, 3 generated tokens): the first
// sequence has no neighbour before it and stays bit-identical to the clean batch; the attention of
// the other two reads their neighbour's last rows and differs from the first row on. Ops before
// the attention of the planted layer are identical in every sequence. Prompt rows only: the
// generated tokens, and so the decode rows' inputs, may differ.
TEST(PlantedFault, BatchSeqLeakChangesEverySequenceButTheFirst) {
  const Fixture& f = fixture();
  const model::Prompts prompts{synth_prompt(40, 512, 7), synth_prompt(21, 512, 8), synth_prompt(33, 512, 9)};
  model::BatchRunOptions options;
  options.chunk = kChunk;
  options.generate = 3;
  auto run = [&](const std::string& inject) {
    std::vector<std::unique_ptr<model::MemoryTap>> taps;
    std::vector<model::Tap*> tap_ptrs;
    for (std::size_t s = 0; s < prompts.size(); ++s)
      taps.push_back(std::make_unique<model::MemoryTap>()), tap_ptrs.push_back(taps.back().get());
    const auto engine = engine_with(*f.model, inject);
    model::run_batch(*engine, f.graph, prompts, options, tap_ptrs);
    expect_clean(*engine);
    return taps;
  };
  const auto clean = run("");
  const auto leaky = run(fmt::format("batch-seq-leak@{}", kMiddleLayer));
  const TensorId attn{Op::attn, kMiddleLayer};
  for (std::size_t s = 0; s < prompts.size(); ++s) {
    const Rows all{0, static_cast<int>(prompts[s].size())};
    for (const model::Step& step : f.graph.steps()) {
      if (step.output() == attn) break;
      EXPECT_TRUE(identical(clean[s]->get(step.output()), leaky[s]->get(step.output()), all))
          << "sequence " << s << " " << model::to_string(step.output());
    }
    const HostTensor &a = clean[s]->get(attn), &b = leaky[s]->get(attn);
    if (s == 0) {
      EXPECT_TRUE(identical(a, b, all));
    } else {
      EXPECT_GT(nmse_of(a, b, all), kDiffers) << "sequence " << s;
      EXPECT_GT(nmse_of(a, b, kPosition0), kDiffers) << "sequence " << s << " position 0";
      std::printf("batch-seq-leak@%d: sequence %zu attn NMSE %.2e\n", kMiddleLayer, s, nmse_of(a, b, all));
    }
  }
}

// rope-base: row 0 is exact (angle 0 at any base) and the error grows with position.
TEST(PlantedFault, RopeBaseErrorGrowsWithPosition) {
  const Fixture& f = fixture();
  const auto engine = engine_with(*f.model, "rope-base@0");
  const auto injected = run_tapped(*engine, f.graph);
  const TensorId rope{Op::rope_q, 0};
  const double early = nmse_of(f.clean->get(rope), injected->get(rope), {1, 9});
  const double late = nmse_of(f.clean->get(rope), injected->get(rope), {32, 40});
  EXPECT_GT(late, 10 * early) << "rows 1-8 " << early << ", rows 32-39 " << late;
  std::printf("rope-base@0: 0/rope_q NMSE rows 1-8 %.2e, rows 32-39 %.2e\n", early, late);
  expect_clean(*engine);
}

// Chunk 0 (kChunk rows) on an engine with `inject`, with `value` written over the output of
// `forced` once computed (teacher forcing); returns the output of `want`.
HostTensor forced_chunk(const std::string& inject, const TensorId& forced, const HostTensor& value,
                        const TensorId& want) {
  const Fixture& f = fixture();
  const auto engine = engine_with(*f.model, inject);
  const std::vector<std::int32_t> tokens = synth_prompt(kChunk, 512, 7);
  HostTensor out;
  engine->begin_chunk(tokens, {0, 0, kChunk, false});
  for (const model::Step& step : f.graph.steps()) {
    engine->execute(step, step.output() == want ? model::Deliver([&out](const HostTensor& t) { out = t; }) : nullptr);
    if (step.output() == forced) engine->write(forced, value);
  }
  engine->end_chunk();
  expect_clean(*engine);
  return out;
}

// The clean run's chunk-0 rows of an op output, times factor.
HostTensor scaled(const TensorId& id, float factor) {
  HostTensor t = fixture().clean->get(id).slice_rows(0, kChunk);
  for (float& v : t.f32()) v *= factor;
  return t;
}

std::int64_t nonfinite(const HostTensor& t) {
  return std::count_if(t.f32().begin(), t.f32().end(), [](float v) { return !std::isfinite(v); });
}

// softmax-no-max: on these small scores exp never overflows, so the fault is exact but for rounding;
// with a teacher-forced rope_q 1000x larger, the scores pass 88 and the faulty kernel gives
// inf/inf = NaN where the clean one stays finite.
TEST(PlantedFault, SoftmaxNoMaxTurnsLargeScoresNonFinite) {
  const TensorId rope_q{Op::rope_q, kMiddleLayer}, attn{Op::attn, kMiddleLayer};
  const HostTensor large = scaled(rope_q, 1000);
  EXPECT_EQ(nonfinite(forced_chunk("", rope_q, large, attn)), 0);
  const std::int64_t faulty =
      nonfinite(forced_chunk(fmt::format("softmax-no-max@{}", kMiddleLayer), rope_q, large, attn));
  EXPECT_GT(faulty, 0);
  std::printf("softmax-no-max@%d, rope_q x 1000: %lld non-finite values in attn\n", kMiddleLayer,
              static_cast<long long>(faulty));
}

// rmsnorm-eps on embeddings of standard deviation 0.01, as trained models' are (teacher forced):
// with mean(x^2) = 1e-4, eps = 1e-5 inside or outside the root is a ~5% change.
TEST(PlantedFault, RmsnormEpsShowsOnSmallActivations) {
  const TensorId embed{Op::embed, -1}, norm{Op::attn_norm, 0};
  const HostTensor small = scaled(embed, 0.01f);
  const double e = nmse(forced_chunk("", embed, small, norm), forced_chunk("rmsnorm-eps@0", embed, small, norm));
  EXPECT_GT(e, kDiffers);
  std::printf("rmsnorm-eps@0, embeddings x 0.01: 0/attn_norm NMSE %.2e\n", e);
}

// gemm-f16-accum in each GEMM variant (forced by --kernels) over one 5-row chunk.
TEST(PlantedFault, GemmF16AccumIsPlantedInEveryMatmulVariant) {
  const Fixture& f = fixture();
  const std::vector<std::int32_t> tokens = synth_prompt(5, 512, 7);
  const TensorId act{Op::ffn_act, 1}, down{Op::ffn_down, 1};
  auto run = [&](const std::string& inject, const std::string& kernels) {
    const auto engine = engine_with(*f.model, inject, kernels);
    model::MemoryTap tap([&](const TensorId& id) { return id == act || id == down; });
    model::run_chunk(*engine, f.graph, tokens, {0, 0, 5, false}, tap);
    expect_clean(*engine);
    return std::make_pair(tap, engine->kernel(Op::ffn_down));
  };
  for (const std::string kernels : {"matmul=tiled", "matmul=matvec,matvec=shared", "matmul=matvec,matvec=subgroup"}) {
    const auto engine = engine_with(*f.model, "");
    if (kernels.ends_with("subgroup") && !engine->device_info().subgroup_arithmetic) continue;
    const auto [clean, clean_kernel] = run("", kernels);
    const auto [faulty, faulty_kernel] = run("gemm-f16-accum@1", kernels);
    EXPECT_TRUE(identical(clean.get(act), faulty.get(act), {0, 5})) << kernels;
    const double e = nmse(clean.get(down), faulty.get(down));
    EXPECT_GT(e, 1e-7) << kernels;
    EXPECT_EQ(faulty_kernel, clean_kernel + ", " + clean_kernel + "+inject:gemm-f16-accum@1");  // layers 0, 1
    std::printf("gemm-f16-accum@1, %s: 1/ffn_down NMSE %.2e (%s)\n", kernels.c_str(), e, faulty_kernel.c_str());
  }
}

// NAME alone plants the fault in every layer; the reported variant names it without a layer.
TEST(PlantedFault, ANameAlonePlantsInEveryLayer) {
  const Fixture& f = fixture();
  const auto engine = engine_with(*f.model, "silu-approx");
  EXPECT_EQ(engine->kernel(Op::ffn_act), "silu_mul, silu_mul+inject:silu-approx");  // before a run: planned
  const auto injected = run_tapped(*engine, f.graph);
  EXPECT_EQ(engine->kernel(Op::ffn_act), "silu_mul+inject:silu-approx");
  EXPECT_EQ(engine->kernel(Op::ffn_up).find("inject"), std::string::npos) << engine->kernel(Op::ffn_up);
  for (int l = 0; l < kLayers; ++l) {
    const TensorId id{Op::ffn_act, l};
    EXPECT_GT(nmse(f.clean->get(id), injected->get(id)), kDiffers) << model::to_string(id);
  }
  expect_clean(*engine);
}

TEST(PlantedFault, ReportsTheInjectedVariantNextToTheCleanOne) {
  const Fixture& f = fixture();
  const auto engine = engine_with(*f.model, "gqa-head-map@3,attn-scale@0");
  // Planned: the three attention variants (flash, split-KV flash for short chunks, the decode
  // kernel), clean and planted.
  EXPECT_EQ(engine->kernel(Op::attn),
            "attention-flash-32x32, attention-flash-split-32x32, attention-decode-split, "
            "attention-flash-32x32+inject:attn-scale@0, attention-flash-split-32x32+inject:attn-scale@0, "
            "attention-decode-split+inject:attn-scale@0, attention-flash-32x32+inject:gqa-head-map@3, "
            "attention-flash-split-32x32+inject:gqa-head-map@3, attention-decode-split+inject:gqa-head-map@3");
  run_tapped(*engine, f.graph);  // prefill chunks, then decode steps over 41 to 43 positions: splits of 32
  EXPECT_EQ(engine->kernel(Op::attn),
            "attention-flash-32x32+inject:attn-scale@0, attention-flash-32x32, "
            "attention-flash-32x32+inject:gqa-head-map@3, attention-flash-split-32x32+inject:attn-scale@0, "
            "attention-flash-split-32x32, attention-flash-split-32x32+inject:gqa-head-map@3, "
            "attention-decode-split+inject:attn-scale@0, attention-decode-split, "
            "attention-decode-split+inject:gqa-head-map@3");
  EXPECT_EQ(engine->kernel(Op::rope_q), "rope-table");
  expect_clean(*engine);
}

TEST(FaultParser, PlantsPerLayerOrEveryLayer) {
  const gpu::FaultSet set = gpu::parse_faults("rope-base@2,attn-scale@0,silu-approx", 4);
  EXPECT_TRUE(set.active(Fault::rope_base, 2));
  EXPECT_FALSE(set.active(Fault::rope_base, 1));
  EXPECT_TRUE(set.active(Fault::attn_scale, 0));
  EXPECT_FALSE(set.active(Fault::attn_scale, 3));
  for (int l = 0; l < 4; ++l) EXPECT_TRUE(set.active(Fault::silu_approx, l));
  EXPECT_FALSE(set.active(Fault::gqa_head_map, 0));
  EXPECT_EQ(set.planted_in(Op::rope_k, 2), (std::vector<gpu::PlantedFault>{{"rope-base", 2}}));
  EXPECT_EQ(set.planted_in(Op::ffn_act, 1), (std::vector<gpu::PlantedFault>{{"silu-approx", std::nullopt}}));
  EXPECT_TRUE(set.planted_in(Op::attn, 2).empty());
  EXPECT_EQ(gpu::to_string(gpu::KernelId{{gpu::Kernel{"rope-table"}}, set.planted_in(Op::rope_k, 2)}),
            "rope-table+inject:rope-base@2");
  EXPECT_TRUE(gpu::parse_faults("", 4).empty());
  EXPECT_FALSE(set.empty());
}

TEST(FaultParser, BadSpecsAreUsageErrorsNamingTheChoices) {
  auto error = [](const std::string& spec) {
    try {
      gpu::parse_faults(spec, 4);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string unknown = error("rope-base@1,rope-bass@1");
  EXPECT_NE(unknown.find("'rope-bass'"), std::string::npos) << unknown;
  for (const gpu::FaultInfo& f : gpu::fault_catalogue()) EXPECT_NE(unknown.find(f.name), std::string::npos) << unknown;
  const std::string layer = error("attn-scale@4");
  EXPECT_NE(layer.find("[0, 4)"), std::string::npos) << layer;
  EXPECT_NE(layer.find("found 4"), std::string::npos) << layer;
  for (const std::string bad : {"attn-scale@", "attn-scale@x", "attn-scale@1x", "attn-scale,,silu-approx"})
    EXPECT_NE(error(bad).find("expected"), std::string::npos) << bad << ": " << error(bad);
  EXPECT_NE(error("attn-scale@-1").find("[0, 4)"), std::string::npos);
}

TEST(FaultCatalogue, IsCompleteAndConsistent) {
  ASSERT_EQ(gpu::fault_catalogue().size(), static_cast<std::size_t>(gpu::kFaultCount));
  for (std::size_t i = 0; i < gpu::fault_catalogue().size(); ++i) {
    const gpu::FaultInfo& f = gpu::fault_catalogue()[i];
    EXPECT_EQ(static_cast<std::size_t>(f.fault), i) << f.name;
    EXPECT_FALSE(f.effect.empty() || f.mirrors.empty() || f.ops.empty()) << f.name;
    for (Op op : f.ops) EXPECT_EQ(model::op_class(op), f.op_class) << f.name;
  }
}

TEST(FaultCli, RefEngineRefusesInject) {
  const CommandResult r = run_tapdiff("run --model synth:tiny --tokens 1,5 --inject attn-scale");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--inject attn-scale: expected --engine vulkan"), std::string::npos) << r.output;
  const CommandResult bad = run_tapdiff("run --engine vulkan --model synth:tiny --tokens 1,5 --inject attn-scale@2");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("[0, 2)"), std::string::npos) << bad.output;
}

TEST(FaultCli, FaultsListsTheCatalogueAndWritesJson) {
  const auto json = temp_dir("faults") / "faults.json";
  const CommandResult r = run_tapdiff("faults --json '" + json.string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(json);
  const nlohmann::json doc = nlohmann::json::parse(in);
  ASSERT_EQ(doc.at("faults").size(), static_cast<std::size_t>(gpu::kFaultCount));
  for (std::size_t i = 0; i < doc.at("faults").size(); ++i) {
    const gpu::FaultInfo& f = gpu::fault_catalogue()[i];
    const nlohmann::json& entry = doc.at("faults")[i];
    EXPECT_EQ(entry.at("name"), f.name);
    EXPECT_EQ(entry.at("diagnosis"), f.diagnosis ? std::string(model::diagnosis_name(*f.diagnosis)) : "");
    EXPECT_EQ(entry.at("ops").front(), model::op_name(f.ops.front()));
    EXPECT_NE(r.output.find(std::string(f.name)), std::string::npos) << f.name;
    EXPECT_NE(r.output.find(std::string(f.mirrors)), std::string::npos) << f.name;
  }
  EXPECT_NE(r.output.find("gqa-head-map       shows in attn (attention)"), std::string::npos) << r.output;
}

TEST(FaultCli, RunWithInjectRecordsTheFaultInTheDump) {
  const auto dump = temp_dir("inject-run") / "vk.h5";
  const CommandResult r = run_tapdiff(
      "run --engine vulkan --model synth:tiny --tokens 1,5,9,12 --chunk 2 --generate 2 --inject gqa-head-map@1 "
      "--dump '" +
      dump.string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("validation"), std::string::npos) << r.output;
  const dumps::DumpReader reader(dump.string());
  EXPECT_EQ(reader.metadata().kernels.at("attn"),
            "attention-flash-32x32, attention-flash-split-32x32, attention-decode-split, "
            "attention-flash-32x32+inject:gqa-head-map@1, attention-flash-split-32x32+inject:gqa-head-map@1, "
            "attention-decode-split+inject:gqa-head-map@1");
  EXPECT_NE(reader.metadata().command_line.find("--inject gqa-head-map@1"), std::string::npos);
}

}  // namespace
}  // namespace tapdiff::testing
