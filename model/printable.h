#pragma once
// Names that come from files (array, member and map-key names) as messages may quote them: no
// control byte reaches the terminal raw (so a name cannot forge a line of output), and a name of
// megabytes is cut.
#include <cstddef>
#include <string>
#include <string_view>

namespace tapdiff::model {

// `name` with each byte below 0x20, 0x7f and a backslash escaped (\n, \x1b, \\), cut after
// max_bytes of it with "...(N bytes)".
std::string printable(std::string_view name, std::size_t max_bytes = 120);

}  // namespace tapdiff::model
