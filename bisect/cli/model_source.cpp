#include "bisect/cli/model_source.h"

#include <unistd.h>

#include <fmt/core.h>

#include "model/cache_dir.h"
#include "model/errors.h"
#include "model/synth.h"

namespace tapdiff::cli {

std::filesystem::path resolve_model_path(const std::string& spec) {
  if (spec.rfind("synth:", 0) != 0) return spec;
  const std::string rest = spec.substr(6);
  const std::size_t colon = rest.find(':');
  const std::string shape = rest.substr(0, colon);
  const std::string dtype_name = colon == std::string::npos ? "f32" : rest.substr(colon + 1);
  model::SynthOptions options;
  options.config = model::synth_shape(shape);
  const auto dtype = model::dtype_from_name(dtype_name);
  if (!dtype)
    throw UsageError(fmt::format("--model {}: unknown dtype '{}' (f32, f16, bf16, q8_0, q4_0)", spec, dtype_name));
  options.dtype = *dtype;
  const std::filesystem::path dir = model::cache_dir();
  const std::filesystem::path path =
      dir / fmt::format("synth-{}-{}-{}.gguf", shape, dtype_name, model::synth_digest(options));
  if (std::filesystem::exists(path)) return path;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw EnvironmentError(fmt::format("{}: cannot create the model cache folder: {}", dir.string(), ec.message()));
  // Written under a temporary name and renamed, so a concurrent or interrupted run never sees half a file.
  const std::filesystem::path partial = path.string() + fmt::format(".partial-{}", ::getpid());
  model::write_synth_model(partial, options);
  std::filesystem::rename(partial, path);
  return path;
}

std::unique_ptr<model::Model> open_model(const std::string& spec) {
  return model::load_model(resolve_model_path(spec));
}

}  // namespace tapdiff::cli
