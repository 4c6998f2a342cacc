#include "bisect/report/terminal.h"

#include <algorithm>

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "bisect/compare/text_format.h"
#include "bisect/report/isolation.h"
#include "bisect/report/live_run.h"

namespace tapdiff::bisect {
namespace {

constexpr const char* kRed = "\033[1;31m";
constexpr const char* kGreen = "\033[1;32m";
constexpr const char* kDim = "\033[2m";
constexpr const char* kReset = "\033[0m";

std::string where_in_run(const RowInfo& row, bool batch) {
  if (batch) return fmt::format("sequence {}, {}", row.sequence, where_in_run(row, false));
  if (row.decode) return fmt::format("decode step, chunk {}", row.chunk_b);
  if (row.chunk_start_b && row.chunk_b > 0) return fmt::format("chunk {} start", row.chunk_b);
  if (row.chunk_start_a && row.chunk_a > 0)
    return fmt::format("chunk {}, chunk {} start in A", row.chunk_b, row.chunk_a);
  return fmt::format("chunk {}", row.chunk_b);
}

std::string worst_text(const WorstElement& w, bool batch) {
  if (w.index < 0) return "no finite element compared";
  const std::string head = w.head >= 0 ? fmt::format(" head {}", w.head) : "";
  const std::string sequence = batch ? fmt::format(" of sequence {}", w.sequence) : "";
  const auto [a, b] = distinct_numbers(w.a, w.b);
  return fmt::format("worst at position {}{}{} channel {}: {} vs {}", w.position, sequence, head, w.channel, a, b);
}

// The values around the worst element in both runs, one line each, with the digits that differ.
std::string neighbours(const WorstElement& w) {
  if (w.around_a.empty()) return {};
  std::string a, b;
  for (std::size_t i = 0; i < w.around_a.size(); ++i) {
    const bool worst = w.around_first_col + static_cast<std::int64_t>(i) == w.col;
    const char* open = worst ? " [" : "  ";
    const char* close = worst ? "]" : " ";
    const auto [x, y] = distinct_numbers(w.around_a[i], w.around_b[i]);
    const std::size_t width = std::max<std::size_t>({9, x.size(), y.size()});
    a += fmt::format("{}{:>{}}{}", open, x, width, close);
    b += fmt::format("{}{:>{}}{}", open, y, width, close);
  }
  const auto last = w.around_first_col + static_cast<std::int64_t>(w.around_a.size()) - 1;
  return fmt::format("  columns {}..{} of position {}:\n    A{}\n    B{}\n", w.around_first_col, last, w.position, a,
                     b);
}

std::string table(const CompareResult& r, std::size_t max_table) {
  std::string out = fmt::format("  {:>5}  {:<14} {:<10} {:>9} {:>9} {:>9} {:>9}  {}\n", "layer", "op", "class", "nmse",
                                "max_abs", "1-cos", "first pos", "past tolerance");
  std::size_t shown = 0, failing = 0;
  for (const OpResult& op : r.ops) {
    if (op.pass()) continue;
    if (++failing > max_table) continue;
    ++shown;
    const std::string first = op.first_bad >= 0 ? std::to_string(op.first_bad_row.position) : "-";
    std::vector<std::string> broken;
    for (const Violation& v : op.violations) broken.push_back(v.text());
    out += fmt::format("  {:>5}  {:<14} {:<10} {:>9} {:>9} {:>9} {:>9}  {}\n", op.id.layer, model::op_name(op.id.op),
                       model::op_class_name(op.op_class()), short_number(op.metrics.nmse),
                       short_number(op.metrics.max_abs), short_number(1 - op.metrics.cosine), first,
                       fmt::join(broken, "; "));
  }
  if (failing > shown) out += fmt::format("  ... and {} more failing ops (see --json / --html)\n", failing - shown);
  return out;
}

std::string tokens_text(const TokenComparison& t) {
  if (!t.a || !t.b) return "tokens   not compared: a dump has no summary of generated tokens\n";
  if (t.first_mismatch_step) {
    const auto step = static_cast<std::size_t>(*t.first_mismatch_step);
    return fmt::format("tokens   generated tokens differ from step {}: A {} vs B {}{}\n", step, (*t.a)[step],
                       (*t.b)[step], t.tie ? "; " + t.tie->text() : "");
  }
  if (t.a->empty() && t.b->empty()) return "tokens   no tokens generated\n";
  return fmt::format("tokens   the same {} generated tokens\n", std::min(t.a->size(), t.b->size()));
}

}  // namespace

std::string verdict_line(const CompareResult& r) {
  if (r.match())
    return fmt::format("match: {} ops within tolerance over {} positions", r.ops.size(), r.alignment.rows.size());
  if (!r.first) {
    std::vector<std::string> codes;
    for (const RunProblem& p : r.problems) codes.push_back(std::string(run_problem_name(p.code)));
    return fmt::format("{}: {} ops within tolerance over {} positions, but {}", verdict_name(r.verdict()), r.ops.size(),
                       r.alignment.rows.size(), fmt::join(codes, ", "));
  }
  const OpResult& op = r.ops[*r.first];
  const RowInfo& row = op.first_bad_row;
  const bool batch = is_batch(r.alignment.rows);
  return fmt::format("diverged at layer {} {} ({}): {}, first at position {} ({}), {}", op.id.layer,
                     model::op_name(op.id.op), model::op_class_name(op.op_class()), op.violations.front().text(),
                     row.position, where_in_run(row, batch), worst_text(op.worst, batch));
}

std::string terminal_report(const Finding& f, bool color, std::size_t max_table) {
  const CompareResult& r = f.run;
  const char* on = color ? (r.match() ? kGreen : kRed) : "";
  const char* off = color ? kReset : "";
  const char* dim = color ? kDim : "";
  std::string out = fmt::format("{}{}{}\n", on, verdict_line(r), off);
  if (f.isolation) out += isolation_lines(r, *f.isolation);
  if (r.first) out += neighbours(r.ops[*r.first].worst) + table(r, max_table);
  for (const RunProblem& p : r.problems) out += fmt::format("problem  {}: {}\n", run_problem_name(p.code), p.text);
  for (const Diagnosis& d : f.diagnoses) out += fmt::format("  {}: {}\n", model::diagnosis_name(d.code), d.text);
  out += f.live ? live_tokens_text(r, *f.live) : tokens_text(r.tokens);
  if (f.live && f.live->layers_only)
    out += "layers   --layers-first: the layer outputs and each block's updates matched, so only they were compared\n";
  const RowAlignment& al = r.alignment;
  out += fmt::format("{}rows     {} positions compared", dim, al.rows.size());
  if (al.token_mismatch_position)
    out += fmt::format(", stopped before position {} (fed tokens differ)", *al.token_mismatch_position);
  if (al.beyond_max_rows > 0) out += fmt::format(", {} more left out by --max-rows", al.beyond_max_rows);
  if (al.only_a + al.only_b > 0)
    out += fmt::format(", {} only in A{}, {} only in B", al.only_a, r.common_rows ? " (left out by --common-rows)" : "",
                       al.only_b);
  if (r.tolerance_source.empty())
    out += fmt::format("; built-in tolerances for {}{}\n", builtin_precision_text(r), off);
  else
    out += fmt::format("; tolerances {} (B computes in {}){}\n", r.tolerance_source, precision_text(r.precision), off);
  if (r.precision.from == PrecisionOfB::From::inferred || r.precision.from == PrecisionOfB::From::unknown)
    out += fmt::format("{}precision B computes in {}: {}{}\n", dim, precision_text(r.precision), r.precision.evidence,
                       off);
  if (!r.only_a.empty() || !r.only_b.empty())
    out += fmt::format("{}not compared: {} ops tapped only in A, {} only in B{}{}\n", dim, r.only_a.size(),
                       r.only_b.size(), r.common_ops ? " (left out by --common-ops)" : "", off);
  if (f.live)
    out +=
        fmt::format("time     free run {:.2f} s, forced scan {:.2f} s\n", f.live->seconds_free, f.live->seconds_forced);
  return out;
}

std::string progress_line(const CompareProgress& p, double seconds) {
  const double gb = static_cast<double>(p.bytes) / 1e9;
  return fmt::format("compare {:>5}/{} ops  {:<16} {:.2f} GB read, {:.2f} GB/s", p.done, p.total,
                     model::to_string(p.id), gb, seconds > 0 ? gb / seconds : 0.0);
}

std::string bisect_progress_line(const BisectProgress& p, double seconds) {
  const char* what = p.pass == 1 ? "free run" : p.pass == 2 ? "forced scan" : "free generation of B";
  return fmt::format("bisect {:<20} chunk {:>4}/{}  {:.1f} s", what, p.chunk, p.chunks, seconds);
}

}  // namespace tapdiff::bisect
