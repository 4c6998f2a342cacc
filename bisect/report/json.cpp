#include "bisect/report/json.h"

#include <algorithm>

#include "bisect/report/isolation.h"
#include "bisect/report/live_run.h"

namespace tapdiff::bisect {
namespace {

using nlohmann::json;

json bound_json(const Tolerance& t) {
  json out = {{"source", t.source}};
  if (t.bound.nmse) out["nmse"] = *t.bound.nmse;
  if (t.bound.max_abs) out["max_abs"] = *t.bound.max_abs;
  if (t.bound.max_rel) out["max_rel"] = *t.bound.max_rel;
  if (t.bound.min_cosine) out["min_cosine"] = *t.bound.min_cosine;
  return out;
}

json worst_json(const WorstElement& w) {
  if (w.index < 0) return nullptr;
  return {{"position", w.position},
          {"sequence", w.sequence},
          {"head", w.head},
          {"channel", w.channel},
          {"col", w.col},
          {"a", w.a},
          {"b", w.b},
          {"around", {{"first_col", w.around_first_col}, {"a", w.around_a}, {"b", w.around_b}}}};
}

json run_json(const RunInfo& run) {
  const dumps::RunMetadata& m = run.metadata;
  return {{"path", run.path},
          {"engine", m.engine},
          {"device", m.device},
          {"compute_dtype", m.compute_dtype},
          {"storage_dtype", m.storage_dtype},
          {"kernels", m.kernels},
          {"chunk_size", m.chunk_size},
          {"model_path", m.model_path},
          {"model_sha256", m.model_sha256},
          {"tool_version", m.tool_version},
          {"created", m.created},
          {"command_line", m.command_line},
          {"rows", run.rows},
          {"complete", run.complete}};
}

json rows_json(const RowAlignment& al) {
  auto optional = [](const std::optional<std::int32_t>& v) { return v ? json(*v) : json(nullptr); };
  return {{"compared", al.rows.size()},
          {"first_position", al.rows.empty() ? json(nullptr) : json(al.rows.front().position)},
          {"last_position", al.rows.empty() ? json(nullptr) : json(al.rows.back().position)},
          {"only_a", al.only_a},
          {"only_b", al.only_b},
          {"token_mismatch_position", optional(al.token_mismatch_position)},
          {"after_token_mismatch", al.after_mismatch},
          {"beyond_max_rows", al.beyond_max_rows}};
}

// The first op past tolerance, with where it starts and its error per position.
json first_json(const OpResult& op, std::span<const RowInfo> rows) {
  json out = op_json(op);
  const RowInfo& row = op.first_bad_row;
  out["position"] = row.position;
  out["chunk"] = row.chunk_b;
  out["chunk_a"] = row.chunk_a;
  out["chunk_b"] = row.chunk_b;
  out["chunk_start"] = (row.chunk_start_a && row.chunk_a > 0) || (row.chunk_start_b && row.chunk_b > 0);
  out["decode"] = row.decode;
  out["sequence"] = row.sequence;
  const bool batch = is_batch(rows);
  json per_position = json::array();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    per_position.push_back({{"position", rows[i].position},
                            {"nmse", op.rows[i].nmse},
                            {"max_abs", op.rows[i].max_abs},
                            {"over", op.rows[i].over}});
    if (batch) per_position.back()["sequence"] = rows[i].sequence;
  }
  out["per_position"] = std::move(per_position);
  return out;
}

json tokens_json(const TokenComparison& t) {
  auto list = [](const std::optional<std::vector<std::int32_t>>& v) { return v ? json(*v) : json(nullptr); };
  return {{"first_mismatch_step", t.first_mismatch_step ? json(*t.first_mismatch_step) : json(nullptr)},
          {"a", list(t.a)},
          {"b", list(t.b)},
          {"tie", t.tie ? t.tie->json() : json(nullptr)}};
}

// Where B chose other experts than A: counts, and the first 100 rows in full.
json routing_json(const std::vector<RoutingFlip>& flips) {
  constexpr std::size_t kListed = 100;
  json listed = json::array();
  for (std::size_t i = 0; i < std::min(flips.size(), kListed); ++i) listed.push_back(to_json(flips[i]));
  return {{"flips", flips.size()},
          {"near_ties", std::count_if(flips.begin(), flips.end(), [](const RoutingFlip& f) { return f.near_tie(); })},
          {"first", std::move(listed)}};
}

}  // namespace

json metrics_json(const Metrics& m) {
  return {{"count", m.count},     {"nonfinite", m.nonfinite}, {"nonfinite_both", m.nonfinite_both},
          {"max_abs", m.max_abs}, {"max_rel", m.max_rel},     {"rms_err", m.rms_err},
          {"nmse", m.nmse},       {"cosine", m.cosine}};
}

json op_json(const OpResult& op) {
  json violations = json::array();
  for (const Violation& v : op.violations)
    violations.push_back({{"metric", v.metric}, {"value", v.value}, {"bound", v.bound}, {"text", v.text()}});
  return {{"layer", op.id.layer},
          {"op", model::op_name(op.id.op)},
          {"class", model::op_class_name(op.op_class())},
          {"pass", op.pass()},
          {"metrics", metrics_json(op.metrics)},
          {"tolerance", bound_json(op.tolerance)},
          {"violations", std::move(violations)},
          {"worst", worst_json(op.worst)},
          {"rows_over", op.rows_over},
          {"first_bad_position", op.first_bad >= 0 ? json(op.first_bad_row.position) : json(nullptr)}};
}

json report_json(const Finding& f) {
  const CompareResult& r = f.run;
  json out;
  out["verdict"] = verdict_name(r.verdict());
  out["first"] = r.first ? first_json(r.ops[*r.first], r.alignment.rows) : json(nullptr);
  if (f.isolation) {
    add_isolation_json(out, r, *f.isolation);
  } else {
    out["culprit"] = nullptr;
    out["culprit_note"] =
        "compare of two dumps alone cannot isolate the culprit: give --model (each op of B run by the reference on "
        "B's own inputs), or run tapdiff bisect (B's ops on A's inputs). 'first' is the symptom: the first op past "
        "tolerance, which may inherit its error.";
  }
  json diagnosis = json::array();
  for (const Diagnosis& d : f.diagnoses)
    diagnosis.push_back({{"code", model::diagnosis_name(d.code)}, {"text", d.text}, {"evidence", d.evidence}});
  out["diagnosis"] = std::move(diagnosis);
  json problems = json::array();
  for (const RunProblem& p : r.problems)
    problems.push_back(
        {{"code", run_problem_name(p.code)}, {"text", p.text}, {"evidence", p.evidence}, {"unjudged", p.unjudged}});
  out["problems"] = std::move(problems);
  out["tokens"] = tokens_json(r.tokens);
  std::size_t failing = 0;
  json ops = json::array();
  for (const OpResult& op : r.ops) {
    ops.push_back(op_json(op));
    failing += op.pass() ? 0 : 1;
  }
  out["ops"] = std::move(ops);
  out["summary"] = {{"ops", r.ops.size()}, {"failing", failing}, {"positions", r.alignment.rows.size()}};
  out["rows"] = rows_json(r.alignment);
  out["tolerances"] = {{"file", r.tolerance_source.empty() ? json(nullptr) : json(r.tolerance_source)},
                       {"dtype", model::precision_name(r.precision.value)},
                       {"dtype_from", from_name(r.precision.from)},
                       {"dtype_evidence", r.precision.evidence},
                       {"builtin_dtype", model::precision_name(r.builtin_precision)},
                       {"builtin_dtype_finest", model::precision_name(r.builtin_finest)}};
  auto names = [](const std::vector<model::TensorId>& ids) {
    json list = json::array();
    for (const auto& id : ids) list.push_back(model::to_string(id));
    return list;
  };
  out["not_compared"] = {{"only_in_a", names(r.only_a)}, {"only_in_b", names(r.only_b)}};
  out["runs"] = {{"a", run_json(r.a)}, {"b", run_json(r.b)}};
  out["routing"] = routing_json(r.routing);
  out["bytes_read"] = r.bytes_read;
  if (f.live) add_live_json(out, r, *f.live);
  return out;
}

}  // namespace tapdiff::bisect
