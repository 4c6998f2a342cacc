#include "bench/timed_run.h"

#include <chrono>

#include "bench/bench_support.h"

namespace tapdiff::bench {

namespace {

// Wants every op and drops it; f16 bits are taken as they come, as an f16 dump takes them (not
// widened to f32 first).
class DiscardTap final : public model::Tap {
 public:
  bool wants(const model::TapKey&) const override { return true; }
  void record(const model::TapKey&, const model::HostTensor&) override {}
  bool record_f16(const model::TapKey&, const model::HalfRows&) override { return true; }
};

// Times run(), which returns its RunResult, in wall-clock and CPU seconds.
template <typename Run>
TimedRun timed(Run run) {
  TimedRun t;
  const double cpu_start = cpu_seconds();
  const auto start = std::chrono::steady_clock::now();
  t.run = run(t);
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  t.cpu_seconds = cpu_seconds() - cpu_start;
  return t;
}

}  // namespace

TimedRun timed_run(model::Engine& engine, const model::Graph& graph, const model::Model& m,
                   std::span<const std::int32_t> prompt, const model::RunOptions& options,
                   const std::optional<dumps::WriterOptions>& dump, const std::filesystem::path& dump_path) {
  TimedRun t = timed([&](TimedRun& r) {
    if (!dump) {
      model::NullTap none;
      return model::run_sequence(engine, graph, prompt, options, none);
    }
    dumps::RunMetadata meta;
    meta.engine = engine.name();
    meta.model_config = model::to_json(m.config());
    meta.prompt_tokens.assign(prompt.begin(), prompt.end());
    dumps::DumpWriter writer(dump_path.string(), meta, graph, dumps::TapFilter("all"), *dump);
    model::RunResult result = model::run_sequence(engine, graph, prompt, options, writer);
    writer.finish(nullptr);
    r.writer = writer.queue_stats();
    return result;
  });
  if (dump) {
    t.dump_bytes = std::filesystem::file_size(dump_path);
    std::filesystem::remove(dump_path);
  }
  return t;
}

TimedRun timed_read_back(model::Engine& engine, const model::Graph& graph, std::span<const std::int32_t> prompt,
                         const model::RunOptions& options) {
  return timed([&](TimedRun&) {
    DiscardTap discard;
    return model::run_sequence(engine, graph, prompt, options, discard);
  });
}

std::vector<std::int32_t> spread_prompt(int tokens, int vocab) {
  std::vector<std::int32_t> prompt(static_cast<std::size_t>(tokens));
  for (std::size_t i = 0; i < prompt.size(); ++i)
    prompt[i] = static_cast<std::int32_t>(3 + (i * 7919) % static_cast<std::size_t>(vocab - 3));
  return prompt;
}

}  // namespace tapdiff::bench
