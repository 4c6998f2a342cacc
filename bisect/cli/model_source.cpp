#include "bisect/cli/model_source.h"

#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "formats/load_model.h"
#include "formats/synth.h"
#include "formats/weight_scan.h"
#include "model/cache_dir.h"
#include "model/errors.h"

namespace tapdiff::cli {

std::filesystem::path resolve_model_path(const std::string& spec) {
  if (spec.rfind("synth:", 0) != 0) return spec;
  const std::string rest = spec.substr(6);
  const std::size_t colon = rest.find(':');
  const std::string shape = rest.substr(0, colon);
  const std::string dtype_name = colon == std::string::npos ? "f32" : rest.substr(colon + 1);
  formats::SynthOptions options;
  options.config = formats::synth_shape(shape);
  if (!formats::set_synth_storage(options, dtype_name))
    throw UsageError(
        fmt::format("--model {}: unknown storage '{}' ({})", spec, dtype_name, formats::synth_storage_names()));
  const std::filesystem::path dir = model::cache_dir();
  const std::filesystem::path path =
      dir / fmt::format("synth-{}-{}-{}.gguf", shape, dtype_name, formats::synth_digest(options));
  if (std::filesystem::exists(path)) return path;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw EnvironmentError(fmt::format("{}: cannot create the model cache folder: {}", dir.string(), ec.message()));
  formats::write_synth_model(path, options);  // renamed into place whole: no reader sees half a file
  return path;
}

std::unique_ptr<model::Model> open_model(const std::string& spec, const formats::LoadOptions& options) {
  auto m = formats::load_model(resolve_model_path(spec), options);
  if (options.context_size > 0 && !m->config().rope_scaling.by_run_context)
    fmt::print(stderr,
               "tapdiff: warning: --context {} changes nothing for {}: only a GGUF's LongRoPE reads it (a Hugging Face "
               "folder's LongRoPE picks its factors per pass, as transformers does)\n",
               options.context_size, m->path().string());
  for (const formats::NonFiniteWeights& w : formats::find_non_finite_weights(*m))
    fmt::print(stderr, "tapdiff: warning: {}: tensor '{}' holds {} NaN and {} infinite values of {}\n",
               m->path().string(), w.tensor, w.nan, w.inf, w.values);
  return m;
}

void add_load_options(CLI::App& cmd, formats::LoadOptions& options) {
  cmd.add_option("--context", options.context_size,
                 "The context size the model runs with in the engine it is compared to (llama.cpp's n_ctx, -c): a "
                 "GGUF's LongRoPE (Phi-3) takes its long factors when it exceeds the original context")
      ->check(CLI::PositiveNumber);
}

void warn_past_context(const model::Model& m, std::size_t positions) {
  const int context = m.config().context_length;
  if (context > 0 && positions > static_cast<std::size_t>(context))
    fmt::print(stderr,
               "tapdiff: warning: the run reaches position {}, past the model's context length of {} ({}): "
               "positions beyond it were never trained\n",
               positions - 1, context, m.path().string());
}

}  // namespace tapdiff::cli
