#include "bisect/judge/diagnosis.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "bisect/compare/text_format.h"

namespace tapdiff::bisect {
namespace {

constexpr std::size_t kMinGrowthRows = 8;  // rows past the first bad one needed to judge growth
constexpr double kGrowthRho = 0.8;         // Spearman rho above which error "grows with position"
constexpr double kRise = 4;                // ... or the median row error after the first 8 bad rows is 4x theirs
constexpr double kHeadFactor = 10;         // a head carries the error above 10x the median head
constexpr double kQuietHeadShare = 1e-4;   // a head below 1e-4 of the worst head's error is untouched
constexpr double kPatternShare = 1e-2;     // the quiet half holds < 1% of the loud half's error

std::vector<double> ranks(std::span<const double> v) {
  std::vector<std::size_t> order(v.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    const double average = 0.5 * static_cast<double>(i + j);  // ties share their average rank
    for (std::size_t k = i; k <= j; ++k) r[order[k]] = average;
    i = j + 1;
  }
  return r;
}

std::string chunk_start_text(const RowInfo& row) {
  std::vector<std::string> runs;
  if (row.chunk_start_a && row.chunk_a > 0) runs.push_back(fmt::format("chunk {} of A", row.chunk_a));
  if (row.chunk_start_b && row.chunk_b > 0) runs.push_back(fmt::format("chunk {} of B", row.chunk_b));
  return fmt::format("{}", fmt::join(runs, " and "));
}

void chunk_start(const OpResult& op, const RowInfo& first, std::vector<Diagnosis>& out) {
  if (first.decode) return;  // every decode step is its own chunk: no prefill boundary to blame
  const std::string where = chunk_start_text(first);
  if (where.empty()) return;
  out.push_back({model::DiagnosisCode::chunk_start,
                 fmt::format("{} first breaks its tolerance at position {}, the first row of {}: a chunked-prefill "
                             "boundary (KV cache offset, positions or mask of a later chunk)",
                             model::to_string(op.id), first.position, where),
                 {{"position", first.position}, {"chunk_a", first.chunk_a}, {"chunk_b", first.chunk_b}}});
}

// What an error absent at position 0 points to, given the op: the ops before the first failing one
// pass, so an attention symptom rules RoPE out.
std::string_view position_zero_suspect(const OpResult& op) {
  switch (op.op_class()) {
    case model::OpClass::rope:
      return "suspect the RoPE rotation, its angles or its pairing (position 0 is not rotated, so a rotation error "
             "vanishes there)";
    case model::OpClass::attention:
      return "suspect the attention weights: the scale, the softmax or the mask (position 0 attends to itself "
             "alone, so any weighting gives its value exactly there); the RoPE ops before it pass";
    default: return "suspect something that depends on the position (RoPE rotation, causal mask)";
  }
}

void position_zero(const OpResult& op, std::span<const RowInfo> rows, std::vector<Diagnosis>& out) {
  if (rows.size() < 2 || rows[0].position != 0 || op.rows[0].over) return;
  const auto later = static_cast<std::int64_t>(rows.size() - 1);
  if (2 * op.rows_over < later) return;  // at least half the later positions must be over
  out.push_back({model::DiagnosisCode::position_zero_exact,
                 fmt::format("position 0 is within tolerance (nmse {}) but {} of the {} later positions are not: {}",
                             short_number(op.rows[0].nmse), op.rows_over, later, position_zero_suspect(op)),
                 {{"nmse_position_0", op.rows[0].nmse}, {"rows_over", op.rows_over}, {"later_rows", later}}});
}

// Mean of v[from, to).
double mean(std::span<const double> v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

void growth(const OpResult& op, std::span<const RowInfo> rows, std::vector<Diagnosis>& out) {
  const auto from = static_cast<std::size_t>(op.first_bad);
  if (rows.size() - from < kMinGrowthRows) return;
  std::vector<double> pos, err;
  for (std::size_t i = from; i < rows.size(); ++i)
    pos.push_back(rows[i].position), err.push_back(static_cast<double>(op.rows[i].nmse));
  const double rho = spearman(pos, err);
  // An error that grows and then saturates (a wrong RoPE base: the angle error grows with position
  // until the rotation is random) ranks poorly over a long prompt: then ask for a clear rise from
  // the first kMinGrowthRows rows to the median of the rest.
  const double early = mean(std::span(err).first(kMinGrowthRows));
  std::vector<double> rest(err.begin() + static_cast<std::ptrdiff_t>(kMinGrowthRows), err.end());
  std::nth_element(rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(rest.size() / 2), rest.end());
  const double later = rest.empty() ? 0 : rest[rest.size() / 2];
  const bool rises = rest.size() >= kMinGrowthRows && later >= kRise * early && early > 0;
  if (!(rho > kGrowthRho) && !rises) return;
  out.push_back(
      {model::DiagnosisCode::grows_with_position,
       fmt::format("the error of {} grows with position: Spearman rho {:.2f} between position and row "
                   "NMSE over the {} rows from position {}; mean row NMSE {} over its first {} rows, median {} "
                   "after them",
                   model::to_string(op.id), rho, pos.size(), rows[from].position, short_number(early), kMinGrowthRows,
                   short_number(later)),
       {{"spearman", rho},
        {"rows", pos.size()},
        {"from_position", rows[from].position},
        {"early_nmse", early},
        {"later_median_nmse", later}}});
}

void decode_only(const OpResult& op, std::span<const RowInfo> rows, std::vector<Diagnosis>& out) {
  bool prefill_rows = false, prefill_over = false;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (!rows[i].decode) prefill_rows = true, prefill_over = prefill_over || op.rows[i].over;
  if (!prefill_rows || prefill_over || op.rows_over == 0) return;
  out.push_back({model::DiagnosisCode::decode_only,
                 fmt::format("only decode rows of {} break the tolerance ({} rows); every prefill row is within it",
                             model::to_string(op.id), op.rows_over),
                 {{"rows_over", op.rows_over}}});
}

void some_heads(const OpResult& op, std::vector<Diagnosis>& out) {
  if (op.head_err.size() < 2) return;
  std::vector<double> sorted = op.head_err;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  const double median = n % 2 != 0 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  std::vector<int> loud, quiet;
  for (std::size_t h = 0; h < n; ++h)
    if (op.head_err[h] > kHeadFactor * median) loud.push_back(static_cast<int>(h));
  if (!loud.empty() && 2 * loud.size() < n) {
    out.push_back({model::DiagnosisCode::some_heads,
                   fmt::format("the error of {} is concentrated in head{} {} of {} (each above {}x the median head's "
                               "squared error {})",
                               model::to_string(op.id), loud.size() > 1 ? "s" : "", fmt::join(loud, ", "), n,
                               kHeadFactor, short_number(median)),
                   {{"heads", loud}, {"n_heads", n}, {"head_err", op.head_err}, {"median", median}}});
    return;
  }
  // Or most heads are wrong but some are untouched (a head mapping that is right for a few heads).
  loud.clear();
  for (std::size_t h = 0; h < n; ++h)
    (op.head_err[h] < kQuietHeadShare * sorted.back() ? quiet : loud).push_back(static_cast<int>(h));
  if (loud.empty() || quiet.empty()) return;
  out.push_back({model::DiagnosisCode::some_heads,
                 fmt::format("only some heads of {} carry the error: head{} {} of {} hold less than {} of the worst "
                             "head's squared error, heads {} carry it",
                             model::to_string(op.id), quiet.size() > 1 ? "s" : "", fmt::join(quiet, ", "), n,
                             short_number(kQuietHeadShare), fmt::join(loud, ", ")),
                 {{"heads", loud}, {"quiet_heads", quiet}, {"n_heads", n}, {"head_err", op.head_err}}});
}

// Which of two halves of the channels of a head carries the error, if only one does.
// A RoPE op's squared error in the faster- and the slower-turning half of the model's own rotation
// pairs (model::rope_pair; pair j turns at base^(-2j/rotary_dim)); nullopt for other ops.
std::optional<std::pair<double, double>> error_by_pair_speed(const OpResult& op, const model::ModelConfig& config) {
  const auto hd = static_cast<int>(op.channel_err.size());
  if (op.op_class() != model::OpClass::rope || hd < 4) return std::nullopt;
  const int pairs = std::min(model::rotary_dim(config), hd) / 2;
  double fast = 0, slow = 0;
  for (int j = 0; j < pairs; ++j) {
    const auto [a, b] = model::rope_pair(config.rope_style, j, pairs);
    (j < pairs / 2 ? fast : slow) +=
        op.channel_err[static_cast<std::size_t>(a)] + op.channel_err[static_cast<std::size_t>(b)];
  }
  return std::pair{fast, slow};
}

// An error of the rotation angles (a position offset, a chunk restarting its positions) moves the
// fast-turning pairs most and the slow ones hardly: the pairing is right. Reported instead of
// pair-pattern, whose halves would otherwise mistake it for a pairing.
bool rope_frequency(const OpResult& op, const model::ModelConfig& config, std::vector<Diagnosis>& out) {
  const auto speeds = error_by_pair_speed(op, config);
  if (!speeds || !(speeds->first > 0) || speeds->second >= kPatternShare * speeds->first) return false;
  const double share = speeds->second / speeds->first;
  out.push_back({model::DiagnosisCode::rope_frequency,
                 fmt::format("the faster-turning half of the RoPE pairs of {} carries the error (the slower half "
                             "holds {} of it): the rotation angles are off, not the pairing: suspect the positions "
                             "given to RoPE (an offset, a chunk restarting at 0)",
                             model::to_string(op.id), short_number(share)),
                 {{"slow_share", share}}});
  return true;
}

void pair_pattern(const OpResult& op, const model::ModelConfig& config, std::vector<Diagnosis>& out) {
  const std::size_t hd = op.channel_err.size();
  if (hd < 2 || rope_frequency(op, config, out)) return;
  double even = 0, odd = 0, low = 0, high = 0;
  for (std::size_t c = 0; c < hd; ++c) {
    (c % 2 == 0 ? even : odd) += op.channel_err[c];
    (c < hd / 2 ? low : high) += op.channel_err[c];
  }
  auto report = [&](double a, double b, const char* name_a, const char* name_b, const char* pairing) {
    const double loud = std::max(a, b), quiet = std::min(a, b);
    if (!(loud > 0) || quiet >= kPatternShare * loud) return;
    out.push_back({model::DiagnosisCode::pair_pattern,
                   fmt::format("only the {} channels of each head of {} carry the error (the {} ones hold {} of it): "
                               "suspect the RoPE pairing, {}",
                               a > b ? name_a : name_b, model::to_string(op.id), a > b ? name_b : name_a,
                               short_number(quiet / loud), pairing),
                   {{"channels", a > b ? name_a : name_b}, {"share", quiet / loud}}});
  };
  report(even, odd, "even", "odd", "interleaved pairs (2i, 2i+1)");
  report(low, high, "first-half", "second-half", "rotate-half pairs (i, i + head_dim/2)");
}

// B's worst value is within a factor 2 of its precision's largest finite value: overflow territory.
void near_limit(const OpResult& op, model::Precision precision, std::vector<Diagnosis>& out) {
  const double limit = model::largest_finite(precision), value = std::abs(op.worst.b);
  if (op.worst.index < 0 || !(value >= 0.5 * limit)) return;
  out.push_back({model::DiagnosisCode::near_dtype_limit,
                 fmt::format("{} reaches {} in B at position {}, within a factor 2 of the largest {} value ({}): "
                             "suspect overflow (a softmax without its max, an unscaled sum)",
                             model::to_string(op.id), short_number(op.worst.b), op.worst.position,
                             model::precision_name(precision), short_number(limit)),
                 {{"value", op.worst.b}, {"limit", limit}, {"position", op.worst.position}}});
}

// The rows over tolerance per sequence of a batch (empty for a single sequence).
std::vector<std::int64_t> rows_over_per_sequence(const OpResult& op, std::span<const RowInfo> rows) {
  std::int32_t last = 0;
  for (const RowInfo& r : rows) last = std::max(last, r.sequence);
  if (last == 0) return {};
  std::vector<std::int64_t> over(static_cast<std::size_t>(last) + 1, 0);
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (op.rows[i].over) ++over[static_cast<std::size_t>(rows[i].sequence)];
  return over;
}

void some_sequences(const OpResult& op, std::span<const RowInfo> rows, std::vector<Diagnosis>& out) {
  const std::vector<std::int64_t> over = rows_over_per_sequence(op, rows);
  std::vector<int> bad, clean;
  for (std::size_t s = 0; s < over.size(); ++s) (over[s] > 0 ? bad : clean).push_back(static_cast<int>(s));
  if (bad.empty() || clean.empty()) return;
  out.push_back(
      {model::DiagnosisCode::some_sequences,
       fmt::format("only some sequences of the batch break the tolerance of {}: sequence{} {} of {} ({} "
                   "rows past it), while sequence{} {} stay{} within it: suspect the batch bookkeeping (KV "
                   "segments, per-sequence positions or masks)",
                   model::to_string(op.id), bad.size() > 1 ? "s" : "", fmt::join(bad, ", "), over.size(), op.rows_over,
                   clean.size() > 1 ? "s" : "", fmt::join(clean, ", "), clean.size() > 1 ? "" : "s"),
       {{"sequences", bad}, {"clean_sequences", clean}, {"rows_over", over}}});
}

// The op's comparison over the rows of one sequence of a batch only, so the per-position
// diagnoses see one sequence's positions.
std::pair<OpResult, std::vector<RowInfo>> one_sequence(const OpResult& op, std::span<const RowInfo> rows,
                                                       std::int32_t sequence) {
  OpResult only = op;
  only.rows.clear();
  only.rows_over = 0;
  only.first_bad = -1;
  std::vector<RowInfo> kept;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].sequence != sequence) continue;
    if (op.rows[i].over && only.first_bad < 0) only.first_bad = static_cast<std::int64_t>(kept.size());
    only.rows_over += op.rows[i].over ? 1 : 0;
    only.rows.push_back(op.rows[i]);
    kept.push_back(rows[i]);
  }
  return {std::move(only), std::move(kept)};
}

// The culprit (else the symptom) is an attention op whose output sits on the plain mean of the
// values, where the truth's does not: the scores stopped mattering.
void attention_uniform(const BisectResult& r, std::vector<Diagnosis>& out) {
  const OpResult* op = r.culprit ? &r.local[*r.culprit] : r.run.first ? &r.run.ops[*r.run.first] : nullptr;
  if (!op || op->id.op != model::Op::attn || r.attention_uniformity.empty()) return;
  const UniformityStats& s = r.attention_uniformity[static_cast<std::size_t>(op->id.layer)];
  if (!s.collapsed()) return;
  out.push_back(
      {model::DiagnosisCode::attention_uniform,
       fmt::format("on A's inputs, {} of B is the plain mean of the values over the visible positions "
                   "(squared distance {} against A's {}): the attention weights collapsed to uniform, as "
                   "when the scores are all equal (a zero scale, scores lost before the softmax)",
                   model::to_string(op->id), short_number(s.b_to_uniform), short_number(s.a_to_uniform)),
       {{"b_to_uniform", s.b_to_uniform}, {"a_to_uniform", s.a_to_uniform}, {"b_to_a", s.b_to_a}, {"rows", s.rows}}});
}

// Where B chose other experts than A (its indexer kept other positions): flips past B's precision
// (a routing bug) where they are the first divergence (the first op past tolerance is that layer's
// moe_ids or idx_ids; later flips inherit an earlier error and blame no router), then the near ties
// (settled in a bisection: B continued with A's choice). Each kind of choice apart.
void routing(const CompareResult& result, std::vector<Diagnosis>& out) {
  const std::vector<RoutingFlip>& flips = result.routing;
  const OpResult* first_op = result.first ? &result.ops[*result.first] : nullptr;
  const auto is_bug = [&](const RoutingFlip& f) {
    return !f.near_tie() && first_op && first_op->id == model::TensorId{f.op, f.layer};
  };
  for (const model::Op op : {model::Op::moe_ids, model::Op::idx_ids}) {
    const bool experts = op == model::Op::moe_ids;
    const std::string_view chose =
        experts ? "B chose other experts than A" : "B's indexer kept other positions than A's";
    for (const bool near : {false, true}) {
      const auto counted = [&](const RoutingFlip& f) { return f.op == op && (near ? f.near_tie() : is_bug(f)); };
      const auto first = std::find_if(flips.begin(), flips.end(), counted);
      if (first == flips.end()) continue;
      const auto n = std::count_if(flips.begin(), flips.end(), counted);
      const std::string rows = fmt::format("{} row{}", n, n == 1 ? "" : "s");
      const std::string text =
          !near ? fmt::format(
                      "{} at {} of layer {} with a margin far outside its precision, where nothing before "
                      "differs: a routing bug ({}); first at {}",
                      chose, rows, first->layer,
                      experts ? "the router's logits, its top-k or the ids it hands on"
                              : "the indexer's scores, its top-k or the positions it hands on",
                      first->text())
          : first->settled
              ? fmt::format(
                    "{} at {}, each within its precision (a near tie, not a bug): B continued with A's "
                    "choice there; first at {}",
                    chose, rows, first->text())
              : fmt::format(
                    "{} at {}, each within its precision (a near tie, not a bug), and its later ops inherit "
                    "the other choice's output: tapdiff bisect continues with A's choice past it; first at {}",
                    chose, rows, first->text());
      out.push_back({near ? model::DiagnosisCode::routing_near_tie : model::DiagnosisCode::routing_flip,
                     text,
                     {{"rows", n}, {"first", to_json(*first)}}});
    }
  }
}

}  // namespace

double spearman(std::span<const double> x, std::span<const double> y) {
  if (x.size() != y.size() || x.size() < 2) return 0;
  const std::vector<double> rx = ranks(x), ry = ranks(y);
  const double mean = 0.5 * static_cast<double>(x.size() - 1);
  double sxy = 0, sxx = 0, syy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double dx = rx[i] - mean, dy = ry[i] - mean;
    sxy += dx * dy, sxx += dx * dx, syy += dy * dy;
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : 0;
}

std::vector<Diagnosis> diagnose_op(const OpResult& whole, std::span<const RowInfo> all_rows,
                                   const model::ModelConfig& config) {
  std::vector<Diagnosis> out;
  if (whole.pass() || whole.first_bad < 0 || all_rows.size() != whole.rows.size()) return out;
  some_sequences(whole, all_rows, out);
  const auto [op, rows] = one_sequence(whole, all_rows, whole.first_bad_row.sequence);
  // An error that starts at a later chunk's first row leaves position 0 exact by that alone:
  // chunk-start says it, and position-zero-exact's suspect (the weighting, the angles) would mislead.
  const std::size_t before = out.size();
  chunk_start(op, op.first_bad_row, out);
  if (out.size() == before) position_zero(op, rows, out);
  growth(op, rows, out);
  decode_only(op, rows, out);
  some_heads(op, out);
  pair_pattern(op, config, out);
  return out;
}

std::vector<Diagnosis> diagnose(const CompareResult& result) {
  std::vector<Diagnosis> out;
  routing(result, out);
  if (result.first) {
    const std::vector<Diagnosis> first = diagnose_op(result.ops[*result.first], result.alignment.rows, result.config);
    out.insert(out.end(), first.begin(), first.end());
    near_limit(result.ops[*result.first], result.precision.value, out);
  }
  const auto nonfinite = std::find_if(result.ops.begin(), result.ops.end(), [](const OpResult& op) {
    return op.metrics.nonfinite > 0 || op.metrics.nonfinite_both > 0;
  });
  if (nonfinite != result.ops.end()) {
    const Metrics& m = nonfinite->metrics;
    const std::int64_t count = m.nonfinite > 0 ? m.nonfinite : m.nonfinite_both;
    out.push_back({model::DiagnosisCode::nonfinite,
                   fmt::format("{} has {} NaN/Inf value{} {} (the first op with any); from there on they spread",
                               model::to_string(nonfinite->id), count, count == 1 ? "" : "s",
                               m.nonfinite > 0 ? "where the other run has a different value"
                                               : "in both runs alike: not compared, so not passed"),
                   {{"layer", nonfinite->id.layer},
                    {"op", model::op_name(nonfinite->id.op)},
                    {"count", count},
                    {"both", m.nonfinite == 0}}});
  }
  return out;
}

namespace {

void add_new(std::vector<Diagnosis>& out, const std::vector<Diagnosis>& more) {
  for (const Diagnosis& d : more)
    if (std::none_of(out.begin(), out.end(), [&](const Diagnosis& o) { return o.code == d.code; })) out.push_back(d);
}

// The diagnoses of an isolation: the culprit's local error, the comparison's not already given,
// whether the symptom only inherits its error, and an error no op owns.
void isolation_diagnoses(const CompareResult& run, std::span<const OpResult> local, std::span<const RowInfo> local_rows,
                         std::optional<std::size_t> culprit, std::optional<std::size_t> symptom_local,
                         LocalInputs inputs, bool every_op_checked, std::vector<Diagnosis>& out) {
  if (culprit) add_new(out, diagnose_op(local[*culprit], local_rows, run.config));
  add_new(out, diagnose(run));
  if (run.first && symptom_local && symptom_local != culprit) {
    const OpResult& symptom = run.ops[*run.first];
    const OpResult& own = local[*symptom_local];
    if (own.pass())
      out.push_back(
          {model::DiagnosisCode::inherits_error,
           fmt::format("{} is past tolerance only through its inputs: run on {} its own error is "
                       "nmse {} (tolerance {})",
                       model::to_string(symptom.id), local_inputs_text(inputs), short_number(own.metrics.nmse),
                       own.tolerance.bound.nmse ? short_number(*own.tolerance.bound.nmse) : "none"),
           {{"op", model::to_string(symptom.id)}, {"local_nmse", own.metrics.nmse}}});
  }
  if (run.first && !culprit && every_op_checked)
    out.push_back({model::DiagnosisCode::accumulated,
                   fmt::format("no op's own error is past its tolerance when it runs on {}: the divergence "
                               "accumulates from errors each within tolerance",
                               local_inputs_text(inputs)),
                   {{"scanned_rows", local_rows.size()}}});
}

}  // namespace

std::vector<Diagnosis> diagnose(const CompareResult& result, const LocalCheck& local) {
  std::vector<Diagnosis> out;
  isolation_diagnoses(result, local.local, local.rows, local.culprit, local.symptom_of(result), LocalInputs::b_own,
                      local.undecidable.empty(), out);
  if (!local.undecidable.empty()) {
    std::vector<std::string> ops;
    for (const Undecidable& u : local.undecidable) ops.push_back(model::to_string(u.id));
    const std::vector<std::string> missing = local.missing_taps();
    out.push_back({model::DiagnosisCode::unchecked,
                   fmt::format("{} op{} of B's dump could not be checked on B's own inputs: tapping {} would make "
                               "them decidable",
                               ops.size(), ops.size() == 1 ? "" : "s", fmt::join(missing, ", ")),
                   {{"ops", ops}, {"missing_taps", missing}}});
  }
  return out;
}

std::vector<Diagnosis> diagnose(const BisectResult& result) {
  std::vector<Diagnosis> out;
  attention_uniform(result, out);
  isolation_diagnoses(result.run, result.local, result.local_rows, result.culprit, result.symptom_local, LocalInputs::a,
                      true, out);
  const TokenImpact& t = result.tokens;
  if (t.early_eos_b())
    out.push_back({model::DiagnosisCode::early_eos,
                   fmt::format("engine B generates EOS at step {}{}", *t.eos_step_b,
                               t.eos_step_a ? fmt::format(", engine A only at step {}", *t.eos_step_a)
                                            : std::string(", engine A not at all")),
                   {{"step_b", *t.eos_step_b}, {"step_a", t.eos_step_a ? nlohmann::json(*t.eos_step_a) : nullptr}}});
  return out;
}

}  // namespace tapdiff::bisect
