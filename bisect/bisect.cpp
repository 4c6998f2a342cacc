#include "bisect/bisect.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include <fmt/core.h>

#include "bisect/report_format.h"
#include "model/errors.h"
#include "model/runner.h"

namespace tapdiff::bisect {
namespace {

using model::ChunkInfo;
using model::HostTensor;
using model::Op;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// One pass's comparison, fed step by step: B against the truth per op (OpAccumulator), the floor
// engine against the truth per op (its metrics calibrate the op's tolerance), and the rows.
class PassComparison {
 public:
  PassComparison(const model::Graph& graph, const model::ModelConfig& config) : graph_(graph) {
    for (const model::Step& step : graph.steps())
      ops_.emplace_back(step.output(), head_layout(step.op, config), Tolerance{});
    floors_.resize(graph.steps().size());
  }

  void add(const StepOutputs& out) {
    const auto i = static_cast<std::size_t>(&out.step - graph_.steps().data());
    ops_[i].add(out.truth, out.b, next_row_);
    if (out.floor) floors_[i].add(out.truth, *out.floor, next_row_);
  }

  void end_chunk(const ChunkInfo& chunk) {
    for (int t = 0; t < chunk.rows; ++t)
      rows_.push_back({chunk.first_pos + t, chunk.index, chunk.index, t == 0, t == 0, chunk.decode});
    next_row_ += chunk.rows;
  }

  // Judges every op: by k times its floor in calibrated mode, else by the tolerance table.
  std::vector<OpResult> finish(const BisectOptions& options, bool have_floor) {
    Tolerances tolerances = options.tolerances;
    const bool calibrated = options.calibration && have_floor;
    if (calibrated) tolerances.set_calibration(*options.calibration);
    std::vector<OpResult> out;
    for (std::size_t i = 0; i < ops_.size(); ++i) {
      const model::TensorId id = graph_.steps()[i].output();
      if (calibrated) tolerances.set_floor(id, floors_[i].result());
      ops_[i].set_tolerance(tolerances.lookup(id, options.dtype));
      out.push_back(ops_[i].finish(rows_));
    }
    return out;
  }

  const std::vector<RowInfo>& rows() const { return rows_; }

 private:
  const model::Graph& graph_;
  std::vector<OpAccumulator> ops_;
  std::vector<MetricsAccumulator> floors_;
  std::vector<RowInfo> rows_;
  std::int64_t next_row_ = 0;
};

// The prediction of both engines after a chunk: the last row of their logits.
struct Prediction {
  std::vector<TopToken> a, b;
};

void report(const BisectOptions& options, int pass, int chunk, int chunks) {
  if (options.progress) options.progress({pass, chunk, chunks});
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
  m.storage_dtype = engine.compute_dtype();
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
  if (prompt.empty()) throw UsageError("the prompt has no tokens: give at least one");
  if (options.calibration && !engines.floor)
    throw UsageError("calibrated tolerances need a floor engine (the reference in the engine's precision)");
  const model::Graph graph(config);
  BisectResult result;
  const int n = static_cast<int>(prompt.size());
  const int chunk_size = options.chunk > 0 ? options.chunk : n;
  const int prefill_chunks = (n + chunk_size - 1) / chunk_size;
  const int planned = prefill_chunks + std::max(options.generate - 1, 0);

  // --- pass 1: free run ---
  auto start = std::chrono::steady_clock::now();
  std::vector<std::int32_t> fed(prompt.begin(), prompt.end());  // every token fed, decode steps included
  std::vector<ChunkInfo> chunks;
  PassComparison free_pass(graph, config);
  Prediction prediction;
  const StepObserver observe = [&](const StepOutputs& out) {
    free_pass.add(out);
    const model::TapKey key{out.step.output(), out.chunk};
    if (options.tap_a && options.tap_a->wants(key)) options.tap_a->record(key, out.truth);
    if (options.tap_b && options.tap_b->wants(key)) options.tap_b->record(key, out.b);
    if (out.step.op == Op::logits) {
      prediction.a = top_k(out.truth, out.truth.rows() - 1, options.top_k);
      prediction.b = top_k(out.b, out.b.rows() - 1, options.top_k);
    }
  };
  Lockstep free_run(graph, Drive::free, engines);
  free_run.reset();
  auto run_chunk = [&](Lockstep& lockstep, const ChunkInfo& chunk, const StepObserver& observer) {
    const auto tokens = std::span<const std::int32_t>(fed).subspan(static_cast<std::size_t>(chunk.first_pos),
                                                                   static_cast<std::size_t>(chunk.rows));
    lockstep.chunk(tokens, chunk, observer);
  };
  auto end_chunk = [&](const ChunkInfo& chunk) {
    free_pass.end_chunk(chunk);
    const auto tokens = std::span<const std::int32_t>(fed).subspan(static_cast<std::size_t>(chunk.first_pos),
                                                                   static_cast<std::size_t>(chunk.rows));
    if (options.tap_a) options.tap_a->end_chunk(chunk, tokens);
    if (options.tap_b) options.tap_b->end_chunk(chunk, tokens);
    chunks.push_back(chunk);
    report(options, 1, static_cast<int>(chunks.size()), planned);
  };
  for (int first = 0; first < n; first += chunk_size) {
    const ChunkInfo chunk{static_cast<int>(chunks.size()), first, std::min(chunk_size, n - first), false};
    run_chunk(free_run, chunk, observe);
    end_chunk(chunk);
  }
  TokenImpact& tokens = result.tokens;
  for (int step = 0;; ++step) {
    const std::int32_t next_a = prediction.a.front().id, next_b = prediction.b.front().id;
    tokens.a.push_back(next_a);
    if (next_a == options.eos_token && !tokens.eos_step_a) tokens.eos_step_a = step;
    if (!tokens.first_mismatch_step) {
      tokens.b.push_back(next_b);  // same history so far: B's free run makes the same choice
      if (next_b == options.eos_token && !tokens.eos_step_b) tokens.eos_step_b = step;
      if (next_a != next_b) tokens.first_mismatch_step = step, tokens.top_a = prediction.a, tokens.top_b = prediction.b;
    }
    if (step + 1 >= options.generate) break;
    fed.push_back(next_a);
    const ChunkInfo chunk{static_cast<int>(chunks.size()), static_cast<int>(fed.size()) - 1, 1, true};
    run_chunk(free_run, chunk, observe);
    end_chunk(chunk);
  }

  CompareResult& run = result.run;
  run.a.metadata = engine_metadata(engines.truth, config, prompt, options.chunk);
  run.b.metadata = engine_metadata(engines.b, config, prompt, options.chunk);
  run.a.rows = run.b.rows = static_cast<std::int64_t>(free_pass.rows().size());
  run.config = config;
  run.dtype = options.dtype;
  run.builtin_dtype = Tolerances::coarsest_dtype({engines.truth.compute_dtype(), options.dtype});
  run.tolerance_source = options.calibration && engines.floor
                             ? fmt::format("calibrated against {} {} (k = {})", engines.floor->name(),
                                           engines.floor->compute_dtype(), short_number(options.calibration->k))
                             : options.tolerances.source();
  run.alignment.rows = free_pass.rows();
  run.alignment.row_a.resize(run.alignment.rows.size());
  std::iota(run.alignment.row_a.begin(), run.alignment.row_a.end(), std::int64_t{0});
  run.alignment.row_b = run.alignment.row_a;
  run.ops = free_pass.finish(options, engines.floor != nullptr);
  const auto first = std::find_if(run.ops.begin(), run.ops.end(), [](const OpResult& op) { return !op.pass(); });
  if (first != run.ops.end()) run.first = static_cast<std::size_t>(first - run.ops.begin());
  result.seconds_free = seconds_since(start);

  // B's own greedy tokens after the step where it parts from A.
  if (tokens.first_mismatch_step && *tokens.first_mismatch_step + 1 < options.generate) {
    report(options, 3, 0, 1);
    model::RunOptions free;
    free.chunk = options.chunk;
    free.generate = options.generate;
    model::NullTap none;
    tokens.b = model::run_sequence(engines.b, graph, prompt, free, none).generated;
    const auto eos = std::find(tokens.b.begin(), tokens.b.end(), options.eos_token);
    if (eos != tokens.b.end()) tokens.eos_step_b = eos - tokens.b.begin();
    report(options, 3, 1, 1);
  }
  run.tokens.a = tokens.a, run.tokens.b = tokens.b, run.tokens.first_mismatch_step = tokens.first_mismatch_step;
  if (run.match()) return result;

  // --- pass 2: forced scan, up to the chunk where the symptom first shows ---
  start = std::chrono::steady_clock::now();
  const int last_chunk = run.ops[*run.first].first_bad_row.chunk_b;
  PassComparison forced_pass(graph, config);
  Lockstep forced(graph, Drive::forced, engines);
  forced.reset();
  for (const ChunkInfo& chunk : chunks) {
    if (chunk.index > last_chunk) break;
    run_chunk(forced, chunk, [&](const StepOutputs& out) { forced_pass.add(out); });
    forced_pass.end_chunk(chunk);
    report(options, 2, chunk.index + 1, last_chunk + 1);
  }
  result.local = forced_pass.finish(options, engines.floor != nullptr);
  result.local_rows = forced_pass.rows();
  const auto culprit =
      std::find_if(result.local.begin(), result.local.end(), [](const OpResult& op) { return !op.pass(); });
  if (culprit != result.local.end()) result.culprit = static_cast<std::size_t>(culprit - result.local.begin());
  result.symptom_local = *run.first;  // both passes compare every step, in graph order
  result.seconds_forced = seconds_since(start);
  return result;
}

}  // namespace tapdiff::bisect
