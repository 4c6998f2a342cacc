#include "bisect/compare/routing.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <iterator>
#include <numeric>
#include <set>

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "bisect/compare/text_format.h"
#include "model/errors.h"

namespace tapdiff::bisect {
namespace {

// A row's expert ids, ascending; a value that is no id of the `experts` (out of range, fractional,
// NaN) as -1.
std::vector<int> row_ids(const model::HostTensor& ids, std::int64_t r, std::int64_t experts) {
  std::vector<int> out;
  for (std::int64_t j = 0; j < ids.cols(); ++j) {
    const double v = ids.at(r, j);
    const bool id = v >= 0 && v < static_cast<double>(experts) && v == std::floor(v);
    out.push_back(id ? static_cast<int>(v) : -1);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A row's kept positions, ascending: its values >= 0 before the first -1 (the rest must be -1);
// a value that is no position of a row at `position` (out of [0, position], fractional, NaN, a
// position after a -1 or twice) as -1.
std::vector<int> row_positions(const model::HostTensor& ids, std::int64_t r, std::int32_t position) {
  std::vector<int> out;
  bool ended = false, wrong = false;
  for (std::int64_t j = 0; j < ids.cols(); ++j) {
    const double v = ids.at(r, j);
    if (v == -1 && !ended) {
      ended = true;
      continue;
    }
    const bool kept = v >= 0 && v <= position && v == std::floor(v) && !ended;
    if (kept) out.push_back(static_cast<int>(v));
    wrong = wrong || (!kept && !(v == -1 && ended));
  }
  std::sort(out.begin(), out.end());
  wrong = wrong || std::adjacent_find(out.begin(), out.end()) != out.end();
  if (wrong) out.insert(out.begin(), -1);
  return out;
}

// The elements of x not in y (both ascending).
std::vector<int> only_in(const std::vector<int>& x, const std::vector<int>& y) {
  std::vector<int> out;
  std::set_difference(x.begin(), x.end(), y.begin(), y.end(), std::back_inserter(out));
  return out;
}

}  // namespace

std::string RoutingFlip::text() const {
  const std::string where = fmt::format("layer {} position {}{}", layer, position,
                                        sequence > 0 ? fmt::format(" (sequence {})", sequence) : "");
  const std::string against =
      std::isinf(margin) ? std::string("A kept all of the row's positions: no margin")
                         : fmt::format("A's margin at the k-th place {} {} {} x noise {}", short_number(margin),
                                       near_tie() ? "<=" : ">", short_number(kNearTieFactor), short_number(noise));
  if (op == model::Op::idx_ids)
    return fmt::format(
        "{}: positions kept by A only {}, by B only {} (A kept {}); {}{}", where, fmt::join(only_in(ids_a, ids_b), ","),
        fmt::join(only_in(ids_b, ids_a), ","), ids_a.size(), against,
        not_an_expert ? " (-1: a value that is no position of the row, a fault whatever the margin)" : "");
  std::vector<std::string> logit_text;
  for (const ExpertLogit& e : logits)
    logit_text.push_back(fmt::format("{}: {} / {}", e.expert, short_number(e.a), short_number(e.b)));
  return fmt::format("{}: A chose experts {}, B {}; {} A / B {}; {}{}", where, fmt::join(ids_a, ","),
                     fmt::join(ids_b, ","), values, fmt::join(logit_text, ", "), against,
                     not_an_expert ? " (-1: a value that is no expert's id, a fault whatever the margin)" : "");
}

nlohmann::json to_json(const RoutingFlip& f) {
  nlohmann::json logits = nlohmann::json::array();
  for (const ExpertLogit& e : f.logits) logits.push_back({{"expert", e.expert}, {"a", e.a}, {"b", e.b}});
  return {{"op", model::op_name(f.op)},      {"layer", f.layer},         {"sequence", f.sequence},
          {"position", f.position},          {"ids_a", f.ids_a},         {"ids_b", f.ids_b},
          {"logits", std::move(logits)},     {"margin", f.margin},       {"noise", f.noise},
          {"near_tie", f.near_tie()},        {"factor", kNearTieFactor}, {"settled", f.settled},
          {"not_an_expert", f.not_an_expert}};
}

std::vector<RowPlace> row_places(std::span<const model::BatchPart> parts) {
  std::vector<RowPlace> places;
  for (const model::BatchPart& p : parts)
    for (std::size_t t = 0; t < p.tokens.size(); ++t)
      places.push_back({p.sequence, p.first_pos + static_cast<std::int32_t>(t)});
  return places;
}

// The unit roundoff of B's storage is the rounding every stored router logit carries.
RoutingArbiter::RoutingArbiter(const model::ModelConfig& config, model::Precision b_precision, bool settle)
    : dim_(config.dim),
      groups_(config.experts.groups),
      top_groups_(config.experts.top_groups),
      group_best_(config.experts.group_best),
      scored_(model::has_choice_scores(config)),
      unit_roundoff_(model::unit_roundoff(b_precision)),
      settle_(settle),
      index_dims_(static_cast<double>(config.indexer.heads) * config.indexer.head_dim) {}

void RoutingArbiter::hold_router(int layer, const model::HostTensor& truth, const model::HostTensor* floor,
                                 const model::HostTensor& b) {
  layer_ = layer;
  truth_ = truth;
  b_ = b;
  floor_.reset();
  if (floor) floor_ = *floor;
}

std::optional<RoutingFlip> RoutingArbiter::flip(const model::HostTensor& ids, std::int64_t r,
                                                const model::HostTensor& truth_ids,
                                                const model::HostTensor& logits) const {
  RoutingFlip f;
  f.values = scored_ ? "choice scores (moe_scores)" : "router logits";
  const model::HostTensor& a = *truth_;
  f.ids_a = row_ids(truth_ids, r, a.cols());
  f.ids_b = row_ids(ids, r, a.cols());
  if (f.ids_a == f.ids_b && f.ids_b.front() >= 0) return std::nullopt;
  f.not_an_expert = f.ids_b.front() < 0 || f.ids_a.front() < 0;
  const std::set<int> chosen(f.ids_a.begin(), f.ids_a.end());
  const std::vector<bool> eligible = a_groups(r);
  const std::int64_t per_group = a.cols() / groups_;
  double weakest = INFINITY, strongest = -INFINITY, largest = 0;
  for (std::int64_t e = 0; e < a.cols(); ++e) {
    const double v = a.at(r, e);
    if (chosen.contains(static_cast<int>(e)))
      weakest = std::min(weakest, v);
    else if (eligible[static_cast<std::size_t>(e / per_group)])
      strongest = std::max(strongest, v);
    largest = std::max(largest, std::abs(v));
  }
  f.margin = std::max(0.0, weakest - strongest);
  if (groups_ > 1) f.margin = std::min(f.margin, group_margin(r) / group_best_);  // a group's score sums that many
  std::set<int> either(f.ids_a.begin(), f.ids_a.end());
  either.insert(f.ids_b.begin(), f.ids_b.end());
  double floor_error = 0;
  either.erase(-1);
  for (int e : either) {
    f.logits.push_back({e, a.at(r, e), logits.at(r, e)});
    if (floor_) floor_error = std::max(floor_error, std::abs(floor_->at(r, e) - a.at(r, e)));
  }
  std::sort(f.logits.begin(), f.logits.end(), [](const ExpertLogit& x, const ExpertLogit& y) { return x.a > y.a; });
  const double rounding = largest * unit_roundoff_;
  f.noise = floor_ ? std::max(floor_error, rounding) : rounding * std::sqrt(static_cast<double>(dim_));
  return f;
}

std::vector<double> RoutingArbiter::group_scores(std::int64_t r) const {
  const model::HostTensor& a = *truth_;
  const std::int64_t per_group = a.cols() / groups_;
  std::vector<double> scores;
  for (int g = 0; g < groups_; ++g) {
    std::vector<double> v;
    for (std::int64_t e = g * per_group; e < (g + 1) * per_group; ++e) v.push_back(a.at(r, e));
    std::partial_sort(v.begin(), v.begin() + group_best_, v.end(), std::greater<>());
    scores.push_back(std::accumulate(v.begin(), v.begin() + group_best_, 0.0));
  }
  return scores;
}

std::vector<bool> RoutingArbiter::a_groups(std::int64_t r) const {
  if (groups_ == 1) return {true};
  const std::vector<double> scores = group_scores(r);
  std::vector<std::size_t> order(scores.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return scores[x] > scores[y]; });
  std::vector<bool> eligible(scores.size(), false);
  for (int i = 0; i < top_groups_; ++i) eligible[order[static_cast<std::size_t>(i)]] = true;
  return eligible;
}

double RoutingArbiter::group_margin(std::int64_t r) const {
  const std::vector<double> scores = group_scores(r);
  const std::vector<bool> eligible = a_groups(r);
  double weakest = INFINITY, strongest = -INFINITY;
  for (std::size_t g = 0; g < scores.size(); ++g) {
    if (eligible[g])
      weakest = std::min(weakest, scores[g]);
    else
      strongest = std::max(strongest, scores[g]);
  }
  return std::max(0.0, weakest - strongest);
}

model::HostTensor RoutingArbiter::settle_rows(const model::HostTensor& ids, const model::HostTensor& truth_ids,
                                              const FlipOf& flip_of, bool& changed, int layer,
                                              std::span<const RowPlace> places, bool record) {
  model::HostTensor out = ids;
  for (std::int64_t r = 0; r < ids.rows(); ++r) {
    std::optional<RoutingFlip> f = flip_of(ids, r);
    if (!f) continue;
    f->layer = layer;
    f->sequence = places[static_cast<std::size_t>(r)].sequence;
    f->position = places[static_cast<std::size_t>(r)].position;
    if (settle_ && f->near_tie()) {
      out.set_rows(r, truth_ids.slice_rows(r, 1).to(ids.scalar()));
      changed = f->settled = true;
    }
    if (record) flips_.push_back(std::move(*f));
  }
  return out;
}

RoutingArbiter::Settled RoutingArbiter::settle(int layer, const model::HostTensor& truth,
                                               const model::HostTensor* floor, const model::HostTensor& b,
                                               std::span<const RowPlace> places) {
  TAPDIFF_ASSERT(layer == layer_ && truth_ && truth_->rows() == truth.rows(),
                 "moe_ids of layer {} without its router logits", layer);
  TAPDIFF_ASSERT(std::ssize(places) == truth.rows(), "{} places for {} rows", places.size(), truth.rows());
  const auto flip_against = [&](const model::HostTensor& logits) {
    return [&](const model::HostTensor& ids, std::int64_t r) { return flip(ids, r, truth, logits); };
  };
  Settled s;
  s.b = settle_rows(b, truth, flip_against(*b_), s.b_changed, layer, places, true);
  if (floor) s.floor = settle_rows(*floor, truth, flip_against(*floor_), s.floor_changed, layer, places, false);
  layer_ = -1;
  return s;
}

bool RoutingArbiter::holds(model::Op ids, int layer) const {
  return ids == model::Op::moe_ids ? layer_ == layer : ids == model::Op::idx_ids && index_layer_ == layer;
}

void RoutingArbiter::hold_index_scores(int layer, const model::HostTensor& truth, const model::HostTensor* floor) {
  index_layer_ = layer;
  index_truth_ = truth;
  index_floor_.reset();
  if (floor) index_floor_ = *floor;
}

std::optional<RoutingFlip> RoutingArbiter::kept_flip(const model::HostTensor& ids, std::int64_t r,
                                                     const model::HostTensor& truth_ids, std::int32_t position) const {
  RoutingFlip f;
  f.op = model::Op::idx_ids;
  f.values = "indexer scores (idx_scores)";
  f.ids_a = row_positions(truth_ids, r, position);
  f.ids_b = row_positions(ids, r, position);
  if (f.ids_a == f.ids_b && (f.ids_b.empty() || f.ids_b.front() >= 0)) return std::nullopt;
  f.not_an_expert = (!f.ids_b.empty() && f.ids_b.front() < 0) || (!f.ids_a.empty() && f.ids_a.front() < 0);
  const model::HostTensor& s = *index_truth_;
  const std::int64_t k = ids.cols();
  if (position + 1 <= k) {  // every position kept: no choice was made
    f.margin = INFINITY;
    return f;
  }
  const double last = s.at(r, k - 1), next = s.at(r, k);
  f.margin = std::max(0.0, last - next);
  double largest = 0, floor_error = 0;
  for (std::int64_t j = 0; j <= k; ++j) largest = std::max(largest, std::abs(s.at(r, j)));
  if (index_floor_)
    floor_error = std::max(std::abs(index_floor_->at(r, k - 1) - last), std::abs(index_floor_->at(r, k) - next));
  const double rounding = largest * unit_roundoff_;
  f.noise = index_floor_ ? std::max(floor_error, rounding) : rounding * std::sqrt(index_dims_);
  return f;
}

RoutingArbiter::Settled RoutingArbiter::settle_kept(int layer, const model::HostTensor& truth,
                                                    const model::HostTensor* floor, const model::HostTensor& b,
                                                    std::span<const RowPlace> places) {
  TAPDIFF_ASSERT(layer == index_layer_ && index_truth_ && index_truth_->rows() == truth.rows() &&
                     index_truth_->cols() == truth.cols() + 1,
                 "idx_ids of layer {} without its idx_scores", layer);
  TAPDIFF_ASSERT(std::ssize(places) == truth.rows(), "{} places for {} rows", places.size(), truth.rows());
  const FlipOf flip_of = [&](const model::HostTensor& ids, std::int64_t r) {
    return kept_flip(ids, r, truth, places[static_cast<std::size_t>(r)].position);
  };
  Settled s;
  s.b = settle_rows(b, truth, flip_of, s.b_changed, layer, places, true);
  if (floor) s.floor = settle_rows(*floor, truth, flip_of, s.floor_changed, layer, places, false);
  index_layer_ = -1;
  return s;
}

}  // namespace tapdiff::bisect
