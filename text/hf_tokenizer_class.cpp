#include "text/hf_tokenizer_class.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "formats/family_spec.h"
#include "model/errors.h"
#include "model/input_file.h"
#include "model/json_input.h"

namespace tapdiff::text {

using namespace model;

namespace {

using json = nlohmann::json;

constexpr std::string_view kBackend = "TokenizersBackend";
constexpr std::string_view kSpmSpace = "\u2581";

// MODEL_IDS_TO_TOKENIZERS_BACKEND: config.json `_name_or_path` (lower case) patterns that
// AutoTokenizer loads with TokenizersBackend whatever the folder names; "*" only at the end.
constexpr std::string_view kBackendModelIds[] = {
    "deepseek-ai/deepseek-r1-distill-llama-*",
    "deepseek-ai/deepseek-coder-*",
    "allenai/dolma2-tokenizer",
    "google/umt5-small",
    "naver-clova-ix/donut-*",
    "salesforce/blip2-opt-*",
    "salesforce/blip2-flan-t5-*",
    "salesforce/instructblip-flan-t5-*",
    "stepfun-ai/step-3.7-*",
};

// The special tokens a tokenizer_config.json names (PreTrainedTokenizerBase's attributes).
constexpr std::string_view kSpecialTokenKeys[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                                  "pad_token", "cls_token", "mask_token"};
constexpr std::string_view kSpecialTokenListKeys[] = {"additional_special_tokens", "extra_special_tokens"};

bool generic(std::string_view name) {
  return name == kBackend || name == "PythonBackend" || name == "PreTrainedTokenizerFast" ||
         name == "MistralCommonBackend";
}

std::string_view without_fast(std::string_view name) {
  return name.ends_with("Fast") ? name.substr(0, name.size() - 4) : name;
}

// The class a name resolves to (tokenizer_class_from_name with AutoTokenizer's fallbacks): the
// generic names are TokenizersBackend, "Fast" names are their class.
std::string canonical(std::string_view name) {
  if (generic(name) || without_fast(name) == "PreTrainedTokenizer") return std::string(kBackend);
  return std::string(without_fast(name));
}

struct Choice {
  std::string name;  // canonical
  std::string by;    // what chose it
};

class ClassReader {
 public:
  explicit ClassReader(const std::filesystem::path& folder) : folder_(folder) {
    config_ = read_object(folder / "config.json");
    if (const std::filesystem::path p = folder / "tokenizer_config.json"; std::filesystem::exists(p))
      tokenizer_config_ = read_object(p);
  }

  const json& tokenizer_config() const { return tokenizer_config_; }

  // AutoTokenizer.from_pretrained's choice, for the inputs a local folder gives it. An empty name:
  // a choice tapdiff cannot make (its reason in `by`).
  Choice choose(std::string_view tokenizer_json_text) const {
    const std::string model_type = string_or(config_, "config.json", "model_type", "");
    // transformers' registered class for the model type (formats/family_spec.h: HfRecipe::tokenizer_class).
    const formats::FamilySpec* family = formats::hf_family(model_type);
    if (family == nullptr)
      return {"", fmt::format("config.json model_type '{}': which tokenizer class transformers picks for it is "
                              "not known to tapdiff",
                              model_type)};
    if (const auto it = tokenizer_config_.find("auto_map"); it != tokenizer_config_.end() && !it->is_null())
      return {"", "tokenizer_config.json auto_map (a tokenizer class in the model's own code) is not followed"};
    std::string name_or_path = string_or(config_, "config.json", "_name_or_path", "");
    std::transform(name_or_path.begin(), name_or_path.end(), name_or_path.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    for (std::string_view id : kBackendModelIds)
      if (id.ends_with('*') ? name_or_path.starts_with(id.substr(0, id.size() - 1)) : name_or_path == id)
        return {std::string(kBackend), fmt::format("config.json _name_or_path '{}'", name_or_path)};

    const std::string folder_class = string_or(tokenizer_config_, "tokenizer_config.json", "tokenizer_class", "");
    const std::string config_class = string_or(config_, "config.json", "tokenizer_class", "");
    const std::string hub = folder_class.empty() ? config_class : folder_class;
    const std::string hub_by = folder_class.empty()
                                   ? fmt::format("config.json tokenizer_class '{}'", config_class)
                                   : fmt::format("tokenizer_config.json tokenizer_class '{}'", folder_class);
    const std::string_view reg = family->hf.tokenizer_class;
    const std::string reg_by = fmt::format("config.json model_type '{}'", model_type);
    // A Llama class over a byte-level file is taken as the file (DeepSeek's folders).
    if (!hub.empty() && without_fast(hub) == "LlamaTokenizer" && !family->hf.tokenizer_overrides_folder &&
        tokenizer_json_text.find("\"ByteLevel\"") != std::string_view::npos)
      return {std::string(kBackend), hub_by + " beside a ByteLevel tokenizer.json"};
    if (!hub.empty() && !reg.empty() && without_fast(reg) != without_fast(hub)) {
      if (!generic(reg)) {
        const Choice specific =
            family->hf.tokenizer_overrides_folder ? Choice{canonical(reg), reg_by} : Choice{canonical(hub), hub_by};
        if (specific.name != kBackend) return specific;
      }
      return {std::string(kBackend), hub_by + " with " + reg_by};
    }
    if (!hub.empty()) return {canonical(hub), hub_by};
    if (!reg.empty()) return {canonical(reg), reg_by};
    return {std::string(kBackend), reg_by + " (no class named)"};
  }

 private:
  json read_object(const std::filesystem::path& path) const {
    json value = parse_json_text(read_regular_file(path, path.filename().string()), path.string(), "an object");
    if (!value.is_object())
      throw_format_error(fmt::format("{}: expected a JSON object, found {}", path.string(), json_excerpt(value)));
    return value;
  }
  std::string string_or(const json& object, std::string_view file, const char* key, std::string absent) const {
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return absent;
    if (!it->is_string())
      throw_format_error(
          fmt::format("{}: {}: expected a string, found {}", (folder_ / file).string(), key, json_excerpt(*it)));
    return it->get<std::string>();
  }

  std::filesystem::path folder_;
  json config_ = json::object();
  json tokenizer_config_ = json::object();
};

// The content of a special-token value as tokenizer_config.json writes it: "text", or an AddedToken
// object {"content": "text", ...}; nullopt for null.
std::optional<std::string> special_content(const json& value, const std::filesystem::path& file, std::string_view key) {
  if (value.is_null()) return std::nullopt;
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains("content") && value["content"].is_string())
    return value["content"].get<std::string>();
  throw_format_error(fmt::format("{}: {}: expected a token (a string or {{\"content\": ...}}), found {}", file.string(),
                                 key, json_excerpt(value)));
}

// The id of `content` in the file's model.vocab (an object for BPE), or -1.
std::int64_t vocab_id(const json& tokenizer_json, const std::string& content) {
  const auto model = tokenizer_json.find("model");
  if (model == tokenizer_json.end() || !model->is_object()) return -1;
  const auto vocab = model->find("vocab");
  if (vocab == model->end() || !vocab->is_object()) return -1;
  const auto it = vocab->find(content);
  return it != vocab->end() && it->is_number_integer() ? it->get<std::int64_t>() : -1;
}

// Adds to tokenizer.json's added_tokens the special tokens `named` (tokenizer_config.json's, or the
// class's defaults) that it lacks, as AutoTokenizer makes them special added tokens at their
// vocabulary ids. Returns "" or why text cannot be encoded (a token with no id in the vocabulary:
// transformers would give it a new one).
std::string add_named_specials(const std::vector<std::pair<std::string, std::string>>& named,
                               const std::string& class_name, json& tokenizer_json) {
  const auto found = tokenizer_json.find("added_tokens");
  if (found == tokenizer_json.end() || !found->is_array()) return "";  // the reader names the malformed file
  json& added = *found;
  for (const auto& entry : named) {
    const std::string& key = entry.first;
    const std::string& content = entry.second;
    const bool present = std::any_of(added.begin(), added.end(), [&](const json& a) {
      return a.is_object() && a.value("content", json()) == json(content);
    });
    if (present) continue;
    const std::int64_t id = vocab_id(tokenizer_json, content);
    if (id < 0)
      return fmt::format(
          "{} takes the special token {} ({}) as a token past tokenizer.json's vocabulary, with an id of its own: not "
          "implemented",
          class_name, json(content).dump(), key);
    added.push_back({{"id", id},
                     {"content", content},
                     {"special", true},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false}});
  }
  return "";
}

bool bool_or(const json& object, const std::filesystem::path& file, const char* key, bool absent) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return absent;
  if (!it->is_boolean())
    throw_format_error(fmt::format("{}: {}: expected true or false, found {}", file.string(), key, json_excerpt(*it)));
  return it->get<bool>();
}

// The pipelines the classes tapdiff follows build (their __init__ in transformers 5.24) over the
// file's vocabulary and merges: the BPE model's options, normalizer, pre-tokenizer and decoder.
using Build = void (*)(const json& tokenizer_config, const std::filesystem::path& file, json& tokenizer_json);

// The BPE model's options a class sets: byte fallback and fuse_unk together, the subword affixes
// (null or ""), no dropout, merges never ignored.
void set_bpe_options(json& tokenizer_json, bool byte_fallback, const json& affix) {
  json& model = tokenizer_json["model"];
  model["byte_fallback"] = byte_fallback;
  model["fuse_unk"] = byte_fallback;
  model["dropout"] = nullptr;
  model["ignore_merges"] = false;
  model["continuing_subword_prefix"] = affix;
  model["end_of_word_suffix"] = affix;
}

// SentencePiece-style: byte fallback and fuse_unk, "▁" decoded as a space.
json spm_model_and_decoders(json& tokenizer_json) {
  set_bpe_options(tokenizer_json, true, nullptr);
  return json::array({{{"type", "Replace"}, {"pattern", {{"String", kSpmSpace}}}, {"content", " "}},
                      {{"type", "ByteFallback"}},
                      {{"type", "Fuse"}}});
}

// LlamaTokenizer: no normalizer, Metaspace with the prepend scheme of _get_prepend_scheme
// (add_prefix_space, default true, then "first" unless legacy, default false), no unknown token.
void build_llama(const json& tokenizer_config, const std::filesystem::path& file, json& tokenizer_json) {
  json decoders = spm_model_and_decoders(tokenizer_json);
  const bool prefix = bool_or(tokenizer_config, file, "add_prefix_space", true);
  const bool legacy = bool_or(tokenizer_config, file, "legacy", false);
  tokenizer_json["model"]["unk_token"] = nullptr;
  tokenizer_json["normalizer"] = nullptr;
  tokenizer_json["pre_tokenizer"] = {{"type", "Metaspace"},
                                     {"replacement", kSpmSpace},
                                     {"prepend_scheme", prefix ? (legacy ? "always" : "first") : "never"},
                                     {"split", false}};
  if (prefix) decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
  tokenizer_json["decoder"] = {{"type", "Sequence"}, {"decoders", std::move(decoders)}};
}

// GemmaTokenizer: Replace(" ", "▁") and a Split at " ", which finds none after that Replace; the
// unknown token <unk> (or tokenizer_config.json's).
void build_gemma(const json& tokenizer_config, const std::filesystem::path& file, json& tokenizer_json) {
  json decoders = spm_model_and_decoders(tokenizer_json);
  const auto unk = tokenizer_config.find("unk_token");
  const std::optional<std::string> unk_content =
      unk == tokenizer_config.end() ? std::optional<std::string>("<unk>") : special_content(*unk, file, "unk_token");
  tokenizer_json["model"]["unk_token"] =
      unk_content && vocab_id(tokenizer_json, *unk_content) >= 0 ? json(*unk_content) : json();
  tokenizer_json["normalizer"] = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kSpmSpace}};
  tokenizer_json["pre_tokenizer"] = nullptr;
  tokenizer_json["decoder"] = {{"type", "Sequence"}, {"decoders", std::move(decoders)}};
}

// Qwen2Tokenizer (Qwen2, Qwen2.5, Qwen3): NFC, its own split, then bytes (add_prefix_space, default
// false); no unknown token, no byte fallback.
constexpr std::string_view kQwen2Split =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
void build_qwen2(const json& tokenizer_config, const std::filesystem::path& file, json& tokenizer_json) {
  set_bpe_options(tokenizer_json, false, "");
  tokenizer_json["model"]["unk_token"] = nullptr;
  tokenizer_json["normalizer"] = {{"type", "NFC"}};
  tokenizer_json["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"}, {"pattern", {{"Regex", kQwen2Split}}}, {"behavior", "Isolated"}, {"invert", false}},
        {{"type", "ByteLevel"},
         {"add_prefix_space", bool_or(tokenizer_config, file, "add_prefix_space", false)},
         {"trim_offsets", true},
         {"use_regex", false}}}}};
  tokenizer_json["decoder"] = {{"type", "ByteLevel"}};
}

// A class tapdiff follows other than TokenizersBackend: its pipeline, and the special tokens its
// __init__ names when tokenizer_config.json does not (none: the key has no token).
struct RebuiltClass {
  std::string_view name;
  Build build;
  std::vector<std::pair<std::string_view, std::string_view>> default_specials;
};
const std::vector<RebuiltClass>& rebuilt_classes() {
  static const std::vector<RebuiltClass> classes = {
      {"LlamaTokenizer", build_llama, {{"unk_token", "<unk>"}, {"bos_token", "<s>"}, {"eos_token", "</s>"}}},
      {"GemmaTokenizer",
       build_gemma,
       {{"unk_token", "<unk>"},
        {"bos_token", "<bos>"},
        {"eos_token", "<eos>"},
        {"pad_token", "<pad>"},
        {"mask_token", "<mask>"}}},
      {"Qwen2Tokenizer",
       build_qwen2,
       {{"unk_token", "<|endoftext|>"}, {"eos_token", "<|endoftext|>"}, {"pad_token", "<|endoftext|>"}}},
  };
  return classes;
}

// The special tokens AutoTokenizer adds: tokenizer_config.json's added_tokens_decoder and named
// special tokens, and the class's defaults for names it does not give.
std::vector<std::pair<std::string, std::string>> named_specials(const json& tokenizer_config,
                                                                const std::filesystem::path& file,
                                                                const RebuiltClass* rebuilt) {
  std::vector<std::pair<std::string, std::string>> named;
  if (const auto it = tokenizer_config.find("added_tokens_decoder"); it != tokenizer_config.end() && it->is_object())
    for (const auto& [id, token] : it->items())
      if (auto content = special_content(token, file, "added_tokens_decoder." + id))
        named.emplace_back("added_tokens_decoder." + id, *content);
  for (std::string_view key : kSpecialTokenKeys) {
    const auto it = tokenizer_config.find(key);
    if (it != tokenizer_config.end()) {
      if (auto content = special_content(*it, file, key)) named.emplace_back(std::string(key), *content);
    } else if (rebuilt != nullptr) {
      for (const auto& [default_key, content] : rebuilt->default_specials)
        if (default_key == key)
          named.emplace_back(fmt::format("{}'s default {}", rebuilt->name, key), std::string(content));
    }
  }
  for (std::string_view key : kSpecialTokenListKeys) {
    const auto it = tokenizer_config.find(key);
    if (it == tokenizer_config.end() || it->is_null()) continue;
    if (!it->is_array())
      throw_format_error(
          fmt::format("{}: {}: expected a list of tokens, found {}", file.string(), key, json_excerpt(*it)));
    for (const json& token : *it)
      if (auto content = special_content(token, file, key)) named.emplace_back(std::string(key), *content);
  }
  return named;
}

std::string rebuild(const RebuiltClass& cls, const json& tokenizer_config, const std::filesystem::path& file,
                    json& tokenizer_json) {
  const auto model = tokenizer_json.find("model");
  if (model == tokenizer_json.end() || !model->is_object() || model->value("type", json()) != json("BPE"))
    return fmt::format("{} over a tokenizer.json whose model is not BPE is not implemented", cls.name);
  cls.build(tokenizer_config, file, tokenizer_json);
  return "";
}

}  // namespace

TransformersTokenizer as_transformers_builds_it(const std::filesystem::path& folder,
                                                std::string_view tokenizer_json_text, json& tokenizer_json) {
  const ClassReader reader(folder);
  const std::filesystem::path file = folder / "tokenizer_config.json";
  // Every class sets tokenizers' encode_special_tokens from it.
  const bool special_tokens_as_text = bool_or(reader.tokenizer_config(), file, "split_special_tokens", false);
  const auto built = [&](std::string refusal) {
    return TransformersTokenizer{std::move(refusal), special_tokens_as_text};
  };
  const Choice choice = reader.choose(tokenizer_json_text);
  if (choice.name.empty()) return built(choice.by);
  const auto& classes = rebuilt_classes();
  const auto rebuilt =
      std::find_if(classes.begin(), classes.end(), [&](const RebuiltClass& c) { return c.name == choice.name; });
  if (choice.name != kBackend && rebuilt == classes.end())
    return built(fmt::format(
        "transformers 5.x tokenizes this folder with {} ({}), which builds its own pipeline over tokenizer.json: not "
        "implemented (tapdiff follows TokenizersBackend, LlamaTokenizer, GemmaTokenizer and Qwen2Tokenizer)",
        choice.name, choice.by));
  const RebuiltClass* cls = rebuilt == classes.end() ? nullptr : &*rebuilt;
  if (cls != nullptr)
    if (std::string why = rebuild(*cls, reader.tokenizer_config(), file, tokenizer_json); !why.empty())
      return built(std::move(why));
  return built(add_named_specials(named_specials(reader.tokenizer_config(), file, cls), choice.name, tokenizer_json));
}

}  // namespace tapdiff::text
