#pragma once
// The regular expressions of the pre-tokenizers' split patterns (tokenizer.json's Split, the
// patterns llama.cpp runs for tokenizer.ggml.pre), over Unicode code points, matched
// leftmost-first as Oniguruma and std::regex match them: the alternative written first wins,
// quantifiers are greedy unless lazy. A Pike VM runs them, in time linear in the text for any
// pattern, so that a pattern read from a file cannot hang tapdiff.
//
// Syntax: alternatives a|b; groups (...) (?:...) and (?i:...) (ASCII letters in either case, with
// U+017F and U+212A as s and k; a character outside ASCII that has another case is refused there);
// quantifiers ? * + {n} {n,} {n,m}, lazy with a trailing ?; classes [...] [^...] with ranges;
// \p{X} \P{X} for a general category or its letter (L, Lu, N, Nd, P, S, M, Z, C, ...); \s \S (the
// White_Space property), \d \D (Nd), \w \W (L, M, Nd, Pc); . (anything but \n); escapes \r \n \t
// \f \v \0 \xHH \x{H...} \uHHHH and any escaped punctuation; ^ and $ at the start and end of the
// text or a line in it (Oniguruma's); the lookaheads (?=X) and (?!X) of one character X. Anything
// else (backreferences, possessive quantifiers, atomic groups, lookbehind, scripts such as
// \p{Han}, inline flags) is refused: FormatError naming the pattern and the place.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/unicode_classes.h"

namespace tapdiff::text {

// A text as code points, each with its general category, and where each starts in the UTF-8.
struct CodePoints {
  explicit CodePoints(std::string_view utf8);
  std::vector<char32_t> chars;
  std::vector<GeneralCategory> categories;
  std::vector<std::size_t> byte_at;  // byte offset of each code point, then the text's size
  std::size_t size() const { return chars.size(); }
};

// [begin, end) in code points.
struct Span {
  std::size_t begin;
  std::size_t end;
};

class SplitRegex {
 public:
  // `where` starts every error message ("<file>: tokenizer").
  SplitRegex(std::string_view pattern, std::string_view where);
  // The leftmost-first match in text[from, piece.end), the piece being the text the pattern sees
  // (its ^, $ and lookaheads stop at the piece's ends); nullopt when there is none.
  std::optional<Span> find(const CodePoints& text, Span piece, std::size_t from) const;
  const std::string& pattern() const { return pattern_; }

  // One member of a character class: a range of code points, a set of general categories (a bit
  // per GeneralCategory) or the White_Space property; negated for \S, \P{..}, \D, \W.
  struct CharItem {
    enum class Kind : std::uint8_t { range, categories, white_space };
    Kind kind;
    bool negated = false;
    char32_t first = 0, last = 0;
    std::uint32_t categories = 0;
  };
  struct CharSet {
    std::vector<CharItem> items;
    bool negated = false;
    bool contains(char32_t c, GeneralCategory g) const;
  };
  struct Inst {
    enum class Op : std::uint8_t { set, any, split, jump, line_begin, line_end, look, match };
    Op op;
    int x = 0;  // set, look: the CharSet; split: the preferred branch; jump: the target
    int y = 0;  // split: the other branch; look: 1 for (?!X)
  };

 private:
  std::string pattern_;
  std::vector<CharSet> sets_;
  std::vector<Inst> program_;
};

// Each piece split as tokenizers' Split(pattern, "isolated") does: its matches and the text
// between them, in order, none empty.
std::vector<Span> split_isolated(const SplitRegex& regex, const CodePoints& text, const std::vector<Span>& pieces);

}  // namespace tapdiff::text
