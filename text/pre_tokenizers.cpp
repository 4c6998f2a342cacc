#include "text/pre_tokenizers.h"

#include <algorithm>
#include <array>
#include <optional>

namespace tapdiff::text {

namespace {

// The patterns, as llama.cpp's llama-vocab.cpp writes them for each pre-tokenizer type. Where
// llama.cpp rewrote Hugging Face's pattern for std::regex (case-insensitive contractions spelt
// out, tekken's \p{Lu}/\p{Ll} as "a letter not a-z" / "not A-Z"), its rewrite is what it runs, so
// it is what tapdiff runs for the GGUF name.
// GPT-2's, which several types run after splits of their own.
constexpr std::string_view kGpt2Split = R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))re";
constexpr std::string_view kGpt2[] = {kGpt2Split};
constexpr std::string_view kLlama3[] = {
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"};
constexpr std::string_view kQwen2[] = {
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"};
constexpr std::string_view kDeepseekLlm[] = {
    R"re([\r\n])re",
    R"re(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293}\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A}\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556}\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D}\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107}\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4}\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F}\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+)re",
    R"re(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)re",
    R"re(\s+$)re",
    R"re([\x{4E00}-\x{9FA5}\x{800}-\x{4E00}\x{AC00}-\x{D7FF}]+)re",
    R"re(\p{N}+)re",
};
constexpr std::string_view kDeepseekCoder[] = {
    R"re([\r\n])re",    R"re(\s?\p{L}+)re",
    R"re(\s?\p{P}+)re", R"re([\x{4E00}-\x{9FA5}\x{800}-\x{4E00}\x{AC00}-\x{D7FF}]+)re",
    R"re(\p{N})re",
};
constexpr std::string_view kDeepseekV3[] = {
    R"re(\p{N}{1,3})re",
    R"re([\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)re",
    R"re([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re",
};
constexpr std::string_view kFalcon[] = {
    R"re([\p{P}\$\+<=>\^~\|`]+)re",
    kGpt2Split,
    R"re([0-9][0-9][0-9])re",
};
constexpr std::string_view kStarcoder[] = {
    R"re(\p{N})re",
    kGpt2Split,
};
constexpr std::string_view kPoro[] = {R"re( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{964}\x{6D4}\x{60C})]+)re"};
constexpr std::string_view kViking[] = {R"re( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{964}\x{6D4}\x{60C})]+)re",
                                        R"re(\p{N})re"};
constexpr std::string_view kTekken[] = {
    R"re([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"};
constexpr std::string_view kGpt4o[] = {
    R"re([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"};
constexpr std::string_view kBailingMoe[] = {
    R"re('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)re"};
constexpr std::string_view kSeedCoder[] = {
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)re"};
constexpr std::string_view kDefault[] = {
    R"re([\p{P}\$\+<=>\^~\|]+)re",
    kGpt2Split,
    R"re(\p{N}+)re",
    R"re([0-9][0-9][0-9])re",
};

constexpr std::array kPreTokenizers{
    PreTokenizer{"default", kDefault, false, false},
    PreTokenizer{"gpt2", kGpt2, false, false},
    PreTokenizer{"llama3", kLlama3, true, true},
    PreTokenizer{"dbrx", kLlama3, false, false},
    PreTokenizer{"qwen2", kQwen2, false, false},
    PreTokenizer{"deepseek-llm", kDeepseekLlm, false, false},
    PreTokenizer{"deepseek-coder", kDeepseekCoder, false, false},
    PreTokenizer{"deepseek-v3", kDeepseekV3, false, false},
    PreTokenizer{"falcon", kFalcon, false, false},
    PreTokenizer{"starcoder", kStarcoder, false, false},
    PreTokenizer{"poro", kPoro, false, false},
    PreTokenizer{"viking", kViking, false, false},
    PreTokenizer{"tekken", kTekken, true, true},
    PreTokenizer{"gpt-4o", kGpt4o, false, false},
    PreTokenizer{"bailingmoe", kBailingMoe, false, false},
    PreTokenizer{"seed-coder", kSeedCoder, false, false},
};

// tokenizer.ggml.pre names and their type, as llama.cpp's llama-vocab.cpp maps them. Left out:
// the names whose type does more than split (chatglm-bpe and glm4 drop BOS, chameleon, kimi-k2,
// afmoe and superbpe have split code of their own).
struct PreName {
  std::string_view name;
  std::string_view family;
};
constexpr PreName kPreNames[] = {
    {"default", "default"},
    {"gpt-2", "gpt2"},
    {"phi-2", "gpt2"},
    {"jina-es", "gpt2"},
    {"jina-de", "gpt2"},
    {"gigachat", "gpt2"},
    {"jina-v1-en", "gpt2"},
    {"jina-v2-es", "gpt2"},
    {"jina-v2-de", "gpt2"},
    {"jina-v2-code", "gpt2"},
    {"roberta-bpe", "gpt2"},
    {"a.x-4.0", "gpt2"},
    {"mellum", "gpt2"},
    {"exaone4", "gpt2"},
    {"mpt", "gpt2"},
    {"olmo", "gpt2"},
    {"jais", "gpt2"},
    {"trillion", "gpt2"},
    {"granite-docling", "gpt2"},
    {"llama3", "llama3"},
    {"llama-v3", "llama3"},
    {"llama-bpe", "llama3"},
    {"falcon3", "llama3"},
    {"falcon-h1", "llama3"},
    {"pixtral", "llama3"},
    {"midm-2.0", "llama3"},
    {"lfm2", "llama3"},
    {"dbrx", "dbrx"},
    {"smaug-bpe", "dbrx"},
    {"qwen2", "qwen2"},
    {"deepseek-r1-qwen", "qwen2"},
    {"kormo", "qwen2"},
    {"megrez", "qwen2"},
    {"stablelm2", "qwen2"},
    {"hunyuan", "qwen2"},
    {"grok-2", "qwen2"},
    {"deepseek-llm", "deepseek-llm"},
    {"deepseek-coder", "deepseek-coder"},
    {"deepseek-v3", "deepseek-v3"},
    {"hunyuan-dense", "deepseek-v3"},
    {"falcon", "falcon"},
    {"starcoder", "starcoder"},
    {"refact", "starcoder"},
    {"command-r", "starcoder"},
    {"smollm", "starcoder"},
    {"codeshell", "starcoder"},
    {"exaone", "starcoder"},
    {"minerva-7b", "starcoder"},
    {"poro-chat", "poro"},
    {"bloom", "poro"},
    {"gpt3-finnish", "poro"},
    {"viking", "viking"},
    {"tekken", "tekken"},
    {"gpt-4o", "gpt-4o"},
    {"llama4", "gpt-4o"},
    {"minimax-m2", "gpt-4o"},
    {"bailingmoe", "bailingmoe"},
    {"bailingmoe2", "bailingmoe"},
    {"llada-moe", "bailingmoe"},
    {"seed-coder", "seed-coder"},
};

template <class Strings>
std::vector<SplitRegex> compile(const Strings& patterns, std::string_view where) {
  std::vector<SplitRegex> out;
  out.reserve(patterns.size());
  for (const auto& p : patterns) out.emplace_back(p, where);
  return out;
}

}  // namespace

const PreTokenizer* find_pre_tokenizer(std::string_view name) {
  for (const PreName& p : kPreNames) {
    if (p.name != name) continue;
    for (const PreTokenizer& t : kPreTokenizers)
      if (t.family == p.family) return &t;
  }
  return nullptr;
}

WordSplitter::WordSplitter(std::span<const std::string> patterns, std::string_view where)
    : regexes_(compile(patterns, where)), white_space_as_vt_(regexes_.size(), false) {}

WordSplitter::WordSplitter(std::span<const std::string_view> patterns, std::string_view where, SplitDialect dialect)
    : regexes_(compile(patterns, where)) {
  for (std::string_view p : patterns)
    white_space_as_vt_.push_back(dialect == SplitDialect::llama_cpp && p.find("\\p{") == std::string_view::npos);
}

std::vector<std::string_view> WordSplitter::split(std::string_view text) const {
  const CodePoints cps(text);
  std::optional<CodePoints> vt;  // cps with non-ASCII white space as U+000B, where a pattern reads that
  if (std::find(white_space_as_vt_.begin(), white_space_as_vt_.end(), true) != white_space_as_vt_.end()) {
    vt = cps;
    for (std::size_t k = 0; k < vt->size(); ++k) {
      if (vt->chars[k] > 0x7F && is_white_space(vt->chars[k])) {
        vt->chars[k] = U'\v';
        vt->categories[k] = GeneralCategory::Cc;
      }
    }
  }
  std::vector<Span> pieces{{0, cps.size()}};
  for (std::size_t i = 0; i < regexes_.size(); ++i)
    pieces = split_isolated(regexes_[i], white_space_as_vt_[i] ? *vt : cps, pieces);
  std::vector<std::string_view> words;
  words.reserve(pieces.size());
  for (const Span& s : pieces)
    words.push_back(text.substr(cps.byte_at[s.begin], cps.byte_at[s.end] - cps.byte_at[s.begin]));
  return words;
}

}  // namespace tapdiff::text
