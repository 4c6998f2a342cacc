#include "bisect/token_tie.h"

#include <fmt/core.h>

#include "bisect/comparator.h"

namespace tapdiff::bisect {

std::string TokenTie::text() const {
  const std::string by = margin ? fmt::format("by {:.3g}", *margin) : "(B's token is not among A's top logits)";
  const std::string b_side =
      !b_logits_agree    ? fmt::format("B's own logits there put {} above {}: B did not choose its token by them", a, b)
      : within_tolerance ? "B's logits there are within tolerance: a near tie for B's precision"
                         : "B's logits there are past tolerance";
  return fmt::format("A's logits at position {} put {} above {} {}; {}", position, a, b, by, b_side);
}

nlohmann::json TokenTie::json() const {
  nlohmann::json j = {{"step", step},
                      {"position", position},
                      {"a", a},
                      {"b", b},
                      {"b_logits_agree", b_logits_agree},
                      {"within_tolerance", within_tolerance},
                      {"near_tie", near_tie()}};
  j["margin"] = margin ? nlohmann::json(*margin) : nlohmann::json(nullptr);
  return j;
}

std::optional<TokenTie> judged_tie(TokenTie tie, std::int32_t sequence, const OpResult& logits,
                                   std::span<const RowInfo> rows) {
  for (std::size_t i = 0; i < rows.size() && i < logits.rows.size(); ++i) {
    if (rows[i].sequence == sequence && rows[i].position == tie.position) {
      tie.within_tolerance = !logits.rows[i].over;
      return tie;
    }
  }
  return std::nullopt;
}

}  // namespace tapdiff::bisect
