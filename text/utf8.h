#pragma once
// UTF-8 as the tokenizers walk it: every byte belongs to exactly one character, a malformed
// sequence being a character of one byte.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tapdiff::text {

// The byte length of the UTF-8 character at s[i]: 1 for ASCII and for any malformed sequence
// (a stray continuation byte, a truncated or bad lead).
std::size_t utf8_length(std::string_view s, std::size_t i);
std::vector<std::size_t> utf8_lengths(std::string_view s);  // of every character of s, in order
// The code point at s[i] (of utf8_length(s, i) bytes); U+FFFD for a malformed byte.
char32_t utf8_decode(std::string_view s, std::size_t i);
std::string utf8_encode(char32_t cp);

}  // namespace tapdiff::text
