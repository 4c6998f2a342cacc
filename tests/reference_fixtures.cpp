#include "tests/reference_fixtures.h"

#include "formats/synth.h"
#include "model/per_sequence_engine.h"

namespace tapdiff::testing {

std::filesystem::path synth_model_path(const std::string& shape, const std::string& dtype, int context) {
  formats::SynthOptions options;
  options.config = formats::synth_shape(shape);
  if (context > 0) options.config.context_length = context;
  options.dtype = *model::dtype_from_name(dtype);
  return synth_model_path(options, "synth-" + shape + "-" + dtype);
}

std::filesystem::path synth_model_path(const formats::SynthOptions& options, const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / "tapdiff-tests" / "models";
  const auto path = dir / (name + "-" + formats::synth_digest(options) + ".gguf");
  if (std::filesystem::exists(path)) return path;
  std::filesystem::create_directories(dir);
  formats::write_synth_model(path, options);  // parallel test processes: renamed into place whole
  return path;
}

std::vector<std::int32_t> synth_prompt(int n, int vocab, std::uint32_t seed) {
  std::vector<std::int32_t> tokens{1};
  std::uint32_t x = seed;
  while (static_cast<int>(tokens.size()) < n) {
    x = x * 1664525u + 1013904223u;
    tokens.push_back(static_cast<std::int32_t>(3 + (x >> 8) % static_cast<std::uint32_t>(vocab - 3)));
  }
  return tokens;
}

std::vector<std::int32_t> stories_golden_prompt() { return {1, 403, 407, 261, 378}; }

std::vector<std::int32_t> stories_golden_tokens() {
  return {432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267, 337, 410, 408, 419, 292,
          411, 322, 265, 282, 295, 433, 426, 385, 328, 432, 358, 394, 261, 370, 432, 352, 266, 268, 388, 426,
          338, 391, 266, 267, 337, 335, 312, 432, 398, 312, 286, 267, 414, 270, 333, 415, 426, 13,  438, 310};
}

reference::CpuEngineOptions exact_options(model::Scalar scalar, int threads) {
  return {scalar == model::Scalar::f64 ? model::Precision::f64 : model::Precision::f32, threads};
}

std::unique_ptr<TappedRun> run_reference(const model::Model& m, const std::vector<std::int32_t>& tokens,
                                         model::Scalar scalar, int chunk, int generate,
                                         std::function<bool(const model::TensorId&)> filter) {
  return run_reference(m, tokens, exact_options(scalar), chunk, generate, std::move(filter));
}

std::unique_ptr<TappedRun> run_reference(const model::Model& m, const std::vector<std::int32_t>& tokens,
                                         const reference::CpuEngineOptions& engine_options, int chunk, int generate,
                                         std::function<bool(const model::TensorId&)> filter) {
  auto run = std::make_unique<TappedRun>();
  run->tap = model::MemoryTap(std::move(filter));
  const auto engine = reference::make_cpu_engine(m, engine_options);
  const model::Graph graph(m.config());
  model::RunOptions options;
  options.chunk = chunk;
  options.generate = generate;
  run->result = model::run_sequence(*engine, graph, tokens, options, run->tap);
  return run;
}

std::unique_ptr<model::Model> model_with_config(const model::Model& base, const model::ModelConfig& config,
                                                std::function<bool(model::WeightKind)> keep) {
  config.validate("a test's config");
  auto m = std::make_unique<model::Model>(base.path(), config);
  for (const auto& [key, t] : base.tensors())
    if (key.second < config.n_layers && (!keep || keep(key.first))) m->add(key.first, key.second, t);
  return m;
}

double nmse(const model::HostTensor& a, const model::HostTensor& b) {
  double err = 0, ref = 0;
  for (std::int64_t r = 0; r < a.rows(); ++r)
    for (std::int64_t c = 0; c < a.cols(); ++c) {
      const double x = a.at(r, c), d = x - b.at(r, c);
      err += d * d, ref += x * x;
    }
  return ref > 0 ? err / ref : err;
}

std::unique_ptr<model::Engine> reference_per_sequence(const model::Model& m, model::Scalar scalar,
                                                      std::size_t sequences) {
  return model::engine_per_sequence(sequences, [&] { return reference::make_cpu_engine(m, exact_options(scalar)); });
}

}  // namespace tapdiff::testing
