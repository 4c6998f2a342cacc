#include "model/precision.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace tapdiff::model {
namespace {

struct Traits {
  Precision precision;
  std::string_view name;
  int significand_bits;
  double largest_finite;
  double builtin_nmse;
  double default_k;
};

constexpr std::array kTable = {
#define TAPDIFF_PRECISION(id, name, bits, largest, nmse, k) Traits{Precision::id, name, bits, largest, nmse, k},
#include "model/precision.def"
#undef TAPDIFF_PRECISION
};

const Traits& traits(Precision p) { return kTable[static_cast<std::size_t>(p)]; }

}  // namespace

std::string_view precision_name(Precision p) { return traits(p).name; }

std::optional<Precision> parse_precision(std::string_view name) {
  for (const Traits& t : kTable)
    if (t.name == name) return t.precision;
  return std::nullopt;
}

std::string precision_names() {
  std::string out;
  for (const Traits& t : kTable) out += (out.empty() ? "" : ", ") + std::string(t.name);
  return out;
}

int significand_bits(Precision p) { return traits(p).significand_bits; }
double unit_roundoff(Precision p) { return std::ldexp(1.0, -traits(p).significand_bits); }
double largest_finite(Precision p) { return traits(p).largest_finite; }
double builtin_nmse(Precision p) { return traits(p).builtin_nmse; }
double default_k(Precision p) { return traits(p).default_k; }

Precision coarsest(std::initializer_list<Precision> precisions) {
  if (precisions.size() == 0) return Precision::f32;
  return std::max(precisions);
}

}  // namespace tapdiff::model
