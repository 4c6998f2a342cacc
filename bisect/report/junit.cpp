#include "bisect/report/junit.h"

#include <fmt/core.h>

#include "bisect/compare/text_format.h"

namespace tapdiff::bisect {
namespace {

std::string failure_message(const OpResult& op) {
  std::string message;
  for (const Violation& v : op.violations) message += (message.empty() ? "" : "; ") + v.text();
  return message;
}

std::string failure_detail(const OpResult& op) {
  std::string detail = fmt::format("tolerance: {} ({})\n", describe(op.tolerance.bound), op.tolerance.source);
  if (op.first_bad >= 0) detail += fmt::format("first position over tolerance: {}\n", op.first_bad_row.position);
  const WorstElement& w = op.worst;
  if (w.index >= 0) {
    const auto [a, b] = distinct_numbers(w.a, w.b);
    const std::string head = w.head >= 0 ? fmt::format(" head {}", w.head) : "";
    detail += fmt::format("worst: position {}{} channel {}: {} vs {}\n", w.position, head, w.channel, a, b);
  }
  detail += fmt::format("nmse {} max_abs {} max_rel {} cosine {} nonfinite {}", short_number(op.metrics.nmse),
                        short_number(op.metrics.max_abs), short_number(op.metrics.max_rel),
                        short_number(op.metrics.cosine), op.metrics.nonfinite);
  return detail;
}

}  // namespace

std::string junit_xml(const Finding& f) {
  const CompareResult& r = f.run;
  const std::string suite_name = "tapdiff compare";
  // Every run problem is a failing test case of its own: a CI gate counting failures sees it.
  std::size_t failures = r.problems.size();
  for (const OpResult& op : r.ops) failures += op.pass() ? 0 : 1;
  const std::size_t tests = r.ops.size() + r.problems.size();
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml += fmt::format("<testsuites name=\"{0}\" tests=\"{1}\" failures=\"{2}\" errors=\"0\">\n", xml_escape(suite_name),
                     tests, failures);
  xml += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"0\">\n",
                     xml_escape(suite_name), tests, failures);
  xml += "    <properties>\n";
  for (const auto& [name, value] : {std::pair<std::string, std::string>{"a", r.a.path},
                                    {"b", r.b.path},
                                    {"dtype", std::string(model::precision_name(r.precision.value))},
                                    {"tolerances", r.tolerance_source.empty() ? "built-in" : r.tolerance_source},
                                    {"positions", std::to_string(r.alignment.rows.size())}})
    xml += fmt::format("      <property name=\"{}\" value=\"{}\"/>\n", name, xml_escape(value));
  xml += "    </properties>\n";
  for (const OpResult& op : r.ops) {
    const std::string name = xml_escape(model::to_string(op.id));
    const std::string cls = fmt::format("tapdiff.{}", model::op_class_name(op.op_class()));
    if (op.pass()) {
      xml += fmt::format("    <testcase name=\"{}\" classname=\"{}\"/>\n", name, cls);
      continue;
    }
    xml += fmt::format("    <testcase name=\"{}\" classname=\"{}\">\n", name, cls);
    xml += fmt::format("      <failure message=\"{}\" type=\"divergence\">{}</failure>\n",
                       xml_escape(failure_message(op)), xml_escape(failure_detail(op)));
    xml += "    </testcase>\n";
  }
  for (const RunProblem& p : r.problems) {
    xml += fmt::format("    <testcase name=\"run/{}\" classname=\"tapdiff.run\">\n",
                       xml_escape(std::string(run_problem_name(p.code))));
    xml += fmt::format("      <failure message=\"{}\" type=\"{}\">{}</failure>\n", run_problem_name(p.code),
                       p.unjudged ? "incomplete" : "divergence", xml_escape(p.text));
    xml += "    </testcase>\n";
  }
  xml += "  </testsuite>\n</testsuites>\n";
  return xml;
}

}  // namespace tapdiff::bisect
