#include "model/pre_tokenizers.h"

#include <array>
#include <cstdint>

#include "model/unicode_classes.h"
#include "model/utf8.h"

namespace tapdiff::model {
namespace {

enum class CharClass : std::uint8_t { letter, digit, space, other };

// The Unicode classes of GPT-2's split: \p{L}, \p{N}, \s (model/unicode_classes.h).
CharClass classify(char32_t c) {
  if (is_letter(c)) return CharClass::letter;
  if (is_number(c)) return CharClass::digit;
  if (is_white_space(c)) return CharClass::space;
  return CharClass::other;
}

CharClass class_at(std::string_view s, std::size_t i) { return classify(utf8_decode(s, i)); }

// The end of the run of characters of class k that starts at s[i].
std::size_t run_end(std::string_view s, std::size_t i, CharClass k) {
  while (i < s.size() && class_at(s, i) == k) i += utf8_length(s, i);
  return i;
}

// The length of a contraction ('s 't 're 've 'm 'll 'd, case-sensitive) at s[i], or 0.
std::size_t contraction_length(std::string_view s, std::size_t i) {
  if (s[i] != '\'') return 0;
  for (std::string_view c : {"re", "ve", "ll", "s", "t", "m", "d"})
    if (s.substr(i + 1, c.size()) == c) return 1 + c.size();
  return 0;
}

}  // namespace

std::vector<std::string_view> gpt2_words(std::string_view s) {
  std::vector<std::string_view> words;
  std::size_t i = 0;
  while (i < s.size()) {
    if (const std::size_t n = contraction_length(s, i)) {
      words.push_back(s.substr(i, n));
      i += n;
      continue;
    }
    std::size_t start = i;
    if (class_at(s, i) == CharClass::space) {
      std::size_t end = i, last = i;
      for (; end < s.size() && class_at(s, end) == CharClass::space; end += utf8_length(s, end)) last = end;
      if (end == s.size()) {  // trailing white space: one word
        words.push_back(s.substr(i));
        break;
      }
      // White space before a non-space: all of it but the last char, then that char alone unless
      // it is a ' ', which prefixes the next word.
      if (last > i) words.push_back(s.substr(i, last - i));
      if (s[last] != ' ') {
        words.push_back(s.substr(last, end - last));
        i = end;
        continue;
      }
      start = last, i = last + 1;
    }
    const std::size_t end = run_end(s, i, class_at(s, i));
    words.push_back(s.substr(start, end - start));
    i = end;
  }
  return words;
}

namespace {

// The llama3 and qwen2 patterns (model/pre_tokenizers.h) over the text's code points, with at most
// max_digits numbers to a word.
std::vector<std::string_view> llama3_style_words(std::string_view s, std::size_t max_digits) {
  std::vector<char32_t> c;
  std::vector<std::size_t> at;  // byte offset of each code point, then s.size()
  for (std::size_t i = 0; i < s.size(); i += utf8_length(s, i)) at.push_back(i), c.push_back(utf8_decode(s, i));
  at.push_back(s.size());
  const std::size_t n = c.size();
  const auto letter = [&](std::size_t k) { return k < n && is_letter(c[k]); };
  const auto number = [&](std::size_t k) { return k < n && is_number(c[k]); };
  const auto space = [&](std::size_t k) { return k < n && is_white_space(c[k]); };
  const auto newline = [&](std::size_t k) { return k < n && (c[k] == U'\r' || c[k] == U'\n'); };
  const auto other = [&](std::size_t k) { return k < n && !space(k) && !letter(k) && !number(k); };
  const auto lower = [&](std::size_t k) -> char32_t {
    if (k >= n) return 0;
    return c[k] >= U'A' && c[k] <= U'Z' ? static_cast<char32_t>(c[k] + (U'a' - U'A')) : c[k];
  };
  std::vector<std::string_view> words;
  std::size_t i = 0;
  const auto take = [&](std::size_t end) {
    words.push_back(s.substr(at[i], at[end] - at[i]));
    i = end;
  };
  while (i < n) {
    if (c[i] == U'\'') {  // (?i:'s|'t|'re|'ve|'m|'ll|'d)
      const char32_t a = lower(i + 1), b = lower(i + 2);
      if (a == U's' || a == U't' || a == U'm' || a == U'd') {
        take(i + 2);
        continue;
      }
      if ((a == U'r' && b == U'e') || (a == U'v' && b == U'e') || (a == U'l' && b == U'l')) {
        take(i + 3);
        continue;
      }
    }
    if (letter(i) || (!newline(i) && !number(i) && letter(i + 1))) {  // [^\r\n\p{L}\p{N}]?\p{L}+
      std::size_t k = letter(i) ? i : i + 1;
      while (letter(k)) ++k;
      take(k);
      continue;
    }
    if (number(i)) {  // \p{N}{1,max_digits}
      std::size_t k = i;
      while (number(k) && k - i < max_digits) ++k;
      take(k);
      continue;
    }
    if (other(i) || (c[i] == U' ' && other(i + 1))) {  //  ?[^\s\p{L}\p{N}]+[\r\n]*
      std::size_t k = other(i) ? i : i + 1;
      while (other(k)) ++k;
      while (newline(k)) ++k;
      take(k);
      continue;
    }
    std::size_t end = i;  // white space from here: \s*[\r\n]+ | \s+(?!\S) | \s+
    std::size_t last_newline = n;
    for (; space(end); ++end)
      if (newline(end)) last_newline = end;
    if (last_newline < n)
      take(last_newline + 1);
    else if (end == n || end - i == 1)
      take(end);
    else
      take(end - 1);
  }
  return words;
}

constexpr std::array kPreTokenizers{
    PreTokenizer{"gpt2", gpt2_words, false, false},
    PreTokenizer{"llama3", llama3_words, true, true},
    PreTokenizer{"qwen2", qwen2_words, false, false},
};

// tokenizer.ggml.pre names and their family, as llama.cpp's llama-vocab.cpp maps them.
struct PreName {
  std::string_view name;
  std::string_view family;
};
constexpr PreName kPreNames[] = {
    {"gpt-2", "gpt2"},        {"phi-2", "gpt2"},       {"jina-es", "gpt2"},           {"jina-de", "gpt2"},
    {"gigachat", "gpt2"},     {"jina-v1-en", "gpt2"},  {"jina-v2-es", "gpt2"},        {"jina-v2-de", "gpt2"},
    {"jina-v2-code", "gpt2"}, {"roberta-bpe", "gpt2"}, {"a.x-4.0", "gpt2"},           {"mellum", "gpt2"},
    {"modern-bert", "gpt2"},  {"llama3", "llama3"},    {"llama-v3", "llama3"},        {"llama-bpe", "llama3"},
    {"falcon3", "llama3"},    {"falcon-h1", "llama3"}, {"pixtral", "llama3"},         {"midm-2.0", "llama3"},
    {"lfm2", "llama3"},       {"qwen2", "qwen2"},      {"deepseek-r1-qwen", "qwen2"}, {"stablelm2", "qwen2"},
};

}  // namespace

std::vector<std::string_view> llama3_words(std::string_view text) { return llama3_style_words(text, 3); }
std::vector<std::string_view> qwen2_words(std::string_view text) { return llama3_style_words(text, 1); }

const PreTokenizer* find_pre_tokenizer(std::string_view name) {
  for (const PreName& p : kPreNames) {
    if (p.name != name) continue;
    for (const PreTokenizer& t : kPreTokenizers)
      if (t.family == p.family) return &t;
  }
  return nullptr;
}

}  // namespace tapdiff::model
