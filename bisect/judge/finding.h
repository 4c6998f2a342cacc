#pragma once
// What a comparison concludes, whichever command ran it (compare, compare --model, bisect): one
// Finding. The renderers (bisect/report) each render a Finding and nothing else; the CLI only
// chooses the outputs.
//   run        the end-to-end comparison: the first op past tolerance (the symptom), every op,
//              the rows, the tokens of the dumps' summaries, the run problems
//   diagnoses  what the divergence looks like and what it resembles
//   isolation  where the culprit was sought: every op's local error on A's inputs (bisect) or on
//              B's own (compare --model); absent for two dumps alone, which cannot isolate it
//   live       what only an in-process bisection knows: each engine's greedy tokens and top-k
//              logits where they part, per sequence of a batch, with their text, and its timings
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bisect/compare/comparator.h"
#include "bisect/drive/bisect.h"
#include "bisect/drive/local_check.h"
#include "bisect/judge/diagnosis.h"

namespace tapdiff::bisect {

struct Isolation {
  std::vector<OpResult> local;               // every op's local error, graph order
  std::size_t positions = 0;                 // the rows the local errors were measured on
  std::optional<std::size_t> culprit;        // index into local of the first op past its tolerance
  std::optional<std::size_t> symptom_local;  // index into local of the symptom op, when it was checked
  LocalInputs inputs = LocalInputs::a;       // whose inputs the local errors are on
  bool batch = false;                        // rows of several sequences
  // Ops that could not be checked for want of taps (compare --model), and the taps that would
  // decide them: then "no op is past its tolerance" is no verdict that the error accumulates.
  std::size_t unchecked_ops = 0;
  std::vector<std::string> missing_taps;

  bool symptom_is_culprit() const { return symptom_local && culprit && *symptom_local == *culprit; }
};

struct LiveRun {
  TokenImpact tokens;  // of sequence tokens_sequence: where the symptom shows, else the first whose tokens part
  std::size_t tokens_sequence = 0;
  std::vector<TokenImpact> sequence_tokens;        // per sequence of the batch (one for a single prompt)
  std::vector<std::size_t> prompt_lengths;         // per sequence
  std::map<std::int32_t, std::string> token_text;  // of every token `tokens` names ("" without a tokenizer)
  bool layers_only = false;  // --layers-first and the layer outputs matched: run.ops holds those only
  double seconds_free = 0, seconds_forced = 0;

  const std::string& text(std::int32_t id) const;
  bool batch() const { return sequence_tokens.size() > 1; }
};

struct Finding {
  CompareResult run;
  std::vector<Diagnosis> diagnoses;
  std::optional<Isolation> isolation;
  std::optional<LiveRun> live;  // set by a bisection only

  bool match() const { return run.match(); }
  Verdict verdict() const { return run.verdict(); }
};

// The finding of `compare`: the comparison's diagnoses (on B's own inputs when B was checked
// locally, compare --model), the look-alikes read back from both runs, and the local check's
// isolation.
Finding judge_comparison(CompareResult run, std::optional<LocalCheck> local, const TensorSource& a,
                         const TensorSource& b);

// The text of a token id ("" when there is no tokenizer).
using TokenText = std::function<std::string(std::int32_t)>;

// The finding of `tapdiff bisect`: its diagnoses, its isolation on A's inputs, and its tokens with
// their text.
Finding judge_bisection(BisectResult result, const TokenText& text);

}  // namespace tapdiff::bisect
