#include "bisect/judge/finding.h"

#include <utility>

#include "bisect/judge/lookalike.h"

namespace tapdiff::bisect {
namespace {

// The text of each token the impact names: both generations and the top-k where they part.
void add_texts(const TokenImpact& t, const TokenText& text, std::map<std::int32_t, std::string>& out) {
  auto add = [&](std::int32_t id) {
    if (!out.contains(id)) out.emplace(id, text(id));
  };
  for (const std::vector<std::int32_t>* ids : {&t.a, &t.b})
    for (std::int32_t id : *ids) add(id);
  for (const std::vector<TopToken>* top : {&t.top_a, &t.top_b})
    for (const TopToken& k : *top) add(k.id);
}

}  // namespace

const std::string& LiveRun::text(std::int32_t id) const {
  static const std::string kNone;
  const auto it = token_text.find(id);
  return it == token_text.end() ? kNone : it->second;
}

Finding judge_comparison(CompareResult run, std::optional<LocalCheck> local, const TensorSource& a,
                         const TensorSource& b) {
  Finding f;
  f.diagnoses = local ? diagnose(run, *local) : diagnose(run);
  for (Diagnosis& d : lookalikes(run, a, b)) f.diagnoses.push_back(std::move(d));
  if (local) {
    Isolation& i = f.isolation.emplace();
    i.positions = local->rows.size();
    i.culprit = local->culprit;
    i.symptom_local = local->symptom_of(run);
    i.inputs = LocalInputs::b_own;
    i.unchecked_ops = local->undecidable.size();
    i.missing_taps = local->missing_taps();
    i.local = std::move(local->local);
  }
  f.run = std::move(run);
  return f;
}

Finding judge_bisection(BisectResult r, const TokenText& text) {
  Finding f;
  f.diagnoses = diagnose(r);
  Isolation& i = f.isolation.emplace();
  i.local = std::move(r.local);
  i.positions = r.local_rows.size();
  i.culprit = r.culprit;
  i.symptom_local = r.symptom_local;
  i.inputs = LocalInputs::a;
  i.batch = r.sequence_tokens.size() > 1;
  LiveRun& live = f.live.emplace();
  live.tokens = std::move(r.tokens);
  live.tokens_sequence = r.tokens_sequence;
  live.sequence_tokens = std::move(r.sequence_tokens);
  live.prompt_lengths = std::move(r.prompt_lengths);
  live.layers_only = r.layers_only;
  live.seconds_free = r.seconds_free;
  live.seconds_forced = r.seconds_forced;
  add_texts(live.tokens, text, live.token_text);
  f.run = std::move(r.run);
  return f;
}

}  // namespace tapdiff::bisect
