#pragma once
// TOML that comes from files (name maps, tolerance files), checked before toml++ parses it:
// - toml++ 3.3 (Debian 12) classifies some non-ASCII characters through a table that reaches
//   __builtin_unreachable (marzer/tomlplusplus#295 and #190): undefined behaviour on such a file;
//   no key or value of these files needs one;
// - toml++ bounds the nesting of arrays and inline tables, but recurses once per part of a dotted
//   key or a [table] / [[array]] header, so an 80 KB file of dotted keys overflows the stack.
#include <string>
#include <string_view>

namespace tapdiff::model {

// More parts than any map or tolerance file needs (a tap name's dots are inside quotes).
inline constexpr int kMaxTomlKeyParts = 64;

// FormatError "<source>:LINE:COLUMN: expected ASCII outside comments, found the byte 0x.." for the
// first byte >= 0x80 outside comments, or "...: expected a TOML key of at most 64 parts, found
// more" for the first key or header, outside strings and comments, of more parts.
void check_toml_text(std::string_view text, const std::string& source);

}  // namespace tapdiff::model
