#include "model/json_input.h"

#include <fmt/format.h>

#include "model/errors.h"

namespace tapdiff::model {
namespace {

using nlohmann::json;

// Appends `value` to out, stopping once out holds more than `limit` characters.
void append_excerpt(const json& value, std::string& out, std::size_t limit, int depth) {
  if (out.size() > limit) return;
  if (depth >= kMaxJsonDepth) {
    out += "...";
    return;
  }
  if (value.is_object() || value.is_array()) {
    const bool object = value.is_object();
    out += object ? '{' : '[';
    bool first = true;
    for (auto it = value.begin(); it != value.end() && out.size() <= limit; ++it) {
      if (!first) out += ',';
      first = false;
      if (object) out += json(it.key()).dump(-1, ' ', false, json::error_handler_t::replace) + ':';
      append_excerpt(*it, out, limit, depth + 1);
    }
    out += object ? '}' : ']';
    return;
  }
  out += value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Whether any value of `text` lies deeper than `limit` arrays and objects, counted in one pass
// over the brackets outside strings (nlohmann's parser callback, the other way to bound it, makes
// parsing quadratic in an object's members).
bool nested_deeper_than(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > limit) return true;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return false;
}

}  // namespace

json parse_json_text(std::string_view text, const std::string& source, std::string_view what) {
  if (nested_deeper_than(text, kMaxJsonDepth))
    throw_format_error(
        fmt::format("{}: expected {} in JSON, found values nested deeper than {} levels", source, what, kMaxJsonDepth));
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    throw_format_error(fmt::format("{}: expected {} in JSON, found a parse error: {}", source, what, e.what()));
  }
}

std::string json_excerpt(const json& value, std::size_t max_chars) {
  std::string out;
  append_excerpt(value, out, max_chars, 0);
  if (out.size() > max_chars) {
    std::size_t cut = max_chars > 3 ? max_chars - 3 : 0;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
    out = out.substr(0, cut) + "...";
  }
  return out;
}

}  // namespace tapdiff::model
