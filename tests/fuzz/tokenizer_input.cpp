#include "tests/fuzz/tokenizer_input.h"
#include "text/vocabulary.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>

namespace tapdiff::fuzz {
namespace {

constexpr char kSeparator = '\x1e';
enum Flag : std::uint8_t {
  kGpt2 = 1,
  kAddBos = 2,
  kSpacePrefix = 4,
  kScores = 8,
  kTypes = 16,
  kBert = 32,
  kSpacePrefixHigh = 64,
  kSplitFuse = 128
};

float score_of(std::int8_t code) {
  switch (code) {
    case 127: return std::numeric_limits<float>::quiet_NaN();
    case 126: return std::numeric_limits<float>::infinity();
    case -128: return -std::numeric_limits<float>::infinity();
    default: return static_cast<float>(code);
  }
}

char code_of(double score) {
  if (std::isnan(score)) return static_cast<char>(127);
  if (std::isinf(score)) return static_cast<char>(score > 0 ? 126 : -128);
  return static_cast<char>(static_cast<std::int8_t>(std::clamp(std::round(score), -127.0, 125.0)));
}

}  // namespace

TokenizerInput parse_tokenizer_input(std::span<const std::uint8_t> bytes) {
  TokenizerInput in;
  if (bytes.size() < 4) return in;
  const std::uint8_t flags = bytes[0];
  text::Vocabulary& v = in.vocab;
  v.model = (flags & kBert) != 0 ? "bert" : (flags & kGpt2) != 0 ? "gpt2" : "llama";
  if (v.model == "gpt2") v.pre = "gpt-2";  // the split tapdiff implements, so that the encoder runs
  v.add_bos = (flags & kAddBos) != 0;
  v.space_prefix =
      static_cast<text::SpacePrefix>(((flags & kSpacePrefix) != 0 ? 1 : 0) + ((flags & kSpacePrefixHigh) != 0 ? 2 : 0));
  v.split_at_spaces = v.fuse_unk = (flags & kSplitFuse) != 0;
  v.bos = static_cast<std::int8_t>(bytes[1]);
  v.eos = static_cast<std::int8_t>(bytes[2]);
  v.unk = static_cast<std::int8_t>(bytes[3]);
  const std::string_view body(reinterpret_cast<const char*>(bytes.data() + 4), bytes.size() - 4);
  for (std::size_t begin = 0; begin <= body.size();) {
    const std::size_t end = std::min(body.find(kSeparator, begin), body.size());
    const std::string_view record = body.substr(begin, end - begin);
    begin = end + 1;
    if (record.empty()) continue;
    const std::string_view payload = record.substr(1);
    if (record[0] == 'm') {
      v.merges.emplace_back(payload);
    } else if (record[0] == 'p') {
      v.pre = payload;
    } else if (record[0] == 's') {
      if (!v.split_patterns) v.split_patterns.emplace();
      v.split_patterns->emplace_back(payload);
    } else if (record[0] == 'x') {
      in.texts.emplace_back(payload);
    } else if (record[0] == 'u') {
      v.unigram_pieces = static_cast<std::int32_t>(v.tokens.size());
    } else if (record[0] == 't' && payload.size() >= 2) {
      v.tokens.emplace_back(payload.substr(2));
      if ((flags & kTypes) != 0) v.types.push_back(static_cast<std::int8_t>(payload[0]));
      if ((flags & kScores) != 0) v.scores.push_back(score_of(static_cast<std::int8_t>(payload[1])));
    }
  }
  return in;
}

std::string format_tokenizer_input(const TokenizerInput& in) {
  const text::Vocabulary& v = in.vocab;
  std::uint8_t flags = 0;
  if (v.model == "gpt2") flags |= kGpt2;
  if (v.model != "gpt2" && v.model != "llama") flags |= kBert;
  if (v.add_bos) flags |= kAddBos;
  const auto prefix = static_cast<int>(v.space_prefix);
  if ((prefix & 1) != 0) flags |= kSpacePrefix;
  if ((prefix & 2) != 0) flags |= kSpacePrefixHigh;
  if (v.split_at_spaces || v.fuse_unk) flags |= kSplitFuse;
  if (!v.scores.empty()) flags |= kScores;
  if (!v.types.empty()) flags |= kTypes;
  std::string out{static_cast<char>(flags), static_cast<char>(v.bos), static_cast<char>(v.eos),
                  static_cast<char>(v.unk)};
  auto record = [&](char kind, std::string_view payload) { (out += kind).append(payload) += kSeparator; };
  for (std::size_t i = 0; i < v.tokens.size(); ++i) {
    std::string payload{v.types.empty() ? '\1' : static_cast<char>(v.types[i]),
                        v.scores.empty() ? '\0' : code_of(v.scores[i])};
    record('t', payload + v.tokens[i]);
    if (static_cast<std::int32_t>(i) + 1 == v.unigram_pieces) record('u', "");
  }
  for (const std::string& merge : v.merges) record('m', merge);
  if (v.model == "gpt2" && v.pre != "gpt-2") record('p', v.pre);
  if (v.split_patterns)
    for (const std::string& pattern : *v.split_patterns) record('s', pattern);
  for (const std::string& text : in.texts) record('x', text);
  return out;
}

}  // namespace tapdiff::fuzz
