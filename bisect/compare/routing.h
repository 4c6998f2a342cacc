#pragma once
// Discrete choices of a mixture of experts (model/config.h Experts): where engine B picks other
// experts for a row than the truth. The truth's margin at the k-th place, in the values the choice
// is made on (router logits, or the choice scores where the model has them: model::choice_op), against their
// noise in B's precision decides what a flip is. The margin is the value of the weakest expert it
// chose minus the strongest it did not (of the groups it could choose from), and with expert groups
// at most A's margin between the groups it took and the others over group_best (a group's score
// sums that many values):
//   - a near tie (margin <= kNearTieFactor x noise): not a bug. It is recorded, and in a bisection
//     B continues with the truth's choice (its moe_ids overwritten, teacher-forced: settled), so the
//     comparison goes on past it instead of reporting the other experts' output as a divergence; in
//     a comparison of two dumps it is recorded only;
//   - a flip far outside the noise: a routing bug. It is recorded and left in place, so moe_ids
//     (compared exactly) fails, and the forced scan locates the op that is wrong.
// The noise is the floor engine's error on the row's router logits (the reference in B's
// precision), at least the rounding of B's storage; without a floor, that rounding times
// sqrt(dim) (a dot product of dim terms).
// A sparse attention's indexer (model/config.h SparseIndexer) chooses alike: the positions each
// query keeps (idx_ids) by its scores (idx_scores: the kept ones descending, then the best one not
// kept), A's margin the last kept score less the best not kept, the noise the floor's error on
// those two scores (without a floor, the rounding times sqrt(heads x head_dim)). A row with no more
// positions than top_k keeps them all: it has no margin, and any other choice is a bug.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/batch_runner.h"
#include "model/config.h"
#include "model/host_tensor.h"
#include "model/precision.h"

namespace tapdiff::bisect {

// A healthy engine's error may reach 10x the floor's (calibration's k = 100 bounds the NMSE), on
// each of the two logits that trade places.
inline constexpr double kNearTieFactor = 20;

struct ExpertLogit {
  int expert = 0;
  double a = 0, b = 0;  // the router logit in each engine
};

struct RoutingFlip {
  model::Op op = model::Op::moe_ids;  // the choice: moe_ids (experts) or idx_ids (positions kept)
  int layer = 0;
  std::int32_t sequence = 0, position = 0;
  std::vector<int> ids_a, ids_b;    // each engine's chosen experts (kept positions), ascending
  std::string_view values;          // what `logits` and the margin are in: router logits, or choice scores
  std::vector<ExpertLogit> logits;  // the experts either chose, by A's value descending
  double margin = 0;                // A's gap at the k-th place (>= 0), in the values chosen by
  double noise = 0;                 // those values' error of B's precision in the row
  bool settled = false;             // B (a bisection's) continued with A's choice: a near tie
  bool not_an_expert = false;       // an id that names no expert (no position of the row): -1 in ids
  bool near_tie() const { return !not_an_expert && margin <= kNearTieFactor * noise; }
  std::string text() const;  // one line: where, the choices, the logits, margin against noise
};
nlohmann::json to_json(const RoutingFlip& flip);

// Where each row of a pass is: its sequence and position.
struct RowPlace {
  std::int32_t sequence = 0, position = 0;
};
std::vector<RowPlace> row_places(std::span<const model::BatchPart> parts);

class RoutingArbiter {
 public:
  // b_precision: what B computes in (its storage's rounding). settle: near ties are replaced by
  // the truth's choice (a bisection); else only recorded (two dumps).
  RoutingArbiter(const model::ModelConfig& config, model::Precision b_precision, bool settle);

  // A layer's moe_router outputs (rows of a pass, or of a dump): held until its moe_ids.
  void hold_router(int layer, const model::HostTensor& truth, const model::HostTensor* floor,
                   const model::HostTensor& b);
  // The ids B and the floor continue with after the layer's moe_ids, rows at `places`: theirs,
  // with each row whose choice differs from the truth's by a near tie replaced by the truth's.
  // Records B's flips.
  struct Settled {
    model::HostTensor b;
    std::optional<model::HostTensor> floor;
    bool b_changed = false, floor_changed = false;
  };
  Settled settle(int layer, const model::HostTensor& truth, const model::HostTensor* floor, const model::HostTensor& b,
                 std::span<const RowPlace> places);
  // The same for a sparse attention's indexer: its idx_scores held until its idx_ids are settled.
  void hold_index_scores(int layer, const model::HostTensor& truth, const model::HostTensor* floor);
  Settled settle_kept(int layer, const model::HostTensor& truth, const model::HostTensor* floor,
                      const model::HostTensor& b, std::span<const RowPlace> places);

  // Whether the values a choice (moe_ids or idx_ids) of `layer` is settled by are held: each
  // settle takes them.
  bool holds(model::Op ids, int layer) const;

  const std::vector<RoutingFlip>& flips() const { return flips_; }

 private:
  // The flip of row r of `ids` against the truth's, or nullopt where both chose the same experts
  // (kept the same positions, row r at `position`).
  std::optional<RoutingFlip> flip(const model::HostTensor& ids, std::int64_t r, const model::HostTensor& truth_ids,
                                  const model::HostTensor& logits_b) const;
  std::optional<RoutingFlip> kept_flip(const model::HostTensor& ids, std::int64_t r, const model::HostTensor& truth_ids,
                                       std::int32_t position) const;
  using FlipOf = std::function<std::optional<RoutingFlip>(const model::HostTensor& ids, std::int64_t r)>;
  model::HostTensor settle_rows(const model::HostTensor& ids, const model::HostTensor& truth_ids, const FlipOf& flip_of,
                                bool& changed, int layer, std::span<const RowPlace> places, bool record);

  // A's groups of experts (config.experts.groups > 1): each one's group_best largest choice values summed,
  // which of them A's choice may take (its top_groups best, ties to the lower), and A's margin at
  // the top_groups-th place.
  std::vector<double> group_scores(std::int64_t r) const;
  std::vector<bool> a_groups(std::int64_t r) const;
  double group_margin(std::int64_t r) const;

  int dim_;
  int groups_, top_groups_, group_best_;
  bool scored_;
  double unit_roundoff_;
  bool settle_;
  int layer_ = -1;  // the layer whose router logits are held
  std::optional<model::HostTensor> truth_, floor_, b_;
  double index_dims_;  // the indexer's heads x head_dim: the terms of a score
  int index_layer_ = -1;
  std::optional<model::HostTensor> index_truth_, index_floor_;
  std::vector<RoutingFlip> flips_;
};

}  // namespace tapdiff::bisect
