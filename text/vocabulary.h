#pragma once
// The tokenizer vocabulary a model file carries: GGUF's tokenizer.ggml.* (text/gguf_vocabulary.cpp)
// or a Hugging Face folder's tokenizer.json (text/hf_tokenizer.h), as one value the tokenizer
// (text/tokenizer.h) encodes and decodes with.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "text/unicode_normalization.h"

namespace tapdiff::text {

// Where the SentencePiece-style encoder (model "llama") puts a "▁" before a fragment of text (the
// text at the start and between special tokens; text/tokenizer.h).
enum class SpacePrefix : std::uint8_t {
  none,
  every_fragment,               // llama.cpp's add_space_prefix; tokenizers' Prepend("▁") normalizer
  every_fragment_unless_space,  // tokenizers' Metaspace prepend_scheme "always": not before a leading ' '
  first_fragment_unless_space,  // Metaspace "first": the fragment at the text's start only, not before a ' '
};

// How an added token is matched in text beyond its own characters (tokenizers' AddedToken): with
// the white space beside it taken into the match (lstrip, rstrip), only where no word character
// (\w) stands just before or after it (single_word; elsewhere the match is text), and in the
// fragments between the other added tokens once normalized, as its own text normalized
// (normalized), rather than in the raw text.
struct AddedTokenMatch {
  bool strip_left = false;
  bool strip_right = false;
  bool single_word = false;
  bool normalized = false;
};

// The tokenizer vocabulary as GGUF stores it (tokenizer.ggml.*).
struct Vocabulary {
  std::string source;  // the file it came from, named in the tokenizer's messages
  std::string model;   // "llama" (SentencePiece-style) or "gpt2" (byte-level BPE)
  std::vector<std::string> tokens;
  std::vector<double> scores;       // may be empty
  std::vector<std::int32_t> types;  // 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte; may be empty
  // gpt2: ranked merges ("a b"); llama: empty (pieces merge by score), or from a tokenizer.json its
  // BPE's ranked merges, used instead of the scores.
  std::vector<std::string> merges;
  std::string pre;  // gpt2: the pre-tokenizer (GGUF tokenizer.ggml.pre), "" when not given
  // gpt2 from a tokenizer.json: its split patterns, in order (none: the text is one word), used
  // instead of `pre`; and its model's ignore_merges.
  std::optional<std::vector<std::string>> split_patterns;
  bool ignore_merges = false;
  std::string cannot_encode;  // why text cannot be encoded (a tokenizer.json feature not implemented); "" if it can
  int bos = -1, eos = -1, unk = -1;
  bool add_bos = true;   // a text prompt starts with BOS (tokenizer.ggml.add_bos_token, or llama.cpp's default)
  bool add_eos = false;  // a text prompt ends with EOS (tokenizer.ggml.add_eos_token)
  SpacePrefix space_prefix = SpacePrefix::every_fragment;  // llama only
  bool split_at_spaces = false;  // llama: each "▁"-led word merges alone (tokenizers' Metaspace split)
  bool fuse_unk = false;         // llama: adjacent unknown characters give one unk (tokenizers' fuse_unk)
  // llama from a tokenizer.json Unigram: ids below this are its pieces, into which each word is cut
  // by the best sum of their scores (tokenizers' Viterbi) instead of merged; 0 for the others.
  std::int32_t unigram_pieces = 0;
  UnicodeForm normalization = UnicodeForm::none;              // applied to each fragment of text (tokenizers' NFC, ...)
  std::map<std::int32_t, AddedTokenMatch> added_token_match;  // by token id; none: its own text, anywhere
  // tokenizer.json's added tokens that its model's vocabulary lacks (sorted): matched in text as
  // added tokens only, never a piece of a word (tokenizers' model does not know them; llama.cpp's
  // GGUF vocabulary has no such tokens, its user-defined ones are pieces too).
  std::vector<std::int32_t> added_only;
  bool special_tokens_as_text = false;  // control tokens written in text are text (split_special_tokens)
};

}  // namespace tapdiff::text
