#include "bisect/report/isolation.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "bisect/compare/text_format.h"
#include "bisect/report/json.h"

namespace tapdiff::bisect {
namespace {

using nlohmann::json;

// Where the local error of an op first shows and where it is largest.
std::string local_where(const OpResult& op, bool batch) {
  std::string s;
  if (op.first_bad >= 0) {
    const RowInfo& row = op.first_bad_row;
    s = fmt::format(", first at position {} ({}{}chunk {})", row.position,
                    batch ? fmt::format("sequence {}, ", row.sequence) : std::string(),
                    row.decode ? "decode step, " : "", row.chunk_b);
  }
  const WorstElement& w = op.worst;
  if (w.index >= 0)
    s += fmt::format(", worst at position {}{}{} channel {}", w.position,
                     batch ? fmt::format(" of sequence {}", w.sequence) : std::string(),
                     w.head >= 0 ? fmt::format(" head {}", w.head) : std::string(), w.channel);
  return s;
}

}  // namespace

std::string op_title(const OpResult& op) {
  return fmt::format("layer {} {} ({})", op.id.layer, model::op_name(op.id.op), model::op_class_name(op.op_class()));
}

std::string culprit_text(const CompareResult& run, const Isolation& i) {
  if (run.match()) return {};
  if (!run.first && !i.culprit)
    return "none: every op is within tolerance; the runs differ only as the run problems say";
  if (!i.culprit && i.unchecked_ops > 0)
    return fmt::format(
        "unchecked: no op checked on {} is past its tolerance, but {} op{} could not be checked: "
        "tapping {} would decide {}",
        local_inputs_text(i.inputs), i.unchecked_ops, i.unchecked_ops == 1 ? "" : "s", fmt::join(i.missing_taps, ", "),
        i.unchecked_ops == 1 ? "it" : "them");
  if (!i.culprit)
    return fmt::format("no op is past its tolerance on {}: the error accumulates (see the diagnosis)",
                       local_inputs_text(i.inputs));
  const OpResult& op = i.local[*i.culprit];
  return fmt::format(
      "{}: its own error on {} {}{}{}", op_title(op), local_inputs_text(i.inputs), op.violations.front().text(),
      local_where(op, i.batch),
      run.first ? "" : " (the run's ops are each within tolerance: the error stays below it downstream)");
}

std::string symptom_text(const CompareResult& run, const Isolation& i) {
  if (!run.first || !i.symptom_local) return {};
  const OpResult& local = i.local[*i.symptom_local];
  if (i.symptom_is_culprit()) return fmt::format("{} is itself wrong", op_title(local));
  if (local.pass())
    return fmt::format("{} inherits its error: on {} its own nmse is {} (tolerance {})", op_title(local),
                       local_inputs_text(i.inputs), short_number(local.metrics.nmse), describe(local.tolerance.bound));
  return fmt::format("{} is also wrong on {}, but an earlier op is the first", op_title(local),
                     local_inputs_text(i.inputs));
}

std::string isolation_lines(const CompareResult& run, const Isolation& i) {
  if (run.match()) return {};
  std::string out = fmt::format("culprit  {}\n", culprit_text(run, i));
  if (const std::string s = symptom_text(run, i); !s.empty()) out += fmt::format("symptom  {}\n", s);
  return out;
}

std::string isolation_html(const CompareResult& run, const Isolation& i) {
  if (run.match()) return {};
  std::string out = fmt::format("<p><b>culprit</b>: {}</p>\n", xml_escape(culprit_text(run, i)));
  if (const std::string s = symptom_text(run, i); !s.empty())
    out += fmt::format("<p><b>symptom</b>: {}</p>\n", xml_escape(s));
  return out;
}

void add_isolation_json(json& report, const CompareResult& run, const Isolation& i) {
  report["culprit"] = nullptr;
  if (i.culprit) {
    const OpResult& op = i.local[*i.culprit];
    json c = op_json(op);
    c["position"] = op.first_bad >= 0 ? json(op.first_bad_row.position) : json(nullptr);
    c["chunk"] = op.first_bad >= 0 ? json(op.first_bad_row.chunk_b) : json(nullptr);
    c["text"] = culprit_text(run, i);
    report["culprit"] = std::move(c);
  }
  report["isolation"] = nullptr;
  if (run.first && i.symptom_local) {
    const OpResult& local = i.local[*i.symptom_local];
    report["isolation"] = {{"layer", local.id.layer},
                           {"op", model::op_name(local.id.op)},
                           {"local_metrics", metrics_json(local.metrics)},
                           {"local_pass", local.pass()},
                           {"itself_wrong", !local.pass()},
                           {"text", symptom_text(run, i)}};
  }
  json local = json::array();
  for (const OpResult& op : i.local) local.push_back(op_json(op));
  report["local"] = std::move(local);
  report["local_positions"] = i.positions;
}

}  // namespace tapdiff::bisect
