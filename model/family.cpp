#include "model/family.h"

#include <algorithm>
#include <array>

#include "model/errors.h"

namespace tapdiff::model {

#define TAPDIFF_FAMILY(id, name) const FamilySpec& id##_family();
#include "model/families.def"
#undef TAPDIFF_FAMILY

namespace {

constexpr std::array<std::string_view, kFamilyCount> kNames = {
#define TAPDIFF_FAMILY(id, name) name,
#include "model/families.def"
#undef TAPDIFF_FAMILY
};

// Each family's file, in the order of families.def.
const std::vector<const FamilySpec*>& table() {
  static const std::vector<const FamilySpec*> specs = [] {
    std::vector<const FamilySpec*> t = {
#define TAPDIFF_FAMILY(id, name) &id##_family(),
#include "model/families.def"
#undef TAPDIFF_FAMILY
    };
    for (std::size_t i = 0; i < t.size(); ++i)
      TAPDIFF_ASSERT(static_cast<std::size_t>(t[i]->family) == i, "the file of family {} describes family {}",
                     kNames[i], kNames[static_cast<std::size_t>(t[i]->family)]);
    return t;
  }();
  return specs;
}

bool among(std::span<const std::string_view> names, std::string_view name) {
  return std::ranges::find(names, name) != names.end();
}

}  // namespace

const FamilySpec& family_spec(Family f) { return *table()[static_cast<std::size_t>(f)]; }

std::span<const FamilySpec* const> all_families() { return table(); }

std::string_view family_name(Family f) { return kNames[static_cast<std::size_t>(f)]; }

std::optional<Family> family_named(std::string_view name) {
  for (const FamilySpec* s : table())
    if (family_name(s->family) == name || among(s->hf.model_types, name) || among(s->gguf.architectures, name))
      return s->family;
  return std::nullopt;
}

std::string family_names() {
  std::string out;
  for (const std::string_view name : kNames) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

const FamilySpec* hf_family(std::string_view model_type) {
  for (const FamilySpec* s : table()) {
    if (among(s->hf.model_types, model_type)) return s;
    for (const HfComposite& composite : s->hf.composites)
      if (composite.model_type == model_type) return s;
  }
  return nullptr;
}

}  // namespace tapdiff::model
