#include "model/family.h"

#include <array>

namespace tapdiff::model {
namespace {

constexpr std::array<std::string_view, kFamilyCount> kNames = {
#define TAPDIFF_FAMILY(id, name) name,
#include "model/families.def"
#undef TAPDIFF_FAMILY
};

}  // namespace

std::string_view family_name(Family f) { return kNames[static_cast<std::size_t>(f)]; }

std::string family_names() {
  std::string out;
  for (const std::string_view name : kNames) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

}  // namespace tapdiff::model
