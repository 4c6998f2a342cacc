#include "text/utf8.h"

namespace tapdiff::text {

namespace {

bool is_continuation(unsigned char b) { return (b & 0xC0) == 0x80; }

}  // namespace

std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto lead = static_cast<unsigned char>(s[i]);
  std::size_t n = 1;
  if ((lead & 0xE0) == 0xC0)
    n = 2;
  else if ((lead & 0xF0) == 0xE0)
    n = 3;
  else if ((lead & 0xF8) == 0xF0)
    n = 4;
  if (i + n > s.size()) return 1;
  for (std::size_t k = 1; k < n; ++k)
    if (!is_continuation(static_cast<unsigned char>(s[i + k]))) return 1;
  return n;
}

std::vector<std::size_t> utf8_lengths(std::string_view s) {
  std::vector<std::size_t> lengths;
  lengths.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); i += lengths.back()) lengths.push_back(utf8_length(s, i));
  return lengths;
}

char32_t utf8_decode(std::string_view s, std::size_t i) {
  const std::size_t n = utf8_length(s, i);
  const auto lead = static_cast<unsigned char>(s[i]);
  if (n == 1) return lead < 0x80 ? char32_t{lead} : char32_t{0xFFFD};
  char32_t cp = lead & (0x7Fu >> n);
  for (std::size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3Fu);
  return cp;
}

std::string utf8_encode(char32_t cp) {
  std::string out;
  auto put = [&](char32_t bits) { out += static_cast<char>(static_cast<unsigned char>(bits)); };
  if (cp < 0x80) {
    put(cp);
  } else if (cp < 0x800) {
    put(0xC0 | (cp >> 6)), put(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    put(0xE0 | (cp >> 12)), put(0x80 | ((cp >> 6) & 0x3F)), put(0x80 | (cp & 0x3F));
  } else {
    put(0xF0 | (cp >> 18)), put(0x80 | ((cp >> 12) & 0x3F)), put(0x80 | ((cp >> 6) & 0x3F)), put(0x80 | (cp & 0x3F));
  }
  return out;
}

}  // namespace tapdiff::text
