#pragma once
// The data of Unicode's normalization forms, generated (text/unicode_normalization_tables.cpp,
// scripts/gen-unicode-normalization.py), for text/unicode_normalization.cpp. Every table is sorted
// by its first member.
#include <cstdint>
#include <span>
#include <string_view>

namespace tapdiff::model::normalization_tables {

struct CombiningClass {
  char32_t cp;
  std::uint8_t ccc;  // not 0
};
struct Decomposition {
  char32_t cp;
  std::uint32_t offset;  // into the table's pool
  std::uint32_t length;
};
struct Composite {
  char32_t first, second, composite;
};

std::string_view unicode_version();
std::span<const CombiningClass> combining_classes();
std::span<const Decomposition> canonical();  // full canonical decompositions (NFD), Hangul excepted
std::span<const char32_t> canonical_pool();
std::span<const Decomposition> compatibility();  // full compatibility ones (NFKD) that are not NFD's
std::span<const char32_t> compatibility_pool();
std::span<const Composite> composites();  // the primary composites, by (first, second)

}  // namespace tapdiff::model::normalization_tables
