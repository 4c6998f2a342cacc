#pragma once
// The diagnosis codes as a value (model/diagnoses.def): the diagnoses, the fault catalogue and the
// tests name them by this enum; the reports print diagnosis_name.
#include <cstdint>
#include <optional>
#include <string_view>

namespace tapdiff::model {

enum class DiagnosisCode : std::uint8_t {
#define TAPDIFF_DIAGNOSIS(id, name) id,
#include "model/diagnoses.def"
#undef TAPDIFF_DIAGNOSIS
};

std::string_view diagnosis_name(DiagnosisCode code);  // "some-heads"
std::optional<DiagnosisCode> diagnosis_named(std::string_view name);

}  // namespace tapdiff::model
