#include "bisect/drive/repro_case.h"

#include <algorithm>
#include <optional>

#include <fmt/core.h>

#include "bisect/compare/dump_chunks.h"
#include "model/dtype.h"
#include "model/errors.h"

namespace tapdiff::bisect {
namespace {

using model::Op;
using model::WeightKind;

// The weights an op reads besides its matrix and bias (model::op_weights) and its norm's
// (model::norm_weights).
std::vector<WeightKind> other_weights(Op op) {
  switch (op) {
    case Op::embed: return {WeightKind::token_embd, WeightKind::pos_embd};
    case Op::moe_scores: return {WeightKind::moe_score_bias};
    case Op::moe_out: return {WeightKind::expert_gate, WeightKind::expert_up, WeightKind::expert_down};
    case Op::moe_shared:
      return {WeightKind::shexp_gate, WeightKind::shexp_up, WeightKind::shexp_down, WeightKind::shexp_gate_inp};
    case Op::ffn_act:
      return {WeightKind::xielu_alpha_p, WeightKind::xielu_alpha_n, WeightKind::xielu_beta, WeightKind::xielu_eps};
    default: return {};
  }
}

std::vector<WeightKind> weights_of(Op op, const model::ModelConfig& config) {
  std::vector<WeightKind> kinds;
  if (const std::optional<model::OpWeights> w = model::op_weights(op, config)) {
    kinds.push_back(w->matrix);
    if (w->bias) kinds.push_back(*w->bias);
  }
  if (const std::optional<model::NormWeights> w = model::norm_weights(op)) {
    kinds.push_back(w->weight);
    if (w->bias) kinds.push_back(*w->bias);
  }
  for (WeightKind kind : other_weights(op)) kinds.push_back(kind);
  return kinds;
}

// The op's weights as the model holds them, dequantized to f32; all named, none filled in when
// together they pass kReproWeightBytes.
std::vector<ReproWeight> op_weights_of(const model::Model& model, const model::Step& step) {
  std::vector<ReproWeight> out;
  std::uint64_t bytes = 0;
  for (WeightKind kind : weights_of(step.op, model.config())) {
    const model::WeightTensor* tensor = model.find(kind, step.layer);
    if (!tensor) continue;
    out.push_back({kind, tensor->name, tensor->rows, tensor->cols, {}});
    bytes += static_cast<std::uint64_t>(tensor->rows * tensor->cols) * sizeof(float);
  }
  if (bytes > kReproWeightBytes) return out;
  for (ReproWeight& weight : out) {
    const model::WeightTensor& tensor = model.weight(weight.kind, step.layer);
    weight.values.resize(static_cast<std::size_t>(tensor.rows * tensor.cols));
    for (std::int64_t r = 0; r < tensor.rows; ++r)
      model::dequantize_row(tensor.dtype, tensor.row(r), weight.values.data() + r * tensor.cols, tensor.cols);
  }
  return out;
}

// What a case holds besides the pass's values: the pass, positions and tokens, the K/V rows
// attention read (truth's cache: the rows B was given), the weights, and B's metrics on the rows.
void complete_case(ReproCase& out, const model::Step& step, const model::Model& model, model::Engine& truth,
                   const model::FedChunk& pass) {
  const model::ChunkInfo& info = pass.info;
  out.chunk = info;
  out.tokens.assign(pass.tokens.begin(), pass.tokens.end());
  for (int r = 0; r < info.rows; ++r) out.positions.push_back(info.first_pos + r);
  if (step.op == Op::attn)
    for (const bool value : {false, true})
      out.inputs.push_back({value ? "kv.v" : "kv.k", truth.read_kv(step.layer, value)});
  out.weights = op_weights_of(model, step);
  out.metrics = compare(out.reference, out.engine);
  out.violations = check(out.tolerance.bound, out.metrics);
  for (std::int64_t r = 0; r < info.rows && out.first_bad_row < 0; ++r)
    if (!check(out.tolerance.bound, compare(out.reference.slice_rows(r, 1), out.engine.slice_rows(r, 1))).empty())
      out.first_bad_row = r;
}

const model::Step& step_of(const model::Graph& graph, const OpResult& culprit) {
  const std::size_t index = graph.position(culprit.id);
  TAPDIFF_ASSERT(index < graph.steps().size(), "{} is no step of the graph", model::to_string(culprit.id));
  return graph.steps()[index];
}

std::string input_name(const model::TensorId& id) { return fmt::format("input.{}", model::to_string(id)); }

}  // namespace

std::string ReproWeight::name() const { return fmt::format("weight.{}", model::weight_kind_name(kind)); }

ReproCase repro_case_from_dump(const dumps::DumpReader& b, const model::Graph& graph, const model::Model& model,
                               model::Engine& truth, const OpResult& culprit) {
  const model::Step& step = step_of(graph, culprit);
  const std::vector<DumpChunk> chunks = dump_chunks(b, "write the culprit's repro");
  const auto target = std::find_if(chunks.begin(), chunks.end(), [&](const DumpChunk& c) {
    return c.fed.info.index == culprit.first_bad_row.chunk_b;
  });
  TAPDIFF_ASSERT(target != chunks.end(), "no forward pass {} in {}", culprit.first_bad_row.chunk_b, b.path());

  ReproCase out;
  out.id = culprit.id;
  out.tolerance = culprit.tolerance;
  truth.reset();
  // Every pass up to the culprit's: attention reads the K and V rows of the passes before.
  for (auto chunk = chunks.begin(); chunk != std::next(target); ++chunk) {
    const model::ChunkInfo& info = chunk->fed.info;
    truth.begin_chunk(chunk->fed.tokens, info);
    for (const model::TensorId& in : step.inputs) {
      model::HostTensor value = b.read(in, chunk->first_row, info.rows);
      truth.write(in, value);
      if (chunk == target) out.inputs.push_back({input_name(in), std::move(value)});
    }
    truth.execute(step, {});
    if (chunk == target) {
      out.reference = truth.read(step.output()).to(model::Scalar::f64);
      out.engine = b.read(step.output(), chunk->first_row, info.rows);
    }
    truth.end_chunk();
  }
  complete_case(out, step, model, truth, target->fed);
  return out;
}

ReproCase repro_case_of_bisection(const model::Graph& graph, const model::Model& model, model::Engine& truth,
                                  model::Engine& b, const BisectResult& bisection,
                                  std::span<const std::int32_t> prompt) {
  TAPDIFF_ASSERT(bisection.culprit.has_value(), "a bisection without a culprit");
  const OpResult& culprit = bisection.local[*bisection.culprit];
  // The passes of the forced scan: its rows grouped by pass, fed the prompt and then A's tokens.
  std::vector<std::int32_t> fed(prompt.begin(), prompt.end());
  fed.insert(fed.end(), bisection.tokens.a.begin(), bisection.tokens.a.end());
  std::vector<model::FedChunk> passes;
  for (const RowInfo& row : bisection.local_rows) {
    TAPDIFF_ASSERT(row.sequence == 0 && static_cast<std::size_t>(row.position) < fed.size(),
                   "row at position {} of sequence {}", row.position, row.sequence);
    if (passes.empty() || passes.back().info.index != row.chunk_b)
      passes.push_back({{}, {row.chunk_b, row.position, 0, row.decode}});
    model::FedChunk& pass = passes.back();
    ++pass.info.rows;
    pass.tokens = std::span<const std::int32_t>(fed).subspan(static_cast<std::size_t>(pass.info.first_pos),
                                                             static_cast<std::size_t>(pass.info.rows));
  }
  const model::Step& step = step_of(graph, culprit);
  const std::size_t index = graph.position(culprit.id);
  const auto target = std::find_if(passes.begin(), passes.end(), [&](const model::FedChunk& pass) {
    return pass.info.index == culprit.first_bad_row.chunk_b;
  });
  TAPDIFF_ASSERT(target != passes.end(), "no forward pass {} in the bisection", culprit.first_bad_row.chunk_b);

  ReproCase out;
  out.id = culprit.id;
  out.tolerance = culprit.tolerance;
  truth.reset();
  b.reset();
  for (auto pass = passes.begin(); pass != std::next(target); ++pass) {
    truth.begin_chunk(pass->tokens, pass->info);
    b.begin_chunk(pass->tokens, pass->info);
    // The truth runs every step up to the culprit's; each input is read as its step leaves it.
    std::vector<model::HostTensor> inputs(step.inputs.size());
    for (std::size_t i = 0; i <= index; ++i) {
      const model::Step& s = graph.steps()[i];
      truth.execute(s, {});
      for (std::size_t k = 0; k < step.inputs.size(); ++k)
        if (step.inputs[k] == s.output()) inputs[k] = truth.read(s.output());
    }
    for (std::size_t k = 0; k < step.inputs.size(); ++k) b.write(step.inputs[k], inputs[k]);
    b.execute(step, {});
    if (pass == target) {
      for (std::size_t k = 0; k < step.inputs.size(); ++k)
        out.inputs.push_back({input_name(step.inputs[k]), std::move(inputs[k])});
      out.reference = truth.read(step.output()).to(model::Scalar::f64);
      out.engine = b.read(step.output());
    }
    truth.end_chunk();
    b.end_chunk();
  }
  complete_case(out, step, model, truth, *target);
  return out;
}

}  // namespace tapdiff::bisect
