#pragma once
// Discrete choices of a mixture of experts (model/config.h Experts): where engine B picks other
// experts for a row than the truth. The truth's margin at the k-th place (the logit of the weakest
// expert it chose minus the strongest it did not) against the router logits' noise in B's
// precision decides what a flip is:
//   - a near tie (margin <= kNearTieFactor x noise): not a bug. It is recorded, and B continues
//     with the truth's choice (its moe_ids overwritten, teacher-forced), so the comparison goes on
//     past it instead of reporting the other experts' output as a divergence;
//   - a flip far outside the noise: a routing bug. It is recorded and left in place, so moe_ids
//     (compared exactly) fails, and the forced scan locates the op that is wrong.
// The noise is the floor engine's error on the row's router logits (the reference in B's
// precision), at least the rounding of B's storage; without a floor, that rounding times
// sqrt(dim) (a dot product of dim terms).
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "bisect/lockstep.h"
#include "model/config.h"
#include "model/host_tensor.h"

namespace tapdiff::bisect {

// A healthy engine's error may reach 10x the floor's (calibration's k = 100 bounds the NMSE), on
// each of the two logits that trade places.
inline constexpr double kNearTieFactor = 20;

struct ExpertLogit {
  int expert = 0;
  double a = 0, b = 0;  // the router logit in each engine
};

struct RoutingFlip {
  int layer = 0;
  std::int32_t sequence = 0, position = 0;
  std::vector<int> ids_a, ids_b;    // each engine's chosen experts, ascending
  std::vector<ExpertLogit> logits;  // the experts either chose, by A's logit descending
  double margin = 0;                // A's logit gap at the k-th place (>= 0)
  double noise = 0;                 // the router logits' error of B's precision in the row
  bool near_tie() const { return margin <= kNearTieFactor * noise; }
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
  // b_dtype: B's compute dtype (its storage's rounding: f64, f32, f16, bf16).
  RoutingArbiter(const model::ModelConfig& config, const std::string& b_dtype);

  // A moe_router step's outputs: held until the layer's moe_ids step.
  void hold_router(const StepOutputs& out);
  // The ids B and the floor continue with after the moe_ids step `out`: theirs, with each row
  // whose choice differs from the truth's by a near tie replaced by the truth's. Records B's flips.
  struct Settled {
    model::HostTensor b;
    std::optional<model::HostTensor> floor;
    bool b_changed = false, floor_changed = false;
  };
  Settled settle(const StepOutputs& out, std::span<const RowPlace> places);

  const std::vector<RoutingFlip>& flips() const { return flips_; }

 private:
  // The flip of row r of `ids` against the truth's, or nullopt where both chose the same experts.
  std::optional<RoutingFlip> flip(const model::HostTensor& ids, std::int64_t r, const model::HostTensor& truth_ids,
                                  const model::HostTensor& logits_b) const;
  model::HostTensor settle_rows(const model::HostTensor& ids, const model::HostTensor& truth_ids,
                                const model::HostTensor& logits, bool& changed, int layer,
                                std::span<const RowPlace> places, bool record);

  int dim_;
  double unit_roundoff_;
  int layer_ = -1;  // the layer whose router logits are held
  std::optional<model::HostTensor> truth_, floor_, b_;
  std::vector<RoutingFlip> flips_;
};

}  // namespace tapdiff::bisect
