#include "bisect/compare/text_format.h"

#include <cmath>

#include <fmt/core.h>

namespace tapdiff::bisect {

std::string short_number(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == 0) return "0";
  const double magnitude = std::abs(value);
  if (magnitude >= 1e-3 && magnitude < 1e5) return fmt::format("{:.4g}", value);
  std::string text = fmt::format("{:.2e}", value);  // "2.10e-03"
  const std::size_t e = text.find('e');
  std::string mantissa = text.substr(0, e), exponent = text.substr(e + 1);
  while (mantissa.find('.') != std::string::npos && (mantissa.back() == '0' || mantissa.back() == '.'))
    mantissa.pop_back();
  const char sign = exponent[0] == '-' ? '-' : '\0';
  std::size_t digits = exponent.find_first_not_of("+-0");
  exponent = digits == std::string::npos ? "0" : exponent.substr(digits);
  return mantissa + "e" + (sign != '\0' ? std::string(1, sign) : std::string()) + exponent;
}

std::pair<std::string, std::string> distinct_numbers(double a, double b) {
  for (int digits = 4; digits < 17; ++digits) {
    std::string x = fmt::format("{:.{}g}", a, digits), y = fmt::format("{:.{}g}", b, digits);
    if (x != y || a == b) return {x, y};
  }
  return {fmt::format("{:.17g}", a), fmt::format("{:.17g}", b)};
}

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t' || c == '\n' || c == '\r') out += c;
    }
  }
  return out;
}

}  // namespace tapdiff::bisect
