#include "model/toml_depth.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "model/errors.h"

namespace tapdiff::model {
namespace {

// One pass over the text: strings (basic, literal, multi-line) and comments skipped; a key runs
// from the start of a line, a '{' or a ',' inside an inline table, to its '='; a header from a
// '[' at the start of a line to its ']'. Each '.' in a key or header outside quotes adds a part.
class KeyScanner {
 public:
  KeyScanner(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  void scan() {
    bool line_start = true;
    while (i_ < text_.size()) {
      const char c = text_[i_];
      if (c == '\n') {
        line_start = true;
        ++i_;
      } else if (c == ' ' || c == '\t' || c == '\r') {
        ++i_;
      } else if (c == '#') {
        skip_comment();
      } else if (line_start && nesting_.empty() && c == '[') {
        header();
        line_start = false;
      } else if ((line_start && nesting_.empty()) || (!nesting_.empty() && nesting_.back() == '{' && expect_key_)) {
        key();
        line_start = false;
      } else {
        value_char(c);
        line_start = false;
      }
    }
  }

 private:
  void skip_comment() {
    while (i_ < text_.size() && text_[i_] != '\n') ++i_;
  }

  // A string at i_ (its opening quote): skipped to past its end.
  void skip_string() {
    const char q = text_[i_];
    const bool multi = text_.compare(i_, 3, std::string(3, q)) == 0;
    i_ += multi ? 3 : 1;
    while (i_ < text_.size()) {
      if (q == '"' && text_[i_] == '\\') {
        i_ += 2;
      } else if (multi ? text_.compare(i_, 3, std::string(3, q)) == 0 : text_[i_] == q) {
        i_ += multi ? 3 : 1;
        while (multi && i_ < text_.size() && text_[i_] == q) ++i_;  // up to two quotes end the content
        return;
      } else if (!multi && text_[i_] == '\n') {
        return;  // unterminated: toml++ reports it
      } else {
        ++i_;
      }
    }
  }

  // Parts of the key from i_ up to (not past) one of `ends`, outside quotes.
  void count_parts(std::string_view ends) {
    const std::size_t start = i_;
    int parts = 1;
    while (i_ < text_.size() && ends.find(text_[i_]) == std::string_view::npos && text_[i_] != '\n') {
      if (text_[i_] == '"' || text_[i_] == '\'') {
        skip_string();
        continue;
      }
      if (text_[i_] == '.' && ++parts > kMaxTomlKeyParts) refuse(start);
      ++i_;
    }
  }

  void header() {
    ++i_;
    if (i_ < text_.size() && text_[i_] == '[') ++i_;
    count_parts("]");
    while (i_ < text_.size() && text_[i_] == ']') ++i_;
  }

  void key() {
    count_parts("=");
    if (i_ < text_.size() && text_[i_] == '=') ++i_;
    expect_key_ = false;
  }

  void value_char(char c) {
    if (c == '"' || c == '\'') return skip_string();
    if (c == '[' || c == '{') {
      nesting_.push_back(c);
      expect_key_ = c == '{';
    } else if ((c == ']' || c == '}') && !nesting_.empty()) {
      nesting_.pop_back();
      expect_key_ = false;
    } else if (c == ',' && !nesting_.empty() && nesting_.back() == '{') {
      expect_key_ = true;
    }
    ++i_;
  }

  [[noreturn]] void refuse(std::size_t at) const {
    const std::string_view before = text_.substr(0, at);
    const std::size_t line_start = before.rfind('\n') + 1;  // npos + 1 = 0 on the first line
    throw_format_error(fmt::format("{}:{}:{}: expected a TOML key of at most {} parts, found more", source_,
                                   std::count(before.begin(), before.end(), '\n') + 1, at - line_start + 1,
                                   kMaxTomlKeyParts));
  }

  std::string_view text_;
  const std::string& source_;
  std::size_t i_ = 0;
  std::vector<char> nesting_;  // the open arrays and inline tables of the value being read
  bool expect_key_ = false;    // inside an inline table, a key comes next
};

}  // namespace

void check_toml_key_depth(std::string_view text, const std::string& source) { KeyScanner(text, source).scan(); }

}  // namespace tapdiff::model
