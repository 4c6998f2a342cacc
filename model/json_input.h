#pragma once
// JSON that comes from files (config.json, safetensors headers, dump attributes): parsed with a
// bound on nesting, and quoted in messages as a bounded one-line excerpt.
#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tapdiff::model {

// Deeper nesting than any config or header needs; deeper input is refused before it is built.
inline constexpr int kMaxJsonDepth = 128;

// The JSON value of `text`; FormatError "<source>: expected <what> in JSON, found ..." for a syntax
// error or nesting deeper than kMaxJsonDepth.
nlohmann::json parse_json_text(std::string_view text, const std::string& source, std::string_view what);

// `value` as compact JSON on one line (strings escaped as JSON escapes them), cut to about max_chars (and to
// kMaxJsonDepth levels) with "...": safe to quote for any value, however large or deep.
std::string json_excerpt(const nlohmann::json& value, std::size_t max_chars = 80);

}  // namespace tapdiff::model
