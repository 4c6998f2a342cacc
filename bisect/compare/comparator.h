#pragma once
// Compares run B against reference run A op by op, in graph order, row block by row block: memory
// is bounded by one block of rows of the widest tensor, never by the file. Rows are aligned by
// position (whatever the chunking of each run) up to the first fed-token difference.
//
// Two ways in, one core:
//   - OpAccumulator / compare_op: in-memory tensors, fed as they come (the in-process bisect
//     feeds each chunk's rows of both engines, no files);
//   - compare_dumps: two HDF5 dumps, read through TensorSource in blocks.
// A divergence is a result (OpResult::pass() false), never an exception; exceptions are for
// runs that cannot be compared (different models or prompts: UsageError).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bisect/compare/metrics.h"
#include "bisect/compare/routing.h"
#include "bisect/compare/token_tie.h"
#include "bisect/compare/tolerances.h"
#include "dumps/dump_reader.h"
#include "dumps/tap_filter.h"
#include "model/config.h"
#include "model/graph.h"
#include "model/host_tensor.h"

namespace tapdiff::bisect {

// One position both runs computed, and where each run computed it.
struct RowInfo {
  std::int32_t position = 0;
  std::int32_t chunk_a = 0, chunk_b = 0;              // forward pass (ChunkInfo::index) in each run
  bool chunk_start_a = false, chunk_start_b = false;  // the first row of that forward pass
  bool decode = false;                                // a decode step in either run
  std::int32_t sequence = 0;                          // the sequence of a ragged batch (bisect); 0 otherwise
};

// Rows of several sequences (a ragged batch in bisect).
bool is_batch(std::span<const RowInfo> rows);

// Per-row provenance of one run (views of DumpReader's /rows vectors, or of a live run's).
struct RunRows {
  std::span<const std::int32_t> positions, chunks, tokens;
  std::span<const std::uint8_t> decode;
};
RunRows run_rows(const dumps::DumpReader& dump);

// Rows are in the order the run fed them (docs/dump-format.md), so within a sequence the recorded
// positions must increase row by row. A run whose positions repeat or fall (an engine that restarts
// a chunk at position 0, say) is aligned by its rows' places in the token stream instead (its first
// recorded position, then one per row), and the anomaly is a finding of the comparison.
struct PositionAnomaly {
  char run = 'A';                           // 'A' or 'B'
  std::int64_t row = 0;                     // the first row whose position does not increase
  std::int32_t recorded = 0, previous = 0;  // its recorded position, and the row before's
  std::int32_t stream = 0;                  // its place in the token stream: what it is aligned by
  std::int64_t rows_off = 0;                // rows whose recorded position is not their place in the stream
};

// The rows that are compared: positions both runs hold, ascending, before the first position
// whose fed token differs (later rows saw different inputs or KV caches), at most max_rows.
struct RowAlignment {
  std::vector<RowInfo> rows;
  std::vector<PositionAnomaly> anomalies;  // at most one per run
  std::vector<std::int64_t> row_a, row_b;  // row index of rows[i] in each run
  std::int64_t only_a = 0, only_b = 0;     // positions that one run holds and the other does not
  // First common position whose fed token differs; it and every later position are left out.
  std::optional<std::int32_t> token_mismatch_position;
  bool token_mismatch_in_prompt = false;  // that row is a prefill row in either run: different prompts
  std::int64_t after_mismatch = 0;        // common positions left out because of it
  std::int64_t beyond_max_rows = 0;       // common positions left out by max_rows
};
// The positions a run's rows are aligned by: the recorded ones when they increase row by row, else
// each row's place in the token stream, with the anomaly appended (run: 'A' or 'B').
std::vector<std::int32_t> aligned_positions(const RunRows& run, char name, std::vector<PositionAnomaly>& anomalies);
// max_rows <= 0: no limit.
RowAlignment align_rows(const RunRows& a, const RunRows& b, std::int64_t max_rows = 0);
// Rows of one run compared with itself (the live path, where both engines run the same chunks).
std::vector<RowInfo> same_rows(const RunRows& run);

// How an op's columns split into heads (model/graph.h).
using model::head_layout;
using model::HeadLayout;

// Per compared row: enough to find the first bad position and to plot error against position.
struct RowError {
  float nmse = 0;     // of the row alone
  float max_abs = 0;  // of the row alone
  float max_rel = 0;  // of the row alone
  float cosine = 1;   // of the row alone
  float rms_a = 0;    // sqrt(mean a^2) of the row
  std::int32_t nonfinite = 0;
  bool over = false;  // the row alone breaks the op's tolerance (judged by OpAccumulator::finish)
};

// The largest |a - b| and its surroundings in both runs.
struct WorstElement {
  std::int64_t index = -1;  // into the compared rows; -1 when nothing finite was compared
  std::int32_t position = -1;
  std::int32_t sequence = 0;  // of a ragged batch (bisect)
  std::int64_t col = -1;
  int head = -1;              // col / head_dim for ops with heads, else -1
  std::int64_t channel = -1;  // col % head_dim for ops with heads, else col
  double a = 0, b = 0;
  std::int64_t around_first_col = 0;  // around_a/b hold columns [around_first_col, + size)
  std::vector<double> around_a, around_b;
};

struct OpResult {
  model::TensorId id;
  Metrics metrics;  // over every compared row
  Tolerance tolerance;
  std::vector<Violation> violations;  // empty: within tolerance
  WorstElement worst;
  std::int64_t first_bad = -1;  // index of the first row over tolerance; -1 when the op passes
  RowInfo first_bad_row;        // that row: position, chunk of each run, chunk start (when first_bad >= 0)
  std::int64_t rows_over = 0;
  std::vector<RowError> rows;  // one per compared row
  HeadLayout layout;
  std::vector<double> head_err, head_ref;  // per head: sum (a-b)^2, sum a^2 (finite elements)
  std::vector<double> channel_err;         // per channel of a head, sum (a-b)^2 over all heads

  bool pass() const { return violations.empty(); }
  model::OpClass op_class() const { return model::op_class(id.op); }
};

// Accumulates one op's comparison over blocks of compared rows, in any order of blocks.
class OpAccumulator {
 public:
  OpAccumulator(const model::TensorId& id, HeadLayout layout, Tolerance tolerance);
  // The tolerance may change until finish() (the live bisect learns calibrated floors as it goes).
  void set_tolerance(Tolerance tolerance) { result_.tolerance = std::move(tolerance); }
  // Rows [first_index, first_index + n) of the compared rows: a and b [n, width], f32 or f64.
  void add(const model::HostTensor& a, const model::HostTensor& b, std::int64_t first_index);
  // rows: the compared rows (positions for the worst element and the first bad row); every
  // index in [0, rows.size()) must have been added. Judges the op and each row by the tolerance.
  OpResult finish(std::span<const RowInfo> rows);

 private:
  // Row block_row of the block a/b, row `index` of the compared rows, whose metrics are m.
  void add_row(const Metrics& m, const model::HostTensor& a, const model::HostTensor& b, std::int64_t block_row,
               std::int64_t index);

  OpResult result_;
  MetricsAccumulator total_;
  double worst_abs_ = -1;
  std::vector<double> col_err_, col_ref_;  // heads ops only
};

// The comparison of whole in-memory tensors [rows.size(), width] of one op.
OpResult compare_op(const model::TensorId& id, const model::HostTensor& a, const model::HostTensor& b,
                    std::span<const RowInfo> rows, HeadLayout layout, const Tolerance& tolerance);

// Where a run's op outputs come from, rows at a time.
class TensorSource {
 public:
  virtual ~TensorSource() = default;
  // Rows [first_row, first_row + count): [count, width], f32 or f64.
  virtual model::HostTensor read(const model::TensorId& id, std::int64_t first_row, std::int64_t count) const = 0;
};

class DumpSource final : public TensorSource {
 public:
  explicit DumpSource(const dumps::DumpReader& dump) : dump_(dump) {}
  model::HostTensor read(const model::TensorId& id, std::int64_t first_row, std::int64_t count) const override {
    return dump_.read(id, first_row, count);
  }

 private:
  const dumps::DumpReader& dump_;
};

inline constexpr std::size_t kDefaultBlockBytes = std::size_t{16} << 20;
inline constexpr std::int64_t kMaxBlockRows = 256;
// Rows read at a time of a tensor `width` wide, so a block of one run holds at most block_bytes
// (elements counted as 8 bytes): in [1, kMaxBlockRows].
std::int64_t block_rows(std::int64_t width, std::size_t block_bytes = kDefaultBlockBytes);

// The blocks compare_tensor reads: runs [begin, end) of alignment.rows whose rows are consecutive
// in both sources, each at most `block` long, in order.
struct BlockRun {
  std::int64_t begin = 0, end = 0;
};
std::vector<BlockRun> block_runs(const RowAlignment& alignment, std::int64_t block);

// One op of two sources over the aligned rows, streamed in blocks of block_rows(width) rows.
OpResult compare_tensor(const model::TensorId& id, int width, const TensorSource& a, const TensorSource& b,
                        const RowAlignment& alignment, HeadLayout layout, const Tolerance& tolerance,
                        std::size_t block_bytes = kDefaultBlockBytes);

// --- two dumps ------------------------------------------------------------------------------

struct CompareProgress {
  std::size_t done = 0, total = 0;  // ops
  std::int64_t bytes = 0;           // dump data read so far, both files
  model::TensorId id;               // the op just finished
};

// What B computes in, and how that is known: what its ops' tolerances are for.
struct PrecisionOfB {
  // stated: B's dump says it; given: --b-precision; inferred: B's values or its name map tell
  // (evidence says how); unknown: nothing tells (value is then f32, the strictest there is, and an
  // op past it is not taken for a bug: evidence says why).
  enum class From { stated, given, inferred, unknown };
  model::Precision value = model::Precision::f32;
  From from = From::stated;
  std::string evidence;
};
std::string_view from_name(PrecisionOfB::From from);  // "stated", "given", "inferred", "unknown"
// "bf16"; "bf16, inferred"; "unknown (judged as f32)".
std::string precision_text(const PrecisionOfB& precision);

struct CompareOptions {
  dumps::TapFilter taps;      // which tensors to compare (default: all both dumps hold)
  std::int64_t max_rows = 0;  // compare at most this many positions; <= 0: all
  // Positions only A holds are left out, said, and no run problem (B stopped early on purpose).
  bool common_rows = false;
  // Ops (among those taps selects) tapped in one dump only are listed and no run problem (B taps a
  // part of the graph on purpose).
  bool common_ops = false;
  // B's precision; nullopt: as B's dump states it, else as its values tell (precision_evidence.h).
  std::optional<PrecisionOfB> b_precision;
  std::size_t block_bytes = kDefaultBlockBytes;
  std::function<void(const CompareProgress&)> progress;  // after each op, when set
};

// The generated tokens of both runs (the dumps' summary "generated").
struct TokenComparison {
  std::optional<std::vector<std::int32_t>> a, b;    // nullopt when a dump has no summary
  std::optional<std::int64_t> first_mismatch_step;  // first index where they differ; nullopt when equal
  // Where the tokens part (by the summaries, or the rows' fed tokens), judged at the row that chose
  // them: nullopt when they do not part or the logits were not compared there.
  std::optional<TokenTie> tie;
};
TokenComparison compare_tokens(const nlohmann::json& summary_a, const nlohmann::json& summary_b);

struct RunInfo {
  std::string path;
  dumps::RunMetadata metadata;
  std::int64_t rows = 0;
  bool complete = true;
};

// Why two runs do not match besides an op past tolerance, or why part of them went unjudged: a
// comparison with any run problem does not pass (docs/tolerances.md).
// The run problems (bisect/compare/run_problems.def): near-tie is either of the first two where the tokens
// part at a near tie (bisect/compare/token_tie.h).
enum class RunProblemCode : std::uint8_t {
#define TAPDIFF_RUN_PROBLEM(id, name) id,
#include "bisect/compare/run_problems.def"
#undef TAPDIFF_RUN_PROBLEM
};
std::string_view run_problem_name(RunProblemCode code);  // "tokens-differ"

struct RunProblem {
  RunProblemCode code;
  std::string text;  // one sentence with the evidence
  nlohmann::json evidence;
  bool unjudged = false;  // rows went unjudged (rows-only-in-b, incomplete-dump); else the runs differ
};

// What a comparison concludes: every op within tolerance and the runs alike; an op past tolerance
// or runs that differ; rows, passes or ops that went unjudged (so no match can be claimed).
enum class Verdict : std::uint8_t { match, diverged, incomplete };
std::string_view verdict_name(Verdict v);  // "match", "diverged", "incomplete"

struct CompareResult {
  RunInfo a, b;
  model::ModelConfig config;
  PrecisionOfB precision;  // B's: what tolerance rules match
  // The built-in defaults' precision: of each op, the coarsest of B's precision, A's compute
  // precision and the types both runs store its tap in. The coarsest and the finest over the ops
  // compared (they differ only where taps are stored in mixed types).
  model::Precision builtin_precision = model::Precision::f32;
  model::Precision builtin_finest = model::Precision::f32;
  bool common_rows = false;      // CompareOptions::common_rows
  bool common_ops = false;       // CompareOptions::common_ops
  std::string tolerance_source;  // the tolerance file, or "" for the built-in defaults
  RowAlignment alignment;
  std::vector<OpResult> ops;                    // graph order
  std::vector<model::TensorId> only_a, only_b;  // tapped in one dump only (not compared)
  std::optional<std::size_t> first;             // index into ops of the first op past tolerance
  TokenComparison tokens;
  std::vector<RunProblem> problems;  // run_problems of the above
  // Each row where B chose other experts than A (bisect/compare/routing.h): near ties (a bisection's
  // settled: B continued with A's choice) and flips past B's precision, in the order they ran.
  std::vector<RoutingFlip> routing;
  std::int64_t bytes_read = 0;

  bool match() const { return !first.has_value() && problems.empty(); }
  Verdict verdict() const;
};

// The precision of the built-in defaults: "f16", or "f32 to f16, each op by the type its tap is
// stored in" where taps are stored in mixed types.
std::string builtin_precision_text(const CompareResult& r);

// The run problems of a comparison, from its tokens, its row alignment and its runs' completeness.
std::vector<RunProblem> run_problems(const CompareResult& r);

// UsageError naming both files when a and b are not two runs of one model on one prompt:
// different models (DumpReader::mismatch), model configs of other widths, different prompt tokens;
// or a compute_dtype that is no precision (model/precision.def).
// Decode rows fed different tokens are no error: align_rows stops before them.
void check_comparable(const dumps::DumpReader& a, const dumps::DumpReader& b, const RowAlignment& alignment);

// Compares every tensor both dumps hold (and options.taps selects), in graph order.
// UsageError when they cannot be compared or have nothing in common to compare.
CompareResult compare_dumps(const dumps::DumpReader& a, const dumps::DumpReader& b, const Tolerances& tolerances,
                            const CompareOptions& options = {});

}  // namespace tapdiff::bisect
