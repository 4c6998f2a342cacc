// tapdiff tokenize: the token ids of a prompt as a run would feed them, each with its piece, so
// that a user can check them against their engine's tokenizer before comparing anything else;
// or of every string of a corpus (--texts).
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "bisect/cli/commands.h"
#include "bisect/cli/model_source.h"
#include "bisect/cli/prompt_input.h"
#include "formats/load_model.h"
#include "model/errors.h"
#include "model/input_file.h"
#include "model/json_input.h"
#include "text/tokenizer.h"

namespace tapdiff::cli {
namespace {

nlohmann::json pieces_of(const std::vector<std::int32_t>& ids, const std::optional<text::Tokenizer>& tokenizer) {
  nlohmann::json pieces = nlohmann::json::array();
  for (std::size_t i = 0; i < ids.size(); ++i)
    pieces.push_back(tokenizer ? text::valid_utf8(tokenizer->decode_token(ids[i], i > 0 ? ids[i - 1] : -1)) : "");
  return pieces;
}

// --texts FILE: a JSON array of strings, each tokenized as a text prompt; one JSON line each.
void tokenize_texts(const std::string& path, const PromptOptions& prompt, const text::Tokenizer& tokenizer) {
  const nlohmann::json texts =
      model::parse_json_text(model::read_regular_file(path, "--texts"), path, "an array of strings");
  if (!texts.is_array())
    throw UsageError(fmt::format("{}: expected a JSON array of strings, found {}", path, model::json_excerpt(texts)));
  for (std::size_t i = 0; i < texts.size(); ++i)
    if (!texts[i].is_string())
      throw UsageError(fmt::format("{}: item {}: expected a string, found {}", path, i, model::json_excerpt(texts[i])));
  for (const nlohmann::json& text : texts) {
    const auto ids = encode_text(prompt, tokenizer, text.get<std::string>());
    fmt::print("{}\n", nlohmann::json{{"ids", ids}, {"pieces", pieces_of(ids, tokenizer)}}.dump());
  }
}

}  // namespace

void add_tokenize_command(CLI::App& app, CliContext& context) {
  struct Args {
    std::string model = kDefaultModel;
    formats::LoadOptions load;
    PromptOptions prompt;
    bool json = false;
    std::string texts;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "tokenize", "Print the token ids of a prompt (as `run` feeds them) with each token's piece of text");
  cmd->add_option("--model", args->model, "GGUF file, Hugging Face folder, or synth:SHAPE[:DTYPE]")
      ->capture_default_str();
  add_load_options(*cmd, args->load);
  add_prompt_options(*cmd, args->prompt);
  cmd->add_flag("--json", args->json, "Print {\"ids\": [...], \"pieces\": [...]} instead of one token per line");
  cmd->add_option("--texts", args->texts,
                  "JSON file holding an array of strings: print one {\"ids\", \"pieces\"} line for each (a "
                  "corpus check of the tokenizer)")
      ->excludes("--prompt")
      ->excludes("--tokens")
      ->excludes("--prompt-file")
      ->excludes("--prompt-length");
  cmd->callback([args, &context] {
    const auto m = open_model(args->model, args->load);
    const std::optional<text::Tokenizer> tokenizer = load_tokenizer(args->prompt, *m);
    if (!args->texts.empty()) {
      if (!tokenizer)
        throw UsageError("the model carries no tokenizer vocabulary: pass --vocab FILE.gguf to tokenize --texts");
      tokenize_texts(args->texts, args->prompt, *tokenizer);
      context.exit_code = 0;
      return;
    }
    const std::vector<std::int32_t> ids = resolve_prompt(args->prompt, tokenizer);
    const nlohmann::json pieces = pieces_of(ids, tokenizer);
    if (args->json) {
      fmt::print("{}\n", nlohmann::json{{"ids", ids}, {"pieces", pieces}}.dump());
    } else {
      for (std::size_t i = 0; i < ids.size(); ++i) fmt::print("{}\t{}\n", ids[i], pieces[i].dump());
      fmt::print("{} tokens\n", ids.size());
    }
    context.exit_code = 0;
  });
}

}  // namespace tapdiff::cli
