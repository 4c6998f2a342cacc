#include "text/split_regex.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/errors.h"

namespace tapdiff::text {

namespace {

// The pieces Split(pattern, "isolated") cuts text into, as strings.
std::vector<std::string> pieces(std::string_view pattern, std::string_view text) {
  const SplitRegex r(pattern, "test");
  const CodePoints cps(text);
  std::vector<std::string> out;
  for (const Span s : split_isolated(r, cps, {{0, cps.size()}}))
    out.emplace_back(text.substr(cps.byte_at[s.begin], cps.byte_at[s.end] - cps.byte_at[s.begin]));
  return out;
}

using Strings = std::vector<std::string>;

// The text between two matches is one piece.
TEST(SplitRegex, AlternativesAreTriedInTheOrderWritten) {
  EXPECT_EQ(pieces("a|ab", "abab"), (Strings{"a", "b", "a", "b"}));  // leftmost-first, not longest
  EXPECT_EQ(pieces("ab|a", "abab"), (Strings{"ab", "ab"}));
  EXPECT_EQ(pieces("x+", "axxbx"), (Strings{"a", "xx", "b", "x"}));
  EXPECT_EQ(pieces("x+?", "xx"), (Strings{"x", "x"}));  // lazy
  EXPECT_EQ(pieces("\\p{N}{1,3}", "12345"), (Strings{"123", "45"}));
  EXPECT_EQ(pieces("\\p{N}{2}", "12345"), (Strings{"12", "34", "5"}));
  EXPECT_EQ(pieces("a{,2}", "a{,2}"), (Strings{"a{,2}"}));  // not a quantifier: literal text
}

TEST(SplitRegex, LookaheadsAnchorsAndCaseInsensitiveGroups) {
  EXPECT_EQ(pieces("\\s+(?!\\S)", "a   b  "), (Strings{"a", "  ", " b", "  "}));
  EXPECT_EQ(pieces("((?=[\\p{L}])([^a-z]))+", "abCDe\u00c9\u00e9f"), (Strings{"ab", "CD", "e", "\u00c9\u00e9", "f"}));
  EXPECT_EQ(pieces("(?i:'s|'ll)", "IT'S we'LL"), (Strings{"IT", "'S", " we", "'LL"}));
  // Unicode's case folding, as Oniguruma's: U+017F long s is s, U+212A Kelvin sign is k.
  EXPECT_EQ(pieces("(?i:'s)", "it'\u017f x"), (Strings{"it", "'\u017f", " x"}));
  EXPECT_EQ(pieces("(?i:k+)", "ak\u212aKb"), (Strings{"a", "k\u212aK", "b"}));
  // ^ and $ at the ends of every line, as Oniguruma (Ruby syntax) reads them.
  EXPECT_EQ(pieces("\\s+$", "a  \nb  "), (Strings{"a", "  ", "\nb", "  "}));
  EXPECT_EQ(pieces("^x", "xx\nxx"), (Strings{"x", "x\n", "x", "x"}));
}

TEST(SplitRegex, UnicodeCategoriesAndClasses) {
  EXPECT_EQ(pieces("\\p{Lu}+", "abCD\u00c9x"), (Strings{"ab", "CD\u00c9", "x"}));
  EXPECT_EQ(pieces("[\\p{Ll}\\p{M}]+", "Ae\u0301b1"), (Strings{"A", "e\u0301b", "1"}));
  EXPECT_EQ(pieces("\\P{L}+", "ab12!c"), (Strings{"ab", "12!", "c"}));
  EXPECT_EQ(pieces("[^\\s\\p{L}]+", "a 1! b"), (Strings{"a ", "1!", " b"}));
  EXPECT_EQ(pieces("[\\x{4E00}-\\x{9FA5}]+", "a\u65e5\u672cb"), (Strings{"a", "\u65e5\u672c", "b"}));
  EXPECT_EQ(pieces("[\\[\\]\\\\-]+", "a[]\\-b"), (Strings{"a", "[]\\-", "b"}));
  EXPECT_EQ(pieces(".", "a\nb"), (Strings{"a", "\n", "b"}));  // . is no \n: the \n is a gap
}

TEST(SplitRegex, EmptyMatchesSplitNothing) {
  EXPECT_EQ(pieces("x*", "abxc"), (Strings{"ab", "x", "c"}));
  EXPECT_EQ(pieces("(?:)", "ab"), (Strings{"ab"}));
}

// Nested quantifiers that make a backtracking matcher exponential: the Pike VM stays linear.
TEST(SplitRegex, PathologicalPatternsRunInLinearTime) {
  const std::string text(20000, 'a');
  EXPECT_EQ(pieces("(a*)*b", text), (Strings{text}));
  EXPECT_EQ(pieces("(a|aa)+$", text), (Strings{text}));
}

TEST(SplitRegex, SyntaxOutsideTheSubsetIsRefusedNamingThePlace) {
  const auto message = [](std::string_view pattern) {
    try {
      SplitRegex(pattern, "/m/tokenizer.json: tokenizer");
    } catch (const FormatError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message("(?<=a)b"),
            "/m/tokenizer.json: tokenizer: split pattern '(?<=a)b': a group of a kind tapdiff does not implement "
            "(lookbehind, atomic, named, or inline flags) at character 2: tapdiff's patterns take the syntax of "
            "text/split_regex.h");
  EXPECT_NE(message("\\p{Han}+").find("the property \\p{Han}, which is no general category"), std::string::npos);
  EXPECT_NE(message("a++").find("a possessive quantifier"), std::string::npos);
  EXPECT_NE(message("(?=ab)").find("a lookahead of more than one character"), std::string::npos);
  EXPECT_NE(message("\\1").find("the escape \\1"), std::string::npos);
  EXPECT_NE(message("[a-").find("a '[' without its ']'"), std::string::npos);
  EXPECT_NE(message("(a").find("a '(' without its ')'"), std::string::npos);
  EXPECT_NE(message("a)").find("an unmatched ')'"), std::string::npos);
  EXPECT_NE(message("*a").find("a quantifier with nothing to repeat"), std::string::npos);
  EXPECT_NE(message("[z-a]").find("a range whose end is below its start"), std::string::npos);
  EXPECT_NE(message("((a{1000}){1000}){1000}").find("compiles to more than 65536 instructions"), std::string::npos);
  EXPECT_NE(message("\\x{110000}").find("a code point past U+10FFFF"), std::string::npos);
  // Oniguruma folds \u00e9 to \u00c9 in (?i:...); tapdiff folds ASCII letters only, so it refuses.
  EXPECT_NE(message("(?i:caf\u00e9)").find("a character outside ASCII that has another case"), std::string::npos);
  EXPECT_NE(message("(?i:[\\x{100}-\\x{200}])").find("a character outside ASCII that has another case"),
            std::string::npos);
  EXPECT_EQ(message("(?i:'s|\u65e5)"), "accepted");  // no other case
}

}  // namespace
}  // namespace tapdiff::text
