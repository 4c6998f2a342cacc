// tapdiff tokenize: the token ids of a prompt as a run would feed them, each with its piece, so
// that a user can check them against their engine's tokenizer before comparing anything else.
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "bisect/cli/commands.h"
#include "bisect/cli/model_source.h"
#include "bisect/cli/prompt_input.h"

namespace tapdiff::cli {

void add_tokenize_command(CLI::App& app, CliContext& context) {
  struct Args {
    std::string model = kDefaultModel;
    PromptOptions prompt;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "tokenize", "Print the token ids of a prompt (as `run` feeds them) with each token's piece of text");
  cmd->add_option("--model", args->model, "GGUF file, Hugging Face folder, or synth:SHAPE[:DTYPE]")
      ->capture_default_str();
  add_prompt_options(*cmd, args->prompt);
  cmd->add_flag("--json", args->json, "Print {\"ids\": [...], \"pieces\": [...]} instead of one token per line");
  cmd->callback([args, &context] {
    const auto m = open_model(args->model);
    const std::optional<model::Tokenizer> tokenizer = load_tokenizer(args->prompt, *m);
    const std::vector<std::int32_t> ids = resolve_prompt(args->prompt, tokenizer);
    nlohmann::json pieces = nlohmann::json::array();
    for (std::size_t i = 0; i < ids.size(); ++i)
      pieces.push_back(tokenizer ? model::valid_utf8(tokenizer->decode_token(ids[i], i > 0 ? ids[i - 1] : -1)) : "");
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
