#include "text/split_regex.h"

#include <array>
#include <limits>
#include <utility>

#include <fmt/core.h>

#include "model/errors.h"
#include "text/utf8.h"

namespace tapdiff::text {

CodePoints::CodePoints(std::string_view utf8) {
  for (std::size_t i = 0; i < utf8.size(); i += utf8_length(utf8, i)) {
    const char32_t c = utf8_decode(utf8, i);
    chars.push_back(c);
    categories.push_back(general_category(c));
    byte_at.push_back(i);
  }
  byte_at.push_back(utf8.size());
}

bool SplitRegex::CharSet::contains(char32_t c, GeneralCategory g) const {
  bool in = false;
  for (const CharItem& item : items) {
    bool hit = false;
    switch (item.kind) {
      case CharItem::Kind::range: hit = c >= item.first && c <= item.last; break;
      case CharItem::Kind::categories: hit = (item.categories >> static_cast<unsigned>(g) & 1U) != 0; break;
      case CharItem::Kind::white_space: hit = is_white_space(c); break;
    }
    if (hit != item.negated) {
      in = true;
      break;
    }
  }
  return in != negated;
}

namespace {

using CharItem = SplitRegex::CharItem;
using CharSet = SplitRegex::CharSet;
using Inst = SplitRegex::Inst;
using Op = Inst::Op;

constexpr std::size_t kMaxProgram = std::size_t{1} << 16;  // instructions, after counted repeats
constexpr int kUnbounded = -1;

std::uint32_t category_bit(GeneralCategory g) { return std::uint32_t{1} << static_cast<unsigned>(g); }

// The categories \p{name} names: one category, or all of a letter's.
std::optional<std::uint32_t> categories_named(std::string_view name) {
  constexpr std::array<std::string_view, 30> kNames = {"Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl",
                                                       "No", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc",
                                                       "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co", "Cn"};
  std::uint32_t bits = 0;
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    const bool whole = name.size() == 1 && kNames[i][0] == name[0];
    if (whole || kNames[i] == name) bits |= category_bit(static_cast<GeneralCategory>(i));
  }
  if (name == "L&")
    bits = category_bit(GeneralCategory::Lu) | category_bit(GeneralCategory::Ll) | category_bit(GeneralCategory::Lt);
  if (bits == 0) return std::nullopt;
  return bits;
}

CharItem range_item(char32_t first, char32_t last) { return {CharItem::Kind::range, false, first, last, 0}; }
CharItem categories_item(std::uint32_t bits, bool negated) { return {CharItem::Kind::categories, negated, 0, 0, bits}; }

// The ASCII letters of [first, last] in the other case, as ranges, with the two characters
// Unicode's case folding makes ASCII letters (U+017F long s is s, U+212A Kelvin sign is k), as
// Oniguruma folds them.
void add_other_case(char32_t first, char32_t last, std::vector<CharItem>& items) {
  const auto add = [&](char32_t lo, char32_t hi, char32_t shift_from, char32_t shift_to) {
    const char32_t a = std::max(first, lo), b = std::min(last, hi);
    if (a <= b) items.push_back(range_item(a - shift_from + shift_to, b - shift_from + shift_to));
  };
  add(U'A', U'Z', U'A', U'a');
  add(U'a', U'z', U'a', U'A');
  const auto covers = [&](char32_t c) { return first <= c && c <= last; };
  for (const auto& [ascii, folded] : {std::pair{U's', U'\u017F'}, std::pair{U'k', U'\u212A'}}) {
    const char32_t upper = ascii - (U'a' - U'A');
    if (covers(ascii) || covers(upper)) items.push_back(range_item(folded, folded));
    if (covers(folded)) items.push_back(range_item(ascii, ascii)), items.push_back(range_item(upper, upper));
  }
}

// Whether [first, last] holds a character outside ASCII that may have another case (a cased
// letter, a Roman numeral, a circled letter: the categories CaseFolding.txt folds), other than the
// two add_other_case folds to ASCII. Cased characters end below U+20000.
bool may_fold_outside_ascii(char32_t first, char32_t last) {
  for (char32_t c = std::max(first, char32_t{0x80}); c <= std::min(last, char32_t{0x1FFFF}); ++c) {
    if (c == U'\u017F' || c == U'\u212A') continue;
    const GeneralCategory g = general_category(c);
    if (g == GeneralCategory::Lu || g == GeneralCategory::Ll || g == GeneralCategory::Lt || g == GeneralCategory::Nl ||
        g == GeneralCategory::So)
      return true;
  }
  return false;
}

struct Node {
  enum class Kind : std::uint8_t { empty, set, any, concat, alternate, repeat, line_begin, line_end, look };
  explicit Node(Kind k = Kind::empty) : kind(k) {}
  Kind kind;
  std::vector<Node> kids;
  int set = -1;
  int min = 0, max = 0;  // repeat; max kUnbounded for no limit
  bool greedy = true;
  bool negated = false;  // look: (?!X)
};

class Parser {
 public:
  Parser(std::string_view pattern, std::string_view where, std::vector<CharSet>& sets)
      : pattern_(pattern), where_(where), sets_(sets) {
    for (std::size_t i = 0; i < pattern.size(); i += utf8_length(pattern, i)) p_.push_back(utf8_decode(pattern, i));
  }

  Node parse() {
    Node n = alternation();
    if (i_ < p_.size()) fail("an unmatched ')'");
    return n;
  }

 private:
  [[noreturn]] void fail(std::string_view what) const {
    throw FormatError(
        fmt::format("{}: split pattern '{}': {} at character {}: tapdiff's patterns take the syntax "
                    "of text/split_regex.h",
                    where_, pattern_, what, i_ + 1));
  }
  bool at_end() const { return i_ >= p_.size(); }
  char32_t peek(std::size_t ahead = 0) const { return i_ + ahead < p_.size() ? p_[i_ + ahead] : 0; }
  bool accept(std::u32string_view s) {
    if (p_.size() - i_ < s.size() || std::u32string_view(p_).substr(i_, s.size()) != s) return false;
    i_ += s.size();
    return true;
  }

  Node alternation() {
    Node alt{Node::Kind::alternate};
    alt.kids.push_back(concatenation());
    while (accept(U"|")) alt.kids.push_back(concatenation());
    return alt.kids.size() == 1 ? std::move(alt.kids[0]) : alt;
  }

  Node concatenation() {
    Node cat{Node::Kind::concat};
    while (!at_end() && peek() != U'|' && peek() != U')') cat.kids.push_back(quantified());
    return cat;
  }

  Node quantified() {
    Node atom_node = atom();
    int min = 0, max = 0;
    if (!quantifier(min, max)) return atom_node;
    if (atom_node.kind == Node::Kind::line_begin || atom_node.kind == Node::Kind::line_end ||
        atom_node.kind == Node::Kind::look)
      fail("a quantifier on an anchor or a lookahead");
    Node r{Node::Kind::repeat};
    r.min = min, r.max = max;
    if (accept(U"?")) r.greedy = false;
    if (peek() == U'+') fail("a possessive quantifier");
    int again_min = 0, again_max = 0;
    if (quantifier(again_min, again_max)) fail("a quantifier after a quantifier");
    r.kids.push_back(std::move(atom_node));
    return r;
  }

  // ? * + {n} {n,} {n,m}; false (and nothing read) when none is here. A '{' that starts no
  // quantifier is a literal, as Oniguruma reads it.
  bool quantifier(int& min, int& max) {
    if (accept(U"?")) return min = 0, max = 1, true;
    if (accept(U"*")) return min = 0, max = kUnbounded, true;
    if (accept(U"+")) return min = 1, max = kUnbounded, true;
    if (peek() != U'{') return false;
    std::size_t j = i_ + 1;
    const auto number = [&](int& out) {
      const std::size_t start = j;
      long value = 0;
      while (j < p_.size() && p_[j] >= U'0' && p_[j] <= U'9') {
        value = value * 10 + (p_[j++] - U'0');
        if (value > 1000) {
          i_ = start;
          fail("a repeat count over 1000");
        }
      }
      out = static_cast<int>(value);
      return j > start;
    };
    if (!number(min)) return false;
    max = min;
    if (j < p_.size() && p_[j] == U',') {
      ++j;
      if (!number(max)) max = kUnbounded;
    }
    if (j >= p_.size() || p_[j] != U'}') return false;
    if (max != kUnbounded && max < min) fail("a repeat {n,m} with m < n");
    i_ = j + 1;
    return true;
  }

  // In a (?i:...) group a set also holds the other case of its letters. Oniguruma folds every
  // letter Unicode's CaseFolding.txt folds; tapdiff folds the ASCII ones (add_other_case) and
  // refuses a set that holds a character outside ASCII that may have another case.
  Node set_node(CharSet set) {
    if (icase_) {
      for (std::size_t k = 0, n = set.items.size(); k < n; ++k) {
        const CharItem item = set.items[k];
        if (item.kind != CharItem::Kind::range) continue;
        if (may_fold_outside_ascii(item.first, item.last))
          fail(
              "a character outside ASCII that has another case, in a case-insensitive group (tapdiff folds "
              "the case of ASCII letters only)");
        add_other_case(item.first, item.last, set.items);
      }
    }
    sets_.push_back(std::move(set));
    Node n{Node::Kind::set};
    n.set = static_cast<int>(sets_.size() - 1);
    return n;
  }

  Node literal(char32_t c) {
    CharSet set;
    set.items.push_back(range_item(c, c));
    return set_node(std::move(set));
  }

  Node atom() {
    const char32_t c = peek();
    switch (c) {
      case U'(': return group();
      case U'[': return set_node(char_class());
      case U'.': ++i_; return Node{Node::Kind::any};
      case U'^': ++i_; return Node{Node::Kind::line_begin};
      case U'$': ++i_; return Node{Node::Kind::line_end};
      case U'*':
      case U'+':
      case U'?': fail("a quantifier with nothing to repeat");
      case U'\\': {
        ++i_;
        CharSet set;
        escape(set.items, false);
        return set_node(std::move(set));
      }
      default: ++i_; return literal(c);
    }
  }

  Node group() {
    ++i_;  // '('
    const bool outer_icase = icase_;
    Node inner;
    if (accept(U"?=") || accept(U"?!")) {
      const bool negated = p_[i_ - 1] == U'!';
      const std::size_t start = i_;
      Node body = alternation();
      while (body.kind == Node::Kind::concat && body.kids.size() == 1) {
        Node only = std::move(body.kids[0]);  // moved out first: assigning body frees its kids
        body = std::move(only);
      }
      if (body.kind != Node::Kind::set) {
        i_ = start;
        fail("a lookahead of more than one character");
      }
      inner = Node{Node::Kind::look};
      inner.set = body.set;
      inner.negated = negated;
    } else {
      if (accept(U"?i:")) {
        icase_ = true;
      } else if (peek() == U'?' && !accept(U"?:")) {
        fail("a group of a kind tapdiff does not implement (lookbehind, atomic, named, or inline flags)");
      }
      inner = alternation();
    }
    icase_ = outer_icase;
    if (!accept(U")")) fail("a '(' without its ')'");
    return inner;
  }

  // After a '\': the escape's items. In a class (in_class), \b is a backspace.
  void escape(std::vector<CharItem>& items, bool in_class) {
    if (at_end()) fail("a '\\' at the end");
    const char32_t c = p_[i_++];
    const auto hex = [&](std::size_t digits, bool braced) {
      char32_t value = 0;
      std::size_t n = 0;
      for (; (braced || n < digits) && i_ < p_.size(); ++n) {
        const char32_t h = p_[i_];
        int d = -1;
        if (h >= U'0' && h <= U'9') d = static_cast<int>(h - U'0');
        if (h >= U'a' && h <= U'f') d = static_cast<int>(h - U'a' + 10);
        if (h >= U'A' && h <= U'F') d = static_cast<int>(h - U'A' + 10);
        if (d < 0) break;
        value = value * 16 + static_cast<char32_t>(d);
        ++i_;
        if (value > 0x10FFFF) fail("a code point past U+10FFFF");
      }
      if (n == 0 || (!braced && n != digits)) fail("a malformed hexadecimal escape");
      return value;
    };
    const auto one = [&](char32_t v) { items.push_back(range_item(v, v)); };
    switch (c) {
      case U'r': return one(U'\r');
      case U'n': return one(U'\n');
      case U't': return one(U'\t');
      case U'f': return one(U'\f');
      case U'v': return one(U'\v');
      case U'a': return one(U'\a');
      case U'e': return one(U'\x1B');
      case U'0': return one(U'\0');
      case U'b':
        if (in_class) return one(U'\b');
        --i_;
        fail("a word boundary (\\b)");
      case U'x':
        if (accept(U"{")) {
          one(hex(0, true));
          if (!accept(U"}")) fail("a \\x{ without its }");
          return;
        }
        return one(hex(2, false));
      case U'u': return one(hex(4, false));
      case U's':
      case U'S': items.push_back({CharItem::Kind::white_space, c == U'S', 0, 0, 0}); return;
      case U'd':
      case U'D': items.push_back(categories_item(category_bit(GeneralCategory::Nd), c == U'D')); return;
      case U'w':
      case U'W': {
        const std::uint32_t word = *categories_named("L") | *categories_named("M") | category_bit(GeneralCategory::Nd) |
                                   category_bit(GeneralCategory::Pc);
        items.push_back(categories_item(word, c == U'W'));
        return;
      }
      case U'p':
      case U'P': {
        std::u32string name;
        if (accept(U"{")) {
          bool negated = accept(U"^");
          while (!at_end() && peek() != U'}') name += p_[i_++];
          if (!accept(U"}")) fail("a \\p{ without its }");
          const std::string ascii(name.begin(), name.end());
          const auto bits = categories_named(ascii);
          if (!bits || name.size() != ascii.size())
            fail(
                fmt::format("the property \\p{{{}}}, which is no general category (scripts and other "
                            "properties are not implemented)",
                            valid_name(name)));
          negated = negated != (c == U'P');
          items.push_back(categories_item(*bits, negated));
          return;
        }
        if (at_end()) fail("a \\p without its name");
        name = p_[i_++];
        const auto bits = categories_named(std::string(1, static_cast<char>(name[0])));
        if (!bits || name[0] > 0x7F) fail("an unknown one-letter property");
        items.push_back(categories_item(*bits, c == U'P'));
        return;
      }
      default:
        if (c < 0x80 && !((c >= U'0' && c <= U'9') || (c >= U'a' && c <= U'z') || (c >= U'A' && c <= U'Z')))
          return one(c);  // an escaped punctuation or space character is itself
        --i_;
        fail(fmt::format("the escape \\{}", valid_name(std::u32string(1, c))));
    }
  }

  static std::string valid_name(const std::u32string& s) {
    std::string out;
    for (char32_t c : s) out += utf8_encode(c);
    return out;
  }

  // After the '[' at p_[i_]: the class up to its ']'.
  CharSet char_class() {
    const std::size_t open = i_++;
    CharSet set;
    set.negated = accept(U"^");
    bool first = true;
    while (true) {
      if (at_end()) {
        i_ = open;
        fail("a '[' without its ']'");
      }
      const char32_t c = p_[i_];
      if (c == U']' && !first) {
        ++i_;
        break;
      }
      first = false;
      if (c == U'[') fail("a nested class or a class operation");
      if (c == U'&' && peek(1) == U'&') fail("a class intersection (&&)");
      // One member: an escape (a class of its own or one character), or a character, then a range.
      char32_t lo = c;
      if (c == U'\\') {
        ++i_;
        std::vector<CharItem> items;
        escape(items, true);
        if (items.size() != 1 || items[0].kind != CharItem::Kind::range) {
          set.items.insert(set.items.end(), items.begin(), items.end());
          continue;
        }
        lo = items[0].first;
      } else {
        ++i_;
      }
      char32_t hi = lo;
      if (peek() == U'-' && peek(1) != U']' && peek(1) != 0) {
        ++i_;
        if (peek() == U'\\') {
          ++i_;
          std::vector<CharItem> items;
          escape(items, true);
          if (items.size() != 1 || items[0].kind != CharItem::Kind::range) fail("a range ending in a class");
          hi = items[0].first;
        } else {
          hi = p_[i_++];
        }
        if (hi < lo) fail("a range whose end is below its start");
      }
      set.items.push_back(range_item(lo, hi));
    }
    return set;
  }

  std::string_view pattern_;
  std::string_view where_;
  std::vector<CharSet>& sets_;
  std::u32string p_;
  std::size_t i_ = 0;
  bool icase_ = false;
};

class Compiler {
 public:
  // too_large: the message of the FormatError for a program over kMaxProgram instructions.
  Compiler(std::vector<Inst>& program, std::string too_large) : program_(program), too_large_(std::move(too_large)) {}

  void emit(const Node& n) {
    switch (n.kind) {
      case Node::Kind::empty: return;
      case Node::Kind::set: push({Op::set, n.set, 0}); return;
      case Node::Kind::any: push({Op::any, 0, 0}); return;
      case Node::Kind::line_begin: push({Op::line_begin, 0, 0}); return;
      case Node::Kind::line_end: push({Op::line_end, 0, 0}); return;
      case Node::Kind::look: push({Op::look, n.set, n.negated ? 1 : 0}); return;
      case Node::Kind::concat:
        for (const Node& k : n.kids) emit(k);
        return;
      case Node::Kind::alternate: {
        std::vector<std::size_t> jumps;
        for (std::size_t k = 0; k + 1 < n.kids.size(); ++k) {
          const std::size_t split = push({Op::split, 0, 0});
          program_[split].x = here();
          emit(n.kids[k]);
          jumps.push_back(push({Op::jump, 0, 0}));
          program_[split].y = here();
        }
        emit(n.kids.back());
        for (std::size_t j : jumps) program_[j].x = here();
        return;
      }
      case Node::Kind::repeat: {
        const Node& body = n.kids[0];
        for (int k = 0; k < n.min; ++k) emit(body);
        if (n.max == kUnbounded) {
          const std::size_t split = push({Op::split, 0, 0});
          emit(body);
          push({Op::jump, static_cast<int>(split), 0});
          branch(split, static_cast<int>(split) + 1, here(), n.greedy);
          return;
        }
        std::vector<std::size_t> splits;
        for (int k = n.min; k < n.max; ++k) {
          splits.push_back(push({Op::split, 0, 0}));
          emit(body);
        }
        for (std::size_t s : splits) branch(s, static_cast<int>(s) + 1, here(), n.greedy);
        return;
      }
    }
  }

  std::size_t push(Inst inst) {
    if (program_.size() >= kMaxProgram) throw FormatError(too_large_);
    program_.push_back(inst);
    return program_.size() - 1;
  }

 private:
  int here() const { return static_cast<int>(program_.size()); }
  // A split between taking the body (at `body`) and leaving (at `out`), the body first if greedy.
  void branch(std::size_t split, int body, int out, bool greedy) {
    program_[split].x = greedy ? body : out;
    program_[split].y = greedy ? out : body;
  }

  std::vector<Inst>& program_;
  std::string too_large_;
};

}  // namespace

SplitRegex::SplitRegex(std::string_view pattern, std::string_view where) : pattern_(pattern) {
  const Node root = Parser(pattern, where, sets_).parse();
  Compiler compiler(program_, fmt::format("{}: split pattern '{}' compiles to more than {} instructions (its "
                                          "counted repeats are too large)",
                                          where, pattern, kMaxProgram));
  compiler.emit(root);
  compiler.push({Op::match, 0, 0});
}

std::optional<Span> SplitRegex::find(const CodePoints& text, Span piece, std::size_t from) const {
  struct Thread {
    int pc;
    std::size_t start;
  };
  const std::size_t n = program_.size();
  std::vector<Thread> current, next, stack;
  std::vector<std::size_t> seen(n, std::numeric_limits<std::size_t>::max());  // the step a pc was added in
  std::size_t step = 0;
  const auto char_at = [&](std::size_t pos) { return text.chars[pos]; };

  // Adds the thread at pc, and every thread its splits, jumps and assertions reach without reading
  // a character at pos, to list in priority order.
  const auto add = [&](std::vector<Thread>& list, int pc, std::size_t start, std::size_t pos) {
    stack.push_back({pc, start});
    while (!stack.empty()) {
      const Thread t = stack.back();
      stack.pop_back();
      const auto upc = static_cast<std::size_t>(t.pc);
      if (seen[upc] == step) continue;
      seen[upc] = step;
      const Inst& inst = program_[upc];
      switch (inst.op) {
        case Op::jump: stack.push_back({inst.x, t.start}); break;
        case Op::split:
          stack.push_back({inst.y, t.start});
          stack.push_back({inst.x, t.start});
          break;
        case Op::line_begin:
          if (pos == piece.begin || char_at(pos - 1) == U'\n') stack.push_back({t.pc + 1, t.start});
          break;
        case Op::line_end:
          if (pos == piece.end || char_at(pos) == U'\n') stack.push_back({t.pc + 1, t.start});
          break;
        case Op::look: {
          const bool hit =
              pos < piece.end && sets_[static_cast<std::size_t>(inst.x)].contains(char_at(pos), text.categories[pos]);
          if (hit != (inst.y != 0)) stack.push_back({t.pc + 1, t.start});
          break;
        }
        case Op::set:
        case Op::any:
        case Op::match: list.push_back(t); break;
      }
    }
  };

  std::optional<Span> best;
  ++step;
  add(current, 0, from, from);
  for (std::size_t pos = from;; ++pos) {
    ++step;
    next.clear();
    for (const Thread& t : current) {
      const Inst& inst = program_[static_cast<std::size_t>(t.pc)];
      if (inst.op == Op::match) {
        best = Span{t.start, pos};
        break;  // the threads after this one have lower priority
      }
      if (pos >= piece.end) continue;
      const bool takes = inst.op == Op::any
                             ? char_at(pos) != U'\n'
                             : sets_[static_cast<std::size_t>(inst.x)].contains(char_at(pos), text.categories[pos]);
      if (takes) add(next, t.pc + 1, t.start, pos + 1);
    }
    if (pos >= piece.end) break;
    if (!best) add(next, 0, pos + 1, pos + 1);  // a match may yet start at pos + 1
    if (best && next.empty()) break;            // nothing left that could replace it
    std::swap(current, next);
  }
  return best;
}

std::vector<Span> split_isolated(const SplitRegex& regex, const CodePoints& text, const std::vector<Span>& pieces) {
  std::vector<Span> out;
  for (const Span piece : pieces) {
    std::size_t done = piece.begin, from = piece.begin;
    while (from <= piece.end) {
      const std::optional<Span> m = regex.find(text, piece, from);
      if (!m) break;
      if (m->begin == m->end) {  // an empty match splits nothing
        from = m->end + 1;
        continue;
      }
      if (m->begin > done) out.push_back({done, m->begin});
      out.push_back(*m);
      done = from = m->end;
    }
    if (piece.end > done) out.push_back({done, piece.end});
  }
  return out;
}

}  // namespace tapdiff::text
