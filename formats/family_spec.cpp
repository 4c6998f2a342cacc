#include "formats/family_spec.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

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

std::optional<std::pair<int, std::string_view>> llama_layer_name(std::string_view name) {
  constexpr std::string_view kPrefix = "model.layers.";
  if (!name.starts_with(kPrefix)) return std::nullopt;
  name.remove_prefix(kPrefix.size());
  int layer = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), layer);
  if (ec != std::errc{} || end == name.data() || end == name.data() + name.size() || *end != '.') return std::nullopt;
  return std::pair(layer, name.substr(static_cast<std::size_t>(end - name.data()) + 1));
}

std::string hf_llama_name(std::string name, const HfRecipe& hf) {
  for (const HfRename& r : hf.names)
    if (name.starts_with(r.from)) {
      name = fmt::format("{}{}", r.to, name.substr(r.from.size()));
      break;
    }
  if (const auto in_layer = llama_layer_name(name))
    for (const HfRename& r : hf.layer_names)
      if (in_layer->second.starts_with(r.from))
        return fmt::format("model.layers.{}.{}{}", in_layer->first, r.to, in_layer->second.substr(r.from.size()));
  return name;
}

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
