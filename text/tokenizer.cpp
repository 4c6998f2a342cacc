#include "text/tokenizer.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <queue>

#include <fmt/core.h>

#include "model/errors.h"
#include "text/unicode_classes.h"
#include "text/utf8.h"

namespace tapdiff::text {

namespace {

// The position in text where its trailing Unicode white space starts (text.size() when none).
std::size_t white_space_at_end(std::string_view text) {
  std::size_t end = 0;  // after the last character that is not white space
  for (std::size_t at = 0; at < text.size(); at += utf8_length(text, at))
    if (!is_white_space(utf8_decode(text, at))) end = at + utf8_length(text, at);
  return end;
}

// Whether text[begin, end) has no word character (\w) just before or just after it.
bool stands_alone(std::string_view text, std::size_t begin, std::size_t end) {
  if (begin > 0) {
    std::size_t last = begin - 1;  // the first byte of the character before begin
    while (last > 0 && begin - last < 4 && (static_cast<unsigned char>(text[last]) & 0xC0) == 0x80) --last;
    if (is_word_character(utf8_decode(text, last))) return false;
  }
  return end == text.size() || !is_word_character(utf8_decode(text, end));
}

// The bytes of text's leading Unicode white space.
std::size_t white_space_at_start(std::string_view text) {
  std::size_t at = 0;
  while (at < text.size() && is_white_space(utf8_decode(text, at))) at += utf8_length(text, at);
  return at;
}

// The byte of a "<0xXX>" piece, or nullopt for any other text.
std::optional<std::uint8_t> parse_byte_piece(std::string_view piece) {
  if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return std::nullopt;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  const int hi = hex(piece[3]), lo = hex(piece[4]);
  if (hi < 0 || lo < 0) return std::nullopt;
  return static_cast<std::uint8_t>(hi * 16 + lo);
}

// ---- BPE merging -------------------------------------------------------------------------------

// A run of text in a doubly linked list of adjacent symbols; size 0 once merged into its left.
struct Symbol {
  int prev;
  int next;
  std::size_t begin;
  std::size_t size;
};

// A proposed merge of symbol `left` with its right neighbour; `size` is their total size when
// proposed, so a proposal made stale by a later merge (sizes only grow) is recognised and dropped.
struct Candidate {
  double score;
  int left;
  std::size_t size;
};

// Highest score first; the leftmost on ties.
struct CandidateOrder {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

// Splits `text` into symbols of the given byte lengths, then repeatedly merges the adjacent pair
// with the best score(left, right) (nullopt: that pair never merges) until no pair scores.
// Returns the final symbols in order. O(n log n) in the number of symbols.
template <class PairScore>
std::vector<std::string_view> merge_pairs(std::string_view text, std::span<const std::size_t> lengths,
                                          const PairScore& score) {
  const int n = static_cast<int>(lengths.size());
  std::vector<Symbol> syms;
  syms.reserve(lengths.size());
  std::size_t begin = 0;
  for (int i = 0; i < n; ++i) {
    const std::size_t len = lengths[static_cast<std::size_t>(i)];
    syms.push_back({i - 1, i + 1 < n ? i + 1 : -1, begin, len});
    begin += len;
  }
  auto at = [&](int i) -> Symbol& { return syms[static_cast<std::size_t>(i)]; };
  auto view = [&](int i) { return text.substr(at(i).begin, at(i).size); };

  std::priority_queue<Candidate, std::vector<Candidate>, CandidateOrder> queue;
  auto propose = [&](int left) {
    if (left < 0 || at(left).next < 0) return;
    const int right = at(left).next;
    if (auto s = score(view(left), view(right))) queue.push({*s, left, at(left).size + at(right).size});
  };
  for (int i = 0; i + 1 < n; ++i) propose(i);

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& l = at(c.left);
    if (l.size == 0 || l.next < 0) continue;
    Symbol& r = at(l.next);
    if (l.size + r.size != c.size) continue;
    l.size += r.size;
    r.size = 0;
    l.next = r.next;
    if (l.next >= 0) at(l.next).prev = c.left;
    propose(l.prev);
    propose(c.left);
  }

  std::vector<std::string_view> out;
  for (int i = n > 0 ? 0 : -1; i >= 0; i = at(i).next) out.push_back(view(i));
  return out;
}

}  // namespace

namespace {

// GPT-2's reversible map from bytes to printable code points: printable Latin-1 bytes map to
// themselves, the others to U+0100 onwards in byte order.
char32_t gpt2_byte_char(std::uint8_t b, int& next_extra) {
  const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
  return printable ? char32_t{b} : static_cast<char32_t>(256 + next_extra++);
}

}  // namespace

// ---- construction ------------------------------------------------------------------------------

Tokenizer::Tokenizer(const Vocabulary& vocab) : vocab_(vocab) {
  if (vocab_.model == "llama") {
    kind_ = Kind::spm;
  } else if (vocab_.model == "gpt2") {
    kind_ = Kind::bpe;
    if (vocab_.split_patterns) {
      splitter_.emplace(std::span<const std::string>(*vocab_.split_patterns), where());
      ignore_merges_ = vocab_.ignore_merges;
    } else if (const PreTokenizer* pre = find_pre_tokenizer(vocab_.pre)) {
      splitter_.emplace(pre->patterns, where(), SplitDialect::llama_cpp);
      ignore_merges_ = pre->ignore_merges;
    }
  } else {
    throw UsageError(
        fmt::format("{}: tokenizer model '{}' is not supported: expected 'llama' or 'gpt2'", where(), vocab_.model));
  }
  check_vocab();
  byte_ids_.fill(-1);
  for (std::int32_t id = 0; id < size(); ++id) {
    const std::string& piece = vocab_.tokens[static_cast<std::size_t>(id)];
    const TokenType t = type(id);
    if ((t == TokenType::normal || t == TokenType::user_defined) &&
        !std::binary_search(vocab_.added_only.begin(), vocab_.added_only.end(), id))
      pieces_.emplace(piece, id);
    if (t == TokenType::byte) {
      if (auto b = parse_byte_piece(piece); b && byte_ids_[*b] < 0) byte_ids_[*b] = id;
    }
    if ((t == TokenType::control || t == TokenType::unknown || t == TokenType::user_defined) && !piece.empty()) {
      const auto rules = vocab_.added_token_match.find(id);
      if (rules == vocab_.added_token_match.end() || !rules->second.normalized)
        raw_added_.tokens.emplace_back(piece, id);
      else if (std::string normalized = normalize(piece, vocab_.normalization); !normalized.empty())
        normalized_added_.tokens.emplace_back(std::move(normalized), id);
    }
  }
  // Longest text first, so that "<|im_start|>" wins over a "<|im" that is also special.
  for (AddedPatterns* added : {&raw_added_, &normalized_added_}) {
    std::stable_sort(added->tokens.begin(), added->tokens.end(),
                     [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
    for (const auto& [text, id] : added->tokens) added->first[static_cast<unsigned char>(text.front())] = true;
  }
  if (kind_ == Kind::bpe) build_bpe_tables();
  if (kind_ == Kind::spm) read_merge_ranks();
  if (vocab_.unigram_pieces > 0) build_unigram_tables();
}

// Every piece of a Unigram, whatever its type (a later one of the same text wins, as in
// tokenizers' map), the longest, and the unknown characters' score.
void Tokenizer::build_unigram_tables() {
  if (kind_ != Kind::spm || vocab_.unigram_pieces > size() || vocab_.scores.empty())
    throw FormatError(fmt::format("{}: a Unigram needs SentencePiece-style pieces, at most {} of them, with scores",
                                  where(), size()));
  double lowest = std::numeric_limits<double>::infinity();
  for (std::int32_t id = 0; id < vocab_.unigram_pieces; ++id) {
    const std::string& piece = vocab_.tokens[static_cast<std::size_t>(id)];
    unigram_ids_.insert_or_assign(piece, id);
    unigram_longest_ = std::max(unigram_longest_, piece.size());
    lowest = std::min(lowest, vocab_.scores[static_cast<std::size_t>(id)]);
  }
  unigram_unk_score_ = lowest - 10.0;
}

std::string Tokenizer::where() const {
  return vocab_.source.empty() ? std::string("tokenizer") : vocab_.source + ": tokenizer";
}

void Tokenizer::check_vocab() const {
  const std::size_t n = vocab_.tokens.size();
  if (n == 0) throw FormatError(fmt::format("{}: the vocabulary has no tokens", where()));
  if (!vocab_.scores.empty() && vocab_.scores.size() != n)
    throw FormatError(fmt::format("{}: the vocabulary has {} tokens but {} scores", where(), n, vocab_.scores.size()));
  if (!vocab_.types.empty() && vocab_.types.size() != n)
    throw FormatError(
        fmt::format("{}: the vocabulary has {} tokens but {} token types", where(), n, vocab_.types.size()));
  const std::pair<const char*, int> ids[] = {{"bos", vocab_.bos}, {"eos", vocab_.eos}, {"unk", vocab_.unk}};
  for (const auto& [name, id] : ids)
    if (id < -1 || id >= static_cast<int>(n))
      throw FormatError(
          fmt::format("{}: {} token id {} is out of range: the vocabulary has {} tokens", where(), name, id, n));
}

void Tokenizer::build_bpe_tables() {
  if (vocab_.merges.empty())
    throw FormatError(
        fmt::format("{}: a byte-level BPE vocabulary (model 'gpt2') needs tokenizer.ggml.merges, found none", where()));
  int next_extra = 0;
  for (int b = 0; b < 256; ++b) {
    const auto byte = static_cast<std::uint8_t>(b);
    byte_chars_[byte] = utf8_encode(gpt2_byte_char(byte, next_extra));
    char_bytes_.emplace(byte_chars_[byte], byte);
  }
  read_merge_ranks();
}

void Tokenizer::read_merge_ranks() {
  for (std::size_t rank = 0; rank < vocab_.merges.size(); ++rank) {
    const std::string& merge = vocab_.merges[rank];
    const std::size_t space = merge.find(' ');
    if (space == 0 || space == std::string::npos || space + 1 == merge.size())
      throw FormatError(
          fmt::format("{}: merge {} is '{}': expected two pieces separated by one space", where(), rank, merge));
    merge_ranks_.emplace(merge, static_cast<std::int32_t>(rank));
  }
}

TokenType Tokenizer::type(std::int32_t id) const {
  if (id < 0 || id >= size())
    throw UsageError(fmt::format("{}: token id {} is out of range: the vocabulary has {} tokens", where(), id, size()));
  if (!vocab_.types.empty()) {
    const std::int32_t t = vocab_.types[static_cast<std::size_t>(id)];
    return t >= 1 && t <= 6 ? static_cast<TokenType>(t) : TokenType::normal;
  }
  // No types in the file: infer them from the special ids and the byte-piece spelling.
  if (id == vocab_.bos || id == vocab_.eos) return TokenType::control;
  if (id == vocab_.unk) return TokenType::unknown;
  if (kind_ == Kind::spm && parse_byte_piece(vocab_.tokens[static_cast<std::size_t>(id)])) return TokenType::byte;
  return TokenType::normal;
}

std::int32_t Tokenizer::find_piece(std::string_view piece) const {
  const auto it = pieces_.find(piece);
  return it == pieces_.end() ? -1 : it->second;
}

// Without scores in the file, earlier pieces merge first.
double Tokenizer::spm_score(std::int32_t id) const {
  return vocab_.scores.empty() ? -static_cast<double>(id) : vocab_.scores[static_cast<std::size_t>(id)];
}

void Tokenizer::throw_unencodable(std::string_view text) const {
  throw UsageError(
      fmt::format("{}: cannot encode '{}': it is no piece of the vocabulary, which has no byte tokens and no unk token",
                  where(), text));
}

// ---- encoding ----------------------------------------------------------------------------------

std::vector<std::int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  parse_special = parse_special && !vocab_.special_tokens_as_text;
  std::vector<std::int32_t> ids;
  if (add_special && vocab_.add_bos && vocab_.bos >= 0) ids.push_back(vocab_.bos);
  const bool add_eos = add_special && vocab_.add_eos && vocab_.eos >= 0;
  if (text.empty()) {
    if (add_eos) ids.push_back(vocab_.eos);
    return ids;
  }
  if (!vocab_.cannot_encode.empty())
    throw UsageError(
        fmt::format("{}: {}, so tapdiff would give other ids than the model's tokenizer; give the "
                    "prompt as token ids (--tokens)",
                    where(), vocab_.cannot_encode));
  if (kind_ == Kind::bpe && !splitter_) {
    if (vocab_.pre.empty())
      throw UsageError(
          fmt::format("{}: the file names no pre-tokenizer (tokenizer.ggml.pre), so how the model "
                      "splits text is unknown (llama.cpp guesses its 'default' split, with a "
                      "warning); give the prompt as token ids (--tokens)",
                      where()));
    throw UsageError(
        fmt::format("{}: the pre-tokenizer '{}' (tokenizer.ggml.pre) is not implemented: tapdiff "
                    "splits text as llama.cpp's pre-tokenizers of text/pre_tokenizers.cpp do, which "
                    "would give other ids for this vocabulary; give the prompt as token ids (--tokens)",
                    where(), vocab_.pre));
  }
  // As llama.cpp and tokenizers partition the text: added tokens cut it into fragments, each
  // normalized (Vocabulary::normalization), cut again at tokenizers' normalized added tokens, and
  // encoded alone (SentencePiece's space prefix goes before fragments as Vocabulary::space_prefix says).
  split_at_added(
      text, raw_added_, parse_special,
      [&](std::string_view fragment, bool at_start) {
        const std::string normalized = normalize(fragment, vocab_.normalization);
        split_at_added(
            normalized, normalized_added_, parse_special,
            [&](std::string_view piece, bool piece_at_start) {
              if (kind_ == Kind::spm)
                encode_spm(piece, space_prefix(piece, at_start && piece_at_start), ids);
              else
                encode_bpe(piece, ids);
            },
            ids);
      },
      ids);
  if (add_eos) ids.push_back(vocab_.eos);
  return ids;
}

// As tokenizers' AddedVocabulary::find_matches: text cut at the added tokens of `added` (leftmost,
// longest first, not overlapping), each taking the white space its lstrip / rstrip say (not back
// past the previous match); a single_word token's match with a word character beside it is text,
// and the search goes on after it. on_text(fragment, at_start) gets the text between them, `out`
// their ids.
void Tokenizer::split_at_added(std::string_view text, const AddedPatterns& added, bool parse_special,
                               const std::function<void(std::string_view, bool)>& on_text,
                               std::vector<std::int32_t>& out) const {
  std::size_t start = 0;
  const auto text_until = [&](std::size_t end) {
    if (end > start) on_text(text.substr(start, end - start), start == 0);
  };
  for (std::size_t i = 0; i < text.size();) {
    const AddedMatch match = added_at(added, text, i, parse_special);
    if (match.id < 0) {
      ++i;
      continue;
    }
    std::size_t begin = i, end = i + match.length;
    if (const auto rules = vocab_.added_token_match.find(match.id); rules != vocab_.added_token_match.end()) {
      if (rules->second.single_word && !stands_alone(text, begin, end)) {
        i = end;
        continue;
      }
      if (rules->second.strip_left) begin = start + white_space_at_end(text.substr(start, i - start));
      if (rules->second.strip_right) end += white_space_at_start(text.substr(end));
    }
    text_until(begin);
    out.push_back(match.id);
    i = end;
    start = i;
  }
  text_until(text.size());
}

// The added token of `added` whose text starts at text[i], longest first: user-defined ones
// always, control and unknown tokens when parse_special (as llama.cpp's tokenizer_st_partition); or
// none (id -1).
Tokenizer::AddedMatch Tokenizer::added_at(const AddedPatterns& added, std::string_view text, std::size_t i,
                                          bool parse_special) const {
  if (!added.first[static_cast<unsigned char>(text[i])]) return {};
  for (const auto& [pattern, id] : added.tokens) {
    if (!parse_special && type(id) != TokenType::user_defined) continue;
    if (text.substr(i).starts_with(pattern)) return {id, pattern.size()};
  }
  return {};
}

// Whether a "▁" goes before this fragment of the text (Vocabulary::space_prefix).
bool Tokenizer::space_prefix(std::string_view fragment, bool at_start) const {
  switch (vocab_.space_prefix) {
    case SpacePrefix::none: return false;
    case SpacePrefix::every_fragment: return true;
    case SpacePrefix::every_fragment_unless_space: return fragment.front() != ' ';
    case SpacePrefix::first_fragment_unless_space: return at_start && fragment.front() != ' ';
  }
  return false;
}

// SentencePiece BPE: ' ' becomes "▁", then UTF-8 characters merge, the best-scoring resulting
// piece first (or, with a tokenizer.json's merges, the best-ranked pair), over the whole fragment
// or each "▁"-led word (split_at_spaces). A character that is no piece (merges only ever produce
// pieces) becomes its byte tokens, or one unk (adjacent ones one in all, with fuse_unk).
void Tokenizer::encode_spm(std::string_view text, bool prefix, std::vector<std::int32_t>& out) const {
  std::string norm;
  norm.reserve(text.size() + text.size() / 2 + kSpmSpace.size());
  if (prefix) norm += kSpmSpace;
  for (char c : text) {
    if (c == ' ')
      norm += kSpmSpace;
    else
      norm += c;
  }
  std::string key;
  auto score = [&](std::string_view left, std::string_view right) -> std::optional<double> {
    if (!merge_ranks_.empty()) {
      key.assign(left).append(1, ' ').append(right);
      const auto it = merge_ranks_.find(key);
      return it == merge_ranks_.end() ? std::nullopt : std::optional<double>(-static_cast<double>(it->second));
    }
    const std::int32_t id = find_piece(std::string_view(left.data(), left.size() + right.size()));
    return id < 0 ? std::nullopt : std::optional<double>(spm_score(id));
  };
  const auto encode_word = [&](std::string_view word) {
    bool unk_last = false;
    const bool unigram = vocab_.unigram_pieces > 0;
    for (std::string_view symbol : unigram ? unigram_segments(word) : merge_pairs(word, utf8_lengths(word), score)) {
      const bool fused = unk_last && vocab_.fuse_unk;
      unk_last = false;
      if (const std::int32_t id = unigram ? unigram_piece(symbol) : find_piece(symbol); id >= 0) {
        out.push_back(id);
        continue;
      }
      bool all_bytes = true;
      for (char c : symbol) all_bytes = all_bytes && byte_ids_[static_cast<unsigned char>(c)] >= 0;
      if (all_bytes) {
        for (char c : symbol) out.push_back(byte_ids_[static_cast<unsigned char>(c)]);
      } else if (vocab_.unk >= 0) {
        if (!fused) out.push_back(vocab_.unk);
        unk_last = true;
      } else {
        throw_unencodable(symbol);
      }
    }
  };
  if (!vocab_.split_at_spaces) return encode_word(norm);
  std::size_t begin = 0;
  for (std::size_t at = norm.find(kSpmSpace, 1); at != std::string::npos; at = norm.find(kSpmSpace, at + 1)) {
    encode_word(std::string_view(norm).substr(begin, at - begin));
    begin = at;
  }
  encode_word(std::string_view(norm).substr(begin));
}

// tokenizers' Unigram (its encode_optimized): the cut of the word into pieces whose scores sum
// highest, found left to right (a later path replaces an earlier one only when strictly better). A
// character that no piece is alone is also an unknown one, scored as the lowest piece minus 10
// (and refused without an unk token, as tokenizers refuses it). Unknown characters, and pieces
// that are the unk token, next to each other are one segment.
std::vector<std::string_view> Tokenizer::unigram_segments(std::string_view word) const {
  struct Best {
    double score = 0;
    std::size_t start = 0;
    std::int32_t id = -1;
    bool reached = false;
  };
  std::vector<Best> best(word.size() + 1);
  std::size_t at = 0;
  for (const std::size_t char_length : utf8_lengths(word)) {
    const double here = best[at].score;
    const auto reach = [&](std::size_t end, double score, std::int32_t id) {
      Best& b = best[end];
      if (!b.reached || here + score > b.score) b = {here + score, at, id, true};
    };
    bool single = false;
    for (std::size_t length = 1; length <= unigram_longest_ && at + length <= word.size(); ++length) {
      const auto it = unigram_ids_.find(word.substr(at, length));
      if (it == unigram_ids_.end()) continue;
      reach(at + length, vocab_.scores[static_cast<std::size_t>(it->second)], it->second);
      single = single || length == char_length;
    }
    if (!single) {
      if (vocab_.unk < 0) throw_unencodable(word.substr(at, char_length));
      reach(at + char_length, unigram_unk_score_, vocab_.unk);
    }
    at += char_length;
  }
  std::vector<std::string_view> segments;  // from the end
  std::size_t unknown_end = 0;
  bool unknown = false;
  for (std::size_t end = word.size(); end > 0; end = best[end].start) {
    if (best[end].id == vocab_.unk) {
      if (!unknown) unknown_end = end;
      unknown = true;
      continue;
    }
    if (unknown) segments.push_back(word.substr(end, unknown_end - end));
    unknown = false;
    segments.push_back(word.substr(best[end].start, end - best[end].start));
  }
  if (unknown) segments.push_back(word.substr(0, unknown_end));
  std::reverse(segments.begin(), segments.end());
  return segments;
}

std::int32_t Tokenizer::unigram_piece(std::string_view piece) const {
  const auto it = unigram_ids_.find(piece);
  return it == unigram_ids_.end() ? -1 : it->second;
}

void Tokenizer::encode_bpe(std::string_view text, std::vector<std::int32_t>& out) const {
  for (std::string_view word : splitter_->split(text)) encode_bpe_word(word, out);
}

// Byte-level BPE of one pre-tokenized word: its bytes as GPT-2 stand-in characters, merged by rank.
void Tokenizer::encode_bpe_word(std::string_view word, std::vector<std::int32_t>& out) const {
  std::string mapped;
  std::vector<std::size_t> lengths;
  lengths.reserve(word.size());
  for (char c : word) {
    const std::string& ch = byte_chars_[static_cast<unsigned char>(c)];
    mapped += ch;
    lengths.push_back(ch.size());
  }
  if (ignore_merges_) {
    if (const std::int32_t whole = find_piece(mapped); whole >= 0) {
      out.push_back(whole);
      return;
    }
  }
  std::string key;
  auto score = [&](std::string_view left, std::string_view right) -> std::optional<double> {
    key.assign(left).append(1, ' ').append(right);
    const auto it = merge_ranks_.find(key);
    return it == merge_ranks_.end() ? std::nullopt : std::optional<double>(-static_cast<double>(it->second));
  };
  for (std::string_view symbol : merge_pairs(mapped, lengths, score)) {
    if (const std::int32_t id = find_piece(symbol); id >= 0)
      out.push_back(id);
    else if (vocab_.unk >= 0)
      out.push_back(vocab_.unk);
    else
      throw_unencodable(decode_bpe_piece(symbol));
  }
}

// ---- decoding ----------------------------------------------------------------------------------

std::string Tokenizer::decode_bpe_piece(std::string_view piece) const {
  std::string out;
  for (std::size_t i = 0; i < piece.size();) {
    const std::size_t n = utf8_length(piece, i);
    const auto it = char_bytes_.find(std::string(piece.substr(i, n)));
    if (it != char_bytes_.end())
      out += static_cast<char>(it->second);
    else
      out += piece.substr(i, n);
    i += n;
  }
  return out;
}

std::string Tokenizer::decode_token(std::int32_t id, std::int32_t previous) const {
  const TokenType t = type(id);  // checks the id
  const std::string& piece = vocab_.tokens[static_cast<std::size_t>(id)];
  switch (t) {
    case TokenType::control:
    case TokenType::unused: return {};
    case TokenType::user_defined: return piece;
    case TokenType::byte:
      if (auto b = parse_byte_piece(piece)) return std::string(1, static_cast<char>(*b));
      return piece;
    case TokenType::normal:
    case TokenType::unknown: break;
  }
  if (kind_ == Kind::bpe) return decode_bpe_piece(piece);
  std::string text;
  for (std::size_t i = 0; i < piece.size();) {
    if (piece.compare(i, kSpmSpace.size(), kSpmSpace) == 0) {
      text += ' ';
      i += kSpmSpace.size();
    } else {
      text += piece[i++];
    }
  }
  const bool at_start = previous < 0 || previous == vocab_.bos;
  if (at_start && vocab_.space_prefix != SpacePrefix::none && !text.empty() && text.front() == ' ') text.erase(0, 1);
  return text;
}

std::string Tokenizer::decode(std::span<const std::int32_t> ids) const {
  std::string text;
  std::int32_t previous = -1;
  for (std::int32_t id : ids) {
    text += decode_token(id, previous);
    previous = id;
  }
  return text;
}

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); i += utf8_length(text, i)) {
    const char32_t cp = utf8_decode(text, i);
    const bool scalar = cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF);
    out += utf8_encode(scalar ? cp : char32_t{0xFFFD});
  }
  return out;
}

}  // namespace tapdiff::text
