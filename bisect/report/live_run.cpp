#include "bisect/report/live_run.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

namespace tapdiff::bisect {
namespace {

using nlohmann::json;

json top_json(const std::vector<TopToken>& top, const LiveRun& live) {
  json out = json::array();
  for (const TopToken& t : top) out.push_back({{"id", t.id}, {"logit", t.logit}, {"text", live.text(t.id)}});
  return out;
}

std::string top_text(const std::vector<TopToken>& top, const LiveRun& live) {
  std::vector<std::string> items;
  for (const TopToken& t : top) items.push_back(fmt::format("{} {:?} {:.4f}", t.id, live.text(t.id), t.logit));
  return fmt::format("{}", fmt::join(items, ", "));
}

std::string tokens_summary(const CompareResult& run, const LiveRun& live) {
  const TokenImpact& t = live.tokens;
  const std::string of = live.batch() ? fmt::format("of sequence {}: ", live.tokens_sequence) : std::string();
  std::string out;
  if (!t.first_mismatch_step) {
    out = fmt::format("tokens   {}the same {} greedy token{} from both engines\n", of, t.a.size(),
                      t.a.size() == 1 ? "" : "s");
  } else {
    const auto s = static_cast<std::size_t>(*t.first_mismatch_step);
    out = fmt::format("tokens   {}the greedy tokens part at step {}: A {} {:?} vs B {} {:?}\n", of, s, t.a[s],
                      live.text(t.a[s]), t.b[s], live.text(t.b[s]));
    out += fmt::format("         top-{} of A there: {}\n", t.top_a.size(), top_text(t.top_a, live));
    out += fmt::format("         top-{} of B there: {}\n", t.top_b.size(), top_text(t.top_b, live));
    if (run.tokens.tie) out += fmt::format("         {}\n", run.tokens.tie->text());
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
std::vector<std::int64_t> symptom_rows_over(const CompareResult& run, const LiveRun& live) {
  std::vector<std::int64_t> over(live.sequence_tokens.size(), 0);
  if (!run.first) return over;
  const OpResult& op = run.ops[*run.first];
  const auto& rows = run.alignment.rows;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (op.rows[i].over) ++over[static_cast<std::size_t>(rows[i].sequence)];
  return over;
}

// A batch's sequences, one line each ("" for a single prompt).
std::string batch_summary(const CompareResult& run, const LiveRun& live) {
  if (!live.batch()) return {};
  const std::vector<std::int64_t> over = symptom_rows_over(run, live);
  std::string out = fmt::format("batch    {} sequences, engine B in one batch, A each alone\n", over.size());
  for (std::size_t s = 0; s < over.size(); ++s)
    out += fmt::format("  seq {:<3} {:>5} tokens  {:>5} rows past tolerance{}  {}\n", s, live.prompt_lengths[s],
                       over[s], run.first ? " at the symptom" : "", sequence_tokens_text(live.sequence_tokens[s]));
  return out;
}

json batch_json(const CompareResult& run, const LiveRun& live) {
  if (!live.batch()) return nullptr;
  const std::vector<std::int64_t> over = symptom_rows_over(run, live);
  json sequences = json::array();
  for (std::size_t s = 0; s < over.size(); ++s) {
    const TokenImpact& t = live.sequence_tokens[s];
    sequences.push_back({{"sequence", s},
                         {"prompt_tokens", live.prompt_lengths[s]},
                         {"symptom_rows_over", over[s]},
                         {"first_mismatch_step", t.first_mismatch_step ? json(*t.first_mismatch_step) : json(nullptr)},
                         {"a", t.a},
                         {"b", t.b},
                         {"early_eos_b", t.early_eos_b()}});
  }
  return {{"sequences", std::move(sequences)}};
}

}  // namespace

std::string live_tokens_text(const CompareResult& run, const LiveRun& live) {
  return tokens_summary(run, live) + batch_summary(run, live);
}

void add_live_json(json& out, const CompareResult& run, const LiveRun& live) {
  out["command"] = "bisect";
  const TokenImpact& t = live.tokens;
  json& tokens = out["tokens"];
  tokens["top_a"] = top_json(t.top_a, live);
  tokens["top_b"] = top_json(t.top_b, live);
  tokens["eos_step_a"] = t.eos_step_a ? json(*t.eos_step_a) : json(nullptr);
  tokens["eos_step_b"] = t.eos_step_b ? json(*t.eos_step_b) : json(nullptr);
  tokens["early_eos_b"] = t.early_eos_b();
  json text_a = json::array(), text_b = json::array();
  for (std::int32_t id : t.a) text_a.push_back(live.text(id));
  for (std::int32_t id : t.b) text_b.push_back(live.text(id));
  tokens["text_a"] = std::move(text_a);
  tokens["text_b"] = std::move(text_b);
  tokens["sequence"] = live.tokens_sequence;
  out["batch"] = batch_json(run, live);
  out["layers_only"] = live.layers_only;
  out["timings"] = {{"free_run_seconds", live.seconds_free}, {"forced_scan_seconds", live.seconds_forced}};
}

}  // namespace tapdiff::bisect
