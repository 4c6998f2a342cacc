#include "model/toml_text.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "model/errors.h"

namespace tapdiff::model {
namespace {

// "SOURCE:LINE:COLUMN: " of byte `at` of `text`.
std::string where(std::string_view text, std::size_t at, const std::string& source) {
  const std::string_view before = text.substr(0, at);
  const std::size_t line_start = before.rfind('\n') + 1;  // npos + 1 = 0 on the first line
  return fmt::format("{}:{}:{}: ", source, std::count(before.begin(), before.end(), '\n') + 1, at - line_start + 1);
}

// The first byte >= 0x80 outside comments, or npos. The scan follows TOML's strings only to tell
// comments apart.
std::size_t first_non_ascii_outside_comments(std::string_view text) {
  enum class In : std::uint8_t { code, comment, basic, literal, multiline_basic, multiline_literal };
  In in = In::code;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in != In::comment && static_cast<unsigned char>(c) >= 0x80) return i;
    const std::string_view three = text.substr(i, 3);
    const bool escape = c == '\\' && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) < 0x80;
    switch (in) {
      case In::code:
        if (c == '#') {
          in = In::comment;
        } else if (three == R"(""")" || three == "'''") {
          in = c == '"' ? In::multiline_basic : In::multiline_literal;
          i += 2;
        } else if (c == '"' || c == '\'') {
          in = c == '"' ? In::basic : In::literal;
        }
        break;
      case In::comment:
        if (c == '\n') in = In::code;
        break;
      case In::basic:
        if (escape)
          ++i;
        else if (c == '"' || c == '\n')
          in = In::code;
        break;
      case In::multiline_basic:
        if (escape) {
          ++i;
        } else if (three == R"(""")") {
          in = In::code;
          i += 2;
        }
        break;
      case In::literal:
        if (c == '\'' || c == '\n') in = In::code;
        break;
      case In::multiline_literal:
        if (three == "'''") {
          in = In::code;
          i += 2;
        }
        break;
    }
  }
  return std::string_view::npos;
}

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
    throw_format_error(fmt::format("{}expected a TOML key of at most {} parts, found more", where(text_, at, source_),
                                   kMaxTomlKeyParts));
  }

  std::string_view text_;
  const std::string& source_;
  std::size_t i_ = 0;
  std::vector<char> nesting_;  // the open arrays and inline tables of the value being read
  bool expect_key_ = false;    // inside an inline table, a key comes next
};

}  // namespace

void check_toml_text(std::string_view text, const std::string& source) {
  if (const std::size_t at = first_non_ascii_outside_comments(text); at != std::string_view::npos)
    throw_format_error(fmt::format("{}expected ASCII outside comments, found the byte 0x{:02x}",
                                   where(text, at, source), static_cast<unsigned char>(text[at])));
  KeyScanner(text, source).scan();
}

}  // namespace tapdiff::model
