#include "text/hf_tokenizer.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "model/errors.h"
#include "model/input_file.h"
#include "model/json_input.h"
#include "text/hf_tokenizer_class.h"
#include "text/tokenizer.h"
#include "text/unicode_normalization.h"

namespace tapdiff::text {

using namespace model;

namespace {

using json = nlohmann::json;

// GPT-2's split, as tokenizers' ByteLevel pre-tokenizer runs it with use_regex.
constexpr std::string_view kByteLevelPattern =
    R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)re";
// What tokenizers' Punctuation splits at: Unicode's punctuation and ASCII's (its $+<=>^`|~ included).
constexpr std::string_view kPunctuation = R"re([\p{P}!-/:-@\[-`{-~])re";

// A regex that matches `text` literally (a Split with a "String" pattern).
std::string escape_literal(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (std::string_view("\\^$.|?*+()[]{}-/").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

class Reader {
 public:
  Reader(std::filesystem::path path, const ModelConfig& config) : path_(std::move(path)), config_(config) {
    const std::string text = read_regular_file(path_, "tokenizer.json");
    root_ = parse_json_text(text, path_.string(), "a tokenizer");
    if (!root_.is_object()) fail("", "an object", root_);
    built_ = as_transformers_builds_it(path_.parent_path(), text, root_);
  }

  // The vocabulary as transformers' AutoTokenizer builds it from the folder; where tapdiff cannot
  // follow that, the pieces (for decoding) with the reason text is refused.
  Vocabulary read() {
    Vocabulary v = read_root();
    if (!built_.refusal.empty()) v.cannot_encode = "tokenizer.json: " + built_.refusal;
    v.special_tokens_as_text = built_.special_tokens_as_text;
    return v;
  }

 private:
  Vocabulary read_root() {
    Vocabulary v;
    v.source = path_.string();
    v.bos = config_.bos_token;
    v.eos = config_.eos_token;
    v.add_bos = false;
    const json& model = member(root_, "model", "model");
    const std::string type = string_at(model, "model", "type");
    read_tokens(model, type, v);
    // Decoding: byte-level pieces (GPT-2's byte stand-ins) or SentencePiece-style ones ("▁" for a
    // space, <0xXX> byte tokens), by the decoder.
    const json* decoder = find(root_, "decoder");
    const bool byte_level_pieces =
        type == "BPE" && decoder != nullptr && decoder->is_object() && decoder->value("type", "") == "ByteLevel";
    v.model = byte_level_pieces ? "gpt2" : "llama";
    v.space_prefix = byte_level_pieces ? SpacePrefix::none : SpacePrefix::every_fragment;  // until read
    if (!byte_level_pieces && bool_at(model, "model.byte_fallback", false))
      for (std::size_t i = 0; i < v.tokens.size(); ++i)
        if (v.tokens[i].size() == 6 && v.tokens[i].starts_with("<0x") && v.tokens[i].back() == '>')
          v.types[i] = static_cast<std::int32_t>(TokenType::byte);
    if (type == "Unigram") {
      if (std::string why = read_unigram(model, v); !why.empty()) return refuse(v, why);
    } else if (type != "BPE") {
      return refuse(v, fmt::format("model.type '{}' is not implemented (tapdiff reads BPE and Unigram)", type));
    } else if (std::string why = read_bpe(model, v); !why.empty()) {
      return refuse(v, why);
    }
    for (const char* key : {"truncation", "padding"})  // cut or pad every encoding when set
      if (const json* s = find(root_, key); s != nullptr && !s->is_null())
        return refuse(v, fmt::format("{} {} is not implemented", key, json_excerpt(*s)));
    if (std::string why = byte_level_pieces ? read_byte_level(model, v) : read_sentencepiece(model, v); !why.empty())
      return refuse(v, why);
    if (const json* p = find(root_, "post_processor"); p != nullptr && !p->is_null())
      if (std::string why = read_post_processor(*p, v); !why.empty()) return refuse(v, why);
    const json* normalizer = find(root_, "normalizer");
    const bool normalizes = normalizer != nullptr && !normalizer->is_null();
    for (const auto& added : member(root_, "added_tokens", "added_tokens")) {
      const std::string content = added.value("content", "");
      const auto flag = [&](const char* key, bool absent = false) {
        return bool_at(added, fmt::format("added_tokens '{}'.{}", content, key), absent);
      };
      // tokenizers finds such a token in the normalized text, after the normalizer has run on the
      // text around it: implemented for the Unicode forms, not for a SentencePiece-style normalizer
      // (its "▁" prefix goes once before the fragment, not before the token).
      const bool normalized = flag("normalized", !flag("special"));
      if (normalizes && normalized && v.normalization == UnicodeForm::none)
        return refuse(v, fmt::format("the added token {} has normalized true beside the normalizer {}: matching it "
                                     "in text normalized so is not implemented",
                                     json(content).dump(), json_excerpt(*normalizer)));
      if (const AddedTokenMatch match{flag("lstrip"), flag("rstrip"), flag("single_word"), normalized};
          match.strip_left || match.strip_right || match.single_word || match.normalized)
        v.added_token_match[added["id"].get<std::int32_t>()] = match;
    }
    return v;
  }

  [[noreturn]] void fail(std::string_view key, std::string_view expected, const json& found) const {
    throw_format_error(fmt::format("{}: {}{}expected {}, found {}", path_.string(), key, key.empty() ? "" : ": ",
                                   expected, json_excerpt(found)));
  }
  static Vocabulary refuse(Vocabulary v, std::string why) {
    v.cannot_encode = "tokenizer.json: " + std::move(why);
    return v;
  }
  static const json* find(const json& object, const char* key) {
    const auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
  }
  const json& member(const json& object, std::string_view where, const char* key) const {
    const json* v = object.is_object() ? find(object, key) : nullptr;
    if (v == nullptr) fail(where, fmt::format("an object with '{}'", key), object);
    return *v;
  }
  std::string string_at(const json& object, std::string_view where, const char* key) const {
    const json& v = member(object, where, key);
    if (!v.is_string()) fail(fmt::format("{}.{}", where, key), "a string", v);
    return v.get<std::string>();
  }
  bool bool_at(const json& object, const std::string& where, bool absent) const {
    const char* key = where.c_str() + where.rfind('.') + 1;
    const json* v = object.is_object() ? find(object, key) : nullptr;
    if (v == nullptr || v->is_null()) return absent;
    if (!v->is_boolean()) fail(where, "true or false", *v);
    return v->get<bool>();
  }

  int id_of(const Vocabulary& v, const json& token) const {
    if (!token.is_string()) fail("a token", "a string", token);
    for (std::size_t i = 0; i < v.tokens.size(); ++i)
      if (v.tokens[i] == token.get<std::string>()) return static_cast<int>(i);
    fail("a token", "a token of the vocabulary", token);
  }

  // model.vocab ({piece: id} for BPE and WordPiece, [[piece, score], ...] for Unigram) and
  // added_tokens, into one list of ids 0..n-1, padded to the model's vocabulary with unused ids.
  void read_tokens(const json& model, const std::string& type, Vocabulary& v) const {
    std::map<std::int64_t, std::pair<std::string, TokenType>> by_id;
    const auto put = [&](std::int64_t id, const std::string& piece, TokenType t, std::string_view where) {
      if (id < 0 || id >= config_.vocab)
        fail(fmt::format("{} '{}'", where, piece), fmt::format("an id in [0, {}) (vocab_size)", config_.vocab), id);
      const auto [at, added] = by_id.emplace(id, std::pair{piece, t});
      if (!added && at->second.first != piece)
        fail(fmt::format("token id {}", id), fmt::format("one piece, found '{}' and", at->second.first), piece);
      if (!added) at->second.second = t;
    };
    const json& vocab = member(model, "model", "vocab");
    if (type == "Unigram") {
      if (!vocab.is_array()) fail("model.vocab", "[[piece, score], ...]", vocab);
      for (std::size_t i = 0; i < vocab.size(); ++i) {
        const json& e = vocab[i];
        if (!e.is_array() || e.empty() || !e[0].is_string()) fail("model.vocab", "[piece, score]", e);
        put(static_cast<std::int64_t>(i), e[0].get<std::string>(), TokenType::normal, "model.vocab");
      }
    } else {
      if (!vocab.is_object()) fail("model.vocab", "{piece: id, ...}", vocab);
      for (const auto& [piece, id] : vocab.items()) {
        if (!id.is_number_integer()) fail(fmt::format("model.vocab '{}'", piece), "an integer id", id);
        put(id.get<std::int64_t>(), piece, TokenType::normal, "model.vocab");
      }
    }
    const json& added = member(root_, "", "added_tokens");
    if (!added.is_array()) fail("added_tokens", "an array", added);
    for (const auto& a : added) {
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") ||
          !a["content"].is_string())
        fail("added_tokens", "{\"id\": integer, \"content\": string, ...}", a);
      const bool special = bool_at(a, "added_tokens.special", false);
      const std::int64_t id = a["id"].get<std::int64_t>();
      if (!by_id.contains(id)) v.added_only.push_back(static_cast<std::int32_t>(id));
      put(id, a["content"].get<std::string>(), special ? TokenType::control : TokenType::user_defined, "added_tokens");
    }
    std::sort(v.added_only.begin(), v.added_only.end());
    for (std::int64_t id = 0; id < config_.vocab; ++id) {
      const auto it = by_id.find(id);
      if (it == by_id.end() && id < (by_id.empty() ? 0 : by_id.rbegin()->first))
        fail(fmt::format("token id {}", id), "a piece for every id below the largest", json());
      v.tokens.push_back(it == by_id.end() ? "" : it->second.first);
      v.types.push_back(static_cast<std::int32_t>(it == by_id.end() ? TokenType::unused : it->second.second));
    }
  }

  // A BPE model: its ranked merges, unknown token and ignore_merges; an option that changes the ids
  // beyond those, where it is not its no-op value, is refused (a non-empty return says why).
  std::string read_bpe(const json& model, Vocabulary& v) const {
    for (const auto& m : member(model, "model", "merges")) {
      if (m.is_string()) {
        v.merges.push_back(m.get<std::string>());
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        v.merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
      } else {
        fail("model.merges", "\"a b\" strings or [a, b] pairs", m);
      }
    }
    v.ignore_merges = bool_at(model, "model.ignore_merges", false);
    if (const json* unk = find(model, "unk_token"); unk != nullptr && !unk->is_null()) v.unk = id_of(v, *unk);
    if (const json* d = find(model, "dropout"); d != nullptr && !d->is_null() && *d != 0.0)
      return fmt::format("model.dropout {} is not implemented", d->dump());
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
      if (const json* s = find(model, key); s != nullptr && !s->is_null() && *s != "")
        return fmt::format("model.{} {} is not implemented", key, s->dump());
    return "";
  }

  // A Unigram model: [piece, score] pairs, their ids their places (scores: log probabilities),
  // unk_id (null: none) and byte_fallback, the keys tokenizers writes; another key is refused.
  std::string read_unigram(const json& model, Vocabulary& v) const {
    const json& vocab = member(model, "model", "vocab");
    v.scores.assign(v.tokens.size(), 0.0);
    for (std::size_t i = 0; i < vocab.size(); ++i) {
      if (vocab[i].size() != 2 || !vocab[i][1].is_number()) fail("model.vocab", "[piece, score]", vocab[i]);
      v.scores[i] = vocab[i][1].get<double>();
    }
    v.unigram_pieces = static_cast<std::int32_t>(vocab.size());
    if (const json* unk = find(model, "unk_id"); unk != nullptr && !unk->is_null()) {
      if (!unk->is_number_integer() || unk->get<std::int64_t>() < 0 || unk->get<std::int64_t>() >= v.unigram_pieces)
        fail("model.unk_id", fmt::format("null or an id in [0, {})", v.unigram_pieces), *unk);
      v.unk = unk->get<int>();
    }
    for (const auto& [key, value] : model.items())
      if (key != "type" && key != "vocab" && key != "unk_id" && key != "byte_fallback")
        return fmt::format("the Unigram option model.{} {} is not implemented", key, json_excerpt(value));
    return "";
  }

  // A byte-level BPE (GPT-2's byte stand-ins): a ByteLevel pre-tokenizer, last, after Split, Digits
  // or Punctuation steps; no normalizer, no byte fallback. A non-empty return says why text cannot
  // be encoded.
  std::string read_byte_level(const json& model, Vocabulary& v) const {
    if (bool_at(model, "model.byte_fallback", false))
      return "model.byte_fallback true is not implemented for a byte-level vocabulary";
    if (v.unk >= 0 && bool_at(model, "model.fuse_unk", false))
      return "model.fuse_unk true is not implemented (tapdiff gives an unknown piece one unk each)";
    if (const json* n = find(root_, "normalizer"); n != nullptr && !n->is_null())
      if (std::string why = read_unicode_normalizer(*n, v); !why.empty()) return why;
    std::vector<std::string> patterns;
    const json* pre = find(root_, "pre_tokenizer");
    bool byte_level = false;
    if (pre != nullptr && !pre->is_null())
      if (std::string why = read_pre_tokenizer(*pre, patterns, byte_level); !why.empty()) return why;
    if (!byte_level) return "a BPE without a ByteLevel pre-tokenizer is not implemented";
    v.split_patterns = std::move(patterns);
    return "";
  }

  // One of Unicode's normalization forms (NFC, NFD, NFKC, NFKD), alone or as a Sequence of one.
  std::string read_unicode_normalizer(const json& n, Vocabulary& v) const {
    const json* step = &n;
    if (string_at(n, "normalizer", "type") == "Sequence") {
      const json& steps = member(n, "normalizer", "normalizers");
      if (steps.is_array() && steps.size() == 1) step = &steps[0];
    }
    v.normalization = unicode_form_named(step->is_object() ? step->value("type", "") : "");
    if (v.normalization == UnicodeForm::none)
      return fmt::format("the normalizer {} is not implemented (NFC, NFD, NFKC and NFKD are)", json_excerpt(n));
    return "";
  }

  // A SentencePiece-style BPE (pieces with "▁" for a space, <0xXX> byte fallback), as
  // transformers' converters write it: the normalizer Prepend("▁") and Replace(" ", "▁") with no
  // pre-tokenizer (Llama 2's "legacy" files), or a Metaspace pre-tokenizer and no normalizer.
  std::string read_sentencepiece(const json& model, Vocabulary& v) const {
    v.fuse_unk = v.unigram_pieces > 0 || bool_at(model, "model.fuse_unk", false);  // a Unigram always fuses
    const json* n = find(root_, "normalizer");
    const json* pre = find(root_, "pre_tokenizer");
    const bool normalizer = n != nullptr && !n->is_null(), pre_tokenizer = pre != nullptr && !pre->is_null();
    if (normalizer && pre_tokenizer)
      return fmt::format(
          "a normalizer and a pre-tokenizer ({}) together are not implemented for a "
          "SentencePiece-style BPE",
          json_excerpt(*pre));
    if (normalizer) return read_spm_normalizer(*n, v);
    if (pre_tokenizer) return read_metaspace(*pre, v);
    return "a SentencePiece-style BPE with neither a normalizer nor a Metaspace pre-tokenizer (spaces "
           "left as spaces) is not implemented";
  }

  // Replace(" " -> "▁"), and optionally Prepend("▁"), alone or in a Sequence, in either order.
  std::string read_spm_normalizer(const json& n, Vocabulary& v) const {
    std::vector<const json*> steps;
    if (string_at(n, "normalizer", "type") == "Sequence") {
      for (const json& step : member(n, "normalizer", "normalizers")) steps.push_back(&step);
    } else {
      steps.push_back(&n);
    }
    bool replace = false, prepend = false;
    for (const json* step : steps) {
      const std::string type = string_at(*step, "normalizer", "type");
      const json* pattern = type == "Replace" ? find(*step, "pattern") : nullptr;
      if (type == "Prepend" && step->value("prepend", "") == kSpmSpace && !prepend) {
        prepend = true;
      } else if (pattern != nullptr && pattern->is_object() && pattern->value("String", "") == " " &&
                 step->value("content", "") == kSpmSpace && !replace) {
        replace = true;
      } else {
        return fmt::format("the normalizer {} is not implemented (Replace(\" \", \"▁\") and Prepend(\"▁\") are)",
                           json_excerpt(*step));
      }
    }
    if (!replace) return "a SentencePiece-style normalizer without Replace(\" \", \"▁\") is not implemented";
    v.space_prefix = prepend ? SpacePrefix::every_fragment : SpacePrefix::none;
    return "";
  }

  // Metaspace("▁"): prepend_scheme (default "always"; the older add_prefix_space true is
  // "always" and must agree with a prepend_scheme beside it, as tokenizers requires) and split
  // (default true).
  std::string read_metaspace(const json& pre, Vocabulary& v) const {
    if (string_at(pre, "pre_tokenizer", "type") != "Metaspace")
      return fmt::format("the pre-tokenizer {} is not implemented for a SentencePiece-style BPE (Metaspace is)",
                         json_excerpt(pre));
    if (const std::string r = string_at(pre, "pre_tokenizer", "replacement"); r != kSpmSpace)
      return fmt::format("Metaspace replacement {} is not implemented (\"▁\" is)", json(r).dump());
    const json* scheme = find(pre, "prepend_scheme");
    if (scheme != nullptr && !scheme->is_string()) fail("pre_tokenizer.prepend_scheme", "a string", *scheme);
    const std::string prepend = scheme != nullptr ? scheme->get<std::string>() : "always";
    if (const json* add = find(pre, "add_prefix_space"); add != nullptr && !add->is_null()) {
      if (!add->is_boolean()) fail("pre_tokenizer.add_prefix_space", "true or false", *add);
      if (add->get<bool>() != (prepend != "never"))
        return fmt::format("Metaspace add_prefix_space {} disagrees with prepend_scheme '{}' (tokenizers refuses it)",
                           add->dump(), prepend);
    }
    if (prepend == "first")
      v.space_prefix = SpacePrefix::first_fragment_unless_space;
    else if (prepend == "always")
      v.space_prefix = SpacePrefix::every_fragment_unless_space;
    else if (prepend == "never")
      v.space_prefix = SpacePrefix::none;
    else
      return fmt::format("Metaspace prepend_scheme '{}' is not implemented (first, always and never are)", prepend);
    v.split_at_spaces = bool_at(pre, "pre_tokenizer.split", true);
    return "";
  }

  // The split patterns of a pre-tokenizer, in order; byte_level once its ByteLevel step is read
  // (which must be the last). A non-empty return says why text cannot be encoded.
  std::string read_pre_tokenizer(const json& pre, std::vector<std::string>& patterns, bool& byte_level) const {
    const std::string type = string_at(pre, "pre_tokenizer", "type");
    if (byte_level) return fmt::format("a pre-tokenizer ({}) after ByteLevel is not implemented", type);
    if (type == "Sequence") {
      for (const json& p : member(pre, "pre_tokenizer", "pretokenizers"))
        if (std::string why = read_pre_tokenizer(p, patterns, byte_level); !why.empty()) return why;
      return "";
    }
    if (type == "ByteLevel") {
      if (bool_at(pre, "pre_tokenizer.add_prefix_space", false))
        return "ByteLevel add_prefix_space true is not implemented";
      if (bool_at(pre, "pre_tokenizer.use_regex", true)) patterns.emplace_back(kByteLevelPattern);
      byte_level = true;
      return "";
    }
    if (type == "Split") {
      if (bool_at(pre, "pre_tokenizer.invert", false)) return "Split invert true is not implemented";
      if (const std::string b = string_at(pre, "pre_tokenizer", "behavior"); b != "Isolated")
        return fmt::format("Split behavior '{}' is not implemented (Isolated is)", b);
      const json& pattern = member(pre, "pre_tokenizer", "pattern");
      if (pattern.contains("Regex") && pattern["Regex"].is_string()) {
        patterns.push_back(pattern["Regex"].get<std::string>());
      } else if (pattern.contains("String") && pattern["String"].is_string()) {
        patterns.push_back(escape_literal(pattern["String"].get<std::string>()));
      } else {
        fail("pre_tokenizer.pattern", "{\"Regex\": ...} or {\"String\": ...}", pattern);
      }
      return "";
    }
    if (type == "Digits") {
      patterns.emplace_back(bool_at(pre, "pre_tokenizer.individual_digits", false) ? "\\p{N}" : "\\p{N}+");
      return "";
    }
    if (type == "Punctuation") {
      const std::string b = string_at(pre, "pre_tokenizer", "behavior");
      if (b != "Isolated" && b != "Contiguous")
        return fmt::format("Punctuation behavior '{}' is not implemented (Isolated and Contiguous are)", b);
      patterns.push_back(std::string(kPunctuation) + (b == "Contiguous" ? "+" : ""));
      return "";
    }
    return fmt::format("the pre-tokenizer {} is not implemented", json_excerpt(pre));
  }

  // The BOS and EOS a TemplateProcessing puts around a single text ([BOS] $A [EOS]); ByteLevel
  // adds none. A non-empty return says why text cannot be encoded.
  std::string read_post_processor(const json& p, Vocabulary& v) const {
    const std::string type = string_at(p, "post_processor", "type");
    if (type == "ByteLevel") return "";
    if (type == "Sequence") {
      for (const json& each : member(p, "post_processor", "processors"))
        if (std::string why = read_post_processor(each, v); !why.empty()) return why;
      return "";
    }
    if (type != "TemplateProcessing") return fmt::format("the post-processor {} is not implemented", type);
    const json& single = member(p, "post_processor", "single");
    const json& specials = member(p, "post_processor", "special_tokens");
    bool seen_text = false;
    for (const json& piece : single) {
      if (piece.contains("Sequence")) {
        if (seen_text) return "a TemplateProcessing with the text twice is not implemented";
        seen_text = true;
        continue;
      }
      const json* s = piece.contains("SpecialToken") ? &piece["SpecialToken"] : nullptr;
      if (s == nullptr || !s->contains("id") || !(*s)["id"].is_string())
        fail("post_processor.single", "{\"SpecialToken\": {\"id\": ...}} or {\"Sequence\": ...}", piece);
      const std::string name = (*s)["id"].get<std::string>();
      const json* entry = specials.contains(name) ? &specials[name] : nullptr;
      if (entry == nullptr || !entry->contains("ids") || !(*entry)["ids"].is_array() || (*entry)["ids"].size() != 1 ||
          !(*entry)["ids"][0].is_number_integer())
        fail(fmt::format("post_processor.special_tokens '{}'", name), "one id", entry ? *entry : json());
      const int id = (*entry)["ids"][0].get<int>();
      if (seen_text ? v.add_eos : v.add_bos)
        return "a TemplateProcessing with two tokens on one side is not implemented";
      (seen_text ? v.eos : v.bos) = id;
      (seen_text ? v.add_eos : v.add_bos) = true;
    }
    return "";
  }

  std::filesystem::path path_;
  const ModelConfig& config_;
  json root_;  // as the class transformers picks builds it
  TransformersTokenizer built_;
};

}  // namespace

std::optional<Vocabulary> hf_vocabulary(const std::filesystem::path& folder, const ModelConfig& config) {
  const std::filesystem::path path = folder / "tokenizer.json";
  if (!std::filesystem::exists(path)) return std::nullopt;
  return Reader(path, config).read();
}

}  // namespace tapdiff::text
