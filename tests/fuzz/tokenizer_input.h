#pragma once
// The input of the tokenizer fuzz target: a vocabulary as GGUF's tokenizer.ggml.* keys carry it,
// and texts to encode, in a compact form that libFuzzer's byte mutations keep mostly valid:
//   4 header bytes: flags, bos, eos, unk (the ids as int8; -1 = none)
//     flags: bit 0 model "gpt2" (else "llama"), 1 add_bos, 2 and 6 the space prefix (the value of
//            text::SpacePrefix, bit 2 its low bit), 3 scores present, 4 token types present,
//            5 model "bert" (unsupported: the tokenizer refuses it), 7 split_at_spaces and fuse_unk
//   then records separated by 0x1E, each a kind byte and its payload:
//     't' type score piece   a token: type and score one int8 each (score 127 NaN, 126 +inf,
//                            -128 -inf), the rest its piece
//     'm' merge              a merge, "left right" (gpt2's; a llama vocabulary's ranked merges)
//     'p' name               a gpt2 pre-tokenizer (tokenizer.ggml.pre; "gpt-2" when none)
//     's' pattern            a gpt2 split pattern (a tokenizer.json's; when any, `pre` is not read)
//     'x' text               a text to encode
//     'u'                    the tokens so far are a Unigram's pieces (Vocabulary::unigram_pieces)
//   other records are ignored.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/weights.h"
#include "text/vocabulary.h"

namespace tapdiff::fuzz {

struct TokenizerInput {
  text::Vocabulary vocab;
  std::vector<std::string> texts;
};

TokenizerInput parse_tokenizer_input(std::span<const std::uint8_t> bytes);
// The bytes parse_tokenizer_input reads back as `input` (scores rounded to int8), for seeds.
std::string format_tokenizer_input(const TokenizerInput& input);

}  // namespace tapdiff::fuzz
