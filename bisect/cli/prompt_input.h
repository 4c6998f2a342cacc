#pragma once
// The prompt of a run, from --prompt TEXT, --tokens IDS or --prompt-file FILE, as token ids; and
// the tokenizer that turns ids back into text.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "model/weights.h"
#include "text/tokenizer.h"

namespace tapdiff::cli {

struct PromptOptions {
  std::string prompt;
  std::string tokens;
  std::string prompt_file;
  std::string vocab;  // a GGUF file whose vocabulary to use (for models that carry none)
  bool no_bos = false;
  bool special_as_text = false;  // control tokens' text in a text prompt stays text
  int length = 0;          // > 0: the prompt repeated (text: joined by newlines) and cut to exactly this many tokens
  std::string batch_file;  // --batch-prompts: a ragged batch, one prompt per line (commands that run batches)
};

// Adds --prompt/--tokens/--prompt-file (mutually exclusive), --vocab, --no-bos and --prompt-length
// to a command.
void add_prompt_options(CLI::App& command, PromptOptions& options);

// Adds --batch-prompts FILE, exclusive with --prompt/--tokens/--prompt-file (after add_prompt_options);
// `what` says what the command does with a batch.
void add_batch_prompts_option(CLI::App& command, PromptOptions& options, const std::string& what);

// The tokenizer of a GGUF file's vocabulary (--vocab); UsageError when the file is missing, carries
// none, or has another number of tokens than model_vocab.
text::Tokenizer tokenizer_from_file(const std::string& path, int model_vocab);

// The model's tokenizer, or the one of --vocab; nullopt when neither carries a vocabulary.
std::optional<text::Tokenizer> load_tokenizer(const PromptOptions& options, const model::Model& model);

// The ids of a text prompt as --no-bos and --special-as-text say to encode it.
std::vector<std::int32_t> encode_text(const PromptOptions& options, const text::Tokenizer& tokenizer,
                                      std::string_view text);

// Token ids of the prompt (--prompt-length applied). UsageError when no prompt was given, when a text prompt needs a
// tokenizer and there is none, or when --tokens is not a list of integers.
std::vector<std::int32_t> resolve_prompt(const PromptOptions& options, const std::optional<text::Tokenizer>& tokenizer);

// The prompts of a ragged batch (--batch-prompts FILE): one per non-empty line, text, or token ids
// after "tokens:" ("tokens: 1, 403, 407"); --vocab, --no-bos and --prompt-length apply to each.
// UsageError naming the file (and line) when it cannot be read, holds no prompt, or a line fails.
std::vector<std::vector<std::int32_t>> resolve_batch_prompts(const PromptOptions& options,
                                                             const std::optional<text::Tokenizer>& tokenizer);

// "1,403, 407" or "1 403 407" -> integers; UsageError naming the option and the bad item
// (negative values only when allow_negative, for positions counted from the end).
std::vector<std::int32_t> parse_int_list(const std::string& text, const std::string& option,
                                         bool allow_negative = false);

// Text of the ids, or "[ids]" without a tokenizer.
std::string describe_tokens(const std::vector<std::int32_t>& ids, const std::optional<text::Tokenizer>& tokenizer,
                            std::int32_t previous = -1);

}  // namespace tapdiff::cli
