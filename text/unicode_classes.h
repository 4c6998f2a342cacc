#pragma once
// The Unicode classes the pre-tokenizers' patterns name: the general categories of \p{..}
// (\p{L} letters, \p{Lu} upper case, \p{N} numbers, ...), \s (the White_Space property) and
// \w (word characters). The categories come from a generated table (text/unicode_classes.cpp,
// scripts/gen-unicode-classes.py; unicode_version() says which Unicode).
#include <cstdint>
#include <string_view>

namespace tapdiff::text {

// Unicode's general categories; Cn for a code point that is not assigned (or past U+10FFFF).
enum class GeneralCategory : std::uint8_t {
  Lu,
  Ll,
  Lt,
  Lm,
  Lo,
  Mn,
  Mc,
  Me,
  Nd,
  Nl,
  No,
  Pc,
  Pd,
  Ps,
  Pe,
  Pi,
  Pf,
  Po,
  Sm,
  Sc,
  Sk,
  So,
  Zs,
  Zl,
  Zp,
  Cc,
  Cf,
  Cs,
  Co,
  Cn
};

std::string_view unicode_version();
GeneralCategory general_category(char32_t c);

constexpr bool is_letter_category(GeneralCategory g) { return g <= GeneralCategory::Lo; }  // L*
constexpr bool is_number_category(GeneralCategory g) {                                     // N*
  return g >= GeneralCategory::Nd && g <= GeneralCategory::No;
}
inline bool is_letter(char32_t c) { return is_letter_category(general_category(c)); }
inline bool is_number(char32_t c) { return is_number_category(general_category(c)); }

// Unicode's White_Space property (PropList.txt): what \s matches in the tokenizers' regexes.
constexpr bool is_white_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// The regex class \w as Rust's regex crate defines it, which tokenizers tests around a
// `single_word` added token (UTS#18: Alphabetic, Mark, Decimal_Number, Connector_Punctuation,
// Join_Control). From regex-syntax's own table (text/unicode_word.cpp,
// scripts/gen-unicode-word.py), whose Unicode version word_character_unicode_version() gives.
bool is_word_character(char32_t c);
std::string_view word_character_unicode_version();

}  // namespace tapdiff::text
