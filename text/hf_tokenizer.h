#pragma once
// The vocabulary of a Hugging Face folder's tokenizer.json, as transformers' AutoTokenizer builds it
// for the folder (text/hf_tokenizer_class.h) and tapdiff's Tokenizer reads it:
// byte-level BPE (model "BPE" whose pre-tokenizer ends in ByteLevel, after any Split, Digits or
// Punctuation steps: their patterns, read as Hugging Face tokenizers reads them; a Unicode
// normalization form before it), or
// SentencePiece-style BPE (pieces with "▁", byte fallback, fuse_unk; the normalizer Prepend("▁") +
// Replace(" ", "▁"), or a Metaspace pre-tokenizer with its prepend_scheme and split) or a Unigram
// over the same (pieces with scores, unk_id, byte fallback: Vocabulary::unigram_pieces), its added
// tokens (special: control; the others user-defined) and the BOS and EOS its post-processor puts
// around a text. A tokenizer.json tapdiff cannot follow (another model, a normalizer, an option it does not
// implement) still gives its pieces for decoding, and Vocabulary::cannot_encode says why text is
// refused, naming the key.
#include <filesystem>
#include <optional>

#include "model/config.h"
#include "text/vocabulary.h"

namespace tapdiff::text {

// nullopt when the folder has no tokenizer.json; FormatError naming the file when it is not a
// tokenizer.json (bad JSON, a vocabulary with gaps or clashing ids, more tokens than config.vocab).
std::optional<Vocabulary> hf_vocabulary(const std::filesystem::path& folder, const model::ModelConfig& config);

}  // namespace tapdiff::text
