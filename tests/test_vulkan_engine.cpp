// The Vulkan engine as a whole: the real model's golden tokens at every chunking, a whole synth
// model against the reference op by op, the KV cache through read_kv/write_kv, the barriers it
// records, clear errors (device requests, memory limits), validation messages being caught, and
// the CLI (`tapdiff devices`, `tapdiff run --engine vulkan` with its dump metadata).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>

#include <fmt/core.h>

#include "dumps/dump_reader.h"
#include "formats/load_model.h"
#include "gpu/device.h"
#include "gpu/instance.h"
#include "gpu/memory.h"
#include "gpu/stream.h"
#include "gpu/vk_error.h"
#include "gpu/vulkan_engine.h"
#include "model/errors.h"
#include "model/per_sequence_engine.h"
#include "reference/cpu_engine.h"
#include "tests/reference_fixtures.h"
#include "tests/test_support.h"
#include "tests/vulkan_fixtures.h"

namespace tapdiff::testing {
namespace {

using model::HostTensor;
using model::Op;
using model::TensorId;

const std::vector<std::int32_t> kOnceUponATime = {1, 403, 407, 261, 378};

// An engine with the validation layer on; expect_clean() fails the test on any message.
std::unique_ptr<gpu::VulkanEngine> vulkan_engine(const model::Model& m, const std::string& device = "",
                                                 bool f16 = false) {
  gpu::VulkanEngineOptions options;
  options.device = device;
  options.f16 = f16;
  return validated_vulkan_engine(m, options);
}

// f32, and f16 (weights and activations): f16 keeps all 60 tokens on this model, whose smallest
// top-2 logit gap along the way (0.071, docs/tolerances.md) is far above f16's logit error.
class VulkanStoriesGolden : public ::testing::TestWithParam<std::tuple<std::string, int, std::string>> {};

TEST_P(VulkanStoriesGolden, GreedyTokensMatchTheKnownOutput) {
  TAPDIFF_REQUIRE_STORIES();
  const auto& [layout, chunk, dtype] = GetParam();
  const auto m = formats::load_model(layout == "gguf" ? stories_gguf() : stories_hf());
  const auto engine = vulkan_engine(*m, "", dtype == "f16");
  ASSERT_EQ(engine->compute_dtype(), dtype);
  model::RunOptions options;
  options.chunk = chunk;
  options.generate = 60;
  model::NullTap tap;
  const model::RunResult r = model::run_sequence(*engine, model::Graph(m->config()), kOnceUponATime, options, tap);
  EXPECT_EQ(r.generated, stories_golden_tokens());
  expect_clean(*engine);
}

INSTANTIATE_TEST_SUITE_P(LayoutsChunksDtypes, VulkanStoriesGolden,
                         ::testing::Combine(::testing::Values("gguf", "hf"), ::testing::Values(1, 3, 16, 0),
                                            ::testing::Values("f32", "f16")),
                         [](const auto& p) {
                           const int chunk = std::get<1>(p.param);
                           return std::get<0>(p.param) + (chunk > 0 ? "_chunk" + std::to_string(chunk) : "_whole") +
                                  "_" + std::get<2>(p.param);
                         });

// Every tapped op of synth:small over a 100-token prompt in chunks of 33, against the reference.
TEST(VulkanEngine, WholeSynthModelMatchesTheReferenceInEveryOp) {
  const auto m = formats::load_model(synth_model_path("small"));
  const auto tokens = synth_prompt(100, m->config().vocab, 11);
  const auto ref = run_reference(*m, tokens, model::Scalar::f32, 33, 0);
  const auto engine = vulkan_engine(*m);
  model::MemoryTap tap;
  model::RunOptions options;
  options.chunk = 33;
  const model::Graph graph(m->config());
  model::run_sequence(*engine, graph, tokens, options, tap);
  std::map<std::string, double> worst;  // per op class
  for (const model::Step& step : graph.steps()) {
    ASSERT_EQ(tap.get(step.output()).rows(), 100) << model::to_string(step.output());
    const double e = nmse(ref->tap.get(step.output()), tap.get(step.output()));
    EXPECT_LE(e, 1e-9) << model::to_string(step.output()) << " (" << engine->kernel(step.op) << ")";
    double& w = worst[std::string(model::op_class_name(model::op_class(step.op)))];
    w = std::max(w, e);
  }
  std::string line;
  for (const auto& [cls, e] : worst) line += fmt::format(" {} {:.1e}", cls, e);
  std::printf("synth:small, 100 tokens, chunk 33: worst NMSE per op class:%s\n", line.c_str());
  expect_clean(*engine);
}

// f16 on the whole model: against the f64 truth, every op of the Vulkan f16 engine stays within
// a small multiple of the error of the reference's f16 emulation (the floor an f16 engine is held
// to by `bisect`'s calibration), over 100 tokens in chunks of 33 and 4 decode steps.
TEST(VulkanEngine, WholeSynthModelInF16StaysAtTheF16Floor) {
  const auto m = formats::load_model(synth_model_path("small"));
  const auto tokens = synth_prompt(100, m->config().vocab, 11);
  const auto truth = run_reference(*m, tokens, model::Scalar::f64, 33, 4);
  reference::CpuEngineOptions emulation{model::Precision::f16, 0};
  const auto floor = run_reference(*m, tokens, emulation, 33, 4);
  const auto engine = vulkan_engine(*m, "", true);
  model::MemoryTap tap;
  model::RunOptions options;
  options.chunk = 33;
  options.generate = 4;
  const model::Graph graph(m->config());
  const model::RunResult r = model::run_sequence(*engine, graph, tokens, options, tap);
  EXPECT_EQ(r.generated, truth->result.generated);
  double worst_ratio = 0, worst_floor = 0;
  for (const model::Step& step : graph.steps()) {
    const TensorId id = step.output();
    const double own = nmse(truth->tap.get(id), tap.get(id)), base = nmse(truth->tap.get(id), floor->tap.get(id));
    EXPECT_LE(own, 4 * base + 1e-12) << model::to_string(id) << ": f16 engine " << own << ", f16 emulation " << base;
    EXPECT_GT(own, 0) << model::to_string(id) << ": an f16 engine cannot be exact";
    worst_ratio = std::max(worst_ratio, own / std::max(base, 1e-30));
    worst_floor = std::max(worst_floor, base);
  }
  std::printf("synth:small f16, 104 positions: worst engine/emulation NMSE ratio %.2f (emulation up to %.1e)\n",
              worst_ratio, worst_floor);
  expect_clean(*engine);
}

// A pass whose positions the device's RoPE table already holds uploads none; a pass abandoned
// before it ran (here: begun, never ended) leaves the table unknown, so the next pass uploads its
// own even where the abandoned one had recorded those positions. Every op of every run has the
// bits of a fresh engine's.
TEST(VulkanEngine, RopeTablesAreKeptOnlyOnceTheirUploadHasRun) {
  const auto m = formats::load_model(synth_model_path("tiny"));
  const model::Graph graph(m->config());
  const auto prompt = synth_prompt(12, m->config().vocab, 9);
  model::RunOptions chunked;
  chunked.chunk = 6;  // passes of positions 0-5 and 6-11: the table ends holding 6-11
  auto run = [&](model::Engine& engine, const model::RunOptions& options) {
    auto tap = std::make_unique<model::MemoryTap>();
    model::run_sequence(engine, graph, prompt, options, *tap);
    return tap;
  };
  auto expect_same = [&](const model::MemoryTap& got, const model::MemoryTap& want, const char* what) {
    for (const model::Step& step : graph.steps())
      EXPECT_TRUE(same_bits(got.get(step.output()), want.get(step.output())))
          << what << ": " << model::to_string(step.output());
  };
  const auto fresh = vulkan_engine(*m);
  const auto whole_fresh = run(*fresh, {});
  const auto chunked_fresh = run(*vulkan_engine(*m), chunked);
  expect_same(*run(*fresh, {}), *whole_fresh, "the same positions again");
  const auto engine = vulkan_engine(*m);
  expect_same(*run(*engine, chunked), *chunked_fresh, "chunked");
  engine->reset();
  engine->begin_chunk(std::span(prompt).first(6), {0, 0, 6, false});  // records positions 0-5, never runs
  expect_same(*run(*engine, chunked), *chunked_fresh, "chunked after an abandoned pass");
  expect_clean(*fresh);
  expect_clean(*engine);
}

// Barriers only where data flows: q/k/v (and gate/up) read one input and run without one between them.
TEST(VulkanEngine, RecordsFewerBarriersThanDispatches) {
  const auto m = formats::load_model(synth_model_path("tiny"));
  const auto engine = vulkan_engine(*m);
  const model::Graph graph(m->config());
  const auto before = engine->stats();
  model::NullTap tap;
  model::run_chunk(*engine, graph, std::vector<std::int32_t>{1, 2, 3, 4}, {0, 0, 4, false}, tap);
  const auto after = engine->stats();
  // Command buffers of the uploads and embedding, layers 1, 2-3, 4-7, ..., each submitted as soon
  // as it is recorded, then one of the layers left with the final norm and logits.
  const auto layers = static_cast<unsigned>(m->config().n_layers);
  EXPECT_EQ(after.submits - before.submits, std::bit_width(layers) + 2u);
  const auto barriers = after.barriers - before.barriers;
  const auto per_layer = 15u;  // steps per layer; attn adds two copies
  EXPECT_LT(barriers, per_layer * static_cast<unsigned>(m->config().n_layers)) << barriers << " barriers";
  EXPECT_GT(barriers, 10u * static_cast<unsigned>(m->config().n_layers)) << barriers << " barriers";
  expect_clean(*engine);
}

// With pipeline_statistics, a device that offers VK_KHR_pipeline_executable_properties lists every
// kernel the engine made with the driver's statistics; elsewhere (lavapipe) the list is empty and
// the engine runs as usual.
TEST(VulkanEngine, PipelineStatisticsListEveryKernelWhereOffered) {
  const auto m = formats::load_model(synth_model_path("tiny"));
  gpu::VulkanEngineOptions options;
  options.pipeline_statistics = true;
  const auto engine = validated_vulkan_engine(*m, options);
  model::NullTap tap;
  model::run_chunk(*engine, model::Graph(m->config()), std::vector<std::int32_t>{1, 2, 3}, {0, 0, 3, false}, tap);
  const std::vector<gpu::PipelineStatistics> kernels = engine->pipeline_statistics();
  if (!engine->device_info().pipeline_statistics) {
    EXPECT_TRUE(kernels.empty());
  } else {
    EXPECT_EQ(kernels.size(), engine->stats().pipelines);
    for (const gpu::PipelineStatistics& k : kernels) EXPECT_FALSE(k.values.empty()) << k.kernel;
    EXPECT_TRUE(std::any_of(kernels.begin(), kernels.end(),
                            [](const gpu::PipelineStatistics& k) { return k.kernel.starts_with("rms_norm "); }));
  }
  expect_clean(*engine);
}

TEST(VulkanEngine, KvCacheReadsBackAsTheReferenceAndRoundTrips) {
  const auto m = formats::load_model(synth_model_path("tiny"));
  const auto tokens = synth_prompt(9, m->config().vocab, 3);
  const auto cpu = reference::make_cpu_engine(*m, {model::Precision::f32, 1});
  const auto engine = vulkan_engine(*m);
  const model::Graph graph(m->config());
  model::NullTap tap;
  model::RunOptions options;
  options.chunk = 4;
  model::run_sequence(*cpu, graph, tokens, options, tap);
  model::run_sequence(*engine, graph, tokens, options, tap);
  for (int l = 0; l < m->config().n_layers; ++l)
    for (bool value : {false, true}) {
      const HostTensor a = cpu->read_kv(l, value), b = engine->read_kv(l, value);
      ASSERT_EQ(b.rows(), 9);
      EXPECT_LE(nmse(a, b), 1e-9) << "layer " << l << (value ? " V" : " K");
    }
  // Teacher-forced cache: the reference's cache written into a fresh engine reads back exactly,
  // and the next chunk attends over it as the reference does.
  const auto fresh = vulkan_engine(*m);
  for (int l = 0; l < m->config().n_layers; ++l)
    for (bool value : {false, true}) {
      const HostTensor rows = cpu->read_kv(l, value);
      fresh->write_kv(l, value, rows);
      EXPECT_EQ(nmse(rows, fresh->read_kv(l, value)), 0.0);
    }
  model::MemoryTap a, b;
  const std::vector<std::int32_t> next{5, 6};
  model::run_chunk(*cpu, graph, next, {1, 9, 2, false}, a);
  model::run_chunk(*fresh, graph, next, {1, 9, 2, false}, b);
  const TensorId logits{Op::logits, m->config().n_layers};
  EXPECT_LE(nmse(a.get(logits), b.get(logits)), 1e-9);
  expect_clean(*engine);
  expect_clean(*fresh);
}

// read_rows() copies only the rows asked for, and they are the rows read() gives, in the Vulkan
// engine (f32 and f16), the reference and a batch of per-sequence engines.
TEST(VulkanEngine, ReadRowsIsTheSliceOfRead) {
  const auto m = formats::load_model(synth_model_path("tiny"));
  const auto tokens = synth_prompt(7, m->config().vocab, 5);
  const model::Graph graph(m->config());
  std::vector<std::unique_ptr<model::Engine>> engines;
  engines.push_back(vulkan_engine(*m));
  engines.push_back(vulkan_engine(*m, "", true));
  engines.push_back(reference::make_cpu_engine(*m, {model::Precision::f64, 1}));
  std::vector<std::unique_ptr<model::Engine>> two;
  for (int i = 0; i < 2; ++i) two.push_back(reference::make_cpu_engine(*m, {model::Precision::f32, 1}));
  auto batch = std::make_unique<model::PerSequenceEngine>(std::move(two));
  batch->set_sequences(2);
  model::NullTap tap;
  for (const auto& engine : engines) model::run_chunk(*engine, graph, tokens, {0, 0, 7, false}, tap);
  const std::vector<model::BatchPart> parts = {{0, std::span(tokens).first(3), 0, false},
                                               {1, std::span(tokens).first(4), 0, false}};
  batch->begin_batch(0, parts);
  for (const auto& step : graph.steps()) batch->execute(step, {});
  batch->end_chunk();
  engines.push_back(std::move(batch));
  for (const auto& engine : engines)
    for (const TensorId id : {TensorId{Op::logits, m->config().n_layers}, TensorId{Op::ffn_up, 1}})
      for (const auto& [first, count] : {std::pair{0, 1}, {2, 3}, {6, 1}, {2, 0}}) {
        const HostTensor all = engine->read(id), rows = engine->read_rows(id, first, count);
        ASSERT_EQ(rows.rows(), count);
        ASSERT_EQ(rows.cols(), all.cols());
        for (int r = 0; r < count; ++r)
          for (std::int64_t c = 0; c < all.cols(); ++c)
            ASSERT_EQ(rows.at(r, c), all.at(first + r, c)) << engine->name() << " " << model::to_string(id);
      }
  for (std::size_t i = 0; i < 2; ++i) expect_clean(dynamic_cast<const gpu::VulkanEngine&>(*engines[i]));
}

TEST(VulkanEngine, ImpossibleDeviceRequestIsAClearError) {
  const auto m = formats::load_model(synth_model_path("tiny"));
  for (const std::string request : {"99", "no-such-gpu"}) {
    try {
      vulkan_engine(*m, request);
      FAIL() << "expected an error for --device " << request;
    } catch (const UsageError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("--device " + request), std::string::npos) << what;
      EXPECT_NE(what.find("[0] "), std::string::npos) << what;  // lists the devices there are
    }
  }
}

// A device without 16-bit storage cannot run --dtype f16: the error names the feature and the device.
TEST(VulkanEngine, MissingF16FeatureIsAClearError) {
  gpu::DeviceInfo info;
  info.name = "Example GPU";
  info.api_version = VK_API_VERSION_1_2;
  info.compute_queue_family = 0;
  EXPECT_NO_THROW(gpu::check_device_offers(info, {}));
  try {
    gpu::check_device_offers(info, gpu::DeviceNeeds{true});
    FAIL() << "expected an error";
  } catch (const EnvironmentError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("storageBuffer16BitAccess"), std::string::npos) << what;
    EXPECT_NE(what.find("Example GPU"), std::string::npos) << what;
    EXPECT_NE(what.find("--dtype f16"), std::string::npos) << what;
  }
  info.storage_buffer_16bit = true;
  EXPECT_NO_THROW(gpu::check_device_offers(info, gpu::DeviceNeeds{true}));
}

TEST(VulkanEngine, KvCacheLimitIsAClearError) {
  const auto m = formats::load_model(synth_model_path("tiny"));
  gpu::VulkanEngineOptions options;
  options.max_context = 4;
  const auto engine = validated_vulkan_engine(*m, options);
  model::NullTap tap;
  try {
    model::run_chunk(*engine, model::Graph(m->config()), synth_prompt(6, m->config().vocab, 1), {0, 0, 6, false}, tap);
    FAIL() << "expected an error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("at most 4 positions"), std::string::npos) << e.what();
  }
  expect_clean(*engine);
}

// Memory requests past the device's limits fail with the request, the size and the limit named.
TEST(VulkanMemory, RequestsPastTheDeviceLimitsAreClearErrors) {
  const auto instance = gpu::shared_instance({true, false});
  const std::size_t before = instance->message_count();
  const gpu::Device device(*instance, gpu::select_device(gpu::devices_of(*instance), ""));
  gpu::Arena arena(device, "weights", gpu::MemoryKind::device_local, 1 << 20);
  try {
    arena.allocate(device.info().max_storage_buffer_range + 4, "weights of blk.3.ffn_up.weight");
    FAIL() << "expected an error";
  } catch (const EnvironmentError& e) {
    EXPECT_NE(std::string(e.what()).find("weights of blk.3.ffn_up.weight"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("binds at most"), std::string::npos) << e.what();
  }
  try {
    gpu::Block block(device, gpu::MemoryKind::device_local, device.info().max_memory_allocation_size + 1, "a test");
    FAIL() << "expected an error";
  } catch (const EnvironmentError& e) {
    EXPECT_NE(std::string(e.what()).find("allocating"), std::string::npos) << e.what();
  }
  EXPECT_EQ(gpu::result_name(VK_ERROR_OUT_OF_DEVICE_MEMORY), "VK_ERROR_OUT_OF_DEVICE_MEMORY");
  for (const std::string& msg : instance->messages(before)) ADD_FAILURE() << msg;
}

// Stream::zero clears the region it is given and nothing around it (the KV cache's rows read as
// zeros until written), ordered after an upload into the same bytes; the layer sees no misuse.
TEST(VulkanMemory, ZeroClearsItsRegionOnly) {
  const auto instance = gpu::shared_instance({true, false});
  const std::size_t before = instance->message_count();
  const gpu::Device device(*instance, gpu::select_device(gpu::devices_of(*instance), ""));
  gpu::Arena arena(device, "test", gpu::MemoryKind::device_local, 1 << 20);
  gpu::Stream stream(device);
  const gpu::Region r = arena.allocate(64 * 4, "a test region");
  std::vector<std::uint32_t> words(64, 0x7FC00000u);  // NaN bits
  stream.upload(words.data(), words.size() * 4, r);
  stream.zero(r.sub(16 * 4, 32 * 4));
  std::vector<std::uint32_t> back(64, 1);
  stream.download(r, [&](const std::byte* bytes) { std::memcpy(back.data(), bytes, back.size() * 4); });
  stream.flush();
  for (std::size_t i = 0; i < back.size(); ++i)
    EXPECT_EQ(back[i], i >= 16 && i < 48 ? 0u : 0x7FC00000u) << "word " << i;
  for (const std::string& msg : instance->messages(before)) ADD_FAILURE() << msg;
}

// A buffer of 0 bytes (VUID-VkBufferCreateInfo-size-00912: size must be greater than 0), made
// and destroyed on `device`.
void make_an_invalid_call(const gpu::Device& device) {
  VkBufferCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  info.size = 0;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
  VkBuffer buffer = VK_NULL_HANDLE;
  if (gpu::vkCreateBuffer(device.handle(), &info, nullptr, &buffer) == VK_SUCCESS && buffer != VK_NULL_HANDLE)
    gpu::vkDestroyBuffer(device.handle(), buffer, nullptr);
}

// The messenger does catch what the layer reports (else "no messages" would prove nothing).
TEST(VulkanValidation, AnInvalidCallIsReported) {
  const auto instance = gpu::shared_instance({true, false});
  const std::size_t before = instance->message_count();
  const gpu::Device device(*instance, gpu::select_device(gpu::devices_of(*instance), ""));
  make_an_invalid_call(device);
  const auto messages = instance->messages(before);
  ASSERT_FALSE(messages.empty());
  EXPECT_NE(messages.front().find("00912"), std::string::npos) << messages.front();
}

// One instance per process and options (NVIDIA's driver refuses the 29th instance of a process):
// the same one whenever asked, another for other options.
TEST(VulkanInstance, IsMadeOncePerProcessAndOptions) {
  const auto validated = gpu::shared_instance({true, false});
  EXPECT_EQ(gpu::shared_instance({true, false}).get(), validated.get());
  EXPECT_EQ(gpu::shared_instance({true, false})->handle(), validated->handle());
  const auto plain = gpu::shared_instance({false, false});
  EXPECT_NE(plain.get(), validated.get());
  EXPECT_FALSE(plain->validation());
  EXPECT_TRUE(validated->validation());
  EXPECT_EQ(gpu::shared_instance({false, false}).get(), plain.get());
}

// An engine reports the validation messages since it was made, not those its shared instance
// collected before (from an invalid call here); one made after its own invalid call reports it.
TEST(VulkanInstance, AnEngineReportsOnlyTheMessagesSinceItWasMade) {
  const auto m = formats::load_model(synth_model_path("tiny"));
  const auto instance = gpu::shared_instance({true, false});
  {
    const gpu::Device device(*instance, gpu::select_device(gpu::devices_of(*instance), ""));
    make_an_invalid_call(device);
  }
  ASSERT_FALSE(instance->messages().empty());
  gpu::VulkanEngineOptions options;
  options.validation = true;
  const auto engine = gpu::make_vulkan_engine(*m, options);
  EXPECT_TRUE(engine->validation_messages().empty());
  const std::size_t before = instance->message_count();
  {
    const gpu::Device device(*instance, gpu::select_device(gpu::devices_of(*instance), ""));
    make_an_invalid_call(device);
  }
  ASSERT_GT(instance->message_count(), before);
  const auto seen = engine->validation_messages();
  ASSERT_EQ(seen.size(), instance->message_count() - before);
  EXPECT_NE(seen.front().find("00912"), std::string::npos) << seen.front();
}

TEST(VulkanCli, DevicesListsLavapipeOrAGpu) {
  const CommandResult r = run_tapdiff("devices");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("[0] "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("subgroup size"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("default device: [0]"), std::string::npos) << r.output;
}

TEST(VulkanCli, RunRecordsDeviceAndKernelsInTheDump) {
  const auto dir = temp_dir("vulkan-run");
  const std::string dump = (dir / "vk.h5").string();
  const CommandResult r = run_tapdiff(
      "run --engine vulkan --device 0 --model synth:tiny --tokens 1,5,9,12 --chunk 3 "
      "--generate 3 --dump '" +
      dump + "'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("validation"), std::string::npos) << r.output;
  const dumps::DumpReader reader(dump);
  const auto& meta = reader.metadata();
  EXPECT_EQ(meta.engine, "vulkan");
  const gpu::DeviceInfo first = gpu::list_devices().front();
  EXPECT_NE(meta.device.find(first.name), std::string::npos) << meta.device;
  EXPECT_NE(meta.kernels.at("q_proj").find("matmul-tiled-64x64/f32"), std::string::npos) << meta.kernels.at("q_proj");
  EXPECT_EQ(meta.kernels.at("attn"),  // planned
            "attention-flash-32x32, attention-flash-split-32x32, attention-decode-split");

  const CommandResult bad = run_tapdiff("run --engine vulkan --device 99 --model synth:tiny --tokens 1,5");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--device 99"), std::string::npos) << bad.output;
}

// --dtype f16 is recorded in the dump (compute dtype, kernel names), an unsupported dtype is a
// usage error, and `bisect` finds the f16 engine within the f16-calibrated tolerances.
TEST(VulkanCli, F16RunIsRecordedAndBisectsClean) {
  const auto dir = temp_dir("vulkan-run-f16");
  const std::string dump = (dir / "vk16.h5").string();
  const CommandResult r = run_tapdiff(
      "run --engine vulkan --dtype f16 --model synth:tiny --tokens 1,5,9,12 --chunk 3 --generate 3 --dump '" + dump +
      "'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const dumps::DumpReader reader(dump);
  EXPECT_EQ(reader.metadata().compute_dtype, "f16");
  EXPECT_EQ(reader.metadata().storage_dtype, "f16");
  // Every attention variant ran: prefill's (flash, or the tensor-core kernel where the device has
  // one), a short chunk's split-KV flash, the decode kernel; in the order an engine plans them. The
  // engine is made as the tapdiff process makes it, the layer on as TAPDIFF_VK_VALIDATION says
  // (which turns the VK_NV_cooperative_matrix2 kernels off).
  gpu::VulkanEngineOptions options;
  options.f16 = true;
  const std::string planned =
      gpu::make_vulkan_engine(*formats::load_model(synth_model_path("tiny")), options)->kernel(model::Op::attn);
  EXPECT_EQ(reader.metadata().kernels.at("attn"), planned);
  EXPECT_NE(planned.find("attention-flash-split-32x32.f16, attention-decode-split.f16"), std::string::npos) << planned;

  const CommandResult bad = run_tapdiff("run --engine vulkan --dtype f64 --model synth:tiny --tokens 1,5");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("computes in f32, f16"), std::string::npos) << bad.output;

  const CommandResult bisect = run_tapdiff(
      "bisect --engine-b vulkan --dtype f16 --model synth:small --tokens 1,5,9,12,40,41,42,7,8,9,10,11 --chunk 5 "
      "--generate 4");
  EXPECT_EQ(bisect.exit_code, 0) << bisect.output;
  EXPECT_NE(bisect.output.find("calibrated against ref f16"), std::string::npos) << bisect.output;
}

// The loader honours VK_ICD_FILENAMES / VK_DRIVER_FILES: pointing them nowhere hides every driver.
TEST(VulkanCli, NoVulkanDriverIsAClearErrorWithExitCode3) {
  CommandResult r;
  {
    // A GPU machine may set these: they are restored afterwards.
    const ScopedEnv icd("VK_ICD_FILENAMES", "/nonexistent/tapdiff_icd.json");
    const ScopedEnv driver("VK_DRIVER_FILES", "/nonexistent/tapdiff_icd.json");
    r = run_tapdiff("run --engine vulkan --model synth:tiny --tokens 1,5");
  }
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("needs a Vulkan 1.2 driver"), std::string::npos) << r.output;
}

TEST(VulkanCli, AChunkPastTheGpuTimeoutIsAClearErrorNotAHang) {
  {
    const ScopedEnv timeout("TAPDIFF_GPU_TIMEOUT_S", "1e-9");
    const CommandResult r = run_tapdiff("run --engine vulkan --model synth:tiny --tokens 1,5,6,7");
    EXPECT_EQ(r.exit_code, 3) << r.output;
    EXPECT_NE(r.output.find("did not finish a chunk within"), std::string::npos) << r.output;
  }
  const ScopedEnv bad("TAPDIFF_GPU_TIMEOUT_S", "soon");
  const CommandResult r = run_tapdiff("run --engine vulkan --model synth:tiny --tokens 1,5,6,7");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("TAPDIFF_GPU_TIMEOUT_S"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace tapdiff::testing
