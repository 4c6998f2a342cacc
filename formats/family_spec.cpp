#include "formats/family_spec.h"

#include <algorithm>

#include "model/errors.h"

namespace tapdiff::formats {

#define TAPDIFF_FAMILY(id, name) const FamilySpec& id##_family();
#include "model/families.def"
#undef TAPDIFF_FAMILY

namespace {

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
                     model::family_name(static_cast<Family>(i)), model::family_name(t[i]->family));
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

std::optional<Family> family_named(std::string_view name) {
  for (const FamilySpec* s : table())
    if (model::family_name(s->family) == name || among(s->hf.model_types, name) || among(s->gguf.architectures, name))
      return s->family;
  return std::nullopt;
}

const FamilySpec* hf_family(std::string_view model_type) {
  for (const FamilySpec* s : table()) {
    if (among(s->hf.model_types, model_type)) return s;
    for (const HfComposite& composite : s->hf.composites)
      if (composite.model_type == model_type) return s;
  }
  return nullptr;
}

std::string synth_architectures() {
  std::vector<std::string_view> names;
  for (const FamilySpec* s : table())
    if (s->synth.block != nullptr) names.push_back(s->gguf.architectures.front());
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + std::string(names[i]);
  return out;
}

}  // namespace tapdiff::formats
