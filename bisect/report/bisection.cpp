#include "bisect/report/bisection.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "bisect/compare/text_format.h"
#include "bisect/report/html.h"
#include "bisect/report/isolation.h"
#include "bisect/report/json.h"
#include "bisect/report/terminal.h"

namespace tapdiff::bisect {
namespace {

using nlohmann::json;

Isolation isolation(const BisectResult& r) {
  return {r.run, r.local, r.culprit, r.symptom_local, LocalInputs::a, r.sequence_tokens.size() > 1, 0, {}};
}

json top_json(const std::vector<TopToken>& top, const TokenText& text) {
  json out = json::array();
  for (const TopToken& t : top) out.push_back({{"id", t.id}, {"logit", t.logit}, {"text", text(t.id)}});
  return out;
}

std::string top_text(const std::vector<TopToken>& top, const TokenText& text) {
  std::vector<std::string> items;
  for (const TopToken& t : top) items.push_back(fmt::format("{} {:?} {:.4f}", t.id, text(t.id), t.logit));
  return fmt::format("{}", fmt::join(items, ", "));
}

std::string tokens_summary(const BisectResult& r, const TokenText& text) {
  const TokenImpact& t = r.tokens;
  const std::string of =
      r.sequence_tokens.size() > 1 ? fmt::format("of sequence {}: ", r.tokens_sequence) : std::string();
  std::string out;
  if (!t.first_mismatch_step) {
    out = fmt::format("tokens   {}the same {} greedy token{} from both engines\n", of, t.a.size(),
                      t.a.size() == 1 ? "" : "s");
  } else {
    const auto s = static_cast<std::size_t>(*t.first_mismatch_step);
    out = fmt::format("tokens   {}the greedy tokens part at step {}: A {} {:?} vs B {} {:?}\n", of, s, t.a[s],
                      text(t.a[s]), t.b[s], text(t.b[s]));
    out += fmt::format("         top-{} of A there: {}\n", t.top_a.size(), top_text(t.top_a, text));
    out += fmt::format("         top-{} of B there: {}\n", t.top_b.size(), top_text(t.top_b, text));
    if (r.run.tokens.tie) out += fmt::format("         {}\n", r.run.tokens.tie->text());
  }
  if (t.early_eos_b()) out += fmt::format("         B stops early: EOS at step {}\n", *t.eos_step_b);
  return out;
}

// How each sequence's greedy tokens went, in a few words.
std::string sequence_tokens_text(const TokenImpact& t) {
  if (!t.first_mismatch_step) return fmt::format("the same {} greedy token{}", t.a.size(), t.a.size() == 1 ? "" : "s");
  const auto s = static_cast<std::size_t>(*t.first_mismatch_step);
  return fmt::format("tokens part at step {}: A {} vs B {}", s, t.a[s], t.b[s]);
}

// The rows of each sequence past the symptom op's tolerance (all 0 on a match).
std::vector<std::int64_t> symptom_rows_over(const BisectResult& r) {
  std::vector<std::int64_t> over(r.sequence_tokens.size(), 0);
  if (!r.run.first) return over;
  const OpResult& op = r.run.ops[*r.run.first];
  const auto& rows = r.run.alignment.rows;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (op.rows[i].over) ++over[static_cast<std::size_t>(rows[i].sequence)];
  return over;
}

// A batch's sequences, one line each ("" for a single prompt).
std::string batch_summary(const BisectResult& r) {
  if (r.sequence_tokens.size() < 2) return {};
  const std::vector<std::int64_t> over = symptom_rows_over(r);
  std::string out = fmt::format("batch    {} sequences, engine B in one batch, A each alone\n", over.size());
  for (std::size_t s = 0; s < over.size(); ++s)
    out += fmt::format("  seq {:<3} {:>5} tokens  {:>5} rows past tolerance{}  {}\n", s, r.prompt_lengths[s], over[s],
                       r.run.first ? " at the symptom" : "", sequence_tokens_text(r.sequence_tokens[s]));
  return out;
}

json batch_json(const BisectResult& r) {
  if (r.sequence_tokens.size() < 2) return nullptr;
  const std::vector<std::int64_t> over = symptom_rows_over(r);
  json sequences = json::array();
  for (std::size_t s = 0; s < over.size(); ++s) {
    const TokenImpact& t = r.sequence_tokens[s];
    sequences.push_back({{"sequence", s},
                         {"prompt_tokens", r.prompt_lengths[s]},
                         {"symptom_rows_over", over[s]},
                         {"first_mismatch_step", t.first_mismatch_step ? json(*t.first_mismatch_step) : json(nullptr)},
                         {"a", t.a},
                         {"b", t.b},
                         {"early_eos_b", t.early_eos_b()}});
  }
  return {{"sequences", std::move(sequences)}};
}

}  // namespace

json bisect_json(const BisectResult& r, const std::vector<Diagnosis>& diagnoses, const TokenText& text) {
  json out = report_json(r.run, diagnoses);
  out["command"] = "bisect";
  add_isolation_json(out, isolation(r), r.local_rows.size());
  const TokenImpact& t = r.tokens;
  json& tokens = out["tokens"];
  tokens["top_a"] = top_json(t.top_a, text);
  tokens["top_b"] = top_json(t.top_b, text);
  tokens["eos_step_a"] = t.eos_step_a ? json(*t.eos_step_a) : json(nullptr);
  tokens["eos_step_b"] = t.eos_step_b ? json(*t.eos_step_b) : json(nullptr);
  tokens["early_eos_b"] = t.early_eos_b();
  json text_a = json::array(), text_b = json::array();
  for (std::int32_t id : t.a) text_a.push_back(text(id));
  for (std::int32_t id : t.b) text_b.push_back(text(id));
  tokens["text_a"] = std::move(text_a);
  tokens["text_b"] = std::move(text_b);
  tokens["sequence"] = r.tokens_sequence;
  out["batch"] = batch_json(r);
  out["layers_only"] = r.layers_only;
  out["timings"] = {{"free_run_seconds", r.seconds_free}, {"forced_scan_seconds", r.seconds_forced}};
  return out;
}

std::string bisect_terminal_report(const BisectResult& r, const std::vector<Diagnosis>& diagnoses,
                                   const TokenText& text, bool color) {
  TerminalExtras extras;
  extras.after_verdict = isolation_lines(isolation(r));
  extras.tokens =
      tokens_summary(r, text) + batch_summary(r) +
      (r.layers_only ? "layers   --layers-first: the layer outputs and each block's updates matched, so only they were "
                       "compared\n"
                     : "");
  return terminal_report(r.run, diagnoses, color, 8, extras) +
         fmt::format("time     free run {:.2f} s, forced scan {:.2f} s\n", r.seconds_free, r.seconds_forced);
}

std::string bisect_html(const BisectResult& r, const std::vector<Diagnosis>& diagnoses, const TokenText& text) {
  std::string s = isolation_html(isolation(r));
  s += fmt::format("<pre>{}</pre>\n", xml_escape(tokens_summary(r, text) + batch_summary(r)));
  return html_report(r.run, diagnoses, s);
}

std::string bisect_progress_line(const BisectProgress& p, double seconds) {
  const char* what = p.pass == 1 ? "free run" : p.pass == 2 ? "forced scan" : "free generation of B";
  return fmt::format("bisect {:<20} chunk {:>4}/{}  {:.1f} s", what, p.chunk, p.chunks, seconds);
}

}  // namespace tapdiff::bisect
