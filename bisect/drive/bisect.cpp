#include "bisect/drive/bisect.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include <fmt/core.h>

#include "bisect/compare/text_format.h"
#include "bisect/drive/pass_comparison.h"
#include "dumps/tap_filter.h"
#include "model/errors.h"

namespace tapdiff::bisect {
namespace {

using model::ChunkInfo;
using model::HostTensor;
using model::Op;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The prediction of both engines after a pass: the last row of a sequence's logits.
struct Prediction {
  std::vector<TopToken> a, b;
};

// A forward pass of the bisection: its parts and what each is to its sequence alone.
struct PlannedPass {
  std::vector<model::BatchPart> parts;
  std::vector<ChunkInfo> local;  // set when the free run runs it
};

// One sequence's free run: the tokens fed (the prompt, then A's greedy tokens, which the decode
// parts view: reserved up front, never reallocated) and the latest prediction.
struct SequenceRun {
  std::vector<std::int32_t> fed;
  Prediction prediction;
  bool finished = false;
};

void check_request(const LockstepEngines& engines, const model::Prompts& prompts, const BisectOptions& options) {
  if (options.layers_first && (options.tap_a || options.tap_b))
    throw UsageError("--layers-first compares the layer outputs first: it does not keep dumps (--dump-dir)");
  if (prompts.empty()) throw UsageError("no prompt: give at least one");
  for (std::size_t s = 0; s < prompts.size(); ++s)
    if (prompts[s].empty())
      throw UsageError(prompts.size() == 1 ? std::string("the prompt has no tokens: give at least one")
                                           : fmt::format("prompt {} of the batch has no tokens", s + 1));
  if (options.calibration && !engines.floor)
    throw UsageError("calibrated tolerances need a floor engine (the reference in the engine's precision)");
  if (prompts.size() == 1) return;
  for (const model::Engine* e : {&engines.truth, engines.floor, &engines.b})
    if (e && !e->runs_batches())
      throw UsageError(
          fmt::format("a batch of {} prompts: engine {} does not run ragged batches", prompts.size(), e->name()));
  if (options.tap_a || options.tap_b)
    throw UsageError("dumps of a bisection (--dump-dir) take one prompt, not a batch");
}

void report(const BisectOptions& options, int pass, int chunk, int chunks) {
  if (options.progress) options.progress({pass, chunk, chunks});
}

// The pass of the free run in which row's chunk ran.
std::size_t pass_of(const std::vector<PlannedPass>& passes, const RowInfo& row) {
  for (std::size_t i = 0; i < passes.size(); ++i)
    for (std::size_t p = 0; p < passes[i].parts.size(); ++p)
      if (passes[i].parts[p].sequence == row.sequence && passes[i].local[p].index == row.chunk_b) return i;
  TAPDIFF_ASSERT(false, "no pass ran chunk {} of sequence {}", row.chunk_b, row.sequence);
  return 0;
}

// The sequence whose token impact the report shows: where the symptom first shows, else the first
// whose greedy tokens part, else the first.
std::size_t shown_sequence(const BisectResult& result) {
  if (result.run.first) return static_cast<std::size_t>(result.run.ops[*result.run.first].first_bad_row.sequence);
  const auto& t = result.sequence_tokens;
  const auto parted =
      std::find_if(t.begin(), t.end(), [](const TokenImpact& x) { return x.first_mismatch_step.has_value(); });
  return parted == t.end() ? 0 : static_cast<std::size_t>(parted - t.begin());
}

// The shown sequence's first parting tokens, judged at the row whose logits chose them (both
// engines under A's history there); A's margin from its top-k logits.
std::optional<TokenTie> live_token_tie(const BisectResult& result) {
  const TokenImpact& t = result.tokens;
  const auto& ops = result.run.ops;
  const auto logits = std::find_if(ops.begin(), ops.end(), [](const OpResult& o) { return o.id.op == Op::logits; });
  if (!t.first_mismatch_step || t.top_a.empty() || t.top_b.empty() || logits == ops.end()) return std::nullopt;
  TokenTie tie;  // B's token is its logits' first: they agree with it
  tie.step = *t.first_mismatch_step;
  tie.position =
      static_cast<std::int32_t>(result.prompt_lengths[result.tokens_sequence] - 1 + static_cast<std::size_t>(tie.step));
  tie.a = t.top_a.front().id, tie.b = t.top_b.front().id;
  for (const TopToken& x : t.top_a)
    if (x.id == tie.b) tie.margin = t.top_a.front().logit - x.logit;
  return judged_tie(tie, static_cast<std::int32_t>(result.tokens_sequence), *logits, result.run.alignment.rows);
}

// B's own greedy tokens after the step where they part from A's, for every sequence where they do.
void generate_b_freely(model::Engine& b, const model::Graph& graph, const model::Prompts& prompts,
                       const BisectOptions& options, std::vector<TokenImpact>& tokens) {
  const bool needed = std::any_of(tokens.begin(), tokens.end(), [&](const TokenImpact& t) {
    return t.first_mismatch_step && *t.first_mismatch_step + 1 < options.generate;
  });
  if (!needed) return;
  report(options, 3, 0, 1);
  model::BatchRunOptions free;
  free.chunk = options.chunk;
  free.generate = options.generate;
  const model::BatchRunResult run = model::run_batch(b, graph, prompts, free);
  for (std::size_t s = 0; s < tokens.size(); ++s) {
    TokenImpact& t = tokens[s];
    if (!t.first_mismatch_step) continue;
    t.b = run.sequences[s].generated;
    const auto eos = std::find(t.b.begin(), t.b.end(), options.eos_token);
    if (eos != t.b.end()) t.eos_step_b = eos - t.b.begin();
  }
  report(options, 3, 1, 1);
}

// The passes a free run ran, for pass 2 to run again, and the tokens their decode parts view (each
// sequence's prompt and the greedy tokens fed after it; moving the Schedule keeps them in place).
struct Schedule {
  model::Prompts fed;
  std::vector<PlannedPass> passes;
};

// Pass 1, the free run, over the whole schedule (prefill passes, then decode passes fed A's greedy
// tokens): fills result's run comparison (the observed steps only; all when observed is empty),
// token impact per sequence and prompt lengths.
Schedule run_free_pass(const model::ModelConfig& config, const model::Graph& graph, const LockstepEngines& engines,
                       const model::Prompts& prompts, const BisectOptions& options, const StepFilter& observed,
                       BisectResult& result) {
  const auto n_seqs = static_cast<int>(prompts.size());
  result.sequence_tokens.resize(prompts.size());
  std::vector<SequenceRun> seqs(prompts.size());
  for (std::size_t s = 0; s < prompts.size(); ++s) {
    result.prompt_lengths.push_back(prompts[s].size());
    seqs[s].fed.reserve(prompts[s].size() + static_cast<std::size_t>(std::max(options.generate, 1)));
    seqs[s].fed.assign(prompts[s].begin(), prompts[s].end());
  }
  std::vector<PlannedPass> passes;
  for (auto& parts : model::prefill_passes(prompts, options.chunk)) passes.push_back({std::move(parts), {}});
  const std::size_t prefill_passes = passes.size();
  const int planned = static_cast<int>(prefill_passes) + std::max(options.generate - 1, 0);

  PassComparison free_pass(graph, config, observed);
  const PlannedPass* current = nullptr;
  const StepObserver observe = [&](const StepOutputs& out) {
    free_pass.add(out);
    const model::TapKey key{out.step.output(), out.chunk};  // taps: one sequence, whose chunks are the passes
    if (options.tap_a && options.tap_a->wants(key)) options.tap_a->record(key, out.truth);
    if (options.tap_b && options.tap_b->wants(key)) options.tap_b->record(key, out.b);
    if (out.step.op != Op::logits) return;
    std::int64_t row = 0;
    for (const ChunkInfo& part : current->local) {
      row += part.rows;
      const auto index = static_cast<std::size_t>(&part - current->local.data());
      Prediction& p = seqs[static_cast<std::size_t>(current->parts[index].sequence)].prediction;
      p.a = top_k(out.truth, row - 1, options.top_k);
      p.b = top_k(out.b, row - 1, options.top_k);
    }
  };
  Lockstep free_run(graph, Drive::free, engines, observed);
  RoutingArbiter routing(config, options.precision, true);
  free_run.set_routing(&routing);
  free_run.reset(n_seqs);
  model::SequenceChunks sequence_chunks(prompts.size());
  auto run_free = [&](std::size_t index) {
    PlannedPass& pass = passes[index];
    pass.local = sequence_chunks.next(pass.parts);
    current = &pass;
    free_run.pass(static_cast<int>(index), pass.parts, observe);
    for (std::size_t i = 0; i < pass.parts.size(); ++i) {
      free_pass.add_rows(pass.local[i], pass.parts[i].sequence);
      if (options.tap_a) options.tap_a->end_chunk(pass.local[i], pass.parts[i].tokens);
      if (options.tap_b) options.tap_b->end_chunk(pass.local[i], pass.parts[i].tokens);
    }
    report(options, 1, static_cast<int>(index) + 1, planned);
  };
  // After a pass that ended the sequence's prompt or decoded it: the greedy token of each engine.
  auto next_token = [&](std::size_t s) {
    SequenceRun& seq = seqs[s];
    TokenImpact& tokens = result.sequence_tokens[s];
    const auto step = static_cast<std::int64_t>(tokens.a.size());
    const std::int32_t next_a = seq.prediction.a.front().id, next_b = seq.prediction.b.front().id;
    tokens.a.push_back(next_a);
    if (next_a == options.eos_token && !tokens.eos_step_a) tokens.eos_step_a = step;
    if (!tokens.first_mismatch_step) {
      tokens.b.push_back(next_b);  // same history so far: B's free run makes the same choice
      if (next_b == options.eos_token && !tokens.eos_step_b) tokens.eos_step_b = step;
      if (next_a != next_b)
        tokens.first_mismatch_step = step, tokens.top_a = seq.prediction.a, tokens.top_b = seq.prediction.b;
    }
    if (step + 1 >= options.generate)
      seq.finished = true;
    else
      seq.fed.push_back(next_a);
  };
  for (std::size_t i = 0; i < prefill_passes; ++i) {
    run_free(i);
    for (const model::BatchPart& part : passes[i].parts)
      if (static_cast<std::size_t>(part.first_pos) + part.tokens.size() ==
          prompts[static_cast<std::size_t>(part.sequence)].size())
        next_token(static_cast<std::size_t>(part.sequence));
  }
  for (;;) {
    PlannedPass decode;
    for (std::size_t s = 0; s < seqs.size(); ++s)
      if (!seqs[s].finished)
        decode.parts.push_back({static_cast<int>(s), std::span<const std::int32_t>(&seqs[s].fed.back(), 1),
                                static_cast<int>(seqs[s].fed.size()) - 1, true});
    if (decode.parts.empty()) break;
    passes.push_back(std::move(decode));
    run_free(passes.size() - 1);
    for (const model::BatchPart& part : passes.back().parts) next_token(static_cast<std::size_t>(part.sequence));
  }

  CompareResult& run = result.run;
  run.routing = routing.flips();
  run.a.metadata = engine_metadata(engines.truth, config, prompts.front(), options.chunk);
  run.b.metadata = engine_metadata(engines.b, config, prompts.front(), options.chunk);
  run.a.rows = run.b.rows = static_cast<std::int64_t>(free_pass.rows().size());
  run.config = config;
  run.precision = {options.precision, PrecisionOfB::From::given, ""};
  run.builtin_precision = model::coarsest(
      {model::parse_precision(engines.truth.compute_dtype()).value_or(model::Precision::f32), options.precision});
  run.builtin_finest = run.builtin_precision;
  run.tolerance_source =
      options.calibration && engines.floor
          ? fmt::format("calibrated against {} {} (k = {})", engines.floor->name(),
                        model::precision_name(options.precision), short_number(options.calibration->k))
          : options.tolerances.source();
  run.alignment.rows = free_pass.rows();
  run.alignment.row_a.resize(run.alignment.rows.size());
  std::iota(run.alignment.row_a.begin(), run.alignment.row_a.end(), std::int64_t{0});
  run.alignment.row_b = run.alignment.row_a;
  run.ops = free_pass.finish(options.tolerances, options.precision, options.calibration, engines.floor != nullptr);
  const auto first = std::find_if(run.ops.begin(), run.ops.end(), [](const OpResult& op) { return !op.pass(); });
  if (first != run.ops.end()) run.first = static_cast<std::size_t>(first - run.ops.begin());
  Schedule schedule{{}, std::move(passes)};
  for (SequenceRun& seq : seqs) schedule.fed.push_back(std::move(seq.fed));
  return schedule;
}

}  // namespace

dumps::RunMetadata engine_metadata(const model::Engine& engine, const model::ModelConfig& config,
                                   std::span<const std::int32_t> prompt, int chunk) {
  dumps::RunMetadata m;
  m.engine = engine.name();
  m.device = engine.device();
  m.compute_dtype = engine.compute_dtype();
  for (Op op : model::kAllOps) m.kernels[std::string(model::op_name(op))] = engine.kernel(op);
  m.model_config = model::to_json(config);
  m.prompt_tokens.assign(prompt.begin(), prompt.end());
  m.chunk_size = chunk > 0 ? chunk : static_cast<int>(prompt.size());
  // HDF5 has no bf16: a bf16 engine's values are stored exactly as f32.
  m.storage_dtype = dumps::storage_from_name(m.compute_dtype) ? m.compute_dtype : "f32";
  return m;
}

std::vector<TopToken> top_k(const HostTensor& logits, std::int64_t row, int k) {
  TAPDIFF_ASSERT(row >= 0 && row < logits.rows(), "row {} of {} logits rows", row, logits.rows());
  std::vector<TopToken> all(static_cast<std::size_t>(logits.cols()));
  for (std::int64_t c = 0; c < logits.cols(); ++c)
    all[static_cast<std::size_t>(c)] = {static_cast<std::int32_t>(c), logits.at(row, c)};
  const auto n =
      static_cast<std::ptrdiff_t>(std::min<std::size_t>(static_cast<std::size_t>(std::max(k, 1)), all.size()));
  std::partial_sort(all.begin(), all.begin() + n, all.end(), [](const TopToken& x, const TopToken& y) {
    return x.logit > y.logit || (x.logit == y.logit && x.id < y.id);
  });
  all.resize(static_cast<std::size_t>(n));
  return all;
}

BisectResult run_bisect(const model::ModelConfig& config, const LockstepEngines& engines,
                        std::span<const std::int32_t> prompt, const BisectOptions& options) {
  return run_bisect(config, engines, model::Prompts{{prompt.begin(), prompt.end()}}, options);
}

BisectResult run_bisect(const model::ModelConfig& config, const LockstepEngines& engines, const model::Prompts& prompts,
                        const BisectOptions& options) {
  check_request(engines, prompts, options);
  const model::Graph graph(config);
  const auto n_seqs = static_cast<int>(prompts.size());
  BisectResult result;
  auto start = std::chrono::steady_clock::now();
  Schedule schedule;
  if (options.layers_first) {
    const dumps::TapFilter layers("layers");
    schedule = run_free_pass(
        config, graph, engines, prompts, options,
        [&layers](const model::Step& step) { return layers.matches(step.output()); }, result);
    result.layers_only = !result.run.first;
  }
  if (!result.layers_only) {
    result = BisectResult{};
    schedule = run_free_pass(config, graph, engines, prompts, options, {}, result);
  }
  result.seconds_free = seconds_since(start);
  CompareResult& run = result.run;

  generate_b_freely(engines.b, graph, prompts, options, result.sequence_tokens);
  result.tokens_sequence = shown_sequence(result);
  result.tokens = result.sequence_tokens[result.tokens_sequence];
  run.tokens.a = result.tokens.a, run.tokens.b = result.tokens.b;
  run.tokens.first_mismatch_step = result.tokens.first_mismatch_step;
  run.tokens.tie = live_token_tie(result);
  run.problems = run_problems(run);
  if (!run.first) return result;

  // --- pass 2: forced scan, up to the pass where the symptom first shows, and the one where it is
  // worst: in a coarse precision a row may break the op's bound by its own noise, before the bug
  // acts (pass 1 compared every op: a layers-first pass that diverged was repeated in full) ---
  start = std::chrono::steady_clock::now();
  const std::vector<PlannedPass>& passes = schedule.passes;
  const OpResult& symptom = run.ops[*run.first];
  std::size_t last_pass = pass_of(passes, symptom.first_bad_row);
  if (symptom.worst.index >= 0)
    last_pass = std::max(last_pass, pass_of(passes, run.alignment.rows[static_cast<std::size_t>(symptom.worst.index)]));
  PassComparison forced_pass(graph, config);
  std::optional<AttentionUniformity> uniformity;
  if (n_seqs == 1 && model::full_attention(config) && AttentionUniformity::applies(config)) uniformity.emplace(config);
  const StepObserver observe_forced = [&](const StepOutputs& out) {
    forced_pass.add(out);
    if (uniformity && out.step.op == Op::v_proj) uniformity->add_values(out.step.layer, out.truth);
    if (uniformity && out.step.op == Op::attn) uniformity->add_attention(out.step.layer, out.truth, out.b);
  };
  Lockstep forced(graph, Drive::forced, engines);
  RoutingArbiter forced_routing(config, options.precision, true);  // near ties on A's logits are no local error either
  forced.set_routing(&forced_routing);
  forced.reset(n_seqs);
  for (std::size_t i = 0; i <= last_pass; ++i) {
    const PlannedPass& pass = passes[i];
    forced.pass(static_cast<int>(i), pass.parts, observe_forced);
    for (std::size_t p = 0; p < pass.parts.size(); ++p) forced_pass.add_rows(pass.local[p], pass.parts[p].sequence);
    report(options, 2, static_cast<int>(i) + 1, static_cast<int>(last_pass) + 1);
  }
  result.local =
      forced_pass.finish(options.tolerances, options.precision, options.calibration, engines.floor != nullptr);
  result.local_rows = forced_pass.rows();
  const auto culprit =
      std::find_if(result.local.begin(), result.local.end(), [](const OpResult& op) { return !op.pass(); });
  if (culprit != result.local.end()) result.culprit = static_cast<std::size_t>(culprit - result.local.begin());
  result.symptom_local = *run.first;  // both passes compare every step, in graph order
  for (int l = 0; uniformity && l < config.n_layers; ++l) result.attention_uniformity.push_back(uniformity->stats(l));
  result.seconds_forced = seconds_since(start);
  return result;
}

}  // namespace tapdiff::bisect
