#include "model/diagnosis_code.h"

#include <array>

namespace tapdiff::model {
namespace {

constexpr std::array kNames = {
#define TAPDIFF_DIAGNOSIS(id, name) std::string_view(name),
#include "model/diagnoses.def"
#undef TAPDIFF_DIAGNOSIS
};

}  // namespace

std::string_view diagnosis_name(DiagnosisCode code) { return kNames[static_cast<std::size_t>(code)]; }

std::optional<DiagnosisCode> diagnosis_named(std::string_view name) {
  for (std::size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == name) return static_cast<DiagnosisCode>(i);
  return std::nullopt;
}

}  // namespace tapdiff::model
