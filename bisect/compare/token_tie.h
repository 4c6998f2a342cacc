#pragma once
// Where two runs' greedy tokens part: the row whose logits chose the two tokens, A's margin there
// between its token and B's, whether B's logits at that row are within the logits op's tolerance
// and rank B's token first of the two, and whether the margin is within the noise that tolerance
// allows: kTieFactor times sqrt(2) (two logits trade places) times the RMS error per logit of a
// row at the tolerance's NMSE bound (sqrt(bound x mean of A's logits squared)). All three: B's
// precision alone swapped two tokens that close, a near tie, not a bug (llama.cpp's 8-bit
// activations part from the exact answer so, docs/tolerances.md). Otherwise B's logits there are
// wrong (the comparison's first op past tolerance says where from; a row within an NMSE bound can
// still hold two far-moved logits), or B did not choose its token by them.
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

namespace tapdiff::bisect {

struct OpResult;

inline constexpr double kTieFactor = 4;
struct RowInfo;

struct TokenTie {
  std::int64_t step = 0;      // the generated token's index
  std::int32_t position = 0;  // the row whose logits chose it
  std::int32_t a = 0, b = 0;  // each run's token
  // A's logit of a minus A's logit of b (>= 0); nullopt where A's logit of b is not known (bisect
  // keeps A's top-k logits only).
  std::optional<double> margin;
  bool b_logits_agree = true;     // B's own logits at that row put b at or above a
  bool within_tolerance = false;  // B's logits at that row within the logits op's tolerance
  // The margin a near tie may have (above); nullopt where the tolerance bounds no NMSE.
  std::optional<double> noise_margin;
  bool margin_within_noise() const { return margin && noise_margin && *margin <= *noise_margin; }
  bool near_tie() const { return b_logits_agree && within_tolerance && margin_within_noise(); }

  std::string text() const;  // one clause: "A's logits at position P put a above b by m; ..."
  nlohmann::json json() const;
};

// The tie at `step`, decided by the row at `position` of sequence `sequence`: tie's step, position,
// tokens, margin and b_logits_agree as the caller read them, within_tolerance and noise_margin from
// the logits op's comparison over `rows` (its rows[i] judges rows[i]). nullopt when the logits were not compared at
// that row.
std::optional<TokenTie> judged_tie(TokenTie tie, std::int32_t sequence, const OpResult& logits,
                                   std::span<const RowInfo> rows);

}  // namespace tapdiff::bisect
