#include "text/unicode_normalization.h"

#include <algorithm>
#include <vector>

#include "text/unicode_normalization_tables.h"
#include "text/utf8.h"

namespace tapdiff::text {

using namespace model;

namespace {

namespace tables = normalization_tables;

// Hangul syllables (Unicode 3.12): decomposed and composed by arithmetic, not by the tables.
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

// A byte that is not UTF-8, carried through as itself: outside Unicode, class 0, never composed.
constexpr char32_t kRawByte = 0x80000000;

std::uint8_t combining_class(char32_t cp) {
  const auto classes = tables::combining_classes();
  const auto it = std::lower_bound(classes.begin(), classes.end(), cp,
                                   [](const tables::CombiningClass& c, char32_t v) { return c.cp < v; });
  return it != classes.end() && it->cp == cp ? it->ccc : 0;
}

// Appends the full decomposition of cp found in `table` (true), or nothing (false).
bool append_from(std::span<const tables::Decomposition> table, std::span<const char32_t> pool, char32_t cp,
                 std::vector<char32_t>& out) {
  const auto it = std::lower_bound(table.begin(), table.end(), cp,
                                   [](const tables::Decomposition& d, char32_t v) { return d.cp < v; });
  if (it == table.end() || it->cp != cp) return false;
  const auto part = pool.subspan(it->offset, it->length);
  out.insert(out.end(), part.begin(), part.end());
  return true;
}

void decompose(char32_t cp, bool compatibility, std::vector<char32_t>& out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const char32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out.push_back(kTBase + s % kTCount);
    return;
  }
  if (compatibility && append_from(tables::compatibility(), tables::compatibility_pool(), cp, out)) return;
  if (append_from(tables::canonical(), tables::canonical_pool(), cp, out)) return;
  out.push_back(cp);
}

// The primary composite of (first, second), or 0.
char32_t compose_pair(char32_t first, char32_t second) {
  if (first >= kLBase && first < kLBase + kLCount && second >= kVBase && second < kVBase + kVCount)
    return kSBase + ((first - kLBase) * kVCount + (second - kVBase)) * kTCount;
  if (first >= kSBase && first < kSBase + kSCount && (first - kSBase) % kTCount == 0 && second > kTBase &&
      second < kTBase + kTCount)
    return first + (second - kTBase);
  const auto composites = tables::composites();
  const auto it = std::lower_bound(
      composites.begin(), composites.end(), std::pair(first, second),
      [](const tables::Composite& c, std::pair<char32_t, char32_t> v) { return std::pair(c.first, c.second) < v; });
  return it != composites.end() && it->first == first && it->second == second ? it->composite : 0;
}

std::uint8_t class_of(char32_t c) { return (c & kRawByte) != 0 ? 0 : combining_class(c); }

// Canonical ordering: each run of non-starters sorted by combining class, stably.
void reorder(std::vector<char32_t>& cps) {
  for (std::size_t i = 1; i < cps.size(); ++i) {
    const char32_t c = cps[i];
    const std::uint8_t cc = class_of(c);
    if (cc == 0) continue;
    std::size_t j = i;
    while (j > 0 && class_of(cps[j - 1]) > cc) {
      cps[j] = cps[j - 1];
      --j;
    }
    cps[j] = c;
  }
}

// Canonical composition: each character joins the last starter unless a character between them
// blocks it (one of class 0, or of a class not below its own).
std::vector<char32_t> compose(const std::vector<char32_t>& cps) {
  std::vector<char32_t> out;
  out.reserve(cps.size());
  std::size_t starter = std::string::npos;
  for (const char32_t c : cps) {
    const std::uint8_t cc = class_of(c);
    if (starter != std::string::npos && (c & kRawByte) == 0) {
      const bool adjacent = out.size() == starter + 1;
      const std::uint8_t between = adjacent ? 0 : class_of(out.back());
      if (adjacent || (between != 0 && between < cc)) {
        if (const char32_t joined = compose_pair(out[starter], c); joined != 0) {
          out[starter] = joined;
          continue;
        }
      }
    }
    if (cc == 0) starter = (c & kRawByte) != 0 ? std::string::npos : out.size();
    out.push_back(c);
  }
  return out;
}

}  // namespace

UnicodeForm unicode_form_named(std::string_view name) {
  if (name == "NFC") return UnicodeForm::nfc;
  if (name == "NFD") return UnicodeForm::nfd;
  if (name == "NFKC") return UnicodeForm::nfkc;
  if (name == "NFKD") return UnicodeForm::nfkd;
  return UnicodeForm::none;
}

std::string_view unicode_form_name(UnicodeForm form) {
  switch (form) {
    case UnicodeForm::none: return "";
    case UnicodeForm::nfc: return "NFC";
    case UnicodeForm::nfd: return "NFD";
    case UnicodeForm::nfkc: return "NFKC";
    case UnicodeForm::nfkd: return "NFKD";
  }
  return "";
}

std::string normalize(std::string_view text, UnicodeForm form) {
  if (form == UnicodeForm::none ||
      std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; }))
    return std::string(text);
  const bool compatibility = form == UnicodeForm::nfkc || form == UnicodeForm::nfkd;
  std::vector<char32_t> cps;
  cps.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_length(text, i);
    const auto lead = static_cast<unsigned char>(text[i]);
    if (n == 1 && lead >= 0x80)
      cps.push_back(kRawByte | lead);
    else
      decompose(utf8_decode(text, i), compatibility, cps);
    i += n;
  }
  reorder(cps);
  if (form == UnicodeForm::nfc || form == UnicodeForm::nfkc) cps = compose(cps);
  std::string out;
  out.reserve(text.size());
  for (const char32_t c : cps)
    if ((c & kRawByte) != 0)
      out += static_cast<char>(c & 0xFF);
    else
      out += utf8_encode(c);
  return out;
}

}  // namespace tapdiff::text
