#include "bench/op_profile.h"

#include <array>

#include <fmt/core.h>

#include "bench/timed_run.h"

namespace tapdiff::bench {
namespace {

using OpSeconds = std::array<double, model::kOpCount>;

OpSeconds minus(const OpSeconds& a, const OpSeconds& b) {
  OpSeconds d{};
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = a[i] - b[i];
  return d;
}

double total(const OpSeconds& s) {
  double sum = 0;
  for (const double v : s) sum += v;
  return sum;
}

struct Profile {
  OpSeconds prefill{};   // device seconds of the prefill, per op
  OpSeconds step{};      // device seconds of one decode step, per op
  double step_wall = 0;  // wall seconds of one decode step of the profiled run
};

Profile profile(gpu::VulkanEngine& engine, const model::Graph& graph, const model::Model& m,
                const std::vector<std::int32_t>& prompt, int decode_steps) {
  model::RunOptions prefill_only, decode;
  prefill_only.generate = 1;  // the first token comes from the prefill's logits
  decode.generate = decode_steps + 1;
  engine.set_profiling(true);
  const OpSeconds s0 = engine.stats().op_seconds;
  timed_run(engine, graph, m, prompt, prefill_only, {}, {});
  const OpSeconds s1 = engine.stats().op_seconds;
  const TimedRun run = timed_run(engine, graph, m, prompt, decode, {}, {});
  const OpSeconds s2 = engine.stats().op_seconds;
  engine.set_profiling(false);
  Profile p;
  p.prefill = minus(s1, s0);
  p.step = minus(minus(s2, s1), p.prefill);  // the same prefill again, then the steps
  for (double& v : p.step) v /= decode_steps;
  p.step_wall = run.run.decode_seconds / run.run.decode_steps;
  return p;
}

}  // namespace

std::string op_profile_section(std::span<const ProfiledEngine> engines, const model::Graph& graph,
                               const model::Model& m, const std::vector<std::int32_t>& prompt, int decode_steps) {
  std::vector<Profile> profiles;
  for (const ProfiledEngine& e : engines) profiles.push_back(profile(*e.engine, graph, m, prompt, decode_steps));
  std::string out = fmt::format(
      "Device time per op (timestamps after every op, one profiled run per variant): the {}-token prefill in ms and "
      "one of the {} decode steps after it in us, summed over the layers, with each op's share. An op's time runs "
      "from the end of the op before it, so the device idling for the host counts to the op after the wait (the "
      "first of a layer, attn_norm, when the host records more slowly than the device runs)\n\n| op |",
      prompt.size(), decode_steps);
  for (const ProfiledEngine& e : engines) out += fmt::format(" `{}` prefill ms | decode us |", e.name);
  out += "\n|---|";
  for (std::size_t i = 0; i < engines.size(); ++i) out += "---|---|";
  out += "\n";
  for (const model::Op op : model::kAllOps) {
    out += fmt::format("| {} |", model::op_name(op));
    for (const Profile& p : profiles) {
      const auto i = static_cast<std::size_t>(op);
      out += fmt::format(" {:.2f} ({:.0f}%) | {:.0f} ({:.0f}%) |", 1e3 * p.prefill[i],
                         100 * p.prefill[i] / total(p.prefill), 1e6 * p.step[i], 100 * p.step[i] / total(p.step));
    }
    out += "\n";
  }
  out += "| **device total** |";
  for (const Profile& p : profiles)
    out += fmt::format(" {:.2f} | {:.0f} |", 1e3 * total(p.prefill), 1e6 * total(p.step));
  out += "\n| wall, profiled decode step |";
  for (const Profile& p : profiles) out += fmt::format(" | {:.0f} |", 1e6 * p.step_wall);
  return out + "\n";
}

}  // namespace tapdiff::bench
