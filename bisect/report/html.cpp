#include "bisect/report/html.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/core.h>

#include "bisect/compare/text_format.h"
#include "bisect/report/isolation.h"
#include "bisect/report/live_run.h"
#include "bisect/report/terminal.h"

namespace tapdiff::bisect {
namespace {

constexpr double kLogLow = -16, kLogHigh = 0;  // heatmap colour scale of log10 NMSE
constexpr std::size_t kMaxPlotPoints = 1500;   // per-position plot: rows are bucketed above this

// Green (NMSE 1e-16 and below) through yellow to red (1 and above); pale for exactly 0.
std::string cell_colour(double nmse) {
  if (nmse == 0) return "#e8f3e8";
  if (!std::isfinite(nmse)) return "#202020";
  const double t = std::clamp((std::log10(nmse) - kLogLow) / (kLogHigh - kLogLow), 0.0, 1.0);
  return fmt::format("hsl({:.0f},75%,{:.0f}%)", 120 * (1 - t), 42 + 10 * (1 - t));
}

std::string legend_svg(double x, double y) {
  std::string s;
  for (int i = 0; i <= 16; ++i) {
    const double v = kLogLow + i;
    s += fmt::format("<rect x='{}' y='{}' width='14' height='10' fill='{}'/>", x + i * 14, y,
                     cell_colour(std::pow(10, v)));
    if (i % 4 == 0) s += fmt::format("<text x='{}' y='{}' class='small'>1e{}</text>", x + i * 14, y + 22, v);
  }
  return s + fmt::format("<text x='{}' y='{}' class='small'>log10 NMSE; black border: past tolerance</text>", x + 250,
                         y + 9);
}

// (x, y) of a point of the per-position plot: rows bucketed to at most kMaxPlotPoints, keeping
// each bucket's largest error so a spike is never averaged away.
std::vector<std::pair<double, double>> plot_points(const OpResult& op, std::span<const RowInfo> rows) {
  const std::size_t n = rows.size(), bucket = std::max<std::size_t>(1, (n + kMaxPlotPoints - 1) / kMaxPlotPoints);
  std::vector<std::pair<double, double>> points;
  for (std::size_t i = 0; i < n; i += bucket) {
    double worst = 0;
    for (std::size_t j = i; j < std::min(n, i + bucket); ++j)
      worst = std::max(worst, static_cast<double>(op.rows[j].nmse));
    points.emplace_back(rows[i].position, worst > 0 ? std::log10(worst) : -std::numeric_limits<double>::infinity());
  }
  return points;
}

std::string meta_table(const CompareResult& r) {
  auto row = [](const char* key, const std::string& a, const std::string& b) {
    return fmt::format("<tr><th>{}</th><td>{}</td><td>{}</td></tr>\n", key, xml_escape(a), xml_escape(b));
  };
  const dumps::RunMetadata &a = r.a.metadata, &b = r.b.metadata;
  std::string s = "<table><tr><th></th><th>A (reference)</th><th>B</th></tr>\n";
  s += row("file", r.a.path, r.b.path);
  s += row("engine", a.engine, b.engine);
  s += row("device", a.device, b.device);
  s += row("compute dtype", a.compute_dtype, b.compute_dtype);
  s += row("storage dtype", a.storage_dtype, b.storage_dtype);
  s += row("chunk size", std::to_string(a.chunk_size), std::to_string(b.chunk_size));
  s += row("rows", std::to_string(r.a.rows), std::to_string(r.b.rows));
  s += row("model", a.model_path, b.model_path);
  s += row("model sha256", a.model_sha256, b.model_sha256);
  s += row("created", a.created, b.created);
  s += row("command", a.command_line, b.command_line);
  return s + "</table>\n";
}

std::string failing_table(const CompareResult& r) {
  std::string s =
      "<table><tr><th>layer</th><th>op</th><th>class</th><th>nmse</th><th>max_abs</th><th>1 - cosine</th>"
      "<th>first position</th><th>worst (position, head, channel): A vs B</th><th>past tolerance</th></tr>\n";
  for (const OpResult& op : r.ops) {
    if (op.pass()) continue;
    std::string broken;
    for (const Violation& v : op.violations) broken += (broken.empty() ? "" : "; ") + v.text();
    const WorstElement& w = op.worst;
    const auto [wa, wb] = distinct_numbers(w.a, w.b);
    s += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>({}, {}, {}): {} vs {}</td><td>{}</td></tr>\n",
        op.id.layer, model::op_name(op.id.op), model::op_class_name(op.op_class()), short_number(op.metrics.nmse),
        short_number(op.metrics.max_abs), short_number(1 - op.metrics.cosine), op.first_bad_row.position, w.position,
        w.head, w.channel, wa, wb, xml_escape(broken));
  }
  return s + "</table>\n";
}

constexpr const char* kStyle =
    "body{font-family:sans-serif;margin:2em;color:#222}h1{font-size:1.3em}.match{color:#1a7f37}"
    ".diverged{color:#c62828}table{border-collapse:collapse;font-size:.85em;margin:.5em 0}"
    "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}svg text{font-size:11px;font-family:sans-serif}"
    "svg .small{font-size:9px}code{background:#f3f3f3;padding:0 3px}";

}  // namespace

std::string heatmap_svg(const CompareResult& r) {
  std::set<int> layer_set;
  std::set<int> op_set;
  for (const OpResult& op : r.ops) layer_set.insert(op.id.layer), op_set.insert(static_cast<int>(op.id.op));
  const std::vector<int> layers(layer_set.begin(), layer_set.end()), ops(op_set.begin(), op_set.end());
  const double cw = 30, ch = 16, left = 44, top = 96;
  const double width = left + cw * static_cast<double>(ops.size()) + 20;
  const double height = top + ch * static_cast<double>(layers.size()) + 40;
  std::string s = fmt::format("<svg width='{}' height='{}' class='heatmap'>\n", std::max(width, 520.0), height);
  for (std::size_t j = 0; j < ops.size(); ++j)
    s += fmt::format("<text transform='translate({},{}) rotate(-60)'>{}</text>\n",
                     left + cw * static_cast<double>(j) + cw / 2, top - 4,
                     model::op_name(static_cast<model::Op>(ops[j])));
  for (std::size_t i = 0; i < layers.size(); ++i)
    s += fmt::format("<text x='4' y='{}'>{}</text>\n", top + ch * static_cast<double>(i) + 12, layers[i]);
  for (const OpResult& op : r.ops) {
    const auto i = static_cast<double>(std::find(layers.begin(), layers.end(), op.id.layer) - layers.begin());
    const auto j = static_cast<double>(std::find(ops.begin(), ops.end(), static_cast<int>(op.id.op)) - ops.begin());
    s += fmt::format(
        "<rect x='{}' y='{}' width='{}' height='{}' fill='{}' stroke='{}' stroke-width='{}'><title>{} "
        "nmse {} {}</title></rect>\n",
        left + cw * j, top + ch * i, cw - 2, ch - 2, cell_colour(op.metrics.nmse), op.pass() ? "none" : "#000",
        op.pass() ? 0 : 2, model::to_string(op.id), short_number(op.metrics.nmse),
        op.pass() ? "within tolerance" : "PAST TOLERANCE");
  }
  return s + legend_svg(left, top + ch * static_cast<double>(layers.size()) + 10) + "</svg>\n";
}

std::string position_plot_svg(const OpResult& op, std::span<const RowInfo> rows) {
  const double w = 820, h = 260, left = 56, right = 16, top = 16, bottom = 36;
  const auto points = plot_points(op, rows);
  if (points.empty()) return "<svg width='10' height='10'></svg>\n";
  double lo = 0, hi = -30;
  for (const auto& [x, y] : points)
    if (std::isfinite(y)) lo = std::min(lo, y), hi = std::max(hi, y);
  const double bound =
      op.tolerance.bound.nmse && *op.tolerance.bound.nmse > 0 ? std::log10(*op.tolerance.bound.nmse) : NAN;
  if (std::isfinite(bound)) lo = std::min(lo, bound), hi = std::max(hi, bound);
  lo = std::floor(lo) - 1, hi = std::ceil(std::max(hi, lo + 2));
  const double x0 = points.front().first, x1 = std::max(points.back().first, x0 + 1);
  auto px = [&](double x) { return left + (x - x0) / (x1 - x0) * (w - left - right); };
  auto py = [&](double y) { return top + (hi - std::max(y, lo)) / (hi - lo) * (h - top - bottom); };
  std::string s = fmt::format("<svg width='{}' height='{}' class='plot'>\n", w, h);
  s += fmt::format("<rect x='{}' y='{}' width='{}' height='{}' fill='none' stroke='#999'/>\n", left, top,
                   w - left - right, h - top - bottom);
  const int step = std::max(1, static_cast<int>((hi - lo) / 6));
  for (int e = static_cast<int>(lo); e <= static_cast<int>(hi); e += step)
    s += fmt::format("<text x='4' y='{}'>1e{}</text><line x1='{}' x2='{}' y1='{}' y2='{}' stroke='#eee'/>\n", py(e) + 4,
                     e, left, w - right, py(e), py(e));
  for (int k = 0; k <= 8; ++k) {
    const double x = x0 + (x1 - x0) * k / 8;
    s += fmt::format("<text x='{}' y='{}'>{:.0f}</text>\n", px(x) - 8, h - bottom + 14, x);
  }
  s += fmt::format("<text x='{}' y='{}'>position</text>\n", w / 2, h - 4);
  if (std::isfinite(bound))
    s += fmt::format(
        "<line x1='{}' x2='{}' y1='{}' y2='{}' stroke='#c62828' stroke-dasharray='5,4'><title>tolerance "
        "nmse {}</title></line>\n",
        left, w - right, py(bound), py(bound), short_number(*op.tolerance.bound.nmse));
  if (op.first_bad >= 0) {
    const double x = px(op.first_bad_row.position);
    s += fmt::format(
        "<line x1='{0}' x2='{0}' y1='{1}' y2='{2}' stroke='#ef6c00'><title>first position past tolerance: {3}"
        "</title></line>\n",
        x, top, h - bottom, op.first_bad_row.position);
  }
  std::string poly;
  for (const auto& [x, y] : points) poly += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
  return s + fmt::format("<polyline fill='none' stroke='#1565c0' stroke-width='1.2' points='{}'/>\n</svg>\n", poly);
}

std::string html_report(const Finding& f) {
  const CompareResult& r = f.run;
  std::string s = fmt::format(
      "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>tapdiff: "
      "{}</title><style>{}</style></head><body>\n",
      verdict_name(r.verdict()), kStyle);
  s += fmt::format("<h1 class='{}'>{}</h1>\n", r.match() ? "match" : "diverged", xml_escape(verdict_line(r)));
  if (f.isolation) s += isolation_html(r, *f.isolation);
  if (f.live) s += fmt::format("<pre>{}</pre>\n", xml_escape(live_tokens_text(r, *f.live)));
  if (!r.problems.empty()) {
    s += "<h2>Run problems</h2><ul>\n";
    for (const RunProblem& p : r.problems)
      s += fmt::format("<li><b>{}</b>: {}</li>\n", run_problem_name(p.code), xml_escape(p.text));
    s += "</ul>\n";
  }
  s += fmt::format(
      "<p>A = <code>{}</code> (reference), B = <code>{}</code>; {} positions compared; tolerances: {} (B computes "
      "in {}, built-in defaults for {}).</p>\n",
      xml_escape(r.a.path), xml_escape(r.b.path), r.alignment.rows.size(),
      xml_escape(r.tolerance_source.empty() ? "built-in" : r.tolerance_source), precision_text(r.precision),
      builtin_precision_text(r));
  if (!f.diagnoses.empty()) {
    s += "<h2>Diagnosis</h2><ul>\n";
    for (const Diagnosis& d : f.diagnoses)
      s += fmt::format("<li><b>{}</b>: {}</li>\n", model::diagnosis_name(d.code), xml_escape(d.text));
    s += "</ul>\n";
  }
  s += "<h2>Error per layer and op</h2>\n" + heatmap_svg(r);
  if (!r.ops.empty()) {
    const auto worst = std::max_element(r.ops.begin(), r.ops.end(), [](const OpResult& x, const OpResult& y) {
      return x.metrics.nmse < y.metrics.nmse;
    });
    const OpResult& op = r.first ? r.ops[*r.first] : *worst;
    s += fmt::format("<h2>Error per position: {} ({})</h2>\n", model::to_string(op.id),
                     r.first ? "the first op past tolerance" : "the op of largest NMSE");
    s += "<p>Row NMSE per position (log scale); dashed: the op's NMSE tolerance; orange: first position past it.</p>\n";
    s += position_plot_svg(op, r.alignment.rows);
  }
  if (r.first) s += "<h2>Ops past tolerance</h2>\n" + failing_table(r);
  s += "<h2>Runs</h2>\n" + meta_table(r);
  if (!f.isolation)
    s += "<p><small>culprit: not isolated; give compare --model to run each op of B on B's own inputs, or use "
         "tapdiff bisect.</small></p>\n";
  return s + "</body></html>\n";
}

}  // namespace tapdiff::bisect
