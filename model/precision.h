#pragma once
// What an engine computes in, as a value: the tolerances, the routing margins, the diagnoses and
// the reference's emulation read its traits from one table (model/precision.def). Names are
// parsed and printed only where dumps, tolerance files and the command line are read and written.
#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace tapdiff::model {

enum class Precision : std::uint8_t {
#define TAPDIFF_PRECISION(id, name, bits, largest, nmse, k) id,
#include "model/precision.def"
#undef TAPDIFF_PRECISION
};

// Every precision, finest first.
inline constexpr std::array kAllPrecisions = {
#define TAPDIFF_PRECISION(id, name, bits, largest, nmse, k) Precision::id,
#include "model/precision.def"
#undef TAPDIFF_PRECISION
};

std::string_view precision_name(Precision p);
// nullopt for a name the table lacks.
std::optional<Precision> parse_precision(std::string_view name);
// Every name, finest first: "f64, f32, f16, bf16, llama.cpp".
std::string precision_names();

int significand_bits(Precision p);
double unit_roundoff(Precision p);  // 2^-significand_bits
double largest_finite(Precision p);
double builtin_nmse(Precision p);
double default_k(Precision p);

// The coarsest of some precisions (the table's order); f32 when none is given.
Precision coarsest(std::initializer_list<Precision> precisions);

}  // namespace tapdiff::model
