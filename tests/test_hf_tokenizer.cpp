#include "text/hf_tokenizer.h"

#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "model/errors.h"
#include "tests/test_support.h"
#include "text/tokenizer.h"
#include "text/unicode_classes.h"

namespace tapdiff::text {

namespace {

using json = nlohmann::json;
using testing::temp_dir;

// A byte-level BPE tokenizer.json over "h", "e", "he", "Ġ" and a special token, as tokenizers
// saves one.
json byte_level_tokenizer() {
  return json::parse(R"({
    "added_tokens": [{"id": 4, "content": "<|end|>", "special": true, "lstrip": false, "rstrip": false,
                      "single_word": false, "normalized": false}],
    "normalizer": null,
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": "\\p{N}"}, "behavior": "Isolated", "invert": false},
      {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}]},
    "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<|end|>", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}}], "pair": [],
                       "special_tokens": {"<|end|>": {"id": "<|end|>", "ids": [4], "tokens": ["<|end|>"]}}},
    "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
    "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
              "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
              "vocab": {"h": 0, "e": 1, "he": 2, "Ġ": 3}, "merges": [["h", "e"]]}})");
}

// A folder with the tokenizer.json, config.json's model_type and, when given, a tokenizer_config.json.
std::filesystem::path folder_with(const json& tokenizer, const std::string& name,
                                  const std::string& model_type = "llama", const json& tokenizer_config = nullptr) {
  const auto dir = temp_dir(name);
  std::ofstream(dir / "tokenizer.json") << tokenizer.dump();
  std::ofstream(dir / "config.json") << json{{"model_type", model_type}}.dump();
  if (!tokenizer_config.is_null()) std::ofstream(dir / "tokenizer_config.json") << tokenizer_config.dump();
  return dir;
}

model::ModelConfig config_of(int vocab) {
  model::ModelConfig c;
  c.vocab = vocab;
  return c;
}

TEST(HfTokenizer, ByteLevelBpeEncodesWithItsSplitAndTemplate) {
  const auto v = hf_vocabulary(folder_with(byte_level_tokenizer(), "hf_tok_ok"), config_of(6));
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->model, "gpt2");
  EXPECT_EQ(v->tokens.size(), 6u);  // padded to the embedding's rows
  EXPECT_EQ(v->types[4], static_cast<std::int32_t>(TokenType::control));
  EXPECT_EQ(v->types[5], static_cast<std::int32_t>(TokenType::unused));
  EXPECT_TRUE(v->add_bos);
  EXPECT_EQ(v->bos, 4);
  const Tokenizer t(*v);
  EXPECT_EQ(t.encode("he h<|end|>", true), (std::vector<std::int32_t>{4, 2, 3, 0, 4}));
  EXPECT_EQ(t.decode(std::vector<std::int32_t>{2, 3, 0}), "he h");
}

// A SentencePiece-style BPE tokenizer.json as Llama 2's (legacy): pieces with "▁", byte fallback,
// the normalizer Prepend("▁") + Replace(" ", "▁"), <s> added by the post-processor.
json sentencepiece_tokenizer() {
  json t = json::parse(R"({
    "added_tokens": [{"id": 0, "content": "<unk>", "special": true, "normalized": false},
                     {"id": 1, "content": "<s>", "special": true, "normalized": false}],
    "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                   {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
    "pre_tokenizer": null,
    "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}}], "pair": [],
                       "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
    "decoder": {"type": "Sequence", "decoders": []},
    "model": {"type": "BPE", "dropout": null, "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": true,
              "vocab": {"<unk>": 0, "<s>": 1, "\u2581": 2, "a": 3, "b": 4, "\u2581a": 5, "ab": 6, "\u2581ab": 7,
                        "\u2581\u2581": 8, "<0xC3>": 9, "<0xA9>": 10},
              "merges": [["\u2581", "a"], ["a", "b"], ["\u2581a", "b"], ["\u2581", "\u2581"]]}})");
  return t;
}

// The ids tokenizers gives for the same files (its Python package, once by hand; the conformance
// suite compares whole corpora): "▁" before fragments as the normalizer or Metaspace says, merges
// by rank, é as its two byte tokens, unknown characters as one unk.
TEST(HfTokenizer, SentencePieceStyleBpeEncodesAsItsNormalizerOrMetaspaceSays) {
  const auto encode = [](const json& tokenizer, const std::string& text) {
    const auto v = hf_vocabulary(folder_with(tokenizer, "hf_tok_spm"), config_of(11));
    return Tokenizer(*v).encode(text, true);
  };
  using Ids = std::vector<std::int32_t>;
  const json legacy = sentencepiece_tokenizer();
  const auto v = hf_vocabulary(folder_with(legacy, "hf_tok_spm"), config_of(11));
  EXPECT_EQ(v->model, "llama");
  EXPECT_EQ(v->types[9], static_cast<std::int32_t>(TokenType::byte));
  EXPECT_EQ(encode(legacy, "ab b"), (Ids{1, 7, 2, 4}));       // ▁ab ▁ b: no "▁b" piece
  EXPECT_EQ(encode(legacy, " ab"), (Ids{1, 2, 7}));           // ▁▁ab: "▁ a" ranks before "▁ ▁"
  EXPECT_EQ(encode(legacy, "a<s>ab"), (Ids{1, 5, 1, 7}));     // the prefix again after <s>
  EXPECT_EQ(encode(legacy, "\xC3\xA9"), (Ids{1, 2, 9, 10}));  // é: byte fallback
  EXPECT_EQ(Tokenizer(*v).decode(Ids{7, 2, 9, 10}), "ab \xC3\xA9");

  json first = legacy;
  first["normalizer"] = nullptr;
  first["pre_tokenizer"] = {
      {"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "first"}, {"split", false}};
  EXPECT_EQ(encode(first, " ab"), (Ids{1, 7}));           // a leading space is the prefix
  EXPECT_EQ(encode(first, "a<s>ab"), (Ids{1, 5, 1, 6}));  // none after <s>
  json always = first;
  always["pre_tokenizer"]["prepend_scheme"] = "always";
  EXPECT_EQ(encode(always, "a<s>ab"), (Ids{1, 5, 1, 7}));
  json split = first;
  split["pre_tokenizer"]["split"] = true;
  EXPECT_EQ(encode(first, "a  "), (Ids{1, 5, 8}));     // ▁a ▁▁
  EXPECT_EQ(encode(split, "a  "), (Ids{1, 5, 2, 2}));  // words ▁a, ▁, ▁
  json unk = legacy;
  unk["model"]["byte_fallback"] = false;
  EXPECT_EQ(encode(unk,
                   "\xC3\xA9\xC3\xA9"
                   "a"),
            (Ids{1, 2, 0, 3}));  // two unknown characters: one fused unk
}

// A Unigram as tokenizers saves one: [piece, score] pairs, Metaspace cutting the text into words.
json unigram_tokenizer() {
  return json::parse(R"({
    "added_tokens": [{"id": 0, "content": "<unk>", "special": true, "normalized": false}],
    "normalizer": null,
    "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": true},
    "post_processor": null,
    "decoder": null,
    "model": {"type": "Unigram", "unk_id": 0, "byte_fallback": false,
              "vocab": [["<unk>", 0.0], ["\u2581", -4.0], ["a", -3.0], ["b", -3.0], ["c", -3.0],
                        ["\u2581ab", -1.0], ["\u2581a", -2.0], ["bc", -0.5], ["ax", -24.5]]}})");
}

// Each word is cut into the pieces whose scores sum highest, not the longest first: "▁abc" is
// ▁a + bc (-2.5), not ▁ab + c (-4). An unknown character scores as the lowest piece minus 10
// (-34.5 here: "▁ax" is ▁ + ax, -28.5, not ▁a + unknown x, -36.5), and a run of them is one unk.
TEST(HfTokenizer, UnigramCutsEachWordIntoThePiecesWhoseScoresSumHighest) {
  using Ids = std::vector<std::int32_t>;
  const auto v = hf_vocabulary(folder_with(unigram_tokenizer(), "hf_tok_unigram"), config_of(9));
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->model, "llama");
  EXPECT_EQ(v->unigram_pieces, 9);
  EXPECT_EQ(v->unk, 0);
  const Tokenizer t(*v);
  EXPECT_EQ(t.encode("abc", false), (Ids{6, 7}));
  EXPECT_EQ(t.encode("ab", false), (Ids{5}));
  EXPECT_EQ(t.encode("xyz a", false), (Ids{1, 0, 6}));  // ▁, unk for "xyz", ▁a
  EXPECT_EQ(t.encode("ax", false), (Ids{1, 8}));
  EXPECT_EQ(t.encode("ayz", false), (Ids{6, 0}));  // ▁a, unk for "yz"
  EXPECT_EQ(t.decode(Ids{6, 7, 6}), "abc a");
  json no_unk = unigram_tokenizer();
  no_unk["model"]["unk_id"] = nullptr;
  const Tokenizer strict(*hf_vocabulary(folder_with(no_unk, "hf_tok_unigram"), config_of(9)));
  EXPECT_EQ(strict.encode("abc", false), (Ids{6, 7}));
  EXPECT_THROW(strict.encode("ax", false), UsageError);  // tokenizers fails without an unk id too
}

// An added token with lstrip / rstrip takes the white space before / after it into its match, as
// tokenizers' AddedVocabulary does (not back past the previous match).
TEST(HfTokenizer, AddedTokensTakeTheWhiteSpaceTheirStripOptionsSay) {
  using Ids = std::vector<std::int32_t>;
  const auto encode = [](bool left, bool right, const std::string& text) {
    json tokenizer = byte_level_tokenizer();
    tokenizer["added_tokens"][0]["lstrip"] = left;
    tokenizer["added_tokens"][0]["rstrip"] = right;
    return Tokenizer(*hf_vocabulary(folder_with(tokenizer, "hf_tok_strip"), config_of(6))).encode(text, false);
  };
  EXPECT_EQ(encode(false, false, "h <|end|> he"), (Ids{0, 3, 4, 3, 2}));  // "h", "Ġ", <|end|>, "Ġ", "he"
  EXPECT_EQ(encode(true, false, "h <|end|> he"), (Ids{0, 4, 3, 2}));
  EXPECT_EQ(encode(false, true, "h <|end|> he"), (Ids{0, 3, 4, 2}));
  EXPECT_EQ(encode(true, true, "h \u3000\t<|end|>\n he"), (Ids{0, 4, 2}));  // Unicode white space
  EXPECT_EQ(encode(true, true, "<|end|> <|end|>"), (Ids{4, 4}));            // the first took the space
}

// A single_word added token is a token only where no word character (Rust regex's \\w) stands
// beside it; elsewhere its text is encoded as text, and the search goes on after it.
TEST(HfTokenizer, SingleWordAddedTokensStandAloneOrAreText) {
  using Ids = std::vector<std::int32_t>;
  json tokenizer = byte_level_tokenizer();
  tokenizer["added_tokens"].push_back({{"id", 5},
                                       {"content", "eh"},
                                       {"special", false},
                                       {"lstrip", false},
                                       {"rstrip", false},
                                       {"single_word", true},
                                       {"normalized", false}});
  const Tokenizer t(*hf_vocabulary(folder_with(tokenizer, "hf_tok_single_word"), config_of(6)));
  EXPECT_EQ(t.encode("eh", false), (Ids{5}));
  EXPECT_EQ(t.encode("h eh", false), (Ids{0, 3, 5}));
  EXPECT_EQ(t.encode("eh<|end|>", false), (Ids{5, 4}));
  EXPECT_EQ(t.encode("heh", false), (Ids{2, 0}));  // "h" before it: the text "heh"
  EXPECT_EQ(t.encode("ehe", false), (Ids{1, 2}));  // "e" after it
  // What counts as a word character: letters, marks, decimal digits of any script, connector
  // punctuation, the joiners, and alphabetic symbols (circled letters); not other numbers or emoji.
  for (const char32_t c :
       {U'a', U'Z', U'_', U'7', U'\u00e9', U'\u0301', U'\u0663', U'\u203f', U'\u200d', U'\u24b6', U'\u4e2d'})
    EXPECT_TRUE(text::is_word_character(c)) << static_cast<std::uint32_t>(c);
  for (const char32_t c : {U' ', U'-', U'<', U'\u00bd', U'\u00b2', U'\u3000', U'\U0001F600', U'\u2028'})
    EXPECT_FALSE(text::is_word_character(c)) << static_cast<std::uint32_t>(c);
  EXPECT_EQ(text::word_character_unicode_version(), "16.0.0");
}

TEST(HfTokenizer, FeaturesTapdiffDoesNotImplementRefuseTextNamingThem) {
  const auto refusal = [](const json& tokenizer) {
    const auto v = hf_vocabulary(folder_with(tokenizer, "hf_tok_refused"), config_of(11));
    try {
      Tokenizer(*v).encode("he", false);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("encoded");
  };
  json lowercase = byte_level_tokenizer();
  lowercase["normalizer"] = {{"type", "Lowercase"}};
  EXPECT_NE(refusal(lowercase).find(
                "tokenizer.json: the normalizer {\"type\":\"Lowercase\"} is not implemented (NFC, NFD, NFKC "
                "and NFKD are), so tapdiff would give other ids than the model's tokenizer; give the prompt as "
                "token ids"),
            std::string::npos)
      << refusal(lowercase);
  json prefix = byte_level_tokenizer();
  prefix["pre_tokenizer"]["pretokenizers"][1]["add_prefix_space"] = true;
  EXPECT_NE(refusal(prefix).find("ByteLevel add_prefix_space true is not implemented"), std::string::npos);
  json normalized = sentencepiece_tokenizer();
  normalized["added_tokens"][1]["normalized"] = true;
  EXPECT_NE(
      refusal(normalized).find("the added token \"<s>\" has normalized true beside the normalizer {\"normalizers\""),
      std::string::npos)
      << refusal(normalized);
  json merged = byte_level_tokenizer();
  merged["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "MergedWithPrevious";
  EXPECT_NE(refusal(merged).find("Split behavior 'MergedWithPrevious' is not implemented"), std::string::npos);
  json truncated = byte_level_tokenizer();
  truncated["truncation"] = {{"max_length", 8}, {"strategy", "LongestFirst"}};
  EXPECT_NE(refusal(truncated).find("tokenizer.json: truncation {\"max_length\":8"), std::string::npos)
      << refusal(truncated);
  json fused = byte_level_tokenizer();
  fused["model"]["unk_token"] = "h", fused["model"]["fuse_unk"] = true;
  EXPECT_NE(refusal(fused).find("model.fuse_unk true is not implemented"), std::string::npos);
  json word_piece = byte_level_tokenizer();
  word_piece["model"] = {{"type", "WordPiece"}, {"vocab", {{"h", 0}, {"e", 1}, {"he", 2}, {"##e", 3}}}};
  EXPECT_NE(refusal(word_piece).find("model.type 'WordPiece' is not implemented (tapdiff reads BPE and Unigram)"),
            std::string::npos);
  json nfkc = sentencepiece_tokenizer();
  nfkc["normalizer"]["normalizers"].push_back({{"type", "NFKC"}});
  EXPECT_NE(refusal(nfkc).find("the normalizer {\"type\":\"NFKC\"} is not implemented (Replace"), std::string::npos)
      << refusal(nfkc);
  json bare = sentencepiece_tokenizer();
  bare["normalizer"] = nullptr;
  EXPECT_NE(refusal(bare).find("neither a normalizer nor a Metaspace pre-tokenizer"), std::string::npos);
  json disagree = bare;
  disagree["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"add_prefix_space", false}};
  EXPECT_NE(refusal(disagree).find("Metaspace add_prefix_space false disagrees with prepend_scheme 'always'"),
            std::string::npos)
      << refusal(disagree);
  json lookbehind = byte_level_tokenizer();
  lookbehind["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(?<=x)y";
  EXPECT_THROW(refusal(lookbehind), FormatError);  // a pattern outside the syntax: named when the tokenizer is built
}

// The class transformers 5.x's AutoTokenizer picks from config.json's model_type and
// tokenizer_config.json (tests/conformance/test_tokenizer_classes.py holds the ids to transformers').
TEST(HfTokenizer, TheClassTransformersPicksBuildsThePipeline) {
  struct Case {
    std::string model_type;
    json tokenizer_config;
    std::string refusal;  // "" where text is encoded
    SpacePrefix prefix;
  };
  const std::vector<Case> cases = {
      {"llama", nullptr, "", SpacePrefix::every_fragment},  // no class: the file (its legacy normalizer)
      // The vocabulary has no </s>, LlamaTokenizer's default EOS.
      {"llama",
       {{"tokenizer_class", "LlamaTokenizer"}, {"eos_token", "<s>"}},
       "",
       SpacePrefix::first_fragment_unless_space},
      {"llama",
       {{"tokenizer_class", "LlamaTokenizerFast"}, {"eos_token", "<s>"}, {"legacy", true}},
       "",
       SpacePrefix::every_fragment_unless_space},
      {"llama",
       {{"tokenizer_class", "LlamaTokenizer"}, {"eos_token", "<s>"}, {"add_prefix_space", false}},
       "",
       SpacePrefix::none},
      {"llama",
       {{"tokenizer_class", "LlamaTokenizer"}},
       "LlamaTokenizer takes the special token \"</s>\" (LlamaTokenizer's default eos_token) as a token past",
       SpacePrefix::none},
      {"llama", {{"tokenizer_class", "PreTrainedTokenizerFast"}}, "", SpacePrefix::every_fragment},
      {"phi3", {{"tokenizer_class", "LlamaTokenizer"}}, "", SpacePrefix::every_fragment},     // phi3's override
      {"mistral", {{"tokenizer_class", "LlamaTokenizer"}}, "", SpacePrefix::every_fragment},  // its registered class
      {"gemma",
       {{"pad_token", "<unk>"}, {"mask_token", nullptr}, {"bos_token", "<s>"}, {"eos_token", "<s>"}},
       "",
       SpacePrefix::none},
      {"llama",
       {{"tokenizer_class", "LlamaTokenizer"}, {"auto_map", {{"AutoTokenizer", {"m.T", nullptr}}}}},
       "tokenizer_config.json auto_map (a tokenizer class in the model's own code) is not followed",
       SpacePrefix::none},
      // Qwen2Tokenizer (qwen2 overrides the folder's class) over a SentencePiece-style file that
      // has no <|endoftext|>, its default special token.
      {"qwen2",
       {{"tokenizer_class", "PreTrainedTokenizerFast"}},
       "Qwen2Tokenizer takes the special token \"<|endoftext|>\" (Qwen2Tokenizer's default eos_token)",
       SpacePrefix::none},
      {"qwen3", nullptr, "Qwen2Tokenizer takes the special token", SpacePrefix::none},
      {"llama",
       {{"tokenizer_class", "GPT2TokenizerFast"}},
       "with GPT2Tokenizer (tokenizer_config.json tokenizer_class 'GPT2TokenizerFast')",
       SpacePrefix::none},
      {"gemma", nullptr, "takes the special token \"<bos>\" (GemmaTokenizer's default bos_token)", SpacePrefix::none},
      {"mamba", nullptr, "config.json model_type 'mamba': which tokenizer class transformers picks", SpacePrefix::none},
  };
  for (const Case& c : cases) {
    const auto v = hf_vocabulary(
        folder_with(sentencepiece_tokenizer(), "hf_tok_class", c.model_type, c.tokenizer_config), config_of(11));
    SCOPED_TRACE(c.model_type + " " + c.tokenizer_config.dump());
    if (c.refusal.empty()) {
      EXPECT_EQ(v->cannot_encode, "");
      EXPECT_EQ(v->space_prefix, c.prefix);
    } else {
      EXPECT_NE(v->cannot_encode.find(c.refusal), std::string::npos) << v->cannot_encode;
    }
  }
  // A Llama class beside a byte-level file is the file; a model id transformers loads generically too.
  const auto byte_level = hf_vocabulary(
      folder_with(byte_level_tokenizer(), "hf_tok_class", "llama", {{"tokenizer_class", "LlamaTokenizerFast"}}),
      config_of(6));
  EXPECT_EQ(byte_level->model, "gpt2");
  EXPECT_EQ(byte_level->cannot_encode, "");
  const auto dir =
      folder_with(sentencepiece_tokenizer(), "hf_tok_class", "llama", {{"tokenizer_class", "LlamaTokenizer"}});
  std::ofstream(dir / "config.json") << json{{"model_type", "llama"},
                                             {"_name_or_path", "DeepSeek-AI/deepseek-coder-1.3b"}};
  EXPECT_EQ(hf_vocabulary(dir, config_of(11))->space_prefix, SpacePrefix::every_fragment);
  // A special token tokenizer_config.json names that is a normal piece becomes an added token.
  const auto named = hf_vocabulary(
      folder_with(sentencepiece_tokenizer(), "hf_tok_class", "llama", {{"additional_special_tokens", {"ab"}}}),
      config_of(11));
  EXPECT_EQ(named->types[6], static_cast<std::int32_t>(TokenType::control));
  EXPECT_EQ(Tokenizer(*named).encode("aab", false), (std::vector<std::int32_t>{5, 6}));
}

TEST(HfTokenizer, AMalformedTokenizerConfigIsRefusedNamingIt) {
  const auto message = [](const std::string& text) {
    const auto dir = folder_with(sentencepiece_tokenizer(), "hf_tok_bad_config");
    std::ofstream(dir / "tokenizer_config.json") << text;
    try {
      hf_vocabulary(dir, config_of(11));
    } catch (const FormatError& e) {
      return std::string(e.what());
    }
    return std::string("read");
  };
  EXPECT_NE(message("{").find("tokenizer_config.json: expected an object in JSON"), std::string::npos) << message("{");
  EXPECT_NE(message("[1]").find("tokenizer_config.json: expected a JSON object, found [1]"), std::string::npos);
  EXPECT_NE(
      message(R"({"tokenizer_class": 5})").find("tokenizer_config.json: tokenizer_class: expected a string, found 5"),
      std::string::npos);
  EXPECT_NE(message(R"({"tokenizer_class": "LlamaTokenizer", "legacy": "no"})")
                .find("tokenizer_config.json: legacy: expected true or false, found \"no\""),
            std::string::npos);
  EXPECT_NE(message(R"({"bos_token": 3})").find("tokenizer_config.json: bos_token: expected a token (a string or"),
            std::string::npos);
  EXPECT_NE(message(R"({"additional_special_tokens": "x"})")
                .find("tokenizer_config.json: additional_special_tokens: expected a list of tokens"),
            std::string::npos);
}

TEST(HfTokenizer, AMalformedFileIsRefusedNamingIt) {
  const auto message = [](const json& tokenizer, int vocab) {
    try {
      hf_vocabulary(folder_with(tokenizer, "hf_tok_bad"), config_of(vocab));
    } catch (const FormatError& e) {
      return std::string(e.what());
    }
    return std::string("read");
  };
  json gap = byte_level_tokenizer();
  gap["model"]["vocab"].erase("e");
  EXPECT_NE(message(gap, 5).find("tokenizer.json: token id 1: expected a piece for every id below the largest"),
            std::string::npos)
      << message(gap, 5);
  EXPECT_NE(message(byte_level_tokenizer(), 4)
                .find("tokenizer.json: added_tokens '<|end|>': expected an id in [0, 4) (vocab_size), found 4"),
            std::string::npos)
      << message(byte_level_tokenizer(), 4);
  json clash = byte_level_tokenizer();
  clash["added_tokens"][0]["id"] = 2;
  EXPECT_NE(message(clash, 5).find("token id 2: expected one piece, found 'he' and"), std::string::npos)
      << message(clash, 5);
  EXPECT_FALSE(hf_vocabulary(temp_dir("hf_tok_none"), config_of(5)).has_value());
}

}  // namespace
}  // namespace tapdiff::text
