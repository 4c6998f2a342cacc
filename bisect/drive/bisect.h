#pragma once
// The in-process bisection: engine A (the truth), engine B (under test) and, in calibrated mode, a
// floor engine (the reference in B's precision) run the same tokens in lockstep, compared op by op
// as they go; no dump files are needed.
//
//   pass 1, free run (with layers_first: the layer outputs first, every op only if one diverges):
//     every op of B against A end to end, and the floor's error against A, which
//     calibrates each op's tolerance. The first op past tolerance is the symptom.
//   pass 2, forced scan (only when pass 1 diverged): every op of B and of the floor engine run on
//     A's inputs (lockstep.h, Drive::forced), over the chunks up to the symptom's: each op's local
//     error. The first op whose local error is past its (locally calibrated) tolerance is the
//     culprit; the symptom's own local error says whether it is itself wrong or inherits error.
//   token impact: the greedy tokens of both engines, the first step where they part, the top-k
//     logits of both there (under the same history), and an early EOS.
// A ragged batch (several prompts) runs the same way: B runs the batch in one pass per step, A and
// the floor run each sequence alone (model::PerSequenceEngine), and every row is compared with
// its sequence's; token impact is per sequence.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bisect/compare/attention_uniformity.h"
#include "bisect/compare/comparator.h"
#include "bisect/compare/tolerances.h"
#include "bisect/drive/lockstep.h"
#include "dumps/schema.h"
#include "model/batch_runner.h"
#include "model/engine.h"
#include "model/graph.h"

namespace tapdiff::bisect {

struct BisectProgress {
  int pass = 1;               // 1 free run, 2 forced scan, 3 free generation of B
  int chunk = 0, chunks = 0;  // forward passes done / planned in this pass
};

struct BisectOptions {
  int chunk = 0;     // prefill chunk size; 0 = the whole prompt
  int generate = 0;  // greedy tokens after the prompt (the next-token prediction is compared even at 0)
  int eos_token = -1;
  int top_k = 5;
  // Calibrated mode when set (needs a floor engine): op tolerance = k x max(floor nmse, min floor).
  // Otherwise every op is held to tolerances.lookup (the table, or the built-in default).
  std::optional<Calibration> calibration = Calibration{};
  Tolerances tolerances;
  model::Precision precision = model::Precision::f32;  // B's: what tolerance rules match
  // Pass 1 compares the residual stream and each block's updates only (--taps layers: embed, each
  // o_proj / attn_post_norm, ffn_down (a mixture's moe_out, moe_sum, ffn_sum) / ffn_post_norm and
  // ffn_residual, final_norm, logits), so
  // engine B's other ops never leave it; when one diverges, pass 1 is repeated with every op.
  // Not with taps.
  bool layers_first = false;
  model::Tap* tap_a = nullptr;  // receives A's and B's op outputs of pass 1 (--dump-dir)
  model::Tap* tap_b = nullptr;
  std::function<void(const BisectProgress&)> progress;
};

struct TopToken {
  std::int32_t id = 0;
  double logit = 0;
};

struct TokenImpact {
  std::vector<std::int32_t> a, b;  // greedy tokens of each engine running freely (at least the next one)
  std::optional<std::int64_t> first_mismatch_step;
  std::vector<TopToken> top_a, top_b;                  // top-k logits of both at that step, under A's history
  std::optional<std::int64_t> eos_step_a, eos_step_b;  // first EOS in each generation
  bool early_eos_b() const { return eos_step_b && (!eos_step_a || *eos_step_b < *eos_step_a); }
};

struct BisectResult {
  CompareResult run;                         // pass 1: B against A, every op, with the calibrated tolerances
  std::vector<OpResult> local;               // pass 2: local errors, graph order (empty when pass 1 matched)
  std::vector<RowInfo> local_rows;           // the rows pass 2 scanned
  std::optional<std::size_t> culprit;        // index into local of the first op past its local tolerance
  std::optional<std::size_t> symptom_local;  // index into local of the symptom op
  TokenImpact tokens;  // of sequence tokens_sequence: where the symptom shows, else the first whose tokens part, else 0
  std::size_t tokens_sequence = 0;
  std::vector<TokenImpact> sequence_tokens;  // per sequence of the batch (one for a single prompt)
  std::vector<std::size_t> prompt_lengths;   // per sequence
  // Per layer, pass 2: how close each engine's attention is to uniform weights (one sequence
  // without a sliding window only; empty otherwise).
  std::vector<UniformityStats> attention_uniformity;
  double seconds_free = 0, seconds_forced = 0;
  bool layers_only = false;  // --layers-first and the layer outputs matched: run.ops holds those only

  bool match() const { return run.match(); }
  // The symptom is itself wrong (its own local error is past tolerance), not only inheriting error.
  bool symptom_is_culprit() const { return symptom_local && culprit && *symptom_local == *culprit; }
};

// Runs the bisection of B against A on the prompts, one sequence each (a ragged batch when more
// than one: every engine must then run batches, model::Engine::runs_batches; taps only for one).
// engines.floor must be set in calibrated mode. Every engine must run the same model (config).
BisectResult run_bisect(const model::ModelConfig& config, const LockstepEngines& engines, const model::Prompts& prompts,
                        const BisectOptions& options);
BisectResult run_bisect(const model::ModelConfig& config, const LockstepEngines& engines,
                        std::span<const std::int32_t> prompt, const BisectOptions& options);

// What a dump or a report records about an engine's run: engine, device, dtypes, kernel variants per
// op, model config, prompt and chunking (the caller adds paths, versions and times).
dumps::RunMetadata engine_metadata(const model::Engine& engine, const model::ModelConfig& config,
                                   std::span<const std::int32_t> prompt, int chunk);

// The k largest values of row `row` of logits (ties: lowest id first).
std::vector<TopToken> top_k(const model::HostTensor& logits, std::int64_t row, int k);

}  // namespace tapdiff::bisect
