// The comparator: row alignment, one op in memory, two dumps of real reference runs (identical,
// f32 vs f64, different chunking, a hand-corrupted element, NaN, runs that cannot be compared),
// streaming in blocks, and the diagnoses.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>

#include "bisect/compare/comparator.h"
#include "bisect/judge/diagnosis.h"
#include "dumps/dump_writer.h"
#include "dumps/h5.h"
#include "formats/load_model.h"
#include "model/errors.h"
#include "model/runner.h"
#include "model/weights.h"
#include "reference/cpu_engine.h"
#include "tests/reference_fixtures.h"
#include "tests/test_support.h"

namespace tapdiff::bisect {
namespace {

using model::HostTensor;
using model::Op;
using model::Scalar;
using model::TensorId;

// --- fixtures ---------------------------------------------------------------------------------

std::vector<std::int32_t> ids(int n, int first = 1) {
  std::vector<std::int32_t> out;
  for (int i = 0; i < n; ++i) out.push_back(first + (i * 37) % 500);
  return out;
}

// Runs the reference on the synth model `shape` and streams every op into path.
void dump_reference(const std::filesystem::path& path, const std::string& shape,
                    const std::vector<std::int32_t>& prompt, Scalar scalar, int chunk, int generate = 0) {
  const auto m = formats::load_model(testing::synth_model_path(shape));
  const auto engine = reference::make_cpu_engine(*m, testing::exact_options(scalar, 1));
  const model::Graph graph(m->config());
  dumps::RunMetadata meta;
  meta.engine = engine->name(), meta.device = engine->device(), meta.compute_dtype = engine->compute_dtype();
  meta.model_path = m->path().string(), meta.model_sha256 = m->sha256();
  meta.model_config = model::to_json(m->config()), meta.prompt_tokens = prompt, meta.chunk_size = chunk;
  const auto storage = scalar == Scalar::f64 ? dumps::StorageType::f64 : dumps::StorageType::f32;
  dumps::DumpWriter writer(path.string(), meta, graph, dumps::TapFilter("all"), storage);
  model::RunOptions options;
  options.chunk = chunk, options.generate = generate;
  const model::RunResult r = model::run_sequence(*engine, graph, prompt, options, writer);
  writer.finish({{"generated", r.generated}});
}

// Changes one element of one tap of a dump in place (through the HDF5 C API wrapper).
void poke(const std::filesystem::path& path, const TensorId& id, std::int64_t row, std::int64_t col, float value) {
  const dumps::h5::File file = dumps::h5::File::open(path.string(), dumps::h5::File::Mode::write);
  const dumps::h5::DataSet data = file.open_dataset(dumps::tap_path(id).substr(1));
  std::vector<float> values(data.extent()[1]);
  const hid_t f32 = dumps::h5::memory_type(dumps::h5::Type::f32);
  data.read_rows(static_cast<hsize_t>(row), 1, f32, values.data());
  values[static_cast<std::size_t>(col)] = value;
  data.write_rows(static_cast<hsize_t>(row), 1, f32, values.data());
}

float value_at(const std::filesystem::path& path, const TensorId& id, std::int64_t row, std::int64_t col) {
  return static_cast<float>(dumps::DumpReader(path.string()).read(id, row, 1).at(0, col));
}

CompareResult compare_files(const std::filesystem::path& a, const std::filesystem::path& b,
                            const Tolerances& tolerances = {}) {
  return compare_dumps(dumps::DumpReader(a.string()), dumps::DumpReader(b.string()), tolerances);
}

std::string usage_error(const std::filesystem::path& a, const std::filesystem::path& b) {
  try {
    compare_files(a, b);
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a UsageError";
  return {};
}

// Two f32 reference runs of synth:tiny (2 layers, 4 heads of 16) shared by several tests.
struct TinyRuns {
  std::filesystem::path dir, a, b;
  TinyRuns() : dir(testing::temp_dir("tiny")), a(dir / "a.h5"), b(dir / "b.h5") {
    dump_reference(a, "tiny", ids(48), Scalar::f32, 16, 3);
    std::filesystem::copy_file(a, b);
  }
};

// --- alignment ----------------------------------------------------------------------------------

struct Provenance {
  std::vector<std::int32_t> positions, chunks, tokens;
  std::vector<std::uint8_t> decode;
  RunRows rows() const { return {positions, chunks, tokens, decode}; }
};

TEST(Comparator, RowsAlignByPositionWhateverTheChunking) {
  // A: positions 0..9 in chunks of 4; B: positions 5..14, one chunk per row.
  Provenance a, b;
  for (int p = 0; p < 10; ++p) a.positions.push_back(p), a.chunks.push_back(p / 4), a.tokens.push_back(100 + p);
  for (int p = 5; p < 15; ++p) b.positions.push_back(p), b.chunks.push_back(p), b.tokens.push_back(100 + p);
  a.decode.assign(10, 0), b.decode.assign(10, 0);
  const RowAlignment al = align_rows(a.rows(), b.rows());
  ASSERT_EQ(al.rows.size(), 5u);
  EXPECT_EQ(al.only_a, 5);
  EXPECT_EQ(al.only_b, 5);
  EXPECT_EQ(al.rows[0].position, 5);
  EXPECT_EQ(al.row_a, (std::vector<std::int64_t>{5, 6, 7, 8, 9}));
  EXPECT_EQ(al.row_b, (std::vector<std::int64_t>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(al.anomalies.empty());
  EXPECT_EQ(al.rows[3].chunk_a, 2);
  EXPECT_FALSE(al.rows[0].chunk_start_a);
  EXPECT_TRUE(al.rows[3].chunk_start_a);  // position 8 starts A's chunk 2
  EXPECT_TRUE(al.rows[0].chunk_start_b);
  EXPECT_EQ(align_rows(a.rows(), b.rows(), 2).rows.size(), 2u);
  EXPECT_EQ(align_rows(a.rows(), b.rows(), 2).beyond_max_rows, 3);
}

// A prompt of 8 tokens in chunks of 4; B's engine restarted its positions at 0 for the second chunk.
TEST(Comparator, RepeatedPositionsAreAnAnomalyAndRowsAlignByTheirPlaceInTheStream) {
  Provenance a, b;
  for (int p = 0; p < 8; ++p) a.positions.push_back(p), a.chunks.push_back(p / 4), a.tokens.push_back(100 + p);
  a.decode.assign(8, 0);
  b = a;
  for (int r = 4; r < 8; ++r) b.positions[static_cast<std::size_t>(r)] = r - 4;
  const RowAlignment al = align_rows(a.rows(), b.rows());
  ASSERT_EQ(al.rows.size(), 8u);  // no row of B is dropped: row 4 is the token at position 4
  EXPECT_EQ(al.row_b, (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_FALSE(al.token_mismatch_position);
  ASSERT_EQ(al.anomalies.size(), 1u);
  const PositionAnomaly& x = al.anomalies[0];
  EXPECT_EQ(x.run, 'B');
  EXPECT_EQ(x.row, 4);
  EXPECT_EQ(x.recorded, 0);
  EXPECT_EQ(x.previous, 3);
  EXPECT_EQ(x.stream, 4);
  EXPECT_EQ(x.rows_off, 4);
}

TEST(Comparator, FallingPositionsInEitherRunAreAnAnomaly) {
  Provenance a, b;
  for (int p = 0; p < 6; ++p) a.positions.push_back(p), a.chunks.push_back(p), a.tokens.push_back(7);
  a.decode.assign(6, 0);
  b = a;
  std::swap(a.positions[2], a.positions[3]);
  const RowAlignment al = align_rows(a.rows(), b.rows());
  ASSERT_EQ(al.anomalies.size(), 1u);
  EXPECT_EQ(al.anomalies[0].run, 'A');
  EXPECT_EQ(al.anomalies[0].row, 3);
  EXPECT_EQ(al.anomalies[0].rows_off, 2);
  EXPECT_EQ(al.rows.size(), 6u);
}

TEST(Comparator, RowsStopBeforeTheFirstDifferentFedToken) {
  Provenance a, b;
  for (int p = 0; p < 8; ++p) {
    a.positions.push_back(p), a.chunks.push_back(p < 5 ? 0 : p - 4), a.decode.push_back(p < 5 ? 0 : 1);
    a.tokens.push_back(p == 6 ? 42 : 10 + p);
  }
  b = a;
  b.tokens[6] = 43;  // the runs generated different tokens at decode step 1
  const RowAlignment al = align_rows(a.rows(), b.rows());
  EXPECT_EQ(al.rows.size(), 6u);
  EXPECT_EQ(al.token_mismatch_position, 6);
  EXPECT_FALSE(al.token_mismatch_in_prompt);
  EXPECT_EQ(al.after_mismatch, 2);
  b.tokens[3] = 0;  // a prompt token differs: different prompts
  EXPECT_TRUE(align_rows(a.rows(), b.rows()).token_mismatch_in_prompt);
}

// --- one op in memory (the live path) --------------------------------------------------------------

HostTensor filled(std::int64_t rows, std::int64_t cols, const std::function<double(std::int64_t, std::int64_t)>& f) {
  HostTensor t(Scalar::f32, rows, cols);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      t.f32()[static_cast<std::size_t>(r * cols + c)] = static_cast<float>(f(r, c));
  return t;
}

std::vector<RowInfo> rows_of(int n, int first_decode = 1 << 30) {
  std::vector<RowInfo> rows;
  for (int p = 0; p < n; ++p) rows.push_back({p, 0, 0, p == 0, p == 0, p >= first_decode});
  return rows;
}

double base(std::int64_t r, std::int64_t c) {
  return std::sin(0.3 * static_cast<double>(r) + 0.7 * static_cast<double>(c)) + 1.5;
}

TEST(Comparator, CompareOpLocatesTheWorstElementByHeadAndChannel) {
  const HostTensor a = filled(6, 16, base);
  const HostTensor b = filled(6, 16, [](auto r, auto c) { return base(r, c) + (r == 4 && c == 13 ? 0.25 : 0.0); });
  const Tolerance tol{{1e-8, {}, {}, {}}, "test"};
  const OpResult op = compare_op({Op::rope_q, 2}, a, b, rows_of(6), {4, 4}, tol);
  EXPECT_FALSE(op.pass());
  EXPECT_EQ(op.first_bad, 4);
  EXPECT_EQ(op.rows_over, 1);
  EXPECT_EQ(op.worst.position, 4);
  EXPECT_EQ(op.worst.head, 3);
  EXPECT_EQ(op.worst.channel, 1);
  EXPECT_FLOAT_EQ(static_cast<float>(op.worst.b - op.worst.a), 0.25f);
  ASSERT_EQ(op.worst.around_a.size(), 7u);  // columns 9..15: four before, two after (the edge)
  EXPECT_EQ(op.worst.around_first_col, 9);
  EXPECT_EQ(op.worst.around_b[4] - op.worst.around_a[4], op.worst.b - op.worst.a);
  EXPECT_EQ(op.rows[3].nmse, 0.0f);
  EXPECT_GT(op.rows[4].nmse, 0.0f);
  const double d = op.worst.b - op.worst.a;
  EXPECT_EQ(op.head_err, (std::vector<double>{0, 0, 0, d * d}));
  EXPECT_EQ(op.channel_err[1], d * d);
  // Plain-channel ops have no heads.
  const OpResult plain = compare_op({Op::ffn_up, 2}, a, b, rows_of(6), {}, tol);
  EXPECT_EQ(plain.worst.head, -1);
  EXPECT_EQ(plain.worst.channel, 13);
}

TEST(Comparator, BlocksInAnyOrderGiveTheWholeTensorResult) {
  const HostTensor a = filled(9, 5, base);
  const HostTensor b = filled(9, 5, [](auto r, auto c) { return base(r, c) * (1 + 1e-3 * static_cast<double>(r)); });
  const Tolerance tol{{1e-12, {}, {}, {}}, "test"};
  const OpResult whole = compare_op({Op::attn_norm, 0}, a, b, rows_of(9), {}, tol);
  OpAccumulator acc({Op::attn_norm, 0}, {}, tol);
  acc.add(a.slice_rows(6, 3), b.slice_rows(6, 3), 6);
  acc.add(a.slice_rows(0, 6), b.slice_rows(0, 6), 0);
  const OpResult parts = acc.finish(rows_of(9));
  EXPECT_DOUBLE_EQ(parts.metrics.nmse, whole.metrics.nmse);
  EXPECT_EQ(parts.metrics.max_abs, whole.metrics.max_abs);
  EXPECT_EQ(parts.worst.position, whole.worst.position);
  EXPECT_EQ(parts.worst.col, whole.worst.col);
  EXPECT_EQ(parts.first_bad, 1);  // row 0 is exact
}

// --- diagnoses ----------------------------------------------------------------------------------

std::vector<std::string> codes_of(const OpResult& op, std::span<const RowInfo> rows) {
  std::vector<std::string> codes;
  for (const Diagnosis& d : diagnose_op(op, rows, model::ModelConfig{}))
    codes.push_back(std::string(model::diagnosis_name(d.code)));
  return codes;
}

bool has(const std::vector<std::string>& codes, const std::string& code) {
  return std::find(codes.begin(), codes.end(), code) != codes.end();
}

TEST(Diagnosis, SpearmanOfMonotoneAndReversedSeries) {
  const std::vector<double> x{1, 2, 3, 4, 5}, up{0.1, 0.5, 0.7, 3, 100}, down{5, 4, 3, 2, 1};
  EXPECT_DOUBLE_EQ(spearman(x, up), 1.0);
  EXPECT_DOUBLE_EQ(spearman(x, down), -1.0);
  EXPECT_EQ(spearman(x, std::vector<double>{2, 2, 2, 2, 2}), 0.0);
}

TEST(Diagnosis, ErrorGrowingWithPositionAndExactAtPositionZero) {
  const HostTensor a = filled(32, 16, base);
  const HostTensor b = filled(32, 16, [](auto r, auto c) { return base(r, c) + 1e-4 * static_cast<double>(r * r); });
  const OpResult op = compare_op({Op::rope_k, 0}, a, b, rows_of(32), {4, 4}, {{1e-10, {}, {}, {}}, "t"});
  const auto codes = codes_of(op, rows_of(32));
  EXPECT_TRUE(has(codes, "grows-with-position"));
  EXPECT_TRUE(has(codes, "position-zero-exact"));
  EXPECT_FALSE(has(codes, "some-heads"));
  EXPECT_FALSE(has(codes, "pair-pattern"));
}

TEST(Diagnosis, SomeHeadsAndPairPatterns) {
  // Rows of one norm, so the row error does not vary with position.
  const auto flat = [](std::int64_t, std::int64_t c) { return 1.0 + 0.1 * static_cast<double>(c); };
  const HostTensor a = filled(8, 32, flat);
  // Head 1 of 4 (columns 8..15), odd channels only.
  const HostTensor b =
      filled(8, 32, [&](auto r, auto c) { return flat(r, c) + (c / 8 == 1 && c % 2 == 1 ? 0.01 : 0.0); });
  const OpResult op = compare_op({Op::rope_q, 1}, a, b, rows_of(8), {4, 8}, {{1e-8, {}, {}, {}}, "t"});
  const auto d = diagnose_op(op, rows_of(8), model::ModelConfig{});
  const auto codes = codes_of(op, rows_of(8));
  ASSERT_TRUE(has(codes, "some-heads"));
  EXPECT_EQ(std::find_if(d.begin(), d.end(), [](auto& x) { return x.code == model::DiagnosisCode::some_heads; })
                ->evidence["heads"],
            nlohmann::json::array({1}));
  ASSERT_TRUE(has(codes, "pair-pattern"));
  EXPECT_EQ(std::find_if(d.begin(), d.end(), [](auto& x) { return x.code == model::DiagnosisCode::pair_pattern; })
                ->evidence["channels"],
            "odd");
  EXPECT_FALSE(has(codes, "grows-with-position"));
}

// A position offset moves RoPE's fast-turning pairs and hardly the slow ones: in the interleaved
// layout those are a head's first-half channels, which pair-pattern alone would call a rotate-half
// pairing. The model's own layout decides.
TEST(Diagnosis, FastPairsAloneAreAnAngleErrorNotAPairing) {
  const auto flat = [](std::int64_t, std::int64_t c) { return 1.0 + 0.1 * static_cast<double>(c); };
  const HostTensor a = filled(8, 32, flat);
  const HostTensor b = filled(8, 32, [&](auto r, auto c) { return flat(r, c) + (c % 8 < 4 ? 0.01 : 0.0); });
  const OpResult op = compare_op({Op::rope_q, 1}, a, b, rows_of(8), {4, 8}, {{1e-8, {}, {}, {}}, "t"});
  model::ModelConfig interleaved;
  interleaved.head_dim = 8;
  std::vector<std::string> codes;
  for (const Diagnosis& d : diagnose_op(op, rows_of(8), interleaved))
    codes.push_back(std::string(model::diagnosis_name(d.code)));
  EXPECT_TRUE(has(codes, "rope-frequency"));
  EXPECT_FALSE(has(codes, "pair-pattern"));
  model::ModelConfig rotate_half = interleaved;
  rotate_half.rope_style = model::RopeStyle::rotate_half;
  codes.clear();
  for (const Diagnosis& d : diagnose_op(op, rows_of(8), rotate_half))
    codes.push_back(std::string(model::diagnosis_name(d.code)));
  EXPECT_FALSE(has(codes, "rope-frequency"));
  EXPECT_TRUE(has(codes, "pair-pattern"));
}

// Exact at position 0, wrong after: for attention (whose RoPE inputs passed) the suspect is the
// weighting, not RoPE.
TEST(Diagnosis, PositionZeroExactNamesASuspectTheOpsThatPassDoNotRuleOut) {
  const HostTensor a = filled(8, 32, base);
  const HostTensor b = filled(8, 32, [](auto r, auto c) { return base(r, c) + (r > 0 ? 0.01 : 0.0); });
  const OpResult attn = compare_op({Op::attn, 0}, a, b, rows_of(8), {4, 8}, {{1e-8, {}, {}, {}}, "t"});
  const auto d = diagnose_op(attn, rows_of(8), model::ModelConfig{});
  const auto it =
      std::find_if(d.begin(), d.end(), [](auto& x) { return x.code == model::DiagnosisCode::position_zero_exact; });
  ASSERT_NE(it, d.end());
  EXPECT_NE(it->text.find("suspect the attention weights"), std::string::npos) << it->text;
  EXPECT_EQ(it->text.find("RoPE angle"), std::string::npos) << it->text;
}

TEST(Diagnosis, MostHeadsWrongButSomeUntouched) {
  const auto flat = [](std::int64_t, std::int64_t c) { return 1.0 + 0.1 * static_cast<double>(c); };
  const HostTensor a = filled(8, 32, flat);
  // Heads 1, 2 and 3 of 4 wrong by different amounts, head 0 exact: no head stands out from the
  // median, but head 0 is untouched.
  const HostTensor b = filled(8, 32, [&](auto r, auto c) { return flat(r, c) + 0.01 * static_cast<double>(c / 8); });
  const OpResult op = compare_op({Op::attn, 0}, a, b, rows_of(8), {4, 8}, {{1e-8, {}, {}, {}}, "t"});
  const auto d = diagnose_op(op, rows_of(8), model::ModelConfig{});
  const auto it = std::find_if(d.begin(), d.end(), [](auto& x) { return x.code == model::DiagnosisCode::some_heads; });
  ASSERT_NE(it, d.end());
  EXPECT_EQ(it->evidence["quiet_heads"], nlohmann::json::array({0}));
  EXPECT_EQ(it->evidence["heads"], nlohmann::json::array({1, 2, 3}));
  // Every head wrong alike: no some-heads.
  const HostTensor all = filled(8, 32, [&](auto r, auto c) { return flat(r, c) + 0.01; });
  EXPECT_FALSE(
      has(codes_of(compare_op({Op::attn, 0}, a, all, rows_of(8), {4, 8}, {{1e-8, {}, {}, {}}, "t"}), rows_of(8)),
          "some-heads"));
}

TEST(Diagnosis, DecodeOnlyAndChunkStart) {
  const HostTensor a = filled(10, 8, base);
  const HostTensor b = filled(10, 8, [](auto r, auto c) { return base(r, c) + (r >= 7 ? 0.1 : 0.0); });
  const OpResult op = compare_op({Op::attn, 0}, a, b, rows_of(10, 7), {}, {{1e-8, {}, {}, {}}, "t"});
  EXPECT_TRUE(has(codes_of(op, rows_of(10, 7)), "decode-only"));
  EXPECT_FALSE(has(codes_of(op, rows_of(10, 7)), "chunk-start"));  // decode rows are no prefill boundary
  std::vector<RowInfo> chunked = rows_of(10);
  for (int p = 7; p < 10; ++p) chunked[static_cast<std::size_t>(p)].chunk_b = 1;
  chunked[7].chunk_start_b = true;
  const OpResult at_chunk = compare_op({Op::attn, 0}, a, b, chunked, {}, {{1e-8, {}, {}, {}}, "t"});
  const auto codes = codes_of(at_chunk, chunked);
  EXPECT_TRUE(has(codes, "chunk-start"));
  EXPECT_FALSE(has(codes, "decode-only"));
}

// An error from a later chunk's first row on leaves position 0 exact by that alone: chunk-start,
// not position-zero-exact and its suspect (the attention weights), which a stale KV chunk misled.
TEST(Diagnosis, AnErrorFromAChunkStartIsNotAlsoPositionZeroExact) {
  const HostTensor a = filled(10, 8, base);
  const HostTensor b = filled(10, 8, [](auto r, auto c) { return base(r, c) + (r >= 2 ? 0.1 : 0.0); });
  std::vector<RowInfo> chunked = rows_of(10);
  for (int p = 2; p < 10; ++p) chunked[static_cast<std::size_t>(p)].chunk_b = 1;
  chunked[2].chunk_start_b = true;
  const auto codes = codes_of(compare_op({Op::attn, 0}, a, b, chunked, {}, {{1e-8, {}, {}, {}}, "t"}), chunked);
  EXPECT_TRUE(has(codes, "chunk-start"));
  EXPECT_FALSE(has(codes, "position-zero-exact"));
  const auto whole = codes_of(compare_op({Op::attn, 0}, a, b, rows_of(10), {}, {{1e-8, {}, {}, {}}, "t"}), rows_of(10));
  EXPECT_TRUE(has(whole, "position-zero-exact"));
}

TEST(Diagnosis, AValueNearTheDtypeLimit) {
  const HostTensor a = filled(4, 8, base);
  const HostTensor b = filled(4, 8, [](auto r, auto c) { return r == 2 && c == 3 ? 60000.0 : base(r, c); });
  CompareResult r;
  r.alignment.rows = rows_of(4);
  r.ops.push_back(compare_op({Op::attn, 0}, a, b, r.alignment.rows, {}, {{1e-8, {}, {}, {}}, "t"}));
  r.first = 0;
  r.precision.value = model::Precision::f16;
  auto has_code = [](const std::vector<Diagnosis>& d, const std::string& code) {
    return std::any_of(d.begin(), d.end(), [&](const Diagnosis& x) { return model::diagnosis_name(x.code) == code; });
  };
  EXPECT_TRUE(has_code(diagnose(r), "near-dtype-limit"));
  r.precision.value = model::Precision::f32;  // 60000 is nowhere near the f32 limit
  EXPECT_FALSE(has_code(diagnose(r), "near-dtype-limit"));
}

// --- two dumps ------------------------------------------------------------------------------------

TEST(CompareDumps, SameRunTwiceMatchesWithEveryMetricExactlyZero) {
  const TinyRuns runs;
  const CompareResult r = compare_files(runs.a, runs.b);
  EXPECT_TRUE(r.match());
  ASSERT_EQ(r.ops.size(), 33u);             // embed, 2 x 15 block ops, final_norm, logits
  EXPECT_EQ(r.alignment.rows.size(), 50u);  // 48 prompt rows + 2 decode rows
  for (const OpResult& op : r.ops) {
    EXPECT_EQ(op.metrics.nmse, 0.0) << model::to_string(op.id);
    EXPECT_EQ(op.metrics.max_abs, 0.0) << model::to_string(op.id);
    EXPECT_EQ(op.metrics.nonfinite, 0) << model::to_string(op.id);
  }
  EXPECT_EQ(r.tokens.first_mismatch_step, std::nullopt);
  EXPECT_EQ(r.tokens.a->size(), 3u);
  // Widths: embed 64; per layer 9 ops of dim 64, 3 of kv_dim 32, 3 of ffn 192; final_norm 64, logits 512.
  EXPECT_EQ(r.bytes_read, std::int64_t{2} * 50 * (64 + 2 * (9 * 64 + 3 * 32 + 3 * 192) + 64 + 512) * 4);
}

TEST(CompareDumps, F32AgainstF64MatchesUnderDefaultsAndDivergesUnderAStrictFile) {
  const auto dir = testing::temp_dir("f64");
  dump_reference(dir / "f64.h5", "small", ids(80), Scalar::f64, 32);
  dump_reference(dir / "f32.h5", "small", ids(80), Scalar::f32, 32);
  const CompareResult r = compare_files(dir / "f64.h5", dir / "f32.h5");
  EXPECT_TRUE(r.match());
  EXPECT_EQ(r.precision.value, model::Precision::f32);
  double worst = 0;
  for (const OpResult& op : r.ops) worst = std::max(worst, op.metrics.nmse);
  EXPECT_GT(worst, 0.0);    // f32 is not f64...
  EXPECT_LT(worst, 1e-10);  // ...but far inside the f32 default of 1e-8

  const Tolerances strict = Tolerances::from_toml("[default]\nnmse = 1e-30\n", "strict.toml");
  const CompareResult s = compare_files(dir / "f64.h5", dir / "f32.h5", strict);
  ASSERT_FALSE(s.match());
  EXPECT_TRUE(s.ops[0].pass());  // embed is an exact table lookup in both precisions
  EXPECT_EQ(s.ops[*s.first].id, (TensorId{Op::attn_norm, 0}));
  EXPECT_EQ(s.ops[*s.first].violations[0].metric, "nmse");
}

TEST(CompareDumps, DifferentChunkingAlignsRowsAndMatches) {
  const auto dir = testing::temp_dir("chunks");
  dump_reference(dir / "c64.h5", "tiny", ids(100), Scalar::f32, 64, 2);
  dump_reference(dir / "c7.h5", "tiny", ids(100), Scalar::f32, 7, 2);
  const CompareResult r = compare_files(dir / "c64.h5", dir / "c7.h5");
  EXPECT_TRUE(r.match()) << (r.first ? model::to_string(r.ops[*r.first].id) : "");
  EXPECT_EQ(r.alignment.rows.size(), 101u);
  EXPECT_EQ(r.alignment.rows[64].chunk_a, 1);
  EXPECT_TRUE(r.alignment.rows[64].chunk_start_a);
  EXPECT_EQ(r.alignment.rows[64].chunk_b, 9);  // 64 = 9 * 7 + 1
  EXPECT_FALSE(r.alignment.rows[64].chunk_start_b);
}

TEST(CompareDumps, AHandCorruptedElementIsFoundExactly) {
  const TinyRuns runs;
  const TensorId target{Op::rope_q, 1};
  const float original = value_at(runs.b, target, 37, 2 * 16 + 5);
  poke(runs.b, target, 37, 2 * 16 + 5, original + 0.5f);  // position 37, head 2, channel 5
  const CompareResult r = compare_files(runs.a, runs.b);
  ASSERT_FALSE(r.match());
  const OpResult& first = r.ops[*r.first];
  EXPECT_EQ(first.id, target);
  EXPECT_EQ(r.alignment.rows[static_cast<std::size_t>(first.first_bad)].position, 37);
  EXPECT_EQ(first.worst.position, 37);
  EXPECT_EQ(first.worst.head, 2);
  EXPECT_EQ(first.worst.channel, 5);
  EXPECT_EQ(first.worst.a, original);
  EXPECT_EQ(first.worst.b, original + 0.5f);
  EXPECT_EQ(first.rows_over, 1);
  for (std::size_t i = 0; i < r.ops.size(); ++i)
    EXPECT_EQ(r.ops[i].pass(), i != *r.first) << model::to_string(r.ops[i].id);
  // Position 37 is inside chunk 2 (rows 32..47), not at its start.
  EXPECT_EQ(r.alignment.rows[37].chunk_b, 2);
  EXPECT_FALSE(r.alignment.rows[37].chunk_start_b);
  const auto codes = diagnose(r);
  EXPECT_TRUE(
      std::any_of(codes.begin(), codes.end(), [](auto& d) { return d.code == model::DiagnosisCode::some_heads; }));
  EXPECT_FALSE(
      std::any_of(codes.begin(), codes.end(), [](auto& d) { return d.code == model::DiagnosisCode::chunk_start; }));
}

TEST(CompareDumps, AnErrorAtAChunkStartIsDiagnosed) {
  const TinyRuns runs;
  const TensorId target{Op::attn, 0};
  poke(runs.b, target, 32, 3, value_at(runs.b, target, 32, 3) + 1.0f);
  const CompareResult r = compare_files(runs.a, runs.b);
  ASSERT_FALSE(r.match());
  EXPECT_EQ(r.ops[*r.first].id, target);
  const auto d = diagnose(r);
  const auto start =
      std::find_if(d.begin(), d.end(), [](auto& x) { return x.code == model::DiagnosisCode::chunk_start; });
  ASSERT_NE(start, d.end());
  EXPECT_EQ(start->evidence["position"], 32);
  EXPECT_EQ(start->evidence["chunk_b"], 2);
}

TEST(CompareDumps, NanWhereTheReferenceIsFiniteFailsWithANonfiniteDiagnosis) {
  const TinyRuns runs;
  poke(runs.b, {Op::ffn_act, 0}, 5, 7, NAN);
  const CompareResult r = compare_files(runs.a, runs.b);
  ASSERT_FALSE(r.match());
  const OpResult& first = r.ops[*r.first];
  EXPECT_EQ(first.id, (TensorId{Op::ffn_act, 0}));
  EXPECT_EQ(first.metrics.nonfinite, 1);
  EXPECT_EQ(first.violations[0].metric, "nonfinite");
  EXPECT_EQ(r.alignment.rows[static_cast<std::size_t>(first.first_bad)].position, 5);
  const auto d = diagnose(r);
  ASSERT_TRUE(std::any_of(d.begin(), d.end(), [](auto& x) { return x.code == model::DiagnosisCode::nonfinite; }));
}

TEST(CompareDumps, DifferentModelsOrTokensCannotBeCompared) {
  const auto dir = testing::temp_dir("refuse");
  dump_reference(dir / "tiny.h5", "tiny", ids(10), Scalar::f32, 0);
  dump_reference(dir / "small.h5", "small", ids(10), Scalar::f32, 0);
  dump_reference(dir / "other.h5", "tiny", ids(10, 2), Scalar::f32, 0);
  const std::string models = usage_error(dir / "tiny.h5", dir / "small.h5");
  EXPECT_NE(models.find("different models"), std::string::npos) << models;
  EXPECT_NE(models.find((dir / "small.h5").string()), std::string::npos) << models;
  const std::string tokens = usage_error(dir / "tiny.h5", dir / "other.h5");
  EXPECT_NE(tokens.find("different tokens: first difference at position 0"), std::string::npos) << tokens;
  EXPECT_NE(tokens.find((dir / "other.h5").string()), std::string::npos) << tokens;
}

// A source that counts what is read, to check the comparator streams in bounded blocks.
class CountingSource final : public TensorSource {
 public:
  explicit CountingSource(const dumps::DumpReader& dump) : inner_(dump) {}
  HostTensor read(const TensorId& id, std::int64_t first, std::int64_t count) const override {
    ++reads, rows += count, largest = std::max(largest, count);
    return inner_.read(id, first, count);
  }
  mutable std::int64_t reads = 0, rows = 0, largest = 0;

 private:
  DumpSource inner_;
};

TEST(CompareDumps, TallWideTensorsAreReadInBoundedBlocks) {
  EXPECT_EQ(block_rows(128256), 16);  // Llama-3 logits: 16 rows of 8 bytes x 128256 = 16 MiB
  EXPECT_EQ(block_rows(2048), kMaxBlockRows);
  EXPECT_EQ(block_rows(10'000'000), 1);
  const auto dir = testing::temp_dir("tall");
  dump_reference(dir / "a.h5", "tiny", ids(300), Scalar::f32, 64);
  const dumps::DumpReader a((dir / "a.h5").string());
  const CountingSource source_a(a), source_b(a);
  const RowAlignment al = align_rows(run_rows(a), run_rows(a));
  const TensorId logits{Op::logits, 2};
  const std::size_t budget = 40 * 512 * 8;  // 40 rows of the 512-wide logits
  const OpResult blocked = compare_tensor(logits, 512, source_a, source_b, al, {}, {}, budget);
  EXPECT_EQ(source_a.largest, 40);
  EXPECT_EQ(source_a.reads, 8);  // ceil(300 / 40)
  EXPECT_EQ(source_a.rows, 300);
  EXPECT_EQ(blocked.rows.size(), 300u);
  EXPECT_EQ(blocked.metrics.count, 300 * 512);
}

TEST(CompareDumps, GenerationsThatPartAreComparedUpToTheFirstDifferentToken) {
  const TinyRuns runs;
  // Rewrite B's last fed token (decode step 2, position 49) as if B had generated another token.
  {
    const dumps::h5::File file = dumps::h5::File::open(runs.b.string(), dumps::h5::File::Mode::write);
    const dumps::h5::DataSet token = file.open_group("rows").open_dataset("token");
    const std::int32_t other = 7;
    token.write_rows(49, 1, dumps::h5::memory_type(dumps::h5::Type::i32), &other);
  }
  const CompareResult r = compare_files(runs.a, runs.b);
  EXPECT_FALSE(r.first);
  EXPECT_EQ(r.alignment.rows.size(), 49u);
  EXPECT_EQ(r.alignment.token_mismatch_position, 49);
  // Every op within tolerance, yet the runs fed different tokens: not a match.
  EXPECT_FALSE(r.match());
  EXPECT_EQ(r.verdict(), Verdict::diverged);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].code, bisect::RunProblemCode::generation_diverged);
  EXPECT_EQ(r.problems[0].evidence["position"], 49);
}

}  // namespace
}  // namespace tapdiff::bisect
