// tapdiff synth: write a deterministic random-weight Llama-family model (or mixture of experts) as GGUF.
#include <fmt/core.h>

#include "bisect/cli/commands.h"
#include "bisect/cli/option_checks.h"
#include "formats/family_spec.h"
#include "formats/synth.h"
#include "model/errors.h"

namespace tapdiff::cli {
namespace {

struct SynthArgs {
  std::string out;
  std::string shape = "tiny";
  std::string dtype = "f32";
  std::string arch;  // empty: the shape's
  int layers = 0, dim = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn = 0, vocab = 0, context = 0;
  double rope_base = 0;
  std::uint64_t seed = 1;
  int outliers = 0;
  double outlier_scale = 30;
  bool tied = false;
};

void run_synth(const SynthArgs& a) {
  formats::SynthOptions o;
  o.config = formats::synth_shape(a.shape);
  auto set = [](int& field, int value) {
    if (value > 0) field = value;
  };
  if (a.layers > 0) formats::set_synth_layers(o.config, a.layers);
  set(o.config.dim, a.dim), set(o.config.n_heads, a.heads);
  set(o.config.n_kv_heads, a.kv_heads), set(o.config.head_dim, a.head_dim), set(o.config.ffn_dim, a.ffn);
  set(o.config.vocab, a.vocab), set(o.config.context_length, a.context);
  if (a.heads > 0 && a.kv_heads == 0) o.config.n_kv_heads = a.heads;
  if (a.rope_base > 0) o.config.rope_base = a.rope_base;
  if (!a.arch.empty()) {
    const auto family = formats::family_named(a.arch);
    if (!family)
      throw UsageError(fmt::format("--arch: expected {}, found '{}'", formats::synth_architectures(), a.arch));
    o.config.family = *family;
  }
  o.config.tied_output = a.tied;
  if (!formats::set_synth_storage(o, a.dtype))
    throw UsageError(fmt::format("--dtype: expected one of {}, found '{}'", formats::synth_storage_names(), a.dtype));
  o.seed = a.seed;
  o.outlier_channels = a.outliers;
  o.outlier_scale = a.outlier_scale;
  formats::write_synth_model(a.out, o);
  const auto& c = o.config;
  fmt::print("wrote {}: {} {} layers, dim {}, heads {}/{} of {}, ffn {}, vocab {}, {} weights, seed {}\n", a.out,
             model::family_name(c.family), c.n_layers, c.dim, c.n_heads, c.n_kv_heads, c.head_dim, c.ffn_dim, c.vocab,
             a.dtype, a.seed);
}

}  // namespace

void add_synth_command(CLI::App& app, CliContext& context) {
  auto args = std::make_shared<SynthArgs>();
  CLI::App* cmd = app.add_subcommand("synth", "Write a deterministic random-weight Llama model (GGUF)");
  cmd->add_option("-o,--out", args->out, "Output GGUF file")->required();
  cmd->add_option("--shape", args->shape,
                  "Starting shape: tiny, small, tinyllama, llama3-8b, the mixtures of experts tiny-moe, "
                  "qwen3-30b-a3b, gpt-oss-20b, or latent attention's tiny-mla, deepseek-v3")
      ->capture_default_str();
  cmd->add_option("--layers", args->layers, "Number of layers")->check(CLI::PositiveNumber);
  cmd->add_option("--dim", args->dim, "Residual stream width")->check(CLI::PositiveNumber);
  cmd->add_option("--heads", args->heads, "Query heads")->check(CLI::PositiveNumber);
  cmd->add_option("--kv-heads", args->kv_heads, "Key/value heads (default: --heads)")->check(CLI::PositiveNumber);
  cmd->add_option("--head-dim", args->head_dim, "Channels per head")->check(CLI::PositiveNumber);
  cmd->add_option("--ffn", args->ffn, "FFN hidden width")->check(CLI::PositiveNumber);
  cmd->add_option("--vocab", args->vocab, "Vocabulary size")->check(CLI::PositiveNumber);
  cmd->add_option("--context", args->context, "Context length recorded in the file")->check(CLI::PositiveNumber);
  cmd->add_option("--rope-base", args->rope_base, "RoPE base (theta)")->check(finite_positive());
  cmd->add_option("--arch", args->arch,
                  formats::synth_architectures() +
                      " (a mixture of experts' only with an experts shape); default: the shape's (qwen3moe for the "
                      "mixtures of experts)");
  cmd->add_option(
         "--dtype", args->dtype,
         "Matrix storage: f32, f16, bf16, a ggml block type (q8_0 ... iq4_xs), or llama.cpp's q4_k_m / q5_k_m mix")
      ->capture_default_str();
  cmd->add_option("--seed", args->seed, "Random seed")->capture_default_str();
  cmd->add_option("--outliers", args->outliers, "Residual channels with large activations")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--outlier-scale", args->outlier_scale, "Magnitude of the outlier channels")
      ->check(finite_positive())
      ->capture_default_str();
  cmd->add_flag("--tied", args->tied, "Tie the output matrix to the embedding");
  cmd->callback([args, &context] {
    run_synth(*args);
    context.exit_code = 0;
  });
}

}  // namespace tapdiff::cli
