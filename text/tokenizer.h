#pragma once
// Text <-> token ids for the vocabularies GGUF files carry (tokenizer.ggml.*), and those read from
// a tokenizer.json (text/hf_tokenizer.h).
//
// model "llama": SentencePiece-style BPE over UTF-8 characters, as llama.cpp's SPM tokenizer and
//   llama2.c do it. ' ' becomes U+2581 "▁", a "▁" is prepended as Vocabulary::space_prefix says, and
//   adjacent symbols merge, best piece score first (leftmost on ties), or with a tokenizer.json's
//   merges the best-ranked pair first, as tokenizers' BPE does; characters that are not a piece
//   fall back to byte tokens <0xXX> (or to unk when the vocabulary has none).
//   From a tokenizer.json Unigram (Vocabulary::unigram_pieces), each word is instead cut into the
//   pieces whose scores sum highest, as tokenizers' Unigram does.
// model "gpt2": byte-level BPE with ranked merges ("a b" strings), after the pre-tokenization
//   the vocabulary's split patterns give (a tokenizer.json's) or tokenizer.ggml.pre names
//   (text/pre_tokenizers.h: llama.cpp's); for a pre-tokenizer tapdiff does not implement, or
//   none named, encode() refuses, naming it (token ids still run).
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/pre_tokenizers.h"
#include "text/vocabulary.h"

namespace tapdiff::text {

inline constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581 "▁", SentencePiece's space

// GGUF tokenizer.ggml.token_type values.
enum class TokenType : std::int32_t { normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6 };

class Tokenizer {
 public:
  // FormatError when the vocabulary is inconsistent (sizes, ids out of range, bad merges);
  // UsageError when its model is neither "llama" nor "gpt2".
  explicit Tokenizer(const Vocabulary& vocab);

  // The ids of `text` (UTF-8; invalid bytes are encoded as bytes), with, where add_special, BOS
  // first and EOS last as the vocabulary adds them (Vocabulary::add_bos, add_eos: llama.cpp's
  // add_special). The text of a control or unknown token written in it ("<s>", "<|im_start|>")
  // is that token when parse_special (unless the vocabulary reads them as text:
  // Vocabulary::special_tokens_as_text), else text; a user-defined token's text is always that token
  // (as llama.cpp's parse_special). Control pieces are never produced otherwise.
  std::vector<std::int32_t> encode(std::string_view text, bool add_special, bool parse_special = true) const;
  // The bytes of one token in a stream: control and unused tokens give "", byte tokens their byte
  // (possibly a fragment of a UTF-8 character), unk its piece text (e.g. "<unk>"). For "llama",
  // "▁" gives ' ' and, with a space prefix, the leading space is dropped when previous is BOS or
  // negative (the start), undoing the encoder's prefix. For "gpt2", the byte stand-ins give bytes.
  // UsageError when id is not a token id.
  std::string decode_token(std::int32_t id, std::int32_t previous = -1) const;
  // decode_token over the ids, each with the one before it as previous.
  std::string decode(std::span<const std::int32_t> ids) const;

  int bos() const { return vocab_.bos; }
  int eos() const { return vocab_.eos; }
  int size() const { return static_cast<int>(vocab_.tokens.size()); }
  TokenType type(std::int32_t id) const;

 private:
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using PieceMap = std::unordered_map<std::string, std::int32_t, StringHash, std::equal_to<>>;

  enum class Kind : std::uint8_t { spm, bpe };
  std::optional<WordSplitter> splitter_;  // bpe: the pre-tokenizer's split; none when not implemented
  bool ignore_merges_ = false;            // bpe: a word that is itself a piece is that one token

  std::string where() const;  // "<file>: tokenizer", the start of every message
  void check_vocab() const;
  void build_bpe_tables();
  void read_merge_ranks();
  bool space_prefix(std::string_view fragment, bool at_start) const;
  // The added tokens matched at one level of the text, longest text first: in the raw text, or
  // (tokenizers' normalized ones) in each fragment between those once normalized.
  struct AddedPatterns {
    std::vector<std::pair<std::string, std::int32_t>> tokens;  // the text matched, the id
    std::array<bool, 256> first{};                             // bytes that start one
  };
  struct AddedMatch {
    std::int32_t id = -1;
    std::size_t length = 0;
  };
  AddedMatch added_at(const AddedPatterns& added, std::string_view text, std::size_t i, bool parse_special) const;
  void split_at_added(std::string_view text, const AddedPatterns& added, bool parse_special,
                      const std::function<void(std::string_view, bool)>& on_text, std::vector<std::int32_t>& out) const;
  void encode_spm(std::string_view text, bool prefix, std::vector<std::int32_t>& out) const;
  void encode_bpe(std::string_view text, std::vector<std::int32_t>& out) const;
  void encode_bpe_word(std::string_view word, std::vector<std::int32_t>& out) const;
  std::string decode_bpe_piece(std::string_view piece) const;
  std::int32_t find_piece(std::string_view piece) const;  // -1 when not a mergeable piece
  void build_unigram_tables();
  std::vector<std::string_view> unigram_segments(std::string_view word) const;
  std::int32_t unigram_piece(std::string_view piece) const;  // -1 when no piece of the Unigram
  double spm_score(std::int32_t id) const;
  [[noreturn]] void throw_unencodable(std::string_view text) const;

  Vocabulary vocab_;
  Kind kind_ = Kind::spm;
  PieceMap pieces_;                                           // text -> id of normal and user-defined pieces
  AddedPatterns raw_added_, normalized_added_;                // control, unknown and user-defined tokens
  std::array<std::int32_t, 256> byte_ids_;                    // byte -> id of its <0xXX> token, or -1 (spm)
  PieceMap merge_ranks_;                                      // "left right" -> rank, lower merges first (bpe)
  std::array<std::string, 256> byte_chars_;                   // byte -> its GPT-2 unicode stand-in, UTF-8 (bpe)
  std::unordered_map<std::string, std::uint8_t> char_bytes_;  // the inverse of byte_chars_ (bpe)
  PieceMap unigram_ids_;                                      // text -> id of every piece of a Unigram
  std::size_t unigram_longest_ = 0;                           // its longest piece, in bytes
  double unigram_unk_score_ = 0;                              // an unknown character's score
};

// text with every malformed UTF-8 sequence (a lone byte token's fragment, a surrogate) replaced by
// U+FFFD, for display and JSON; decode() itself returns the exact bytes.
std::string valid_utf8(std::string_view text);

}  // namespace tapdiff::text
