#include "text/load_vocabulary.h"
#include "text/tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>

#include "formats/load_model.h"
#include "model/errors.h"
#include "model/weights.h"
#include "tests/test_support.h"
#include "text/pre_tokenizers.h"
#include "text/unicode_classes.h"
#include "text/vocabulary.h"

namespace tapdiff::text {

namespace {

using Ids = std::vector<std::int32_t>;

constexpr std::int32_t kUnk = 0, kBos = 1, kEos = 2, kFirstByte = 3;

// A "llama" vocabulary laid out as stories260K's: <unk> <s> </s>, the 256 byte tokens <0xXX>
// (when with_bytes), then `pieces` with their scores. Types are given unless infer_types.
Vocabulary spm_vocab(const std::vector<std::pair<std::string, float>>& pieces, bool with_bytes = true,
                     bool infer_types = false) {
  Vocabulary v;
  v.model = "llama";
  v.bos = kBos, v.eos = kEos, v.unk = kUnk;
  auto add = [&](std::string text, float score, std::int32_t type) {
    v.tokens.push_back(std::move(text)), v.scores.push_back(score), v.types.push_back(type);
  };
  add("<unk>", 0, 2), add("<s>", 0, 3), add("</s>", 0, 3);
  if (with_bytes)
    for (int b = 0; b < 256; ++b) add(fmt::format("<0x{:02X}>", b), 0, 6);
  for (const auto& [text, score] : pieces) add(text, score, 1);
  if (infer_types) v.types.clear();
  return v;
}

// The id of a piece in the vocabulary.
std::int32_t id_of(const Vocabulary& v, std::string_view piece) {
  for (std::size_t i = 0; i < v.tokens.size(); ++i)
    if (v.tokens[i] == piece) return static_cast<std::int32_t>(i);
  ADD_FAILURE() << "no piece " << piece;
  return -1;
}

std::int32_t byte_id(unsigned char b) { return kFirstByte + b; }

Vocabulary no_prefix(Vocabulary v) {
  v.space_prefix = text::SpacePrefix::none;
  return v;
}

}  // namespace

TEST(Tokenizer, MergesTheHighestScoringPairFirst) {
  const auto bc_first = no_prefix(spm_vocab({{"a", -1}, {"b", -1}, {"c", -1}, {"ab", -5}, {"bc", -2}}));
  EXPECT_EQ(Tokenizer(bc_first).encode("abc", false), (Ids{id_of(bc_first, "a"), id_of(bc_first, "bc")}));

  const auto ab_first = no_prefix(spm_vocab({{"a", -1}, {"b", -1}, {"c", -1}, {"ab", -2}, {"bc", -5}}));
  EXPECT_EQ(Tokenizer(ab_first).encode("abc", false), (Ids{id_of(ab_first, "ab"), id_of(ab_first, "c")}));

  // Merges chain: "ab" then "ab"+"c", even though "abc" scores worse than "bc".
  const auto chain = no_prefix(spm_vocab({{"a", -1}, {"b", -1}, {"c", -1}, {"ab", -2}, {"bc", -5}, {"abc", -9}}));
  EXPECT_EQ(Tokenizer(chain).encode("abc", false), (Ids{id_of(chain, "abc")}));
}

TEST(Tokenizer, BreaksScoreTiesLeftmostFirst) {
  const auto v = no_prefix(spm_vocab({{"a", -1}, {"b", -1}, {"ab", -3}, {"ba", -3}}));
  const Tokenizer t(v);
  EXPECT_EQ(t.encode("aba", false), (Ids{id_of(v, "ab"), id_of(v, "a")}));
  EXPECT_EQ(t.encode("bab", false), (Ids{id_of(v, "ba"), id_of(v, "b")}));
  EXPECT_EQ(t.encode("abab", false), (Ids{id_of(v, "ab"), id_of(v, "ab")}));
}

TEST(Tokenizer, AddsTheSpacePrefixAndBos) {
  const auto v = spm_vocab({{"▁", -1}, {"h", -1}, {"i", -1}, {"hi", -2}, {"▁hi", -3}});
  const Tokenizer t(v);
  const std::int32_t hi = id_of(v, "▁hi");
  EXPECT_EQ(t.encode("hi hi", true), (Ids{kBos, hi, hi}));
  EXPECT_EQ(t.encode("hi hi", false), (Ids{hi, hi}));
  EXPECT_EQ(t.encode("", true), (Ids{kBos}));
  EXPECT_TRUE(t.encode("", false).empty());
  EXPECT_EQ(t.encode("hi", true), Tokenizer(no_prefix(v)).encode(" hi", true));
  EXPECT_EQ(Tokenizer(no_prefix(v)).encode("hi", true), (Ids{kBos, id_of(v, "hi")}));
  EXPECT_EQ(t.bos(), kBos);
  EXPECT_EQ(t.eos(), kEos);
  EXPECT_EQ(t.size(), 3 + 256 + 5);
}

TEST(Tokenizer, FallsBackToBytesForUnknownCharacters) {
  const auto v = no_prefix(spm_vocab({{"a", -1}, {"é", -1}}));
  const Tokenizer t(v);
  // "é" is a piece; "ü" (C3 BC) and the emoji (F0 9F 98 80) are not.
  EXPECT_EQ(t.encode("aéü😀", false), (Ids{id_of(v, "a"), id_of(v, "é"), byte_id(0xC3), byte_id(0xBC), byte_id(0xF0),
                                          byte_id(0x9F), byte_id(0x98), byte_id(0x80)}));
  // A malformed byte is encoded as itself.
  EXPECT_EQ(t.encode("a\xC3", false), (Ids{id_of(v, "a"), byte_id(0xC3)}));
}

TEST(Tokenizer, FallsBackToUnkWithoutByteTokens) {
  auto v = no_prefix(spm_vocab({{"a", -1}}, /*with_bytes=*/false));
  EXPECT_EQ(Tokenizer(v).encode("aéa😀", false), (Ids{3, kUnk, 3, kUnk}));
  v.unk = -1;
  v.types[0] = 1;
  EXPECT_THROW(Tokenizer(v).encode("aé", false), UsageError);
}

TEST(Tokenizer, ControlTextIsTheTokenOnlyWhenParsingSpecials) {
  // "<s>" is BOS (control): the text "<s>" is that token when parsing specials, else it merges to
  // normal pieces only.
  const auto v = no_prefix(spm_vocab({{"<", -1}, {"s", -1}, {">", -1}, {"<s", -2}, {"s>", -3}}));
  EXPECT_EQ(Tokenizer(v).encode("<s>", false, false), (Ids{id_of(v, "<s"), id_of(v, ">")}));
  EXPECT_EQ(Tokenizer(v).encode("<s>", false), (Ids{kBos}));
  EXPECT_EQ(Tokenizer(v).encode("s<s>s", false), (Ids{id_of(v, "s"), kBos, id_of(v, "s")}));
  // The same when the types are inferred from the special ids.
  const auto inferred = no_prefix(spm_vocab({{"<", -1}, {"s", -1}, {">", -1}, {"<s", -2}}, true, true));
  const Tokenizer t(inferred);
  EXPECT_EQ(t.encode("<s>", false, false), (Ids{id_of(inferred, "<s"), id_of(inferred, ">")}));
  EXPECT_EQ(t.encode("<s>", false), (Ids{kBos}));
  EXPECT_EQ(t.type(kBos), TokenType::control);
  EXPECT_EQ(t.type(kUnk), TokenType::unknown);
  EXPECT_EQ(t.type(byte_id(0x41)), TokenType::byte);
  EXPECT_EQ(t.encode("\x01", false), (Ids{byte_id(0x01)}));
}

TEST(Tokenizer, DecodesPiecesBytesAndControlTokens) {
  const auto v = spm_vocab({{"▁", -1}, {"▁Once", -2}, {"▁upon", -3}, {"ily", -4}});
  const Tokenizer t(v);
  const std::int32_t once = id_of(v, "▁Once"), upon = id_of(v, "▁upon");
  EXPECT_EQ(t.decode(Ids{kBos, once, upon, kEos}), "Once upon");
  EXPECT_EQ(t.decode(Ids{once, upon}), "Once upon");
  EXPECT_EQ(t.decode_token(once, kBos), "Once");
  EXPECT_EQ(t.decode_token(once), "Once");
  EXPECT_EQ(t.decode_token(once, upon), " Once");
  EXPECT_EQ(t.decode_token(kEos, once), "");
  // Byte tokens reassemble UTF-8: "é" is C3 A9, "\nL" is 0A 4C.
  EXPECT_EQ(t.decode(Ids{kBos, byte_id(0xC3), byte_id(0xA9), byte_id(0x0A), byte_id(0x4C), id_of(v, "ily")}),
            "é\nLily");
  EXPECT_EQ(t.decode_token(byte_id(0x0A), upon), "\n");
  // Without the space prefix, the leading space is the text's own.
  EXPECT_EQ(Tokenizer(no_prefix(v)).decode(Ids{kBos, once}), " Once");
}

TEST(Tokenizer, RejectsInvalidIdsNamingTheVocabSize) {
  const Tokenizer t(spm_vocab({{"a", -1}}));
  for (std::int32_t id : {-1, 260, 100000}) {
    try {
      (void)t.decode_token(id);
      ADD_FAILURE() << "no error for id " << id;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(fmt::format("token id {} ", id)), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("260 tokens"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW((void)t.decode(Ids{3, 999}), UsageError);
}

TEST(Tokenizer, RejectsUnknownModelsAndInconsistentVocabularies) {
  auto v = spm_vocab({{"a", -1}});
  v.model = "wordpiece";
  try {
    Tokenizer t(v);
    ADD_FAILURE() << "no error for model wordpiece";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'wordpiece'"), std::string::npos) << e.what();
  }
  v = spm_vocab({{"a", -1}});
  v.scores.pop_back();
  EXPECT_THROW(Tokenizer{v}, FormatError);
  v = spm_vocab({{"a", -1}});
  v.eos = 1000;
  EXPECT_THROW(Tokenizer{v}, FormatError);
}

TEST(Tokenizer, RoundTripsAsciiAndUtf8) {
  // Single characters only (plus "▁"): every merge-free text must still round-trip.
  const auto v = spm_vocab({{"▁", -1}, {"a", -1}, {"b", -1}, {"▁a", -2}, {"ab", -3}, {"é", -1}});
  const Tokenizer t(v);
  for (std::string_view text : {"a b", "ab ab  ba", " leading space", "trailing  ", "naïve café", "日本語 テキスト",
                                "emoji 😀🎉 mix", "tabs\tand\nnewlines\r\n", "\x7F\x01 ctrl"}) {
    EXPECT_EQ(t.decode(t.encode(text, true)), text);
    EXPECT_EQ(t.decode(t.encode(text, false)), text);
  }
}

TEST(Tokenizer, EncodesALongInputQuickly) {
  auto pieces = std::vector<std::pair<std::string, float>>{{"▁", -1}};
  for (char c = 'a'; c <= 'z'; ++c) pieces.push_back({std::string(1, c), -1});
  for (std::string_view w : {"▁th", "▁the", "he", "an", "▁an", "and", "▁and", "in", "ing", "er", "on"})
    pieces.push_back({std::string(w), -static_cast<float>(pieces.size())});
  const Tokenizer t(spm_vocab(pieces));
  std::string text;
  for (int i = 0; text.size() < 100000; ++i) text += (i % 7 == 0) ? "the café and 😀 ring\n" : "onerinthe ";
  const auto start = std::chrono::steady_clock::now();
  const Ids ids = t.encode(text, true);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 5.0);  // O(n log n): milliseconds; quadratic merging would take minutes
  EXPECT_LT(ids.size(), text.size());
  EXPECT_EQ(t.decode(ids), text);
}

// ---- gpt2 (byte-level BPE) ----

namespace {

// A "gpt2" vocabulary: the 256 byte stand-in characters (in GPT-2's byte order), then the merge
// results, then a control "<|endoftext|>".
Vocabulary gpt2_vocab(const std::vector<std::string>& merges) {
  Vocabulary v;
  v.model = "gpt2";
  v.pre = "gpt-2";
  v.space_prefix = text::SpacePrefix::none;
  // GPT-2's table: printable Latin-1 bytes as themselves, others from U+0100 in byte order.
  int extra = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    const char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + extra++);
    std::string s;
    if (cp < 0x80)
      s += static_cast<char>(cp);
    else
      s += static_cast<char>(0xC0 | (cp >> 6)), s += static_cast<char>(0x80 | (cp & 0x3F));
    v.tokens.push_back(s);
  }
  for (const std::string& m : merges) v.tokens.push_back(m.substr(0, m.find(' ')) + m.substr(m.find(' ') + 1));
  v.merges = merges;
  v.tokens.push_back("<|endoftext|>");
  v.types.assign(v.tokens.size(), 1);
  v.types.back() = 3;
  v.bos = v.eos = static_cast<int>(v.tokens.size()) - 1;
  return v;
}

std::vector<std::string> pieces_of(const Tokenizer& t, const Vocabulary& v, std::string_view text) {
  std::vector<std::string> out;
  for (std::int32_t id : t.encode(text, false)) out.push_back(v.tokens[static_cast<std::size_t>(id)]);
  return out;
}

}  // namespace

TEST(Tokenizer, Gpt2MergesByRankWithinWords) {
  // "Ġ" is the stand-in for ' '.
  const auto v = gpt2_vocab({"l l", "h e", "he ll", "hell o", "Ġ w", "o r", "Ġw or", "Ġ Ġ", "t '"});
  const Tokenizer t(v);
  EXPECT_EQ(pieces_of(t, v, "hello world"), (std::vector<std::string>{"hello", "Ġwor", "l", "d"}));
  // Pre-tokenization: contractions split off, runs of spaces keep their last space for the next word.
  EXPECT_EQ(pieces_of(t, v, "it's"), (std::vector<std::string>{"i", "t", "'", "s"}));
  EXPECT_EQ(pieces_of(t, v, "a   world"), (std::vector<std::string>{"a", "ĠĠ", "Ġwor", "l", "d"}));
  EXPECT_EQ(pieces_of(t, v, "a\n\nb"), (std::vector<std::string>{"a", "Ċ", "Ċ", "b"}));
  EXPECT_EQ(t.encode("hello", true).front(), t.bos());
}

TEST(Tokenizer, Gpt2RoundTripsAnyText) {
  const auto v = gpt2_vocab({"l l", "h e", "he ll", "Ġ w", "Ã ©"});
  const Tokenizer t(v);
  for (std::string_view text : {"hello world", "it's  a\ttest\n\n", "café 😀 日本", "x\xC3", "  123 abc!!"}) {
    EXPECT_EQ(t.decode(t.encode(text, false)), text);
  }
  EXPECT_EQ(pieces_of(t, v, "é"), (std::vector<std::string>{"Ã©"}));
  EXPECT_EQ(t.decode_token(t.bos()), "");
}

using Words = std::vector<std::string_view>;

// The words of text under the pre-tokenizer a GGUF names.
Words words(std::string_view pre, std::string_view text) {
  const PreTokenizer* p = find_pre_tokenizer(pre);
  if (p == nullptr) throw std::runtime_error("no pre-tokenizer " + std::string(pre));
  return WordSplitter(p->patterns, "test", SplitDialect::llama_cpp).split(text);
}
Words gpt2_words(std::string_view text) { return words("gpt-2", text); }
Words llama3_words(std::string_view text) { return words("llama-bpe", text); }
Words qwen2_words(std::string_view text) { return words("qwen2", text); }

// GPT-2's split with Unicode's classes: Arabic-Indic and circled digits are numbers, CJK and
// accented letters letters, U+3000 white space, an em dash and emoji neither.
TEST(Tokenizer, Gpt2SplitUsesUnicodeClasses) {
  EXPECT_EQ(gpt2_words("a\u0663\u0664b"), (Words{"a", "\u0663\u0664", "b"}));
  EXPECT_EQ(gpt2_words("x\u2460\u2461!"), (Words{"x", "\u2460\u2461", "!"}));
  EXPECT_EQ(gpt2_words("caf\u00e9 \u65e5\u672c\u8a9e"), (Words{"caf\u00e9", " \u65e5\u672c\u8a9e"}));
  EXPECT_EQ(gpt2_words("a\u3000\u3000b"), (Words{"a", "\u3000", "\u3000", "b"}));  // only a " " prefixes a word
  EXPECT_EQ(gpt2_words("a\u2014\U0001F600b"), (Words{"a", "\u2014\U0001F600", "b"}));
  EXPECT_EQ(gpt2_words("it's 12 ok  \n"), (Words{"it", "'s", " 12", " ok", "  \n"}));
  EXPECT_TRUE(is_letter(U'\u00e9'));
  EXPECT_TRUE(is_number(U'\u00bd'));
  EXPECT_FALSE(is_letter(U'\u0301'));  // a combining mark is M, not L
  EXPECT_FALSE(is_white_space(U'\u200b'));
}

// The Llama 3 and Qwen2 splits, against Python's `regex` module running their patterns
// (text/pre_tokenizers.h) on the same strings.
TEST(Tokenizer, Llama3AndQwen2SplitsAsTheirPatterns) {
  const std::string_view a = "Hello world's 12345 !!\n\n  x";
  EXPECT_EQ(llama3_words(a), (Words{"Hello", " world", "'s", " ", "123", "45", " !!\n\n", " ", " x"}));
  EXPECT_EQ(qwen2_words(a), (Words{"Hello", " world", "'s", " ", "1", "2", "3", "4", "5", " !!\n\n", " ", " x"}));
  const std::string_view b = "IT'S \t\u3000 (x) \u0663\u0664\u0665\u0666 a\n \n b";
  EXPECT_EQ(llama3_words(b),
            (Words{"IT", "'S", " \t\u3000", " (", "x", ")", " ", "\u0663\u0664\u0665", "\u0666", " a", "\n \n", " b"}));
  const std::string_view c = "e\u0301x 1\u00bd";
  EXPECT_EQ(llama3_words(c), (Words{"e", "\u0301x", " ", "1\u00bd"}));
  EXPECT_EQ(qwen2_words(c), (Words{"e", "\u0301x", " ", "1", "\u00bd"}));
  // llama.cpp reads deepseek-llm's patterns without \p{..} with non-ASCII white space as U+000B,
  // so its U+0800-U+4E00 class does not take U+2009; tokenizers reads U+2009.
  EXPECT_EQ(words("deepseek-llm", "a  \u2009  "), (Words{"a", "  \u2009  "}));
  const PreTokenizer* deepseek = find_pre_tokenizer("deepseek-llm");
  const std::vector<std::string> as_written(deepseek->patterns.begin(), deepseek->patterns.end());
  EXPECT_EQ(WordSplitter(as_written, "test").split("a  \u2009  "), (Words{"a", "  ", "\u2009", "  "}));
  ASSERT_NE(find_pre_tokenizer("llama-bpe"), nullptr);
  EXPECT_EQ(find_pre_tokenizer("llama-bpe")->family, "llama3");
  EXPECT_TRUE(find_pre_tokenizer("llama-bpe")->ignore_merges);
  EXPECT_EQ(find_pre_tokenizer("qwen2")->family, "qwen2");
  EXPECT_EQ(find_pre_tokenizer("gpt-2")->family, "gpt2");
  EXPECT_EQ(find_pre_tokenizer("default")->family, "default");
  EXPECT_EQ(find_pre_tokenizer("kimi-k2"), nullptr);  // split code of its own in llama.cpp
  EXPECT_EQ(find_pre_tokenizer(""), nullptr);
}

// A byte-level BPE vocabulary whose pre-tokenizer tapdiff does not implement refuses text, naming
// it; its ids still decode.
TEST(Tokenizer, Gpt2VocabularyWithAnotherPreTokenizerRefusesText) {
  auto v = gpt2_vocab({"h e"});
  v.source = "/models/l3.gguf";
  v.pre = "superbpe";
  const Tokenizer t(v);
  try {
    t.encode("he said 123", false);
    FAIL() << "encoded text with an unimplemented pre-tokenizer";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("/models/l3.gguf: tokenizer: the pre-tokenizer 'superbpe' "
                                         "(tokenizer.ggml.pre) is not implemented"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(t.decode(Ids{104, 101}), "he");
  for (const char* gpt2 : {"gpt-2", "phi-2"}) {
    v.pre = gpt2;
    EXPECT_EQ(Tokenizer(v).encode("he", false).size(), 1u) << gpt2;
  }
  v.pre = "";  // none named: llama.cpp guesses its "default"
  EXPECT_THROW(Tokenizer(v).encode("he", false), UsageError);
  v.split_patterns = std::vector<std::string>{};  // a tokenizer.json without a split: one word
  EXPECT_EQ(Tokenizer(v).encode("he", false).size(), 1u);
}

// tapdiff tokenize --texts: one JSON line per string of the array, as --prompt would give each;
// a file that is not an array of strings is refused naming it and the item.
TEST(Tokenizer, TokenizeTextsPrintsALinePerString) {
  const auto dir = testing::temp_dir("tokenize_texts");
  std::ofstream(dir / "texts.json") << R"(["Once upon a time", "a\nb"])";
  const auto run = testing::run_tapdiff("tokenize --model synth:tiny --texts " + (dir / "texts.json").string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto one = testing::run_tapdiff("tokenize --model synth:tiny --json --prompt 'Once upon a time'");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  EXPECT_EQ(run.output.substr(0, run.output.find('\n') + 1), one.output);
  EXPECT_EQ(std::count(run.output.begin(), run.output.end(), '\n'), 2);
  std::ofstream(dir / "bad.json") << R"(["ok", 3])";
  const auto bad = testing::run_tapdiff("tokenize --model synth:tiny --texts " + (dir / "bad.json").string());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("bad.json: item 1: expected a string, found 3"), std::string::npos) << bad.output;
}

// A vocabulary that adds no BOS (tokenizer.ggml.add_bos_token false, or llama.cpp's default for
// most byte-level BPE families) gets none, even when the caller asks for one.
TEST(Tokenizer, BosOnlyWhenTheVocabularyAddsIt) {
  auto v = gpt2_vocab({"h e"});
  EXPECT_EQ(Tokenizer(v).encode("he", true).front(), v.bos);
  v.add_bos = false;
  EXPECT_EQ(Tokenizer(v).encode("he", true), (Ids{static_cast<std::int32_t>(v.tokens.size()) - 2}));
}

// tokenizer.ggml.add_eos_token: EOS last, where special tokens are added at all (llama.cpp's
// add_special), an empty text included.
TEST(Tokenizer, EosLastWhenTheVocabularyAppendsIt) {
  auto v = gpt2_vocab({"h e"});
  const auto he = static_cast<std::int32_t>(v.tokens.size()) - 2;
  v.add_eos = true;
  EXPECT_EQ(Tokenizer(v).encode("he", true), (Ids{v.bos, he, v.eos}));
  EXPECT_EQ(Tokenizer(v).encode("he", false), (Ids{he}));
  EXPECT_EQ(Tokenizer(v).encode("", true), (Ids{v.bos, v.eos}));
  v.add_eos = false;
  EXPECT_EQ(Tokenizer(v).encode("he", true), (Ids{v.bos, he}));
}

// ---- the real stories260K vocabulary ----

namespace {

Tokenizer stories_tokenizer() {
  const auto m = formats::load_model(testing::stories_gguf());
  const std::optional<Vocabulary> vocabulary = text::load_vocabulary(*m);
  if (!vocabulary) throw FormatError("stories260K.gguf has no vocabulary");
  return Tokenizer(*vocabulary);
}

}  // namespace

TEST(Tokenizer, StoriesEncodesThePrompt) {
  TAPDIFF_REQUIRE_STORIES();
  const Tokenizer t = stories_tokenizer();
  EXPECT_EQ(t.size(), 512);
  EXPECT_EQ(t.encode("Once upon a time", true), (Ids{1, 403, 407, 261, 378}));
  EXPECT_EQ(t.decode(Ids{1, 403, 407, 261, 378}), "Once upon a time");
}

TEST(Tokenizer, StoriesDecodesTheGreedyContinuation) {
  TAPDIFF_REQUIRE_STORIES();
  const Tokenizer t = stories_tokenizer();
  Ids ids{1, 403, 407, 261, 378};
  std::istringstream generated(
      "432 383 286 261 376 298 315 421 395 317 426 338 401 396 267 337 410 408 419 292 411 322 265 282 295 433 426 "
      "385 328 432 358 394 261 370 432 352 266 268 388 426 338 391 266 267 337 335 312 432 398 312 286 267 414 270 "
      "333 415 426 13 438 310");
  for (std::int32_t id = 0; generated >> id;) ids.push_back(id);
  ASSERT_EQ(ids.size(), 65u);
  const std::string expected =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw "
      "a big, red ball. She wanted to play with it, but it was too high.\nLily";
  EXPECT_EQ(t.decode(ids), expected);
  std::string streamed;
  for (std::size_t i = 0; i < ids.size(); ++i) streamed += t.decode_token(ids[i], i == 0 ? -1 : ids[i - 1]);
  EXPECT_EQ(streamed, expected);
  EXPECT_EQ(t.encode(expected, true).front(), 1);
  EXPECT_EQ(t.decode(t.encode(expected, true)), expected);
}

TEST(Tokenizer, StoriesRoundTripsALongInput) {
  TAPDIFF_REQUIRE_STORIES();
  const Tokenizer t = stories_tokenizer();
  std::string text;
  for (int i = 0; text.size() < 50000; ++i)
    text += (i % 5 == 0) ? "Lily said, “Wow — a café!” 😀\n" : "Once upon a time, there was a little dog. ";
  const auto start = std::chrono::steady_clock::now();
  const Ids ids = t.encode(text, true);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 5.0);
  EXPECT_LT(ids.size(), text.size() / 2);
  EXPECT_EQ(t.decode(ids), text);
}

TEST(Tokenizer, ValidUtf8ReplacesMalformedSequencesOnly) {
  EXPECT_EQ(valid_utf8("caf\xC3\xA9 \xF0\x9F\x98\x80"), "caf\xC3\xA9 \xF0\x9F\x98\x80");
  EXPECT_EQ(valid_utf8("a\xC3"), "a\xEF\xBF\xBD");        // a lead byte without its continuation
  EXPECT_EQ(valid_utf8("\x8C!"), "\xEF\xBF\xBD!");        // a stray continuation byte
  EXPECT_EQ(valid_utf8("\xED\xA0\x80"), "\xEF\xBF\xBD");  // an encoded surrogate
}

}  // namespace tapdiff::text
