// The HDF5 dump: wrapper, tap filter, writer and reader, incomplete files, run matching. (Reading
// and writing dumps with h5py: test_dumps_h5py.cpp; the fake run both use: test_support.h.)
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "dumps/dump_reader.h"
#include "dumps/dump_writer.h"
#include "dumps/h5.h"
#include "dumps/tap_filter.h"
#include "model/config.h"
#include "model/errors.h"
#include "tests/test_support.h"

namespace tapdiff::testing {
namespace {

using dumps::DumpReader;
using dumps::DumpWriter;
using dumps::RunMetadata;
using dumps::StorageType;
using dumps::TapFilter;
using model::ChunkInfo;
using model::Graph;
using model::HostTensor;
using model::Op;
using model::Scalar;
using model::TensorId;

// Every value of every tap of rows [0, rows) equals the fake engine's.
void expect_fake_values(const DumpReader& reader, std::int64_t rows, double extra = 0) {
  for (const TensorId& id : reader.tensors()) {
    const HostTensor t = reader.read(id, 0, 1000);
    ASSERT_EQ(t.rows(), rows) << model::to_string(id);
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < t.cols(); ++c)
        ASSERT_EQ(t.at(r, c), fake_value(id, static_cast<int>(r), static_cast<int>(c)) + extra)
            << model::to_string(id) << " row " << r << " col " << c;
  }
}

template <class Error, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return {};
}

// --- h5 wrapper -------------------------------------------------------------------------------

TEST(H5, AttributesRoundTripAndOverwrite) {
  const std::string path = dump_path("attrs.h5");
  {
    auto file = dumps::h5::File::create(path);
    file.set_string("s", "héllo");
    file.set_int("i", -7);
    file.set_double("d", 0.1);
    const std::vector<std::int32_t> v{3, -1, 4};
    file.set_ints("v", v);
    file.set_int("i", 42);                 // same type: written in place
    file.set_string("d", "now a string");  // another type: replaced
  }
  const auto file = dumps::h5::File::open(path);
  EXPECT_EQ(file.get_string("s"), "héllo");
  EXPECT_EQ(file.get_int("i"), 42);
  EXPECT_EQ(file.get_double("i"), 42.0);
  EXPECT_EQ(file.get_string("d"), "now a string");
  EXPECT_EQ(file.get_ints("v"), (std::vector<std::int32_t>{3, -1, 4}));
  EXPECT_FALSE(file.has_attribute("nope"));
}

TEST(H5, WrongOrMissingAttributeIsAFormatErrorNamingFileAndObject) {
  const std::string path = dump_path("attrs.h5");
  { dumps::h5::File::create(path).set_string("s", "text"); }
  const auto file = dumps::h5::File::open(path);
  EXPECT_EQ(error_of<FormatError>([&] { file.get_int("missing"); }), path + ": / has no attribute 'missing'");
  EXPECT_EQ(error_of<FormatError>([&] { file.get_int("s"); }),
            path + ": /: attribute 's': expected an integer, found a string");
  EXPECT_EQ(error_of<FormatError>([&] { file.open_group("taps"); }), path + ": /taps: missing group");
}

// --- TapFilter ---------------------------------------------------------------------------------

std::vector<std::string> filtered(const TapFilter& filter, const model::ModelConfig& config = fake_config()) {
  std::vector<std::string> names;
  const Graph graph(config);
  for (const model::Step& step : graph.steps())
    if (filter.matches(step.output())) names.push_back(model::to_string(step.output()));
  return names;
}

TEST(TapFilter, AllMatchesEveryOpAndNoneNothing) {
  EXPECT_EQ(filtered(TapFilter("all")).size(), Graph(fake_config()).steps().size());
  EXPECT_EQ(filtered(TapFilter()).size(), Graph(fake_config()).steps().size());
  EXPECT_TRUE(filtered(TapFilter("none")).empty());
}

TEST(TapFilter, LayersMatchesTheResidualStreamAndWhatEachBlockAdds) {
  EXPECT_EQ(filtered(TapFilter("layers")),
            (std::vector<std::string>{"-1/embed", "0/o_proj", "0/ffn_down", "0/ffn_residual", "1/o_proj", "1/ffn_down",
                                      "1/ffn_residual", "2/final_norm", "2/logits"}));
}

// A mixture's update: the experts' sum, with a shared expert the block's sum too.
TEST(TapFilter, LayersMatchesAMixturesUpdate) {
  model::ModelConfig c = fake_config();
  c.experts.count = 4, c.experts.active = 2, c.experts.ffn_dim = 8, c.experts.layers = {false, true};
  EXPECT_EQ(filtered(TapFilter("layers"), c),
            (std::vector<std::string>{"-1/embed", "0/o_proj", "0/ffn_down", "0/ffn_residual", "1/o_proj", "1/moe_out",
                                      "1/ffn_residual", "2/final_norm", "2/logits"}));
  c.experts.shared_ffn_dim = 8;
  const std::vector<std::string> shared = filtered(TapFilter("layers"), c);
  EXPECT_NE(std::ranges::find(shared, "1/moe_sum"), shared.end());
}

TEST(TapFilter, RegexSearchesLayerSlashOp) {
  EXPECT_EQ(filtered(TapFilter("^1/rope_[qk]$")), (std::vector<std::string>{"1/rope_q", "1/rope_k"}));
  EXPECT_EQ(filtered(TapFilter("q_proj")), (std::vector<std::string>{"0/q_proj", "1/q_proj"}));
  EXPECT_EQ(filtered(TapFilter("^-1/|logits")), (std::vector<std::string>{"-1/embed", "2/logits"}));
  EXPECT_EQ(TapFilter("attn$").kind(), TapFilter::Kind::regex);
}

TEST(TapFilter, BadRegexIsAUsageErrorNamingTheOption) {
  const std::string message = error_of<UsageError>([] { TapFilter("q_proj["); });
  EXPECT_TRUE(message.starts_with("--taps: 'q_proj[' is not a valid regular expression: ")) << message;
  EXPECT_FALSE(error_of<UsageError>([] { TapFilter(""); }).empty());
}

// --- DumpWriter / DumpReader round trips -------------------------------------------------------

TEST(DumpWriter, RoundTripsEveryTapOverChunksAndDecodeRows) {
  const std::string path = dump_path("run.h5");
  write_fake_dump(path);
  const DumpReader reader(path);
  EXPECT_TRUE(reader.complete());
  EXPECT_EQ(reader.rows(), 9);
  EXPECT_EQ(reader.positions(), (std::vector<std::int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(reader.chunks(), (std::vector<std::int32_t>{0, 0, 0, 1, 1, 1, 2, 3, 4}));
  EXPECT_EQ(reader.decode_flags(), (std::vector<std::uint8_t>{0, 0, 0, 0, 0, 0, 0, 1, 1}));
  EXPECT_EQ(reader.tokens(), FakeRun{}.tokens);
  EXPECT_EQ(reader.summary(), (nlohmann::json{{"generated", {4, 6, 8}}}));

  std::vector<TensorId> expected;
  const Graph graph(fake_config());
  for (const model::Step& step : graph.steps()) expected.push_back(step.output());
  EXPECT_EQ(reader.tensors(), expected);
  expect_fake_values(reader, 9);

  const HostTensor middle = reader.read({Op::attn, 1}, 4, 3);  // rows of chunks 1 and 2
  ASSERT_EQ(middle.rows(), 3);
  EXPECT_EQ(middle.scalar(), Scalar::f32);
  EXPECT_EQ(middle.at(0, 5), fake_value({Op::attn, 1}, 4, 5));
  EXPECT_EQ(reader.read({Op::logits, 2}, 7, 10).rows(), 2);  // clamped
  EXPECT_EQ(reader.read({Op::logits, 2}, 20, 1).rows(), 0);

  const RunMetadata m = reader.metadata();
  EXPECT_EQ(m.engine, "fake");
  EXPECT_EQ(m.kernels, (std::map<std::string, std::string>{{"q_proj", "tiled"}, {"attn", "naive"}}));
  EXPECT_EQ(m.model_sha256, std::string(64, 'a'));
  EXPECT_EQ(m.model_config, model::to_json(fake_config()));
  EXPECT_EQ(m.prompt_tokens, FakeRun{}.prompt());
  EXPECT_EQ(m.chunk_size, 3);
  EXPECT_EQ(m.storage_dtype, "f32");
  EXPECT_EQ(m.created.size(), 20u) << m.created;  // 2024-05-01T12:34:56Z
}

// Prefill chunks longer than an HDF5 chunk (64 rows of these widths): the whole HDF5 chunks go to
// the file as they are, the rows around them (70-127, 192-219) and the decode row through
// H5Dwrite; every value reads back, in each storage type.
TEST(DumpWriter, RoundTripsChunksLongerThanAnHdf5Chunk) {
  FakeRun run;
  run.chunks = {{0, 0, 70, false}, {1, 70, 100, false}, {2, 170, 1, true}};  // HDF5 chunks: 64 rows at most
  run.tokens.assign(171, 3);
  const Graph graph(fake_config());
  for (StorageType storage : {StorageType::f32, StorageType::f16, StorageType::f64}) {
    const std::string path = dump_path(fmt::format("long-{}.h5", dumps::storage_name(storage)));
    {
      DumpWriter writer(path, fake_metadata(fake_config()), graph, TapFilter("all"), storage);
      feed_fake_run(writer, graph, run, run.chunks.size(), Scalar::f32);
      writer.finish(nullptr);
    }
    const DumpReader reader(path);
    EXPECT_EQ(reader.rows(), 171);
    expect_fake_values(reader, 171);  // below 512: exact in f16 too
  }
}

TEST(DumpWriter, StoresF64Exactly) {
  const std::string path = dump_path("f64.h5");
  const Graph graph(fake_config());
  {
    DumpWriter writer(path, fake_metadata(fake_config()), graph, TapFilter("all"), StorageType::f64);
    feed_fake_run(writer, graph, FakeRun{}, 5, Scalar::f64, 0, 1.0 / 3.0);
    writer.finish(nullptr);
  }
  const DumpReader reader(path);
  EXPECT_EQ(reader.read({Op::embed, -1}, 0, 1).scalar(), Scalar::f64);
  EXPECT_EQ(reader.metadata().storage_dtype, "f64");
  expect_fake_values(reader, 9, 1.0 / 3.0);
  EXPECT_TRUE(reader.summary().is_null());
}

TEST(DumpWriter, ConvertsBetweenInputAndStorageTypes) {
  const std::string to_f64 = dump_path("f32-as-f64.h5");
  write_fake_dump(to_f64, StorageType::f64, "all", Scalar::f32);
  expect_fake_values(DumpReader(to_f64), 9);
  const std::string to_f32 = dump_path("f64-as-f32.h5");
  write_fake_dump(to_f32, StorageType::f32, "all", Scalar::f64);
  expect_fake_values(DumpReader(to_f32), 9);
}

TEST(DumpWriter, StoresF16AndReadsItBackAsF32) {
  const std::string path = dump_path("f16.h5");
  write_fake_dump(path, StorageType::f16, "all", Scalar::f64);
  const DumpReader reader(path);
  EXPECT_EQ(reader.metadata().storage_dtype, "f16");
  EXPECT_EQ(reader.read({Op::ffn_act, 0}, 0, 1).scalar(), Scalar::f32);
  expect_fake_values(reader, 9);  // the fake values are exact in f16

  const std::string rounded = dump_path("f16-rounded.h5");
  const Graph graph(fake_config());
  {
    DumpWriter writer(rounded, fake_metadata(fake_config()), graph, TapFilter("^-1/"), StorageType::f16);
    feed_fake_run(writer, graph, FakeRun{}, 1, Scalar::f32, 0, 1.0 / 3.0);
    writer.finish(nullptr);
  }
  const HostTensor embed = DumpReader(rounded).read({Op::embed, -1}, 0, 3);
  EXPECT_EQ(embed.at(0, 0), 0.333251953125);  // 1/3 to the nearest f16
}

TEST(DumpWriter, LayersFilterCreatesOnlyTheResidualStreamAndTheBlocksUpdates) {
  const std::string path = dump_path("layers.h5");
  const Graph graph(fake_config());
  const ChunkInfo chunk{0, 0, 3, false};
  {
    DumpWriter writer(path, fake_metadata(fake_config()), graph, TapFilter("layers"));
    EXPECT_TRUE(writer.wants({{Op::ffn_residual, 1}, chunk}));
    EXPECT_FALSE(writer.wants({{Op::q_proj, 0}, chunk}));
    EXPECT_FALSE(writer.wants({{Op::embed, 0}, chunk}));  // no such tensor
    feed_fake_run(writer, graph, FakeRun{}, 5, Scalar::f32);
    writer.finish(nullptr);
  }
  const DumpReader reader(path);
  EXPECT_EQ(reader.tensors(), (std::vector<TensorId>{{Op::embed, -1},
                                                     {Op::o_proj, 0},
                                                     {Op::ffn_down, 0},
                                                     {Op::ffn_residual, 0},
                                                     {Op::o_proj, 1},
                                                     {Op::ffn_down, 1},
                                                     {Op::ffn_residual, 1},
                                                     {Op::final_norm, 2},
                                                     {Op::logits, 2}}));
  EXPECT_FALSE(reader.has({Op::q_proj, 0}));
  EXPECT_EQ(error_of<UsageError>([&] {
              reader.read({Op::q_proj, 0}, 0, 1);
            }),
            path + ": 0/q_proj was not tapped in this dump");
  expect_fake_values(reader, 9);
}

TEST(DumpWriter, OpNotDeliveredInAChunkReadsAsNan) {
  const std::string path = dump_path("gap.h5");
  const Graph graph(fake_config());
  const FakeRun run;
  {
    DumpWriter writer(path, fake_metadata(fake_config()), graph, TapFilter("embed|logits"));
    const ChunkInfo& first = run.chunks[0];
    writer.record({{Op::embed, -1}, first}, fake_tensor(graph, {Op::embed, -1}, first, Scalar::f32));
    writer.end_chunk(first, std::span(run.tokens).first(3));
    feed_fake_run(writer, graph, FakeRun{{{1, 3, 3, false}}, run.tokens}, 1, Scalar::f32);
    writer.finish(nullptr);
  }
  const DumpReader reader(path);
  const HostTensor logits = reader.read({Op::logits, 2}, 0, 6);
  ASSERT_EQ(logits.rows(), 6);
  EXPECT_TRUE(std::isnan(logits.at(2, 0)));
  EXPECT_EQ(logits.at(3, 1), fake_value({Op::logits, 2}, 3, 1));
}

TEST(DumpWriter, MissingFolderIsAnEnvironmentErrorNamingThePath) {
  const std::string path = dump_path("") + "/no/such/folder/run.h5";
  const std::string message = error_of<EnvironmentError>(
      [&] { DumpWriter(path, fake_metadata(fake_config()), Graph(fake_config()), TapFilter("all")); });
  EXPECT_TRUE(message.starts_with(path + ": cannot create the dump: folder ")) << message;
}

// --- Interrupted runs --------------------------------------------------------------------------

TEST(DumpWriter, DestroyedWithoutFinishLeavesAReadableIncompleteFile) {
  const std::string path = dump_path("interrupted.h5");
  const Graph graph(fake_config());
  {
    DumpWriter writer(path, fake_metadata(fake_config()), graph, TapFilter("all"));
    feed_fake_run(writer, graph, FakeRun{}, 2, Scalar::f32, 7);  // 2 chunks, then 7 ops of the 3rd
  }
  const DumpReader reader(path);
  EXPECT_FALSE(reader.complete());
  EXPECT_EQ(reader.rows(), 6);
  EXPECT_EQ(reader.tokens(), (std::vector<std::int32_t>{1, 5, 9, 2, 7, 3}));
  EXPECT_TRUE(reader.summary().is_null());
  EXPECT_EQ(reader.tensors().size(), graph.steps().size());
  expect_fake_values(reader, 6);
}

TEST(DumpWriter, DestroyedBeforeAnyChunkShowsEveryTapWithNoRows) {
  const std::string path = dump_path("empty.h5");
  { DumpWriter writer(path, fake_metadata(fake_config()), Graph(fake_config()), TapFilter("all")); }
  const DumpReader reader(path);
  EXPECT_FALSE(reader.complete());
  EXPECT_EQ(reader.rows(), 0);
  EXPECT_EQ(reader.tensors().size(), Graph(fake_config()).steps().size());
  EXPECT_EQ(reader.read({Op::logits, 2}, 0, 5).rows(), 0);
}

// A child process writes 2 chunks and half of the 3rd, then dies by SIGKILL: no destructor runs.
TEST(DumpWriter, ProcessKilledMidChunkLeavesTheFinishedChunks) {
  const std::string path = dump_path("killed.h5");
  const KilledChild child = kill_after([&] {
    const Graph graph(fake_config());
    DumpWriter writer(path, fake_metadata(fake_config()), graph, TapFilter("all"));
    feed_fake_run(writer, graph, FakeRun{}, 2, Scalar::f32, 20);
  });
  ASSERT_TRUE(child.reached) << "the child failed before the 3rd chunk";
  ASSERT_TRUE(child.killed);

  const DumpReader reader(path);
  EXPECT_FALSE(reader.complete());
  EXPECT_EQ(reader.rows(), 6);
  EXPECT_EQ(reader.chunks(), (std::vector<std::int32_t>{0, 0, 0, 1, 1, 1}));
  expect_fake_values(reader, 6);
}

// --- DumpReader errors and run matching --------------------------------------------------------

TEST(DumpReader, RejectsMissingAndNonHdf5Files) {
  const std::string missing = dump_path("missing.h5");
  EXPECT_EQ(error_of<UsageError>([&] { DumpReader{missing}; }), missing + ": no such dump file");
  const std::string text = dump_path("text.h5");
  std::ofstream(text) << "not an hdf5 file\n";
  EXPECT_EQ(error_of<FormatError>([&] { DumpReader{text}; }), text + ": not an HDF5 file");
}

TEST(DumpReader, RejectsATruncatedFile) {
  const std::string path = dump_path("truncated.h5");
  write_fake_dump(path);
  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
  const std::string message = error_of<FormatError>([&] { DumpReader{path}; });
  EXPECT_TRUE(message.starts_with(path + ": cannot open the HDF5 file (HDF5: truncated file")) << message;
}

TEST(DumpReader, RejectsHdf5ThatIsNotATapdiffDump) {
  const std::string path = dump_path("other.h5");
  { dumps::h5::File::create(path).set_string("title", "someone else's file"); }
  EXPECT_EQ(error_of<FormatError>([&] { DumpReader{path}; }),
            path + ": not a tapdiff dump (no 'schema_version' attribute at the root)");
}

TEST(DumpReader, RejectsAnUnknownSchemaVersion) {
  const std::string path = dump_path("v7.h5");
  write_fake_dump(path);
  { dumps::h5::File::open(path, dumps::h5::File::Mode::write).set_int("schema_version", 7); }
  EXPECT_EQ(error_of<FormatError>([&] { DumpReader{path}; }),
            path + ": schema version 7, this tapdiff reads version 1");
}

TEST(DumpReader, RejectsATapWhoseWidthDoesNotMatchTheModelConfig) {
  const std::string path = dump_path("width.h5");
  write_fake_dump(path, StorageType::f32, "q_proj|embed");
  {
    model::ModelConfig wider = fake_config();
    wider.n_heads = 4;
    wider.dim = 16;
    dumps::h5::File::open(path, dumps::h5::File::Mode::write).set_string("model_config", model::to_json(wider).dump());
  }
  EXPECT_EQ(error_of<FormatError>([&] { DumpReader{path}; }),
            path + ": /taps/-1/embed: width 8, but model_config gives dim = 16");
}

// Found by tests/fuzz: the widths the reader checks taps against would overflow an int.
TEST(DumpReader, RejectsAModelConfigWhoseWidthsOverflowAnInt) {
  const std::string path = dump_path("overflow.h5");
  write_fake_dump(path, StorageType::f32, "q_proj|embed");
  {
    model::ModelConfig huge = fake_config();
    huge.n_heads = huge.n_kv_heads = 1 << 30;
    dumps::h5::File::open(path, dumps::h5::File::Mode::write).set_string("model_config", model::to_json(huge).dump());
  }
  EXPECT_EQ(error_of<FormatError>([&] { DumpReader{path}; }),
            fmt::format("{}: model config: expected n_heads * head_dim below 2^31, found 1073741824 x {}", path,
                        fake_config().head_dim));
}

// Found by tests/fuzz: the reader built the whole graph of the model_config (steps for every
// layer) once per tap to look up a width; 2^30 layers took minutes and gigabytes.
TEST(DumpReader, ChecksWidthsOfAModelWithManyLayersWithoutItsGraph) {
  const std::string path = dump_path("layers.h5");
  write_fake_dump(path, StorageType::f32, "q_proj|embed");
  model::ModelConfig deep = fake_config();
  deep.n_layers = 1 << 30;
  dumps::h5::File::open(path, dumps::h5::File::Mode::write).set_string("model_config", model::to_json(deep).dump());
  const DumpReader reader(path);
  EXPECT_EQ(reader.config().n_layers, 1 << 30);
  EXPECT_TRUE(reader.has({model::Op::q_proj, 1}));
}

// Found by tests/fuzz: nlohmann::json throws out_of_range, not parse_error, for 1e999.
TEST(DumpReader, RejectsAModelConfigWithANumberOutOfRange) {
  const std::string path = dump_path("number.h5");
  write_fake_dump(path, StorageType::f32, "embed");
  dumps::h5::File::open(path, dumps::h5::File::Mode::write).set_string("model_config", R"({"n_layers": 1e999})");
  const std::string error = error_of<FormatError>([&] { DumpReader{path}; });
  EXPECT_NE(error.find(path + ": attribute 'model_config': expected an object in JSON, found a parse error"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("1e999"), std::string::npos) << error;
}

TEST(DumpReader, MismatchNamesDifferentModels) {
  const std::string a = dump_path("a.h5");
  const std::string b = dump_path("b.h5");
  write_fake_dump(a);
  RunMetadata other = fake_metadata(fake_config());
  other.model_sha256 = "cd34" + std::string(60, 'f');
  other.model_path = "/models/other.gguf";
  write_fake_dump(b, StorageType::f32, "layers", Scalar::f32, other);
  EXPECT_EQ(
      DumpReader::mismatch(DumpReader(a), DumpReader(b)).value_or(""),
      fmt::format("different models: {} has sha256 aaaaaaaaaaaa.. (tiny.gguf), {} has cd34ffffffff.. (other.gguf)", a,
                  b));
}

TEST(DumpReader, MismatchComparesModelConfigsWhenAShaIsMissing) {
  const std::string a = dump_path("a.h5");
  const std::string b = dump_path("b.h5");
  RunMetadata ma = fake_metadata(fake_config());
  ma.model_sha256.clear();
  write_fake_dump(a, StorageType::f32, "layers", Scalar::f32, ma);
  model::ModelConfig base = fake_config();
  base.rope_base = 500000.0;
  base.norm_eps = 1e-6;
  RunMetadata mb = fake_metadata(base);
  write_fake_dump(b, StorageType::f32, "layers", Scalar::f32, mb);
  EXPECT_EQ(DumpReader::mismatch(DumpReader(a), DumpReader(b)).value_or(""),
            fmt::format("different models: the model_config of {} (tiny.gguf) and {} (tiny.gguf) differ in "
                        "norm_eps: 1e-05 vs 1e-06; rope_base: 10000.0 vs 500000.0",
                        a, b));
  write_fake_dump(b, StorageType::f32, "layers", Scalar::f32, fake_metadata(fake_config()));  // a has no sha
  EXPECT_FALSE(DumpReader::mismatch(DumpReader(a), DumpReader(b)).has_value());
}

TEST(DumpReader, MismatchFindsTheFirstDifferentToken) {
  const std::string a = dump_path("a.h5");
  const std::string b = dump_path("b.h5");
  const std::string c = dump_path("c.h5");
  write_fake_dump(a);
  write_fake_dump(b, StorageType::f16, "layers", Scalar::f32, fake_metadata(fake_config()),
                  {1, 5, 9, 2, 8, 3, 11, 4, 6});
  write_fake_dump(c, StorageType::f32, "none", Scalar::f32, fake_metadata(fake_config()), {1, 5, 9, 2, 7, 3, 11, 4, 5});
  EXPECT_EQ(DumpReader::mismatch(DumpReader(a), DumpReader(b)).value_or(""),
            "different tokens: first difference at position 4 (7 vs 8)");
  EXPECT_EQ(DumpReader::mismatch(DumpReader(a), DumpReader(c)).value_or(""),
            "different tokens: first difference at position 8 (6 vs 5), a decode row: the runs generated different "
            "tokens before it");
}

TEST(DumpReader, SameRunDumpedDifferentlyHasNoMismatch) {
  const std::string a = dump_path("a.h5");
  const std::string b = dump_path("b.h5");
  write_fake_dump(a);
  const Graph graph(fake_config());
  {
    DumpWriter writer(b, fake_metadata(fake_config()), graph, TapFilter("layers"), StorageType::f16);
    feed_fake_run(writer, graph, FakeRun{}, 3, Scalar::f32);  // the prompt only, interrupted
  }
  EXPECT_FALSE(DumpReader::mismatch(DumpReader(a), DumpReader(b)).has_value());
}

}  // namespace
}  // namespace tapdiff::testing
