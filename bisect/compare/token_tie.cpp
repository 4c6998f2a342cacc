#include "bisect/compare/token_tie.h"

#include <cmath>

#include <fmt/core.h>

#include "bisect/compare/comparator.h"

namespace tapdiff::bisect {

std::string TokenTie::text() const {
  const std::string by = margin ? fmt::format("by {:.3g}", *margin) : "(B's token is not among A's top logits)";
  const std::string noise = noise_margin
                                ? fmt::format("the noise the logits' tolerance allows, {:.3g}", *noise_margin)
                                : std::string("the noise (the logits' tolerance bounds no NMSE, so it is not known)");
  const std::string b_side =
      !b_logits_agree ? fmt::format("B's own logits there put {} above {}: B did not choose its token by them", a, b)
      : !within_tolerance ? "B's logits there are past tolerance"
      : near_tie()        ? fmt::format(
                                "within {}, and B's logits there are within tolerance: a near tie for B's "
                                       "precision",
                                noise)
      : margin ? fmt::format(
                     "more than {}: B's logits there are within tolerance, but two of them moved "
                     "more than B's precision explains",
                     noise)
               : "B's logits there are within tolerance, but A's margin is not known";
  return fmt::format("A's logits at position {} put {} above {} {}; {}", position, a, b, by, b_side);
}

nlohmann::json TokenTie::json() const {
  nlohmann::json j = {{"step", step},
                      {"position", position},
                      {"a", a},
                      {"b", b},
                      {"b_logits_agree", b_logits_agree},
                      {"within_tolerance", within_tolerance},
                      {"noise_margin", noise_margin ? nlohmann::json(*noise_margin) : nlohmann::json(nullptr)},
                      {"near_tie", near_tie()}};
  j["margin"] = margin ? nlohmann::json(*margin) : nlohmann::json(nullptr);
  return j;
}

std::optional<TokenTie> judged_tie(TokenTie tie, std::int32_t sequence, const OpResult& logits,
                                   std::span<const RowInfo> rows) {
  for (std::size_t i = 0; i < rows.size() && i < logits.rows.size(); ++i) {
    if (rows[i].sequence == sequence && rows[i].position == tie.position) {
      tie.within_tolerance = !logits.rows[i].over;
      if (const auto& nmse = logits.tolerance.bound.nmse)
        tie.noise_margin = kTieFactor * std::sqrt(2.0 * *nmse) * logits.rows[i].rms_a;
      return tie;
    }
  }
  return std::nullopt;
}

}  // namespace tapdiff::bisect
