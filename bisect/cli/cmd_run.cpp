// tapdiff run: run a model on one engine, tap every op, optionally dump to HDF5 and generate.
#include <filesystem>
#include <memory>
#include <optional>

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "bisect/cli/commands.h"
#include "bisect/cli/dump_input.h"
#include "bisect/cli/dump_model.h"
#include "bisect/cli/engine_factory.h"
#include "bisect/cli/model_source.h"
#include "bisect/cli/prompt_input.h"
#include "bisect/cli/run_context.h"
#include "bisect/compare/dump_chunks.h"
#include "bisect/drive/bisect.h"
#include "dumps/dump_reader.h"
#include "dumps/dump_writer.h"
#include "formats/load_model.h"
#include "model/batch_runner.h"
#include "model/errors.h"
#include "model/output_file.h"
#include "model/runner.h"
#include "text/tokenizer.h"

namespace tapdiff::cli {
namespace {

struct RunArgs {
  std::string model = kDefaultModel;
  formats::LoadOptions load;
  EngineChoice engine;
  PromptOptions prompt;
  int chunk = 0;
  int generate = 0;
  bool stop_at_eos = false;
  std::string dump;
  std::string taps = "all";
  std::string dump_dtype;  // default: the engine's
  int compress = 0;        // gzip level of the dump's tap datasets; 0: none
  std::string json;
  std::string tokens_from;  // a dump whose tokens, positions and chunking to run (teacher forcing)
  DumpInputOptions input;   // --map: how an outside engine's tokens_from is read
  std::string command_line;
};

dumps::RunMetadata describe_run(const RunArgs& a, const model::Model& m, const model::Engine& engine,
                                const std::vector<std::int32_t>& prompt) {
  dumps::RunMetadata meta = bisect::engine_metadata(engine, m.config(), prompt, a.chunk);
  add_run_context(meta, m, a.command_line);
  if (!a.dump_dtype.empty()) meta.storage_dtype = a.dump_dtype;
  return meta;
}

nlohmann::json summarize(const model::Engine& engine, const model::Model& m, const std::vector<std::int32_t>& prompt,
                         const model::RunResult& r, const std::optional<text::Tokenizer>& tokenizer, int chunk) {
  const int decoded = r.decode_steps;
  return {{"engine", engine.name()},
          {"device", engine.device()},
          {"dtype", engine.compute_dtype()},
          {"model", m.path().string()},
          {"chunk", chunk > 0 ? chunk : static_cast<int>(prompt.size())},
          {"prompt", prompt},
          {"prompt_text", tokenizer ? nlohmann::json(text::valid_utf8(tokenizer->decode(prompt))) : nlohmann::json()},
          {"generated", r.generated},
          {"text", tokenizer ? nlohmann::json(text::valid_utf8(describe_tokens(r.generated, tokenizer, prompt.back())))
                             : nlohmann::json()},
          {"timings",
           {{"prefill_seconds", r.prefill_seconds},
            {"prefill_tokens_per_second",
             r.prefill_seconds > 0 ? static_cast<double>(prompt.size()) / r.prefill_seconds : 0.0},
            {"prefill_chunks", r.prefill_chunks},
            {"decode_steps", decoded},
            {"decode_seconds", r.decode_seconds},
            {"decode_ms_per_token", decoded > 0 ? 1e3 * r.decode_seconds / decoded : 0.0}}}};
}

void print_summary(const nlohmann::json& s, const model::Model& m) {
  const auto& c = m.config();
  fmt::print("model    {} ({}, {} layers, dim {}, heads {}/{}, vocab {})\n", m.path().string(),
             model::family_name(c.family), c.n_layers, c.dim, c.n_heads, c.n_kv_heads, c.vocab);
  fmt::print("engine   {} on {}, {}\n", s["engine"].get<std::string>(), s["device"].get<std::string>(),
             s["dtype"].get<std::string>());
  fmt::print("prompt   {} tokens, chunk {}\n", s["prompt"].size(), s["chunk"].get<int>());
  const auto& t = s["timings"];
  fmt::print("prefill  {:.3f} s ({:.1f} tokens/s)\n", t["prefill_seconds"].get<double>(),
             t["prefill_tokens_per_second"].get<double>());
  if (!s["generated"].empty()) {
    fmt::print("decode   {} steps, {:.2f} ms/token\n", t["decode_steps"].get<int>(),
               t["decode_ms_per_token"].get<double>());
    fmt::print("tokens   {}\n", fmt::join(s["generated"].get<std::vector<int>>(), " "));
    if (!s["text"].is_null())
      fmt::print("text     {}{}\n", s["prompt_text"].get<std::string>(), s["text"].get<std::string>());
  }
}

std::unique_ptr<dumps::DumpWriter> open_dump(const RunArgs& a, const std::string& path, const model::Model& m,
                                             const model::Engine& engine, const model::Graph& graph,
                                             const std::vector<std::int32_t>& prompt) {
  const dumps::RunMetadata meta = describe_run(a, m, engine, prompt);
  const auto storage = dumps::storage_from_name(meta.storage_dtype);
  if (!storage) throw UsageError(fmt::format("--dump-dtype: expected f32, f64 or f16, found '{}'", a.dump_dtype));
  return std::make_unique<dumps::DumpWriter>(path, meta, graph, dumps::TapFilter(a.taps),
                                             dumps::WriterOptions{.storage = *storage, .compress_level = a.compress});
}

// out.h5 -> out.seq3.h5: the dump of sequence 3 of a batch.
std::string sequence_dump_path(const std::string& dump, std::size_t sequence) {
  const std::filesystem::path p(dump);
  return (p.parent_path() / fmt::format("{}.seq{}{}", p.stem().string(), sequence, p.extension().string())).string();
}

// --batch-prompts: every prompt in one ragged batch on the Vulkan engine; one dump per sequence.
void run_batch(const RunArgs& a, const model::Model& m, const std::optional<text::Tokenizer>& tokenizer,
               model::Engine& engine) {
  if (!engine.runs_batches())
    throw UsageError(fmt::format(
        "--batch-prompts: expected --engine vulkan (ragged batches run there), found --engine {}", engine.name()));
  const auto prompts = resolve_batch_prompts(a.prompt, tokenizer);
  for (const auto& p : prompts) warn_past_context(m, p.size() + static_cast<std::size_t>(a.generate));
  const model::Graph graph(m.config());
  std::vector<std::unique_ptr<dumps::DumpWriter>> writers;
  std::vector<model::Tap*> taps;
  for (std::size_t s = 0; !a.dump.empty() && s < prompts.size(); ++s) {
    writers.push_back(open_dump(a, sequence_dump_path(a.dump, s), m, engine, graph, prompts[s]));
    taps.push_back(writers.back().get());
  }
  model::BatchRunOptions options;
  options.chunk = a.chunk;
  options.generate = a.generate;
  options.stop_at_eos = a.stop_at_eos;
  options.eos_token = tokenizer ? tokenizer->eos() : m.config().eos_token;
  const model::BatchRunResult batch = model::run_batch(engine, graph, prompts, options, taps);
  nlohmann::json sequences = nlohmann::json::array();
  for (std::size_t s = 0; s < prompts.size(); ++s) {
    const model::BatchSequenceResult& r = batch.sequences[s];
    const model::RunResult run{r.generated, batch.prefill_seconds, batch.decode_seconds, r.prefill_chunks,
                               r.decode_steps};
    sequences.push_back(summarize(engine, m, prompts[s], run, tokenizer, a.chunk));
    if (!writers.empty()) writers[s]->finish(sequences.back());
  }
  const auto& c = m.config();
  fmt::print("model    {} ({}, {} layers, dim {}, heads {}/{}, vocab {})\n", m.path().string(),
             model::family_name(c.family), c.n_layers, c.dim, c.n_heads, c.n_kv_heads, c.vocab);
  fmt::print("engine   {} on {}, {}\n", engine.name(), engine.device(), engine.compute_dtype());
  fmt::print("batch    {} sequences in {} passes (chunk {}): prefill {:.3f} s, decode {:.3f} s\n", prompts.size(),
             batch.passes, a.chunk > 0 ? fmt::to_string(a.chunk) : "whole", batch.prefill_seconds,
             batch.decode_seconds);
  for (std::size_t s = 0; s < prompts.size(); ++s) {
    const auto& q = sequences[s];
    fmt::print("seq {:<4} {} tokens -> {}\n", s, prompts[s].size(),
               fmt::join(q["generated"].get<std::vector<int>>(), " "));
    if (!q["text"].is_null() && !q["generated"].empty()) fmt::print("         {}\n", q["text"].get<std::string>());
    if (!a.dump.empty()) fmt::print("         dump {}\n", sequence_dump_path(a.dump, s));
  }
  if (!a.json.empty())
    model::write_text(a.json, "--json",
                      nlohmann::json{{"passes", batch.passes},
                                     {"prefill_seconds", batch.prefill_seconds},
                                     {"decode_seconds", batch.decode_seconds},
                                     {"sequences", sequences}}
                              .dump(2) +
                          "\n");
}

// B's HDF5 dump, read before any other thread starts: the guarded read forks (dumps/crash_guard.h).
// Its options are checked first, so that a wrong one is named before a large file is read. An
// outside engine's dump (safetensors or .npz) is read once the model it ran is open
// (imported_tokens_from).
std::unique_ptr<dumps::DumpReader> read_tokens_from(const RunArgs& a, const CLI::App& cmd) {
  if (a.tokens_from.empty()) {
    if (cmd.count("--map") > 0)
      throw UsageError("--map says how --tokens-from's dump is read: it is given with --tokens-from");
    return nullptr;
  }
  const PromptOptions& p = a.prompt;
  for (const auto& [given, option] : {std::pair{!p.prompt.empty(), "--prompt"},
                                      {!p.tokens.empty(), "--tokens"},
                                      {!p.prompt_file.empty(), "--prompt-file"},
                                      {p.length > 0, "--prompt-length"},
                                      {!p.batch_file.empty(), "--batch-prompts"},
                                      {a.chunk > 0, "--chunk"},
                                      {a.generate > 0, "--generate"},
                                      {a.stop_at_eos, "--stop-at-eos"}})
    if (given)
      throw UsageError(fmt::format("--tokens-from runs the tokens, positions and chunking of {}: it does not take {}",
                                   a.tokens_from, option));
  if (dumps::is_imported_dump(a.tokens_from)) return nullptr;
  return std::make_unique<dumps::DumpReader>(a.tokens_from);
}

// --tokens-from B: exactly the tokens, positions and chunking of B's run (teacher forcing), so this
// run and B's compare row for row, decode rows included. The summary's generated tokens are this
// engine's own greedy choices under B's history.
void run_tokens_from(const RunArgs& a, const dumps::DumpReader& from, const model::Model& m,
                     const std::optional<text::Tokenizer>& tokenizer, model::Engine& engine) {
  require_model_of(from, m, "--model", a.model);
  const std::vector<bisect::DumpChunk> chunks = bisect::dump_chunks(from, "run its tokens again");
  std::vector<model::FedChunk> fed;
  std::vector<std::int32_t> prompt;
  for (const bisect::DumpChunk& c : chunks) {
    fed.push_back(c.fed);
    if (!c.fed.info.decode) prompt.insert(prompt.end(), c.fed.tokens.begin(), c.fed.tokens.end());
  }
  warn_past_context(m, static_cast<std::size_t>(from.rows()));
  const model::Graph graph(m.config());
  const int chunk = fed.front().info.rows;
  RunArgs described = a;
  described.chunk = chunk;
  std::unique_ptr<dumps::DumpWriter> writer;
  model::NullTap no_tap;
  if (!a.dump.empty()) writer = open_dump(described, a.dump, m, engine, graph, prompt);
  model::Tap& tap = writer ? static_cast<model::Tap&>(*writer) : no_tap;
  const model::RunResult result = model::run_fed(engine, graph, fed, tap);
  nlohmann::json summary = summarize(engine, m, prompt, result, tokenizer, chunk);
  summary["tokens_from"] = a.tokens_from;
  if (writer) writer->finish(summary);
  print_summary(summary, m);
  if (!a.dump.empty()) fmt::print("dump     {}\n", a.dump);
  if (!a.json.empty()) model::write_text(a.json, "--json", summary.dump(2) + "\n");
}

void run(const RunArgs& a, const CLI::App& cmd) {
  std::unique_ptr<dumps::DumpReader> tokens_from = read_tokens_from(a, cmd);
  const auto m = open_model(a.model, a.load);
  if (!a.tokens_from.empty() && !tokens_from) tokens_from = open_dump(a.tokens_from, a.input, m.get());
  if (!a.dump.empty()) m->prefetch_sha256();  // the dump names it: hashing overlaps the engine's loading
  const auto tokenizer = load_tokenizer(a.prompt, *m);
  const auto engine = make_engine(a.engine, *m);
  if (tokens_from) return run_tokens_from(a, *tokens_from, *m, tokenizer, *engine);
  if (!a.prompt.batch_file.empty()) return run_batch(a, *m, tokenizer, *engine);
  const auto prompt = resolve_prompt(a.prompt, tokenizer);
  warn_past_context(*m, prompt.size() + static_cast<std::size_t>(a.generate));
  const model::Graph graph(m->config());
  model::RunOptions options;
  options.chunk = a.chunk;
  options.generate = a.generate;
  options.stop_at_eos = a.stop_at_eos;
  options.eos_token = tokenizer ? tokenizer->eos() : m->config().eos_token;

  std::unique_ptr<dumps::DumpWriter> writer;
  model::NullTap no_tap;
  if (!a.dump.empty()) writer = open_dump(a, a.dump, *m, *engine, graph, prompt);
  model::Tap& tap = writer ? static_cast<model::Tap&>(*writer) : no_tap;
  const model::RunResult result = model::run_sequence(*engine, graph, prompt, options, tap);
  const nlohmann::json summary = summarize(*engine, *m, prompt, result, tokenizer, a.chunk);
  if (writer) writer->finish(summary);
  print_summary(summary, *m);
  if (!a.dump.empty()) fmt::print("dump     {}\n", a.dump);
  if (!a.json.empty()) model::write_text(a.json, "--json", summary.dump(2) + "\n");
}

}  // namespace

void add_run_command(CLI::App& app, CliContext& context) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand("run", "Run a model on one engine, tapping every op (optionally to an HDF5 dump)");
  cmd->add_option("--model", args->model, "GGUF file, Hugging Face folder, or synth:SHAPE[:DTYPE]")
      ->capture_default_str();
  add_load_options(*cmd, args->load);
  cmd->add_option("--engine", args->engine.name, "Engine: ref or vulkan")->capture_default_str();
  cmd->add_option("--dtype", args->engine.dtype,
                  "Compute precision: for ref any of model/precision.def (f64, f32, f16, f16_acc16, bf16, llama.cpp, "
                  "llama.cpp-vulkan, fp8_e4m3, fp8_e5m2: f32 rounded as such an engine rounds; docs/tolerances.md); "
                  "f32, f16, bf16 or llama.cpp for vulkan")
      ->capture_default_str();
  cmd->add_option("--threads", args->engine.threads, "CPU threads (0 = all)")->check(CLI::NonNegativeNumber);
  add_vulkan_options(*cmd, args->engine);
  add_prompt_options(*cmd, args->prompt);
  add_batch_prompts_option(*cmd, args->prompt, "runs on vulkan; --dump writes NAME.seqN.h5 per sequence");
  cmd->add_option("--chunk", args->chunk, "Prefill chunk size in tokens (0 = whole prompt)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--generate", args->generate, "Greedy tokens to generate")->check(CLI::NonNegativeNumber);
  cmd->add_flag("--stop-at-eos", args->stop_at_eos, "Stop generating at the EOS token");
  cmd->add_option("--dump", args->dump, "Write every tapped op output to this HDF5 file");
  cmd->add_option("--taps", args->taps, "Which ops to dump: all, layers, none, or a regex over LAYER/OP")
      ->capture_default_str();
  cmd->add_option("--dump-dtype", args->dump_dtype,
                  "Storage type of the dump: f32, f64 or f16 (default: compute dtype)");
  const CLI::Validator gzip_level(
      [](std::string& text) {
        const bool ok = text.size() == 1 && text[0] >= '1' && text[0] <= '9';
        return ok ? std::string()
                  : fmt::format("expected a gzip level from 1 (fastest) to 9 (smallest), found '{}'", text);
      },
      "1-9");
  cmd->add_option("--compress", args->compress,
                  "Compress the dump's tap datasets: HDF5 shuffle + gzip at LEVEL 1-9 (1 when no LEVEL is given)")
      ->expected(0, 1)
      ->default_str("1")
      ->option_text("[=LEVEL]")
      ->check(gzip_level);
  cmd->add_option("--json", args->json, "Write the run's summary as JSON");
  cmd->add_option("--tokens-from", args->tokens_from,
                  "Run exactly the tokens, positions and chunking of this dump's run (teacher forcing: its decode "
                  "rows too), so that the two compare row for row: a tapdiff dump, or an outside engine's "
                  "safetensors or .npz (a file or a folder of them) read through --map");
  add_dump_input_options(*cmd, args->input);
  cmd->callback([args, cmd, &context] {
    args->command_line = context.command_line;
    run(*args, *cmd);
    context.exit_code = 0;
  });
}

}  // namespace tapdiff::cli
