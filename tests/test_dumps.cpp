// The HDF5 dump: wrapper, tap filter, writer and reader, incomplete files, h5py interop.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "dumps/dump_reader.h"
#include "dumps/dump_writer.h"
#include "dumps/h5.h"
#include "dumps/tap_filter.h"
#include "model/config.h"
#include "model/errors.h"
#include "tests/test_support.h"

namespace tapdiff {
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

model::ModelConfig tiny_config() {
  model::ModelConfig c;
  c.n_layers = 2;
  c.dim = 8;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.head_dim = 4;
  c.ffn_dim = 12;
  c.vocab = 16;
  return c;
}

// What the fake engine computes for (op, position, column): exact in f16 (|v| < 512, step 1/4).
double fake_value(const TensorId& id, int pos, int col) {
  const double v = (id.layer + 1) * 64 + static_cast<int>(id.op) * 3 + pos + col * 0.25;
  return col % 2 != 0 ? -v : v;
}

HostTensor fake_tensor(const Graph& graph, const TensorId& id, const ChunkInfo& chunk, Scalar scalar,
                       double extra = 0) {
  HostTensor t(scalar, chunk.rows, graph.width(id.op));
  for (std::int64_t r = 0; r < t.rows(); ++r)
    for (std::int64_t c = 0; c < t.cols(); ++c) {
      const double v = fake_value(id, chunk.first_pos + static_cast<int>(r), static_cast<int>(c)) + extra;
      const auto i = static_cast<std::size_t>(r * t.cols() + c);
      if (scalar == Scalar::f32)
        t.f32()[i] = static_cast<float>(v);
      else
        t.f64()[i] = v;
    }
  return t;
}

// A prompt of 7 tokens prefilled in chunks of 3, 3, 1, then 2 decode steps: 9 rows.
struct FakeRun {
  std::vector<ChunkInfo> chunks{{0, 0, 3, false}, {1, 3, 3, false}, {2, 6, 1, false}, {3, 7, 1, true}, {4, 8, 1, true}};
  std::vector<std::int32_t> tokens{1, 5, 9, 2, 7, 3, 11, 4, 6};
  std::vector<std::int32_t> prompt() const { return {tokens.begin(), tokens.begin() + 7}; }
};

// Feeds chunks [0, n_chunks) through the tap as model::run_chunk does; then, when partial_ops > 0,
// records the first partial_ops wanted ops of the next chunk without ending it.
void feed(model::Tap& tap, const Graph& graph, const FakeRun& run, std::size_t n_chunks, Scalar scalar,
          int partial_ops = 0, double extra = 0) {
  for (std::size_t k = 0; k < n_chunks + (partial_ops > 0 ? 1 : 0); ++k) {
    const ChunkInfo& chunk = run.chunks[k];
    int recorded = 0;
    for (const model::Step& step : graph.steps()) {
      const model::TapKey key{step.output(), chunk};
      if (k == n_chunks && recorded == partial_ops) break;
      if (!tap.wants(key)) continue;
      tap.record(key, fake_tensor(graph, key.id, chunk, scalar, extra));
      ++recorded;
    }
    if (k < n_chunks)
      tap.end_chunk(chunk,
                    std::span(run.tokens)
                        .subspan(static_cast<std::size_t>(chunk.first_pos), static_cast<std::size_t>(chunk.rows)));
  }
}

RunMetadata fake_metadata(const model::ModelConfig& config) {
  RunMetadata m;
  m.tool_version = "0.1.0";
  m.engine = "fake";
  m.device = "test device";
  m.compute_dtype = "f32";
  m.kernels = {{"q_proj", "tiled"}, {"attn", "naive"}};
  m.model_path = "/models/tiny.gguf";
  m.model_sha256 = std::string(64, 'a');
  m.model_config = model::to_json(config);
  m.prompt_tokens = FakeRun{}.prompt();
  m.chunk_size = 3;
  m.command_line = "tapdiff run --chunk 3";
  return m;
}

// Writes the whole fake run into path.
void write_dump(const std::string& path, StorageType storage = StorageType::f32, const std::string& taps = "all",
                Scalar scalar = Scalar::f32, RunMetadata metadata = fake_metadata(tiny_config()),
                std::vector<std::int32_t> tokens = FakeRun{}.tokens) {
  const Graph graph(tiny_config());
  FakeRun run;
  run.tokens = std::move(tokens);
  DumpWriter writer(path, std::move(metadata), graph, TapFilter(taps), storage);
  feed(writer, graph, run, run.chunks.size(), scalar);
  writer.finish({{"generated", {4, 6, 8}}});
}

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

// A path in this test's own temp folder, emptied on the test's first call.
std::string dump_path(const std::string& name) {
  static std::string test;
  static std::filesystem::path dir;
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  if (info == nullptr || info->name() != test) {
    test = info != nullptr ? info->name() : "";
    dir = testing::temp_dir("dumps");
  }
  return (dir / name).string();
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

std::vector<std::string> filtered(const TapFilter& filter) {
  std::vector<std::string> names;
  const Graph graph(tiny_config());
  for (const model::Step& step : graph.steps())
    if (filter.matches(step.output())) names.push_back(model::to_string(step.output()));
  return names;
}

TEST(TapFilter, AllMatchesEveryOpAndNoneNothing) {
  EXPECT_EQ(filtered(TapFilter("all")).size(), Graph(tiny_config()).steps().size());
  EXPECT_EQ(filtered(TapFilter()).size(), Graph(tiny_config()).steps().size());
  EXPECT_TRUE(filtered(TapFilter("none")).empty());
}

TEST(TapFilter, LayersMatchesTheResidualStream) {
  EXPECT_EQ(filtered(TapFilter("layers")),
            (std::vector<std::string>{"-1/embed", "0/ffn_residual", "1/ffn_residual", "2/final_norm", "2/logits"}));
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
  write_dump(path);
  const DumpReader reader(path);
  EXPECT_TRUE(reader.complete());
  EXPECT_EQ(reader.rows(), 9);
  EXPECT_EQ(reader.positions(), (std::vector<std::int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(reader.chunks(), (std::vector<std::int32_t>{0, 0, 0, 1, 1, 1, 2, 3, 4}));
  EXPECT_EQ(reader.decode_flags(), (std::vector<std::uint8_t>{0, 0, 0, 0, 0, 0, 0, 1, 1}));
  EXPECT_EQ(reader.tokens(), FakeRun{}.tokens);
  EXPECT_EQ(reader.summary(), (nlohmann::json{{"generated", {4, 6, 8}}}));

  std::vector<TensorId> expected;
  const Graph graph(tiny_config());
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
  EXPECT_EQ(m.model_config, model::to_json(tiny_config()));
  EXPECT_EQ(m.prompt_tokens, FakeRun{}.prompt());
  EXPECT_EQ(m.chunk_size, 3);
  EXPECT_EQ(m.storage_dtype, "f32");
  EXPECT_EQ(m.created.size(), 20u) << m.created;  // 2024-05-01T12:34:56Z
}

TEST(DumpWriter, StoresF64Exactly) {
  const std::string path = dump_path("f64.h5");
  const Graph graph(tiny_config());
  {
    DumpWriter writer(path, fake_metadata(tiny_config()), graph, TapFilter("all"), StorageType::f64);
    feed(writer, graph, FakeRun{}, 5, Scalar::f64, 0, 1.0 / 3.0);
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
  write_dump(to_f64, StorageType::f64, "all", Scalar::f32);
  expect_fake_values(DumpReader(to_f64), 9);
  const std::string to_f32 = dump_path("f64-as-f32.h5");
  write_dump(to_f32, StorageType::f32, "all", Scalar::f64);
  expect_fake_values(DumpReader(to_f32), 9);
}

TEST(DumpWriter, StoresF16AndReadsItBackAsF32) {
  const std::string path = dump_path("f16.h5");
  write_dump(path, StorageType::f16, "all", Scalar::f64);
  const DumpReader reader(path);
  EXPECT_EQ(reader.metadata().storage_dtype, "f16");
  EXPECT_EQ(reader.read({Op::ffn_act, 0}, 0, 1).scalar(), Scalar::f32);
  expect_fake_values(reader, 9);  // the fake values are exact in f16

  const std::string rounded = dump_path("f16-rounded.h5");
  const Graph graph(tiny_config());
  {
    DumpWriter writer(rounded, fake_metadata(tiny_config()), graph, TapFilter("^-1/"), StorageType::f16);
    feed(writer, graph, FakeRun{}, 1, Scalar::f32, 0, 1.0 / 3.0);
    writer.finish(nullptr);
  }
  const HostTensor embed = DumpReader(rounded).read({Op::embed, -1}, 0, 3);
  EXPECT_EQ(embed.at(0, 0), 0.333251953125);  // 1/3 to the nearest f16
}

TEST(DumpWriter, LayersFilterCreatesOnlyTheResidualStream) {
  const std::string path = dump_path("layers.h5");
  const Graph graph(tiny_config());
  const ChunkInfo chunk{0, 0, 3, false};
  {
    DumpWriter writer(path, fake_metadata(tiny_config()), graph, TapFilter("layers"));
    EXPECT_TRUE(writer.wants({{Op::ffn_residual, 1}, chunk}));
    EXPECT_FALSE(writer.wants({{Op::q_proj, 0}, chunk}));
    EXPECT_FALSE(writer.wants({{Op::embed, 0}, chunk}));  // no such tensor
    feed(writer, graph, FakeRun{}, 5, Scalar::f32);
    writer.finish(nullptr);
  }
  const DumpReader reader(path);
  EXPECT_EQ(reader.tensors(),
            (std::vector<TensorId>{
                {Op::embed, -1}, {Op::ffn_residual, 0}, {Op::ffn_residual, 1}, {Op::final_norm, 2}, {Op::logits, 2}}));
  EXPECT_FALSE(reader.has({Op::q_proj, 0}));
  EXPECT_EQ(error_of<UsageError>([&] {
              reader.read({Op::q_proj, 0}, 0, 1);
            }),
            path + ": 0/q_proj was not tapped in this dump");
  expect_fake_values(reader, 9);
}

TEST(DumpWriter, OpNotDeliveredInAChunkReadsAsNan) {
  const std::string path = dump_path("gap.h5");
  const Graph graph(tiny_config());
  const FakeRun run;
  {
    DumpWriter writer(path, fake_metadata(tiny_config()), graph, TapFilter("embed|logits"));
    const ChunkInfo& first = run.chunks[0];
    writer.record({{Op::embed, -1}, first}, fake_tensor(graph, {Op::embed, -1}, first, Scalar::f32));
    writer.end_chunk(first, std::span(run.tokens).first(3));
    feed(writer, graph, FakeRun{{{1, 3, 3, false}}, run.tokens}, 1, Scalar::f32);
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
      [&] { DumpWriter(path, fake_metadata(tiny_config()), Graph(tiny_config()), TapFilter("all")); });
  EXPECT_TRUE(message.starts_with(path + ": cannot create the dump: folder ")) << message;
}

// --- Interrupted runs --------------------------------------------------------------------------

TEST(DumpWriter, DestroyedWithoutFinishLeavesAReadableIncompleteFile) {
  const std::string path = dump_path("interrupted.h5");
  const Graph graph(tiny_config());
  {
    DumpWriter writer(path, fake_metadata(tiny_config()), graph, TapFilter("all"));
    feed(writer, graph, FakeRun{}, 2, Scalar::f32, 7);  // 2 chunks, then 7 ops of the 3rd
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
  { DumpWriter writer(path, fake_metadata(tiny_config()), Graph(tiny_config()), TapFilter("all")); }
  const DumpReader reader(path);
  EXPECT_FALSE(reader.complete());
  EXPECT_EQ(reader.rows(), 0);
  EXPECT_EQ(reader.tensors().size(), Graph(tiny_config()).steps().size());
  EXPECT_EQ(reader.read({Op::logits, 2}, 0, 5).rows(), 0);
}

// A child process writes 2 chunks and half of the 3rd, then dies by SIGKILL: no destructor runs.
TEST(DumpWriter, ProcessKilledMidChunkLeavesTheFinishedChunks) {
  const std::string path = dump_path("killed.h5");
  std::array<int, 2> ready{};
  ASSERT_EQ(::pipe(ready.data()), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ready[0]);
    ::alarm(60);  // never outlive a broken parent
    try {
      const Graph graph(tiny_config());
      DumpWriter writer(path, fake_metadata(tiny_config()), graph, TapFilter("all"));
      feed(writer, graph, FakeRun{}, 2, Scalar::f32, 20);
      const char byte = 'r';
      if (::write(ready[1], &byte, 1) == 1)
        for (;;) ::pause();
    } catch (...) {
    }
    ::_exit(1);
  }
  ::close(ready[1]);
  char byte = 0;
  const ssize_t got = ::read(ready[0], &byte, 1);
  ::close(ready[0]);
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_EQ(got, 1) << "the child failed before the 3rd chunk";
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

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
  write_dump(path);
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
  write_dump(path);
  { dumps::h5::File::open(path, dumps::h5::File::Mode::write).set_int("schema_version", 7); }
  EXPECT_EQ(error_of<FormatError>([&] { DumpReader{path}; }),
            path + ": schema version 7, this tapdiff reads version 1");
}

TEST(DumpReader, RejectsATapWhoseWidthDoesNotMatchTheModelConfig) {
  const std::string path = dump_path("width.h5");
  write_dump(path, StorageType::f32, "q_proj|embed");
  {
    model::ModelConfig wider = tiny_config();
    wider.n_heads = 4;
    wider.dim = 16;
    dumps::h5::File::open(path, dumps::h5::File::Mode::write).set_string("model_config", model::to_json(wider).dump());
  }
  EXPECT_EQ(error_of<FormatError>([&] { DumpReader{path}; }),
            path + ": /taps/-1/embed: width 8, but model_config gives dim = 16");
}

TEST(DumpReader, MismatchNamesDifferentModels) {
  const std::string a = dump_path("a.h5");
  const std::string b = dump_path("b.h5");
  write_dump(a);
  RunMetadata other = fake_metadata(tiny_config());
  other.model_sha256 = "cd34" + std::string(60, 'f');
  other.model_path = "/models/other.gguf";
  write_dump(b, StorageType::f32, "layers", Scalar::f32, other);
  EXPECT_EQ(
      DumpReader::mismatch(DumpReader(a), DumpReader(b)).value_or(""),
      fmt::format("different models: {} has sha256 aaaaaaaaaaaa.. (tiny.gguf), {} has cd34ffffffff.. (other.gguf)", a,
                  b));
}

TEST(DumpReader, MismatchComparesModelConfigsWhenAShaIsMissing) {
  const std::string a = dump_path("a.h5");
  const std::string b = dump_path("b.h5");
  RunMetadata ma = fake_metadata(tiny_config());
  ma.model_sha256.clear();
  write_dump(a, StorageType::f32, "layers", Scalar::f32, ma);
  model::ModelConfig base = tiny_config();
  base.rope_base = 500000.0;
  RunMetadata mb = fake_metadata(base);
  write_dump(b, StorageType::f32, "layers", Scalar::f32, mb);
  EXPECT_EQ(DumpReader::mismatch(DumpReader(a), DumpReader(b)).value_or(""),
            fmt::format("different models: {} has model_config rope_base=10000.0 (tiny.gguf), {} has "
                        "rope_base=500000.0 (tiny.gguf)",
                        a, b));
  write_dump(b, StorageType::f32, "layers", Scalar::f32, fake_metadata(tiny_config()));  // a has no sha
  EXPECT_FALSE(DumpReader::mismatch(DumpReader(a), DumpReader(b)).has_value());
}

TEST(DumpReader, MismatchFindsTheFirstDifferentToken) {
  const std::string a = dump_path("a.h5");
  const std::string b = dump_path("b.h5");
  const std::string c = dump_path("c.h5");
  write_dump(a);
  write_dump(b, StorageType::f16, "layers", Scalar::f32, fake_metadata(tiny_config()), {1, 5, 9, 2, 8, 3, 11, 4, 6});
  write_dump(c, StorageType::f32, "none", Scalar::f32, fake_metadata(tiny_config()), {1, 5, 9, 2, 7, 3, 11, 4, 5});
  EXPECT_EQ(DumpReader::mismatch(DumpReader(a), DumpReader(b)).value_or(""),
            "different tokens: first difference at position 4 (7 vs 8)");
  EXPECT_EQ(DumpReader::mismatch(DumpReader(a), DumpReader(c)).value_or(""),
            "different tokens: first difference at position 8 (6 vs 5), a decode row: the runs generated different "
            "tokens before it");
}

TEST(DumpReader, SameRunDumpedDifferentlyHasNoMismatch) {
  const std::string a = dump_path("a.h5");
  const std::string b = dump_path("b.h5");
  write_dump(a);
  const Graph graph(tiny_config());
  {
    DumpWriter writer(b, fake_metadata(tiny_config()), graph, TapFilter("layers"), StorageType::f16);
    feed(writer, graph, FakeRun{}, 3, Scalar::f32);  // the prompt only, interrupted
  }
  EXPECT_FALSE(DumpReader::mismatch(DumpReader(a), DumpReader(b)).has_value());
}

// --- h5py interop -----------------------------------------------------------------------------

// A python3 that imports h5py and numpy (the one on PATH may be a virtualenv without them).
std::string python_with_h5py() {
  for (const char* python : {"python3", "/usr/bin/python3"})
    if (std::system((std::string(python) + " -c 'import h5py, numpy' >/dev/null 2>&1").c_str()) == 0) return python;
  return {};
}

testing::CommandResult run_python(const std::string& python, const std::string& script, const std::string& arg) {
  const std::string file = dump_path("script.py");
  std::ofstream(file) << script;
  const std::string command = python + " '" + file + "' '" + arg + "' 2>&1";
  testing::CommandResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer{};
  for (std::size_t n = 0; (n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0;)
    result.output.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

#define TAPDIFF_REQUIRE_H5PY(python)             \
  const std::string python = python_with_h5py(); \
  if (python.empty()) GTEST_SKIP() << "python3 with h5py and numpy is not importable: skipping"

TEST(DumpH5py, H5pyReadsADump) {
  TAPDIFF_REQUIRE_H5PY(python);
  const std::string path = dump_path("run.h5");
  write_dump(path, StorageType::f16);
  const auto result = run_python(python, R"(
import json, sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    cfg = json.loads(f.attrs["model_config"])
    q = f["taps/0/q_proj"]
    n = int(f.attrs["rows_complete"])
    print(json.dumps({
        "schema_version": int(f.attrs["schema_version"]), "engine": f.attrs["engine"],
        "complete": int(f.attrs["complete"]), "rows": n, "q_shape": list(q.shape),
        "q_width": cfg["n_heads"] * cfg["head_dim"], "q_dtype": q.dtype.str,
        "q_attrs": [int(q.attrs["layer"]), q.attrs["op"], q.attrs["class"], q.attrs["kernel"]],
        "q_4_1": float(q[4, 1]), "positions": f["rows/position"][:n].tolist(),
        "decode": f["rows/decode"][:n].tolist(), "prompt": f["prompt_tokens"][:].tolist(),
        "kernels": json.loads(f.attrs["kernels"]), "summary": json.loads(f.attrs["summary"]),
        "layers": sorted(f["taps"].keys(), key=int)}))
)",
                                 path);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const nlohmann::json out = nlohmann::json::parse(result.output);
  EXPECT_EQ(out["schema_version"], 1);
  EXPECT_EQ(out["engine"], "fake");
  EXPECT_EQ(out["complete"], 1);
  EXPECT_EQ(out["rows"], 9);
  EXPECT_EQ(out["q_shape"], (nlohmann::json{9, 8}));
  EXPECT_EQ(out["q_width"], 8);
  EXPECT_EQ(out["q_dtype"], "<f2");
  EXPECT_EQ(out["q_attrs"], (nlohmann::json{0, "q_proj", "gemm", "tiled"}));
  EXPECT_EQ(out["q_4_1"].get<double>(), fake_value({Op::q_proj, 0}, 4, 1));
  EXPECT_EQ(out["positions"], (nlohmann::json{0, 1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(out["decode"], (nlohmann::json{0, 0, 0, 0, 0, 0, 0, 1, 1}));
  EXPECT_EQ(out["prompt"], nlohmann::json(FakeRun{}.prompt()));
  EXPECT_EQ(out["kernels"]["attn"], "naive");
  EXPECT_EQ(out["summary"]["generated"], (nlohmann::json{4, 6, 8}));
  EXPECT_EQ(out["layers"], (nlohmann::json{"-1", "0", "1", "2"}));
}

// An external writer that follows docs/dump-format.md, as a PyTorch forward hook would.
TEST(DumpH5py, DumpWrittenByH5pyReads) {
  TAPDIFF_REQUIRE_H5PY(python);
  const std::string path = dump_path("pytorch.h5");
  const auto result = run_python(python, R"(
import json, sys, h5py, numpy as np
cfg = {"n_layers": 1, "dim": 4, "n_heads": 2, "n_kv_heads": 1, "head_dim": 2, "ffn_dim": 6, "vocab": 10}
tokens = np.array([3, 1, 4, 1], dtype=np.int32)
with h5py.File(sys.argv[1], "w") as f:
    f.attrs["schema_version"] = 1
    f.attrs["engine"] = "pytorch"
    f.attrs["model_config"] = json.dumps(cfg)
    f.attrs["kernels"] = json.dumps({"attn": "sdpa"})
    f.attrs["storage_dtype"] = "f32"
    f.create_dataset("prompt_tokens", data=tokens)
    f.create_dataset("rows/position", data=np.arange(4))  # int64: any integer type reads
    f.create_dataset("rows/chunk", data=np.zeros(4, dtype=np.int32))
    f.create_dataset("rows/decode", data=np.zeros(4, dtype=np.uint8))
    f.create_dataset("rows/token", data=tokens)
    for layer, op, width in [(-1, "embed", 4), (0, "v_proj", 2), (0, "ffn_residual", 4), (1, "logits", 10)]:
        d = f.create_dataset(f"taps/{layer}/{op}", data=np.arange(4 * width, dtype=np.float32).reshape(4, width) + layer)
        d.attrs["layer"] = layer
        d.attrs["op"] = op
)",
                                 path);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const DumpReader reader(path);
  EXPECT_TRUE(reader.complete());
  EXPECT_EQ(reader.rows(), 4);
  EXPECT_EQ(reader.metadata().engine, "pytorch");
  EXPECT_EQ(reader.metadata().kernels.at("attn"), "sdpa");
  EXPECT_EQ(reader.metadata().prompt_tokens, (std::vector<std::int32_t>{3, 1, 4, 1}));
  EXPECT_EQ(reader.positions(), (std::vector<std::int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(reader.tensors(),
            (std::vector<TensorId>{{Op::embed, -1}, {Op::v_proj, 0}, {Op::ffn_residual, 0}, {Op::logits, 1}}));
  const HostTensor logits = reader.read({Op::logits, 1}, 2, 2);
  ASSERT_EQ(logits.rows(), 2);
  EXPECT_EQ(logits.at(1, 9), 3 * 10 + 9 + 1);
  EXPECT_EQ(reader.read({Op::v_proj, 0}, 0, 4).at(3, 1), 7.0);
}

}  // namespace
}  // namespace tapdiff
