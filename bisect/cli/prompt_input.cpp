#include "bisect/cli/prompt_input.h"

#include <algorithm>
#include <charconv>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "formats/load_model.h"
#include "model/errors.h"
#include "model/input_file.h"
#include "text/load_vocabulary.h"
#include "text/tokenizer.h"
#include "text/vocabulary.h"

namespace tapdiff::cli {

void add_prompt_options(CLI::App& command, PromptOptions& options) {
  auto* prompt = command.add_option("--prompt", options.prompt, "Prompt text (tokenized with the model's vocabulary)");
  auto* tokens = command.add_option("--tokens", options.tokens, "Prompt token ids, e.g. 1,403,407");
  auto* file = command.add_option("--prompt-file", options.prompt_file, "File whose text is the prompt");
  prompt->excludes(tokens, file);
  tokens->excludes(file);
  command.add_option("--vocab", options.vocab,
                     "GGUF file whose vocabulary tokenizes the prompt (for models without one)");
  command.add_flag("--no-bos", options.no_bos,
                   "Add no BOS token to a text prompt (nor the EOS of a vocabulary that appends one)");
  command.add_flag("--special-as-text", options.special_as_text,
                   "Read the text of control tokens written in a text prompt (<s>, <|im_start|>) as text, not as "
                   "those tokens");
  command
      .add_option("--prompt-length", options.length,
                  "Repeat the prompt (text joined by newlines) and cut it to exactly N tokens")
      ->check(CLI::PositiveNumber);
}

void add_batch_prompts_option(CLI::App& command, PromptOptions& options, const std::string& what) {
  command
      .add_option("--batch-prompts", options.batch_file,
                  fmt::format("A ragged batch: one prompt per line, text or 'tokens: 1,5,9'; {}", what))
      ->excludes("--prompt")
      ->excludes("--tokens")
      ->excludes("--prompt-file");
}

text::Tokenizer tokenizer_from_file(const std::string& path, int model_vocab) {
  std::unique_ptr<model::Model> source;
  try {
    source = formats::load_model(path);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("--vocab: {}", e.what()));
  }
  const std::optional<text::Vocabulary> vocabulary = text::load_vocabulary(*source);
  if (!vocabulary)
    throw UsageError(fmt::format("--vocab {}: expected a GGUF file with tokenizer.ggml.* keys, found none", path));
  text::Tokenizer tokenizer(*vocabulary);
  if (tokenizer.size() != model_vocab)
    throw UsageError(fmt::format("--vocab {}: expected a vocabulary of {} tokens (the model's), found {}", path,
                                 model_vocab, tokenizer.size()));
  return tokenizer;
}

std::optional<text::Tokenizer> load_tokenizer(const PromptOptions& options, const model::Model& m) {
  if (!options.vocab.empty()) return tokenizer_from_file(options.vocab, m.config().vocab);
  if (std::optional<text::Vocabulary> vocabulary = text::load_vocabulary(m)) return text::Tokenizer(*vocabulary);
  return std::nullopt;
}

std::vector<std::int32_t> parse_int_list(const std::string& text, const std::string& option, bool allow_negative) {
  std::vector<std::int32_t> ids;
  std::string item;
  std::istringstream in(text);
  while (in >> item) {
    std::istringstream parts(item);
    std::string part;
    while (std::getline(parts, part, ',')) {
      if (part.empty()) continue;
      std::int32_t id = 0;
      const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), id);
      if (ec != std::errc() || end != part.data() + part.size() || (id < 0 && !allow_negative))
        throw UsageError(fmt::format("{}: expected a list of {}integers, found '{}'", option,
                                     allow_negative ? "" : "non-negative ", part));
      ids.push_back(id);
    }
  }
  return ids;
}

namespace {

std::vector<std::int32_t> cut(std::vector<std::int32_t> ids, int length) {
  if (length > 0) ids.resize(static_cast<std::size_t>(length));
  return ids;
}

}  // namespace

std::vector<std::int32_t> resolve_prompt(const PromptOptions& options,
                                         const std::optional<text::Tokenizer>& tokenizer) {
  const auto want = static_cast<std::size_t>(std::max(options.length, 0));
  if (!options.tokens.empty()) {
    auto ids = parse_int_list(options.tokens, "--tokens");
    if (ids.empty()) throw UsageError("--tokens: expected at least one token id, found none");
    for (std::size_t i = 0; ids.size() < want; ++i) ids.push_back(ids[i]);
    return cut(std::move(ids), options.length);
  }
  std::string text = options.prompt;
  if (!options.prompt_file.empty()) {
    text = model::read_regular_file(options.prompt_file, "--prompt-file");
  } else if (text.empty()) {
    throw UsageError("no prompt: give --prompt TEXT, --tokens IDS or --prompt-file FILE");
  }
  if (!tokenizer)
    throw UsageError("the model carries no tokenizer vocabulary: pass --tokens, or --vocab FILE.gguf to tokenize text");
  auto ids = encode_text(options, *tokenizer, text);
  if (ids.empty()) throw UsageError("the prompt text encodes to no tokens");
  if (ids.size() < want) {
    // Enough copies of the text, tokenized as one text, so the joins tokenize as they would in it.
    const std::size_t copies = want / ids.size() + 2;
    std::string repeated = text;
    for (std::size_t i = 1; i < copies; ++i) repeated += "\n" + text;
    ids = encode_text(options, *tokenizer, repeated);
  }
  return cut(std::move(ids), options.length);
}

std::vector<std::int32_t> encode_text(const PromptOptions& options, const text::Tokenizer& tokenizer,
                                      std::string_view text) {
  return tokenizer.encode(text, !options.no_bos, !options.special_as_text);
}

std::vector<std::vector<std::int32_t>> resolve_batch_prompts(const PromptOptions& options,
                                                             const std::optional<text::Tokenizer>& tokenizer) {
  const std::string& path = options.batch_file;
  std::istringstream in(model::read_regular_file(path, "--batch-prompts"));
  std::vector<std::vector<std::int32_t>> prompts;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    PromptOptions one = options;
    one.prompt_file.clear();
    constexpr std::string_view kIds = "tokens:";
    if (line.rfind(kIds, 0) == 0)
      one.tokens = line.substr(kIds.size()), one.prompt.clear();
    else
      one.prompt = line, one.tokens.clear();
    try {
      prompts.push_back(resolve_prompt(one, tokenizer));
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("--batch-prompts {}, line {}: {}", path, number, e.what()));
    }
  }
  if (prompts.empty())
    throw UsageError(fmt::format("--batch-prompts {}: expected one prompt per line, found none", path));
  return prompts;
}

std::string describe_tokens(const std::vector<std::int32_t>& ids, const std::optional<text::Tokenizer>& tokenizer,
                            std::int32_t previous) {
  if (!tokenizer) return fmt::format("[{}]", fmt::join(ids, ", "));
  std::string text;
  for (std::int32_t id : ids) {
    text += tokenizer->decode_token(id, previous);
    previous = id;
  }
  return text;
}

}  // namespace tapdiff::cli
