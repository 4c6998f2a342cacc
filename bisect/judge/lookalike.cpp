#include "bisect/judge/lookalike.h"

#include <algorithm>
#include <optional>

#include <fmt/core.h>

#include "bisect/compare/metrics.h"
#include "bisect/compare/text_format.h"

namespace tapdiff::bisect {
namespace {

constexpr std::int64_t kRows = 8;     // rows examined, from the first bad one
constexpr double kLooksAlike = 1e-3;  // nmse at most this against the look-alike ...
constexpr double kCloserBy = 100;     // ... and this many times closer than against A's own op

// The examined rows' values of one op in one run, rows [first, first + n) of the alignment, gathered
// row by row (aligned rows need not be consecutive in either run).
model::HostTensor gather(const TensorSource& source, const model::TensorId& id, const std::vector<std::int64_t>& rows,
                         std::size_t first, std::size_t n) {
  std::optional<model::HostTensor> out;
  for (std::size_t i = 0; i < n; ++i) {
    const model::HostTensor row = source.read(id, rows[first + i], 1).to(model::Scalar::f64);
    if (!out) out.emplace(model::Scalar::f64, static_cast<std::int64_t>(n), row.cols());
    out->set_rows(static_cast<std::int64_t>(i), row);
  }
  return *out;
}

bool looks_alike(double nmse_alike, double nmse_own) {
  return nmse_alike <= kLooksAlike && nmse_alike * kCloserBy <= nmse_own;
}

// A's values with each head's channels moved from one RoPE layout's places to the other's
// (model::rope_pair): interleaved pairs read as rotate-half, or back (the GGUF q/k row
// permutation and its inverse).
model::HostTensor other_pair_order(const model::HostTensor& a, int head_dim, model::RopeStyle to) {
  model::HostTensor out = a;
  const int pairs = head_dim / 2;
  for (std::int64_t r = 0; r < a.rows(); ++r)
    for (std::int64_t base = 0; base + head_dim <= a.cols(); base += head_dim)
      for (int j = 0; j < pairs; ++j) {
        const model::RopePair src = model::rope_pair(model::flipped(to), j, pairs),
                              dst = model::rope_pair(to, j, pairs);
        out.f64()[static_cast<std::size_t>(r * a.cols() + base + dst.a)] = a.at(r, base + src.a);
        out.f64()[static_cast<std::size_t>(r * a.cols() + base + dst.b)] = a.at(r, base + src.b);
      }
  return out;
}

model::HostTensor sorted_rows(model::HostTensor t) {
  for (std::int64_t r = 0; r < t.rows(); ++r) {
    const auto row = t.f64().subspan(static_cast<std::size_t>(r * t.cols()), static_cast<std::size_t>(t.cols()));
    std::sort(row.begin(), row.end());
  }
  return t;
}

}  // namespace

std::vector<Diagnosis> lookalikes(const CompareResult& result, const TensorSource& a, const TensorSource& b) {
  std::vector<Diagnosis> out;
  if (!result.first) return out;
  const OpResult& op = result.ops[*result.first];
  if (op.first_bad < 0) return out;
  const RowAlignment& al = result.alignment;
  const auto first = static_cast<std::size_t>(op.first_bad);
  const std::size_t n = std::min<std::size_t>(kRows, al.rows.size() - first);
  const model::Graph graph(result.config);
  const model::HostTensor own_a = gather(a, op.id, al.row_a, first, n), own_b = gather(b, op.id, al.row_b, first, n);
  const double own = compare(own_a, own_b).nmse;

  // A's neighbours of the same width: the same op one layer before or after, the ops just before
  // and after it in the graph.
  std::vector<model::TensorId> neighbours;
  for (const int layer : {op.id.layer - 1, op.id.layer + 1}) neighbours.push_back({op.id.op, layer});
  const auto& steps = graph.steps();
  const auto at = std::find_if(steps.begin(), steps.end(), [&](const model::Step& s) { return s.output() == op.id; });
  // The stream entering the op's layer (the previous layer's output, or embed: what its attention's
  // residual add starts from): a layer output taken one layer early.
  const auto entry = std::find_if(steps.begin(), steps.end(), [&](const model::Step& s) {
    return s.op == model::Op::attn_residual && s.layer == op.id.layer;
  });
  if (entry != steps.end()) neighbours.push_back(entry->inputs.front());
  if (at != steps.begin()) neighbours.push_back(std::prev(at)->output());
  if (at != steps.end() && std::next(at) != steps.end()) neighbours.push_back(std::next(at)->output());
  for (const model::TensorId& id : neighbours) {
    const bool tapped =
        std::any_of(result.ops.begin(), result.ops.end(), [&](const OpResult& o) { return o.id == id; });
    if (!tapped || graph.width(id) != graph.width(op.id)) continue;
    const double alike = compare(gather(a, id, al.row_a, first, n), own_b).nmse;
    if (!looks_alike(alike, own)) continue;
    out.push_back({model::DiagnosisCode::neighbour,
                   fmt::format("B's {} holds A's {} (nmse {} against it, {} against A's own): an index off by one, "
                               "or a value taken one step early or late",
                               model::to_string(op.id), model::to_string(id), short_number(alike), short_number(own)),
                   {{"b", model::to_string(op.id)}, {"a", model::to_string(id)}, {"nmse", alike}}});
    return out;
  }

  const HeadLayout layout = head_layout(op.id, result.config);
  for (const model::RopeStyle to : {model::RopeStyle::rotate_half, model::RopeStyle::interleaved}) {
    if (!layout.has_heads() || layout.head_dim % 2 != 0) break;
    const double alike = compare(other_pair_order(own_a, layout.head_dim, to), own_b).nmse;
    if (looks_alike(alike, own)) {
      out.push_back(
          {model::DiagnosisCode::permuted,
           fmt::format("B's {} holds A's values with each head's channels in the other RoPE layout "
                       "({} order, nmse {}): suspect the q/k row permutation of a GGUF conversion",
                       model::to_string(op.id), to == model::RopeStyle::rotate_half ? "rotate-half" : "interleaved",
                       short_number(alike)),
           {{"order", "rope-layout"}, {"nmse", alike}}});
      return out;
    }
  }
  const double alike = compare(sorted_rows(own_a), sorted_rows(own_b)).nmse;
  if (looks_alike(alike, own))
    out.push_back({model::DiagnosisCode::permuted,
                   fmt::format("B's {} holds A's values in another order within each row (sorted, they agree to "
                               "nmse {}): suspect a column, head or channel order",
                               model::to_string(op.id), short_number(alike)),
                   {{"order", "unknown"}, {"nmse", alike}}});
  return out;
}

}  // namespace tapdiff::bisect
