// tapdiff inspect: what a dump holds, op by op (RMS, max|x|, NaN/Inf), top-k tokens at chosen
// positions, and the values of one tensor slice.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <numeric>
#include <optional>
#include <string_view>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "bisect/cli/commands.h"
#include "bisect/cli/dump_input.h"
#include "bisect/cli/model_source.h"
#include "bisect/cli/option_checks.h"
#include "bisect/cli/prompt_input.h"
#include "bisect/compare/tensor_stats.h"
#include "dumps/dump_reader.h"
#include "formats/load_model.h"
#include "model/errors.h"
#include "model/graph.h"
#include "model/output_file.h"
#include "text/tokenizer.h"

namespace tapdiff::cli {
namespace {

struct InspectArgs {
  std::string dump;
  std::string positions;  // e.g. "0,5,-1" (negative counts from the end)
  int top_k = 0;
  std::string slice;  // "LAYER/OP"
  std::string rows = "0:4";
  std::string cols = "0:8";
  std::string vocab;  // GGUF file for token text (default: the dump's model, if it exists)
  std::string json;
  std::string model;  // the model of an imported dump
  formats::LoadOptions load;
  DumpInputOptions input;
};

constexpr std::int64_t kBlockRows = 256;  // rows read at a time: memory stays bounded

model::TensorId parse_tensor_name(const std::string& text) {
  const std::size_t slash = text.find('/');
  const auto layer = slash == std::string::npos ? std::nullopt : parse_integer(std::string_view(text).substr(0, slash));
  if (!layer || *layer < INT_MIN || *layer > INT_MAX)
    throw UsageError(fmt::format("--slice: expected LAYER/OP such as 3/q_proj, found '{}'", text));
  const auto op = model::op_from_name(text.substr(slash + 1));
  if (!op) throw UsageError(fmt::format("--slice: expected LAYER/OP with an op name from the graph, found '{}'", text));
  return {*op, static_cast<int>(*layer)};
}

// "FIRST:END" (or "FIRST", one) -> [FIRST, END) of n things (`what`), END past n clamped to n.
std::pair<std::int64_t, std::int64_t> parse_range(const std::string& text, std::int64_t n, const char* option,
                                                  const char* what) {
  const std::size_t colon = text.find(':');
  const auto first = parse_integer(std::string_view(text).substr(0, colon));
  auto end = colon == std::string::npos ? std::optional<std::int64_t>() : parse_integer(text.substr(colon + 1));
  if (first && colon == std::string::npos) end = *first < INT64_MAX ? *first + 1 : *first;
  if (!first || !end) throw UsageError(fmt::format("{}: expected FIRST:END (two integers), found '{}'", option, text));
  if (*first < 0 || *first >= *end || *first >= n)
    throw UsageError(fmt::format("{}: expected FIRST:END with 0 <= FIRST < END and FIRST < {} ({}), found '{}'", option,
                                 n, what, text));
  return {*first, std::min(*end, n)};
}

nlohmann::json stats_table(const dumps::DumpReader& dump) {
  fmt::print("{:>5}  {:<14} {:<10} {:>12}  {:>11} {:>11}  {:>6} {:>6}\n", "layer", "op", "class", "shape", "rms",
             "max|x|", "nan", "inf");
  nlohmann::json table = nlohmann::json::array();
  for (const model::TensorId& id : dump.tensors()) {
    bisect::TensorStats stats;
    std::int64_t width = 0;
    for (std::int64_t first = 0; first < dump.rows(); first += kBlockRows) {
      const model::HostTensor block = dump.read(id, first, std::min(kBlockRows, dump.rows() - first));
      width = block.cols();
      stats.add(block, first);
    }
    const auto cls = model::op_class_name(model::op_class(id.op));
    fmt::print("{:>5}  {:<14} {:<10} {:>12}  {:>11.4g} {:>11.4g}  {:>6} {:>6}\n", id.layer, model::op_name(id.op), cls,
               fmt::format("{}x{}", dump.rows(), width), stats.rms(), stats.max_abs(), stats.nan(), stats.inf());
    table.push_back({{"layer", id.layer},
                     {"op", model::op_name(id.op)},
                     {"class", cls},
                     {"rows", dump.rows()},
                     {"width", width},
                     {"rms", stats.rms()},
                     {"max_abs", stats.max_abs()},
                     {"max_at", {stats.max_row(), stats.max_col()}},
                     {"nan", stats.nan()},
                     {"inf", stats.inf()}});
  }
  return table;
}

// The tokenizer of --vocab (its errors are the user's to see), or else of the dump's model when that
// file is still there and carries a vocabulary (a note on stderr when not).
std::optional<text::Tokenizer> dump_tokenizer(const InspectArgs& a, const dumps::DumpReader& dump) {
  const int vocab = dumps::config_from_json(dump.metadata().model_config, a.dump).vocab;
  if (!a.vocab.empty()) return tokenizer_from_file(a.vocab, vocab);
  const std::string& source = dump.metadata().model_path;
  try {
    if (!source.empty() && std::filesystem::is_regular_file(source)) return tokenizer_from_file(source, vocab);
    fmt::print(stderr, "tapdiff: note: no token text: the dump's model {} is not a file here (--vocab names one)\n",
               source);
  } catch (const std::exception& e) {
    fmt::print(stderr, "tapdiff: note: no token text from the dump's model: {}\n", e.what());
  }
  return std::nullopt;
}

void print_top_k(const InspectArgs& a, const dumps::DumpReader& dump, const std::optional<text::Tokenizer>& tok) {
  const int n_layers = dumps::config_from_json(dump.metadata().model_config, a.dump).n_layers;
  const model::TensorId logits{model::Op::logits, n_layers};
  if (!dump.has(logits))
    throw UsageError(fmt::format("{}: --top-k needs the logits tensor, which this dump lacks", a.dump));
  std::vector<std::int32_t> tokens = dump.tokens();
  for (std::int32_t p : parse_int_list(a.positions.empty() ? "-1" : a.positions, "--positions", true)) {
    const std::int64_t row = p < 0 ? dump.rows() + p : p;
    if (row < 0 || row >= dump.rows())
      throw UsageError(fmt::format("--positions: {} is outside the dump's {} rows", p, dump.rows()));
    const model::HostTensor values = dump.read(logits, row, 1);
    std::vector<std::int64_t> ids(static_cast<std::size_t>(values.cols()));
    std::iota(ids.begin(), ids.end(), 0);
    const auto k = std::min<std::size_t>(static_cast<std::size_t>(a.top_k), ids.size());
    std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(),
                      [&](auto x, auto y) { return values.at(0, x) > values.at(0, y); });
    fmt::print("\nposition {} (input token {}): top {}\n", row, tokens.at(static_cast<std::size_t>(row)), k);
    for (std::size_t i = 0; i < k; ++i) {
      const auto id = static_cast<std::int32_t>(ids[i]);
      fmt::print("  {:>7}  {:>11.5f}  {}\n", id, values.at(0, id),
                 tok ? fmt::format("{:?}", tok->decode_token(id, 0)) : std::string());
    }
  }
}

// What --slice, --rows and --cols ask for, checked against the dump before anything is printed.
struct SliceRequest {
  model::TensorId id;
  std::int64_t r0 = 0, r1 = 0, c0 = 0, c1 = 0;  // rows [r0, r1), columns [c0, c1)
};

std::optional<SliceRequest> plan_slice(const InspectArgs& a, const dumps::DumpReader& dump) {
  if (a.slice.empty()) return std::nullopt;
  const model::TensorId id = parse_tensor_name(a.slice);
  if (!dump.has(id)) throw UsageError(fmt::format("{}: no tensor {} in this dump", a.dump, a.slice));
  const auto [r0, r1] = parse_range(a.rows, dump.rows(), "--rows", "the dump's rows");
  const auto [c0, c1] = parse_range(a.cols, model::Graph(dump.config()).width(id), "--cols", "the tensor's columns");
  return SliceRequest{id, r0, r1, c0, c1};
}

void print_slice(const InspectArgs& a, const dumps::DumpReader& dump, const SliceRequest& s) {
  const model::HostTensor block = dump.read(s.id, s.r0, s.r1 - s.r0);
  fmt::print("\n{} rows [{}, {}) cols [{}, {}) of {}x{}\n", a.slice, s.r0, s.r1, s.c0, s.c1, dump.rows(), block.cols());
  for (std::int64_t r = 0; r < block.rows(); ++r) {
    std::string line = fmt::format("  {:>6}:", s.r0 + r);
    for (std::int64_t c = s.c0; c < s.c1; ++c) line += fmt::format(" {:>11.5g}", block.at(r, c));
    fmt::print("{}\n", line);
  }
}

void inspect(const InspectArgs& a) {
  const std::unique_ptr<model::Model> model = a.model.empty() ? nullptr : open_model(a.model, a.load);
  const std::unique_ptr<dumps::DumpReader> opened = open_dump(a.dump, a.input, model.get());
  const dumps::DumpReader& dump = *opened;
  const std::optional<SliceRequest> slice = plan_slice(a, dump);
  const dumps::RunMetadata& meta = dump.metadata();
  fmt::print("dump     {} (schema {}, {})\n", a.dump, dumps::kSchemaVersion,
             dump.complete() ? "complete" : "INCOMPLETE: the run stopped early");
  fmt::print("engine   {}{}, {}; stored as {}\n", meta.engine, meta.device.empty() ? "" : " on " + meta.device,
             meta.compute_dtype.empty() ? "compute dtype not stated" : meta.compute_dtype, meta.storage_dtype);
  fmt::print("model    {} (sha256 {})\n", meta.model_path, meta.model_sha256.substr(0, 16));
  fmt::print("rows     {} ({} prompt tokens, chunk {})\n\n", dump.rows(), meta.prompt_tokens.size(), meta.chunk_size);
  nlohmann::json report = {{"dump", a.dump}, {"complete", dump.complete()}, {"rows", dump.rows()}};
  report["tensors"] = stats_table(dump);
  if (a.top_k > 0) print_top_k(a, dump, dump_tokenizer(a, dump));
  if (slice) print_slice(a, dump, *slice);
  if (!a.json.empty()) model::write_text(a.json, "--json", report.dump(2) + "\n");
}

}  // namespace

void add_inspect_command(CLI::App& app, CliContext& context) {
  auto args = std::make_shared<InspectArgs>();
  CLI::App* cmd = app.add_subcommand("inspect", "Per-op statistics, top-k tokens and tensor slices of a dump");
  cmd->add_option(
         "dump", args->dump,
         "HDF5 dump written by tapdiff run (or a compatible writer), or an outside engine's safetensors / .npz "
         "dump (a file or a folder of per-step files: give --model)")
      ->required();
  cmd->add_option("--model", args->model,
                  "The model an imported dump ran (GGUF file, Hugging Face folder, synth:SHAPE)");
  add_load_options(*cmd, args->load);
  add_dump_input_options(*cmd, args->input);
  cmd->add_option("--top-k", args->top_k, "Show the K most likely tokens at --positions")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--positions", args->positions, "Positions for --top-k, e.g. 0,5,-1 (default: the last)");
  cmd->add_option("--slice", args->slice, "Print values of one tensor, LAYER/OP (e.g. 0/q_proj)");
  cmd->add_option("--rows", args->rows, "Rows of --slice, FIRST:END (END past the last row: up to it)")
      ->capture_default_str();
  cmd->add_option("--cols", args->cols, "Columns of --slice, FIRST:END (END past the last column: up to it)")
      ->capture_default_str();
  cmd->add_option("--vocab", args->vocab, "GGUF file whose vocabulary names the tokens (default: the dump's model)");
  cmd->add_option("--json", args->json, "Write the statistics table as JSON");
  cmd->callback([args, &context] {
    inspect(*args);
    context.exit_code = 0;
  });
}

}  // namespace tapdiff::cli
