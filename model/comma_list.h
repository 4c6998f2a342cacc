#pragma once
// Splitting option values such as --inject and --kernels: "a,b@2,c=d" -> {"a", "b@2", "c=d"}.
#include <algorithm>
#include <string_view>
#include <vector>

namespace tapdiff::model {

// The items between commas (or another separator), as views into text; an empty text has none,
// "a,,b" has an empty one.
inline std::vector<std::string_view> split_commas(std::string_view text, char separator = ',') {
  std::vector<std::string_view> items;
  for (std::size_t start = 0; start < text.size();) {
    const std::size_t end = std::min(text.find(separator, start), text.size());
    items.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return items;
}

}  // namespace tapdiff::model
