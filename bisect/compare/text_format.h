#pragma once
// Small text helpers shared by the reports: numbers in a compact form, escaping for XML/HTML.
#include <string>
#include <string_view>
#include <utility>

namespace tapdiff::bisect {

// A compact, round-trippable-enough rendering for reports: "0", "0.8123", "2.1e-03" -> "2.1e-3",
// "1e-08" -> "1e-8", "inf", "nan". Three significant digits.
std::string short_number(double value);

// a and b with just enough significant digits (4 to 17) to tell them apart: "3.2970002" and
// "3.2970004" rather than "3.297" twice.
std::pair<std::string, std::string> distinct_numbers(double a, double b);

// Escapes &, <, >, " and ' for XML/HTML text and attribute values; drops control characters that
// XML 1.0 forbids (all below 0x20 but tab, newline, carriage return).
std::string xml_escape(std::string_view text);

}  // namespace tapdiff::bisect
