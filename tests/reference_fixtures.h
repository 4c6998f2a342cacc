#pragma once
// Models and runs shared by the reference-engine tests.
#include <filesystem>
#include <memory>
#include <vector>

#include "formats/synth.h"
#include "model/memory_tap.h"
#include "model/runner.h"
#include "model/weights.h"
#include "reference/cpu_engine.h"

namespace tapdiff::testing {

// A synth model of the given shape name written once per test process into the temp folder.
// The reference computing in scalar (f64 or f32), nothing emulated.
reference::CpuEngineOptions exact_options(model::Scalar scalar, int threads = 0);

std::filesystem::path synth_model_path(const std::string& shape, const std::string& dtype = "f32", int context = 0);
// A synth model of these options, written once per options into the temp folder (its name starts
// with `name`); safe when test processes ask for it at once.
std::filesystem::path synth_model_path(const formats::SynthOptions& options, const std::string& name);

// n deterministic token ids: BOS, then pseudo-random ids in [3, vocab).
std::vector<std::int32_t> synth_prompt(int n, int vocab, std::uint32_t seed);

// "Once upon a time" as stories260K's tokenizer encodes it: BOS + 4 pieces.
std::vector<std::int32_t> stories_golden_prompt();
// The 60 greedy tokens after "Once upon a time" listed in ../shared/models/README.md.
std::vector<std::int32_t> stories_golden_tokens();

// Runs the reference engine over tokens with the given chunking, taps the ops the filter keeps.
struct TappedRun {
  model::MemoryTap tap;
  model::RunResult result;
};
std::unique_ptr<TappedRun> run_reference(const model::Model& m, const std::vector<std::int32_t>& tokens,
                                         model::Scalar scalar, int chunk, int generate,
                                         std::function<bool(const model::TensorId&)> filter = {});
// The same with any engine options (the f16 emulation).
std::unique_ptr<TappedRun> run_reference(const model::Model& m, const std::vector<std::int32_t>& tokens,
                                         const reference::CpuEngineOptions& engine, int chunk, int generate,
                                         std::function<bool(const model::TensorId&)> filter = {});

// The reference engine in `scalar` for `sequences` sequences: one engine, or one per sequence of a
// batch (model::engine_per_sequence).
std::unique_ptr<model::Engine> reference_per_sequence(const model::Model& m, model::Scalar scalar,
                                                      std::size_t sequences);

// A model of base's weights under `config` (validated): what synth cannot write. Its tensors stay in
// base's files, which must outlive it; `keep` says which it takes (all where empty).
std::unique_ptr<model::Model> model_with_config(const model::Model& base, const model::ModelConfig& config,
                                                std::function<bool(model::WeightKind)> keep = {});

// sum (a-b)^2 / sum a^2 over two tensors of the same shape.
double nmse(const model::HostTensor& a, const model::HostTensor& b);

}  // namespace tapdiff::testing
