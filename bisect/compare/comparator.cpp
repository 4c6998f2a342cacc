#include "bisect/compare/comparator.h"

#include <algorithm>
#include <cmath>
#include <future>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "bisect/compare/precision_evidence.h"
#include "bisect/compare/read_ahead.h"
#include "model/errors.h"

namespace tapdiff::bisect {

using model::Scalar;

// --- rows ------------------------------------------------------------------------------------

bool is_batch(std::span<const RowInfo> rows) {
  return std::any_of(rows.begin(), rows.end(), [](const RowInfo& r) { return r.sequence > 0; });
}

RunRows run_rows(const dumps::DumpReader& dump) {
  return {dump.positions(), dump.chunks(), dump.tokens(), dump.decode_flags()};
}

namespace {

bool chunk_start(const RunRows& run, std::size_t row) { return row == 0 || run.chunks[row - 1] != run.chunks[row]; }

}  // namespace

std::vector<std::int32_t> aligned_positions(const RunRows& run, char name, std::vector<PositionAnomaly>& anomalies) {
  TAPDIFF_ASSERT(run.chunks.size() == run.positions.size() && run.tokens.size() == run.positions.size() &&
                     run.decode.size() == run.positions.size(),
                 "provenance of {} rows", run.positions.size());
  std::vector<std::int32_t> out(run.positions.begin(), run.positions.end());
  const auto falls = std::adjacent_find(out.begin(), out.end(), [](std::int32_t x, std::int32_t y) { return y <= x; });
  if (falls == out.end()) return out;
  const auto row = static_cast<std::size_t>(falls - out.begin()) + 1;
  PositionAnomaly anomaly{name, static_cast<std::int64_t>(row), out[row], *falls, 0, 0};
  for (std::size_t r = 0; r < out.size(); ++r) {
    out[r] = run.positions[0] + static_cast<std::int32_t>(r);
    if (out[r] != run.positions[r]) ++anomaly.rows_off;
  }
  anomaly.stream = out[row];
  anomalies.push_back(anomaly);
  return out;
}

RowAlignment align_rows(const RunRows& a, const RunRows& b, std::int64_t max_rows) {
  RowAlignment out;
  const std::vector<std::int32_t> pa = aligned_positions(a, 'A', out.anomalies),
                                  pb = aligned_positions(b, 'B', out.anomalies);
  std::size_t ra = 0, rb = 0;
  while (ra < pa.size() || rb < pb.size()) {
    if (rb == pb.size() || (ra < pa.size() && pa[ra] < pb[rb])) {
      ++out.only_a, ++ra;
      continue;
    }
    if (ra == pa.size() || pb[rb] < pa[ra]) {
      ++out.only_b, ++rb;
      continue;
    }
    if (!out.token_mismatch_position && a.tokens[ra] != b.tokens[rb]) {
      out.token_mismatch_position = pa[ra];
      out.token_mismatch_in_prompt = a.decode[ra] == 0 || b.decode[rb] == 0;
    }
    if (out.token_mismatch_position) {
      ++out.after_mismatch;
    } else if (max_rows > 0 && std::cmp_greater_equal(out.rows.size(), max_rows)) {
      ++out.beyond_max_rows;
    } else {
      out.rows.push_back({pa[ra], a.chunks[ra], b.chunks[rb], chunk_start(a, ra), chunk_start(b, rb),
                          a.decode[ra] != 0 || b.decode[rb] != 0});
      out.row_a.push_back(static_cast<std::int64_t>(ra));
      out.row_b.push_back(static_cast<std::int64_t>(rb));
    }
    ++ra, ++rb;
  }
  return out;
}

std::vector<RowInfo> same_rows(const RunRows& run) {
  std::vector<RowInfo> rows;
  for (std::size_t r = 0; r < run.positions.size(); ++r) {
    const bool start = chunk_start(run, r);
    rows.push_back({run.positions[r], run.chunks[r], run.chunks[r], start, start, run.decode[r] != 0});
  }
  return rows;
}

// --- one op ------------------------------------------------------------------------------------

namespace {

constexpr std::int64_t kAround = 4;  // neighbours kept on each side of the worst element

// err[c] += sum over rows of (a - b)^2, ref[c] += sum of a^2, over the elements finite in both.
template <class A, class B>
void add_columns(std::span<const A> a, std::span<const B> b, std::vector<double>& err, std::vector<double>& ref) {
  const std::size_t cols = err.size();
  for (std::size_t row = 0; row < a.size(); row += cols)
    for (std::size_t c = 0; c < cols; ++c) {
      const double x = a[row + c], d = x - static_cast<double>(b[row + c]);
      if (!std::isfinite(d)) continue;
      err[c] += d * d, ref[c] += x * x;
    }
}

// The same over rows [begin, end) of the block.
void add_columns(const model::HostTensor& a, const model::HostTensor& b, std::int64_t begin, std::int64_t end,
                 std::vector<double>& err, std::vector<double>& ref) {
  const auto at = static_cast<std::size_t>(begin * a.cols()), n = static_cast<std::size_t>((end - begin) * a.cols());
  const bool fa = a.scalar() == Scalar::f32, fb = b.scalar() == Scalar::f32;
  if (fa && fb) add_columns(a.f32().subspan(at, n), b.f32().subspan(at, n), err, ref);
  if (fa && !fb) add_columns(a.f32().subspan(at, n), b.f64().subspan(at, n), err, ref);
  if (!fa && fb) add_columns(a.f64().subspan(at, n), b.f32().subspan(at, n), err, ref);
  if (!fa && !fb) add_columns(a.f64().subspan(at, n), b.f64().subspan(at, n), err, ref);
}

// A block this large (elements) is split over two threads.
constexpr std::int64_t kParallelElements = std::int64_t{1} << 16;

}  // namespace

OpAccumulator::OpAccumulator(const model::TensorId& id, HeadLayout layout, Tolerance tolerance) {
  result_.id = id;
  result_.layout = layout;
  result_.tolerance = std::move(tolerance);
}

void OpAccumulator::add(const model::HostTensor& a, const model::HostTensor& b, std::int64_t first_index) {
  TAPDIFF_ASSERT(a.rows() == b.rows() && a.cols() == b.cols(), "{}: blocks [{}, {}] and [{}, {}]",
                 model::to_string(result_.id), a.rows(), a.cols(), b.rows(), b.cols());
  TAPDIFF_ASSERT(first_index >= 0, "{}: first index {}", model::to_string(result_.id), first_index);
  const auto end = static_cast<std::size_t>(first_index + a.rows());
  if (result_.rows.size() < end) result_.rows.resize(end);
  // One pass over the elements, the cost of a comparison (the dump reads are a few percent):
  // each row's own metrics, and for ops with heads the per-column sums; a large block is split
  // by rows over two threads. The op's metrics are the rows' merged in row order.
  const std::int64_t n = a.rows();
  const bool heads = result_.layout.has_heads();
  if (heads && col_err_.empty()) col_err_.assign(static_cast<std::size_t>(a.cols()), 0.0), col_ref_ = col_err_;
  std::vector<MetricsAccumulator> per_row(static_cast<std::size_t>(n));
  auto share = [&](std::int64_t begin, std::int64_t stop, std::vector<double>& err, std::vector<double>& ref) {
    for (std::int64_t r = begin; r < stop; ++r) per_row[static_cast<std::size_t>(r)].add(a, b, first_index, r, r + 1);
    if (heads) add_columns(a, b, begin, stop, err, ref);
  };
  const std::int64_t half = n * a.cols() >= kParallelElements ? n / 2 : n;
  std::vector<double> err2(heads && half < n ? col_err_.size() : 0, 0.0), ref2 = err2;
  std::future<void> second;
  if (half < n) second = std::async(std::launch::async, [&] { share(half, n, err2, ref2); });
  share(0, half, col_err_, col_ref_);
  if (second.valid()) second.get();
  for (std::size_t c = 0; c < err2.size(); ++c) col_err_[c] += err2[c], col_ref_[c] += ref2[c];
  for (std::int64_t r = 0; r < n; ++r) {
    const MetricsAccumulator& row = per_row[static_cast<std::size_t>(r)];
    total_.merge(row);
    add_row(row.result(), a, b, r, first_index + r);
  }
}

void OpAccumulator::add_row(const Metrics& m, const model::HostTensor& a, const model::HostTensor& b,
                            std::int64_t block_row, std::int64_t index) {
  RowError& row = result_.rows[static_cast<std::size_t>(index)];
  row.nmse = static_cast<float>(m.nmse);
  row.max_abs = static_cast<float>(m.max_abs);
  row.max_rel = static_cast<float>(m.max_rel);
  row.cosine = static_cast<float>(m.cosine);
  row.rms_a = static_cast<float>(m.rms_a);
  row.nonfinite = static_cast<std::int32_t>(m.nonfinite + m.nonfinite_both);  // either makes the row over
  // The worst element: the largest |a - b|, the lowest (row, column) on ties, whatever the order
  // blocks arrive in.
  WorstElement& w = result_.worst;
  if (m.worst_row < 0 || m.max_abs < worst_abs_ || (m.max_abs == worst_abs_ && index > w.index)) return;
  worst_abs_ = m.max_abs;
  w.index = index, w.col = m.worst_col, w.a = m.worst_a, w.b = m.worst_b;
  w.around_first_col = std::max<std::int64_t>(0, w.col - kAround);
  const std::int64_t last = std::min(a.cols(), w.col + kAround + 1);
  w.around_a.clear(), w.around_b.clear();
  for (std::int64_t c = w.around_first_col; c < last; ++c)
    w.around_a.push_back(a.at(block_row, c)), w.around_b.push_back(b.at(block_row, c));
}

OpResult OpAccumulator::finish(std::span<const RowInfo> rows) {
  OpResult& r = result_;
  TAPDIFF_ASSERT(r.rows.size() == rows.size(), "{}: {} rows accumulated, {} compared", model::to_string(r.id),
                 r.rows.size(), rows.size());
  r.metrics = total_.result();
  r.violations = check(r.tolerance.bound, r.metrics);
  WorstElement& w = r.worst;
  if (w.index >= 0) {
    w.position = rows[static_cast<std::size_t>(w.index)].position;
    w.sequence = rows[static_cast<std::size_t>(w.index)].sequence;
    w.head = r.layout.has_heads() ? static_cast<int>(w.col / r.layout.head_dim) : -1;
    w.channel = r.layout.has_heads() ? w.col % r.layout.head_dim : w.col;
  }
  for (RowError& row : r.rows) {
    Metrics m;
    m.nmse = row.nmse, m.max_abs = row.max_abs, m.max_rel = row.max_rel, m.cosine = row.cosine;
    m.nonfinite = row.nonfinite;
    row.over = !check(r.tolerance.bound, m).empty();
  }
  r.rows_over = std::count_if(r.rows.begin(), r.rows.end(), [](const RowError& e) { return e.over; });
  if (!r.pass()) {
    const auto bad = std::find_if(r.rows.begin(), r.rows.end(), [](const RowError& e) { return e.over; });
    // A tensor can break a bound no row breaks alone (cosine); then its worst row stands for it.
    r.first_bad = bad != r.rows.end() ? bad - r.rows.begin() : std::max<std::int64_t>(w.index, 0);
    r.first_bad_row = rows[static_cast<std::size_t>(r.first_bad)];
  }
  if (r.layout.has_heads() && !col_err_.empty()) {
    const auto heads = static_cast<std::size_t>(r.layout.heads), hd = static_cast<std::size_t>(r.layout.head_dim);
    r.head_err.assign(heads, 0.0), r.head_ref.assign(heads, 0.0), r.channel_err.assign(hd, 0.0);
    for (std::size_t c = 0; c < col_err_.size(); ++c) {
      r.head_err[c / hd] += col_err_[c], r.head_ref[c / hd] += col_ref_[c], r.channel_err[c % hd] += col_err_[c];
    }
  }
  return std::move(result_);
}

OpResult compare_op(const model::TensorId& id, const model::HostTensor& a, const model::HostTensor& b,
                    std::span<const RowInfo> rows, HeadLayout layout, const Tolerance& tolerance) {
  OpAccumulator acc(id, layout, tolerance);
  acc.add(a, b, 0);
  return acc.finish(rows);
}

std::int64_t block_rows(std::int64_t width, std::size_t block_bytes) {
  const auto row_bytes = static_cast<std::size_t>(std::max<std::int64_t>(width, 1)) * sizeof(double);
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(block_bytes / row_bytes), 1, kMaxBlockRows);
}

OpResult compare_tensor(const model::TensorId& id, int width, const TensorSource& a, const TensorSource& b,
                        const RowAlignment& alignment, HeadLayout layout, const Tolerance& tolerance,
                        std::size_t block_bytes) {
  OpAccumulator acc(id, layout, tolerance);
  for (const BlockRun& run : block_runs(alignment, block_rows(width, block_bytes))) {
    const auto i = static_cast<std::size_t>(run.begin);
    const std::int64_t n = run.end - run.begin;
    const model::HostTensor block_a = a.read(id, alignment.row_a[i], n);
    const model::HostTensor block_b = b.read(id, alignment.row_b[i], n);
    TAPDIFF_ASSERT(block_a.rows() == n && block_b.rows() == n, "{}: read {} and {} rows of {}", model::to_string(id),
                   block_a.rows(), block_b.rows(), n);
    acc.add(block_a, block_b, run.begin);
  }
  return acc.finish(alignment.rows);
}

std::vector<BlockRun> block_runs(const RowAlignment& alignment, std::int64_t block) {
  std::vector<BlockRun> runs;
  const auto n = static_cast<std::int64_t>(alignment.rows.size());
  const auto at = [](const std::vector<std::int64_t>& v, std::int64_t i) { return v[static_cast<std::size_t>(i)]; };
  for (std::int64_t i = 0; i < n;) {
    std::int64_t j = i + 1;
    while (j < n && j - i < block && at(alignment.row_a, j) == at(alignment.row_a, j - 1) + 1 &&
           at(alignment.row_b, j) == at(alignment.row_b, j - 1) + 1)
      ++j;
    runs.push_back({i, j});
    i = j;
  }
  return runs;
}

// --- run problems ------------------------------------------------------------------------------

namespace {

// The tokens' problem, refined by the tie where it was judged. At a near tie the runs do not
// differ: no problem, unless rows fed different tokens after it went unjudged (near-tie).
std::optional<RunProblem> parting_problem(RunProblem p, const std::optional<TokenTie>& tie,
                                          std::int64_t rows_left_out) {
  if (!tie) return p;
  p.evidence["tie"] = tie->json();
  p.text += fmt::format(" ({})", tie->text());
  if (!tie->near_tie()) return p;
  if (rows_left_out == 0) return std::nullopt;
  p.code = RunProblemCode::near_tie, p.unjudged = true;
  p.evidence["rows_left_out"] = rows_left_out;
  if (p.text.find("not compared") == std::string::npos)
    p.text += fmt::format("; the {} rows fed different tokens after it were not compared", rows_left_out);
  return p;
}

std::optional<RunProblem> tokens_problem(const TokenComparison& t, std::int64_t rows_left_out) {
  const auto step = static_cast<std::size_t>(*t.first_mismatch_step);
  return parting_problem(
      {RunProblemCode::tokens_differ,
       fmt::format("the generated tokens differ from step {}: A {}, B {}", step, (*t.a)[step], (*t.b)[step]),
       {{"step", step}, {"a", (*t.a)[step]}, {"b", (*t.b)[step]}}},
      t.tie, rows_left_out);
}

RunProblem anomaly_problem(const PositionAnomaly& x) {
  return {RunProblemCode::positions_anomaly,
          fmt::format("{}'s recorded positions {} at row {} (position {} after {}; the token stream is at {}): {} "
                      "rows record another position than their place in the stream, and were compared by their place",
                      x.run, x.recorded == x.previous ? "repeat" : "fall", x.row, x.recorded, x.previous, x.stream,
                      x.rows_off),
          {{"run", std::string(1, x.run)},
           {"row", x.row},
           {"recorded", x.recorded},
           {"previous", x.previous},
           {"stream", x.stream},
           {"rows_off", x.rows_off}}};
}

}  // namespace

std::vector<RunProblem> run_problems(const CompareResult& r) {
  std::vector<RunProblem> out;
  const RowAlignment& al = r.alignment;
  std::optional<RunProblem> parting;
  if (r.tokens.first_mismatch_step)
    parting = tokens_problem(r.tokens, al.after_mismatch);
  else if (al.token_mismatch_position)
    parting = parting_problem(
        {RunProblemCode::generation_diverged,
         fmt::format("the runs fed different tokens from position {} on (their generations parted): the {} "
                     "rows from there were not compared",
                     *al.token_mismatch_position, al.after_mismatch),
         {{"position", *al.token_mismatch_position}, {"rows_left_out", al.after_mismatch}}},
        r.tokens.tie, al.after_mismatch);
  if (parting) out.push_back(std::move(*parting));
  for (const PositionAnomaly& x : al.anomalies) out.push_back(anomaly_problem(x));
  if (al.only_a > 0 && !r.common_rows)
    out.push_back({RunProblemCode::rows_only_in_a,
                   fmt::format("A holds {} position{} that B does not (B's run stopped early or a pass is missing): "
                               "they were not compared (--common-rows compares the positions both hold)",
                               al.only_a, al.only_a == 1 ? "" : "s"),
                   {{"positions", al.only_a}},
                   true});
  if (al.only_b > 0)
    out.push_back({RunProblemCode::rows_only_in_b,
                   fmt::format("B holds {} position{} that A does not: they were not compared", al.only_b,
                               al.only_b == 1 ? "" : "s"),
                   {{"positions", al.only_b}},
                   true});
  if (!r.common_ops) {
    for (const auto& [code, name, other, taps] : {std::tuple{RunProblemCode::ops_only_in_a, 'A', 'B', &r.only_a},
                                                  std::tuple{RunProblemCode::ops_only_in_b, 'B', 'A', &r.only_b}}) {
      if (taps->empty()) continue;
      std::vector<std::string> names;
      for (std::size_t i = 0; i < std::min<std::size_t>(taps->size(), 5); ++i)
        names.push_back(model::to_string((*taps)[i]));
      out.push_back({code,
                     fmt::format("{} holds {} tap{} that {} does not ({}{}): they were not compared (--common-ops "
                                 "compares the ops both hold, --taps selects ops)",
                                 name, taps->size(), taps->size() == 1 ? "" : "s", other, fmt::join(names, ", "),
                                 taps->size() > names.size() ? ", ..." : ""),
                     {{"taps", taps->size()}, {"first", names}},
                     true});
    }
  }
  for (const auto& [name, run] : {std::pair{'A', &r.a}, std::pair{'B', &r.b}})
    if (!run->complete && !run->path.empty())
      out.push_back({RunProblemCode::incomplete_dump,
                     fmt::format("{} ({}) is incomplete: its run stopped after {} rows, and only those were compared",
                                 name, run->path, run->rows),
                     {{"run", std::string(1, name)}, {"rows", run->rows}},
                     true});
  if (r.first && r.precision.from == PrecisionOfB::From::unknown)
    out.push_back({RunProblemCode::precision_unknown,
                   fmt::format("B does not say what it computes in and its values do not tell ({}): an op past f32's "
                               "tolerance may be B's own precision; give --b-precision",
                               r.precision.evidence),
                   {{"evidence", r.precision.evidence}},
                   true});
  return out;
}

std::string_view from_name(PrecisionOfB::From from) {
  switch (from) {
    case PrecisionOfB::From::stated: return "stated";
    case PrecisionOfB::From::given: return "given";
    case PrecisionOfB::From::inferred: return "inferred";
    case PrecisionOfB::From::unknown: return "unknown";
  }
  return "?";
}

std::string_view run_problem_name(RunProblemCode code) {
  switch (code) {
#define TAPDIFF_RUN_PROBLEM(id, name) \
  case RunProblemCode::id:            \
    return name;
#include "bisect/compare/run_problems.def"
#undef TAPDIFF_RUN_PROBLEM
  }
  return "?";
}

std::string precision_text(const PrecisionOfB& p) {
  const std::string_view name = model::precision_name(p.value);
  switch (p.from) {
    case PrecisionOfB::From::stated:
    case PrecisionOfB::From::given: return std::string(name);
    case PrecisionOfB::From::inferred: return fmt::format("{}, inferred", name);
    case PrecisionOfB::From::unknown: return fmt::format("unknown (judged as {})", name);
  }
  return std::string(name);
}

std::string builtin_precision_text(const CompareResult& r) {
  if (r.builtin_finest == r.builtin_precision) return std::string(model::precision_name(r.builtin_precision));
  return fmt::format("{} to {}, each op by the type its tap is stored in", model::precision_name(r.builtin_finest),
                     model::precision_name(r.builtin_precision));
}

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::match: return "match";
    case Verdict::diverged: return "diverged";
    case Verdict::incomplete: return "incomplete";
  }
  return "";
}

Verdict CompareResult::verdict() const {
  if (match()) return Verdict::match;
  const bool judged_op = first && precision.from != PrecisionOfB::From::unknown;
  const bool differ =
      judged_op || std::any_of(problems.begin(), problems.end(), [](const RunProblem& p) { return !p.unjudged; });
  return differ ? Verdict::diverged : Verdict::incomplete;
}

// --- two dumps ---------------------------------------------------------------------------------

TokenComparison compare_tokens(const nlohmann::json& summary_a, const nlohmann::json& summary_b) {
  TokenComparison t;
  auto generated = [](const nlohmann::json& s) -> std::optional<std::vector<std::int32_t>> {
    if (!s.is_object() || !s.contains("generated") || !s["generated"].is_array()) return std::nullopt;
    std::vector<std::int32_t> out;
    for (const auto& v : s["generated"])
      if (v.is_number_integer()) out.push_back(v.get<std::int32_t>());
    return out;
  };
  t.a = generated(summary_a), t.b = generated(summary_b);
  if (t.a && t.b) {
    const std::size_t n = std::min(t.a->size(), t.b->size());
    for (std::size_t i = 0; i < n && !t.first_mismatch_step; ++i)
      if ((*t.a)[i] != (*t.b)[i]) t.first_mismatch_step = static_cast<std::int64_t>(i);
  }
  return t;
}

namespace {

// The rule of DumpReader::mismatch: sha256 when both have one, else the model_config's meaning.
bool same_model(const dumps::RunMetadata& a, const dumps::RunMetadata& b) {
  if (!a.model_sha256.empty() && !b.model_sha256.empty()) return a.model_sha256 == b.model_sha256;
  return dumps::config_differences(a.model_config, b.model_config).empty();
}

std::string shape_of(const model::ModelConfig& c) {
  return fmt::format("n_layers={} dim={} heads={}/{} head_dim={} ffn_dim={} vocab={}", c.n_layers, c.dim, c.n_heads,
                     c.n_kv_heads, c.head_dim, c.ffn_dim, c.vocab);
}

std::int64_t element_bytes(const dumps::RunMetadata& m) {
  return static_cast<std::int64_t>(dumps::stored_value_bytes(m.storage_dtype));
}

RunInfo run_info(const dumps::DumpReader& d) { return {d.path(), d.metadata(), d.rows(), d.complete()}; }

// A dump's precision name (compute or storage) where it states a known one, else f32.
model::Precision stated_or_f32(const std::string& name) {
  return model::parse_precision(name).value_or(model::Precision::f32);
}

// A dump's generated tokens: its summary's, else the tokens its decode rows were fed (each the
// token chosen after the row before), in row order.
nlohmann::json generated_tokens(const dumps::DumpReader& d) {
  const nlohmann::json& summary = d.summary();
  if (summary.is_object() && summary.contains("generated")) return summary;
  const std::vector<std::uint8_t>& decode = d.decode_flags();
  if (std::find(decode.begin(), decode.end(), std::uint8_t{1}) == decode.end()) return summary;
  std::vector<std::int32_t> fed;
  for (std::size_t r = 0; r < decode.size(); ++r)
    if (decode[r] != 0) fed.push_back(d.tokens()[r]);
  return {{"generated", fed}};
}

}  // namespace

void check_comparable(const dumps::DumpReader& a, const dumps::DumpReader& b, const RowAlignment& alignment) {
  const std::string both = fmt::format("cannot compare {} with {}", a.path(), b.path());
  if (!same_model(a.metadata(), b.metadata()))
    throw UsageError(fmt::format("{}: {}", both, dumps::DumpReader::mismatch(a, b).value_or("different models")));
  for (const dumps::DumpReader* d : {&a, &b}) {
    const std::string& dtype = d->metadata().compute_dtype;
    if (!dtype.empty() && !model::parse_precision(dtype))
      throw UsageError(
          fmt::format("{}: {} has compute_dtype '{}': tapdiff has tolerances for {} only (write the precision the "
                      "engine's arithmetic has)",
                      both, d->path(), dtype, model::precision_names()));
  }
  if (shape_of(a.config()) != shape_of(b.config()))
    throw UsageError(fmt::format("{}: different model configs: {} has {}, {} has {}", both, a.path(),
                                 shape_of(a.config()), b.path(), shape_of(b.config())));
  if (alignment.token_mismatch_position && alignment.token_mismatch_in_prompt)
    throw UsageError(
        fmt::format("{}: {}", both,
                    dumps::DumpReader::mismatch(a, b).value_or(fmt::format(
                        "different tokens: the prompts differ at position {}", *alignment.token_mismatch_position))));
  if (alignment.rows.empty())
    throw UsageError(fmt::format("{}: no position is held by both runs ({} has {} rows, {} has {})", both, a.path(),
                                 a.rows(), b.path(), b.rows()));
}

namespace {

// Where B's dump chose other experts (kept other positions) than A's (bisect/compare/routing.h,
// recorded, not settled: a dump's later ops already inherit B's choice): each MoE layer whose
// moe_ids and the values it chooses by (model::choice_op) both dumps hold, each sparse layer whose
// idx_ids and idx_scores.
std::vector<RoutingFlip> routing_flips(const model::ModelConfig& config, const dumps::DumpReader& a,
                                       const dumps::DumpReader& b, const RowAlignment& alignment,
                                       model::Precision precision) {
  RoutingArbiter arbiter(config, precision, false);
  const DumpSource source_a(a), source_b(b);
  // The choice `ids` of layer l by `values` (A's; an expert choice's B's too) over the aligned rows,
  // in runs of blocks `width` wide.
  const auto arbitrate = [&](int l, model::Op values, model::Op ids, std::int64_t width) {
    const model::TensorId by{values, l}, chosen{ids, l};
    const bool experts = ids == model::Op::moe_ids;
    if (!a.has(by) || (experts && !b.has(by)) || !a.has(chosen) || !b.has(chosen)) return;
    for (const BlockRun& run : block_runs(alignment, block_rows(width))) {
      const std::int64_t n = run.end - run.begin;
      const auto first_a = alignment.row_a[static_cast<std::size_t>(run.begin)];
      const auto first_b = alignment.row_b[static_cast<std::size_t>(run.begin)];
      std::vector<RowPlace> places;
      for (std::int64_t i = run.begin; i < run.end; ++i) {
        const RowInfo& row = alignment.rows[static_cast<std::size_t>(i)];
        places.push_back({row.sequence, row.position});
      }
      const model::HostTensor held_a = source_a.read(by, first_a, n);
      const model::HostTensor ids_a = source_a.read(chosen, first_a, n), ids_b = source_b.read(chosen, first_b, n);
      if (experts) {
        arbiter.hold_router(l, held_a, nullptr, source_b.read(by, first_b, n));
        arbiter.settle(l, ids_a, nullptr, ids_b, places);
      } else {
        arbiter.hold_index_scores(l, held_a, nullptr);
        arbiter.settle_kept(l, ids_a, nullptr, ids_b, places);
      }
    }
  };
  for (int l = 0; l < config.n_layers; ++l) {
    if (config.sparse()) arbitrate(l, model::Op::idx_scores, model::Op::idx_ids, config.indexer.top_k + 1);
    if (model::uses_experts(config, l))
      arbitrate(l, model::choice_op(config), model::Op::moe_ids, config.experts.count);
  }
  return arbiter.flips();
}

// The first row of `run` recorded at `position`, or nullopt.
std::optional<std::size_t> row_at(const dumps::DumpReader& run, std::int32_t position) {
  const auto& p = run.positions();
  const auto at = std::find(p.begin(), p.end(), position);
  return at == p.end() ? std::nullopt : std::optional<std::size_t>(static_cast<std::size_t>(at - p.begin()));
}

// Where the dumps' tokens first part, judged at the row whose logits chose them: by the summaries'
// generated tokens (A fed its prompt and every generated token but the last, so step s was chosen
// at A's last position less the generated tokens fed, plus s), else by the first position fed
// different tokens (chosen a row before it, step: its distance from A's first decode row).
std::optional<TokenTie> dump_token_tie(const CompareResult& r, const dumps::DumpReader& a, const dumps::DumpReader& b) {
  const auto logits =
      std::find_if(r.ops.begin(), r.ops.end(), [](const OpResult& o) { return o.id.op == model::Op::logits; });
  const auto& positions = a.positions();
  if (logits == r.ops.end() || positions.empty()) return std::nullopt;
  std::int64_t step = 0;
  std::int32_t position = 0, token_a = 0, token_b = 0;
  if (r.tokens.first_mismatch_step) {
    step = *r.tokens.first_mismatch_step;
    token_a = (*r.tokens.a)[static_cast<std::size_t>(step)], token_b = (*r.tokens.b)[static_cast<std::size_t>(step)];
    const auto fed = static_cast<std::int64_t>(r.tokens.a->size()) - 1;
    position = static_cast<std::int32_t>(*std::max_element(positions.begin(), positions.end()) - fed + step);
  } else if (r.alignment.token_mismatch_position && !r.alignment.token_mismatch_in_prompt) {
    const std::int32_t parted = *r.alignment.token_mismatch_position;
    const auto row_a = row_at(a, parted), row_b = row_at(b, parted);
    const auto& decode = a.decode_flags();
    const auto first_decode = std::find(decode.begin(), decode.end(), std::uint8_t{1});
    if (!row_a || !row_b || first_decode == decode.end()) return std::nullopt;
    position = parted - 1;
    step = parted - positions[static_cast<std::size_t>(first_decode - decode.begin())];
    token_a = a.tokens()[*row_a], token_b = b.tokens()[*row_b];
  } else {
    return std::nullopt;
  }
  TokenTie tie;
  tie.step = step, tie.position = position, tie.a = token_a, tie.b = token_b;
  const RowAlignment& al = r.alignment;
  const auto vocab = static_cast<std::int32_t>(model::op_width(r.config, {model::Op::logits, r.config.n_layers}));
  if (token_a < 0 || token_b < 0 || token_a >= vocab || token_b >= vocab) return std::nullopt;
  const auto ta = static_cast<std::size_t>(token_a), tb = static_cast<std::size_t>(token_b);
  for (std::size_t i = 0; i < al.rows.size(); ++i) {
    if (al.rows[i].position != position) continue;
    const model::HostTensor la = a.read(logits->id, al.row_a[i], 1).to(model::Scalar::f64);
    const model::HostTensor lb = b.read(logits->id, al.row_b[i], 1).to(model::Scalar::f64);
    tie.margin = la.f64()[ta] - la.f64()[tb];
    tie.b_logits_agree = lb.f64()[tb] >= lb.f64()[ta];
  }
  return judged_tie(tie, 0, *logits, al.rows);
}

}  // namespace

CompareResult compare_dumps(const dumps::DumpReader& a, const dumps::DumpReader& b, const Tolerances& tolerances,
                            const CompareOptions& options) {
  CompareResult r;
  r.alignment = align_rows(run_rows(a), run_rows(b), options.max_rows);
  check_comparable(a, b, r.alignment);
  r.a = run_info(a), r.b = run_info(b), r.config = a.config();
  r.precision = options.b_precision ? *options.b_precision : precision_of(b);
  // Each op's built-in tolerance is that of the coarsest of B's precision, A's and the types its tap is stored in.
  const auto builtin_of = [&](const model::TensorId& id) {
    return model::coarsest({r.precision.value, stated_or_f32(a.metadata().compute_dtype),
                            stated_or_f32(a.storage_dtype(id)), stated_or_f32(b.storage_dtype(id))});
  };
  r.common_rows = options.common_rows;
  r.common_ops = options.common_ops;
  r.tolerance_source = tolerances.source();
  r.tokens = compare_tokens(generated_tokens(a), generated_tokens(b));
  std::vector<model::TensorId> ids;
  for (const model::TensorId& id : a.tensors())
    if (options.taps.matches(id)) (b.has(id) ? ids : r.only_a).push_back(id);
  for (const model::TensorId& id : b.tensors())
    if (options.taps.matches(id) && !a.has(id)) r.only_b.push_back(id);
  if (ids.empty())
    throw UsageError(fmt::format("cannot compare {} with {}: no tensor is tapped in both dumps{}", a.path(), b.path(),
                                 options.taps.kind() == dumps::TapFilter::Kind::all
                                     ? ""
                                     : fmt::format(" and selected by --taps '{}'", options.taps.spec())));
  const model::Graph graph(r.config);
  // In the order the model computes them: the first op past its tolerance is the first in the data flow.
  std::ranges::stable_sort(ids, {}, [&](const model::TensorId& id) { return graph.position(id); });
  const DumpSource source_a(a), source_b(b);
  std::vector<ReadAhead::Request> plan;
  for (const model::TensorId& id : ids) ReadAhead::plan_op(id, graph.width(id), r.alignment, options.block_bytes, plan);
  const ReadAhead ahead(source_a, source_b, std::move(plan));  // the dumps' reads overlap the comparison
  const std::int64_t bytes_per_value = element_bytes(a.metadata()) + element_bytes(b.metadata());
  const auto n_rows = static_cast<std::int64_t>(r.alignment.rows.size());
  r.builtin_precision = builtin_of(ids.front()), r.builtin_finest = r.builtin_precision;
  for (const model::TensorId& id : ids) {
    const int width = graph.width(id);
    const model::Precision builtin = builtin_of(id);
    r.builtin_precision = model::coarsest({r.builtin_precision, builtin});
    if (model::coarsest({builtin, r.builtin_finest}) == r.builtin_finest) r.builtin_finest = builtin;
    r.ops.push_back(compare_tensor(id, width, ahead.a(), ahead.b(), r.alignment, head_layout(id, r.config),
                                   tolerances.lookup(id, r.precision.value, builtin), options.block_bytes));
    if (!r.first && !r.ops.back().pass()) r.first = r.ops.size() - 1;
    r.bytes_read += n_rows * width * bytes_per_value;
    if (options.progress) options.progress({r.ops.size(), ids.size(), r.bytes_read, id});
  }
  if (r.config.experts.count > 0 || r.config.sparse())
    r.routing = routing_flips(r.config, a, b, r.alignment, r.precision.value);
  r.tokens.tie = dump_token_tie(r, a, b);
  r.problems = run_problems(r);
  return r;
}

}  // namespace tapdiff::bisect
