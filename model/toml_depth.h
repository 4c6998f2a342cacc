#pragma once
// A bound on the key paths of TOML that comes from files (name maps, tolerance files): toml++
// bounds the nesting of arrays and inline tables, but recurses once per part of a dotted key or
// a [table] / [[array]] header, so an 80 KB file of dotted keys overflows the stack.
#include <string>
#include <string_view>

namespace tapdiff::model {

// More parts than any map or tolerance file needs (a tap name's dots are inside quotes).
inline constexpr int kMaxTomlKeyParts = 64;

// FormatError "<source>:LINE:COLUMN: expected a TOML key of at most 64 parts, found more" for
// the first key or header, outside strings and comments, of more than kMaxTomlKeyParts parts.
void check_toml_key_depth(std::string_view text, const std::string& source);

}  // namespace tapdiff::model
