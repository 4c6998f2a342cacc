#pragma once
// The Unicode classes the pre-tokenizers' patterns name: \p{L} (letters), \p{N} (numbers) and \s
// (the White_Space property). L and N come from a generated table (model/unicode_classes.cpp,
// scripts/gen-unicode-classes.py; unicode_version() says which Unicode).
#include <string_view>

namespace tapdiff::model {

std::string_view unicode_version();
bool is_letter(char32_t c);  // general category L*
bool is_number(char32_t c);  // general category N*

// Unicode's White_Space property (PropList.txt): what \s matches in the tokenizers' regexes.
constexpr bool is_white_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

}  // namespace tapdiff::model
