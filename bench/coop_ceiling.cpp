// Where the cooperative-matrix GEMM's time goes, without a profiler: matmul_coop.comp's probe build
// takes the parts of its slice loop away one at a time (reads from memory, shared-memory stores,
// the barrier, the fragment loads), down to the tensor-core products alone, and each level is timed
// with device timestamps on the GEMM shapes of a model, side by side in every round. The gap
// between two levels is what the part taken away costs; the last level is the ceiling the
// products themselves set through VK_NV_cooperative_matrix on this driver. The engine's own choice
// (matmul-coop2 where the device offers VK_NV_cooperative_matrix2, its tile by the product's size),
// matmul-coop2 with each of its tiles forced and matmul-coop forced run in the same rounds.
//   tapdiff_bench_coop [--shapes 2048x4096x14336,...] [--repeats 5] [--device D]
//                      [--markdown docs/benchmarks.md --section NAME]
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "bench/bench_support.h"
#include "bench/pipeline_statistics.h"
#include "gpu/device.h"
#include "gpu/device_weights.h"
#include "gpu/instance.h"
#include "gpu/kernels.h"
#include "gpu/pipelines.h"
#include "gpu/stream.h"
#include "model/comma_list.h"
#include "model/dtype.h"
#include "model/errors.h"

namespace {

namespace bench = tapdiff::bench;
namespace gpu = tapdiff::gpu;

struct Shape {
  int rows = 0;           // T
  std::int64_t k = 0;     // K
  std::int64_t cols = 0;  // N
};

// "TxKxN"; UsageError naming the option otherwise.
Shape parse_shape(const std::string& text) {
  Shape s;
  long long t = 0, k = 0, n = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%lldx%lldx%lld%c", &t, &k, &n, &tail) != 3 || t <= 0 || k <= 0 || n <= 0 ||
      t > (1 << 20) || k % 8 != 0)
    throw tapdiff::UsageError(fmt::format(
        "--shapes: expected TxKxN (positive, K a multiple of 8, such as 2048x4096x14336), found '{}'", text));
  s.rows = static_cast<int>(t);
  s.k = k;
  s.cols = n;
  return s;
}

// What each timed row runs: Kernels::matmul with the engine's choice of kernel or a forced one, or
// the probe build at a level.
struct Level {
  int probe = -1;  // -1: Kernels::matmul with `kernels` (--kernels overrides; "": the engine's choice)
  const char* what;
  const char* kernels = "";
};
// The attention heads the kernels are chosen for (the products measured here have none of their own).
constexpr std::array<gpu::HeadShape, 1> kHeads{{{128, 1}}};

constexpr Level kLevels[] = {
    {-1, "the engine's kernel"},
    {-1, "matmul-coop2, 128 x 128 forced", "matmul=coop2-128x128"},
    {-1, "matmul-coop2, 128 x 256 forced", "matmul=coop2-128x256"},
    {-1, "matmul-coop, forced", "matmul=coop"},
    {0, "probe 0: the 32-slice kernel, whole"},
    {1, "1: no reads from memory (slices made up in registers)"},
    {2, "2: nor shared-memory stores"},
    {3, "3: nor a barrier per slice"},
    {4, "4: nor fragment loads: the products alone"},
};

// Uploads n pseudo-random f16 values in [-1, 1) into a new region of the arena.
gpu::Region random_f16(gpu::Arena& arena, gpu::Stream& stream, std::uint64_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<std::uint16_t> bits(n);
  for (std::uint16_t& b : bits) b = tapdiff::model::f32_to_f16(dist(rng));
  const gpu::Region r = arena.allocate(n * 2, "benchmark operands");
  stream.upload(bits.data(), n * 2, r);
  stream.flush();
  return r;
}

// "same bits", or how many of the f16 outputs differ; "-" for a level whose products are garbage.
std::string same_bits(const std::vector<std::uint16_t>& y, const std::vector<std::uint16_t>& engine) {
  if (y.empty()) return "-";
  std::size_t differ = 0;
  for (std::size_t i = 0; i < y.size(); ++i) differ += y[i] != engine[i] ? 1 : 0;
  return differ == 0 ? "same bits" : fmt::format("**{} of {} values differ**", differ, y.size());
}

}  // namespace

int main(int argc, char** argv) try {
  std::string shape_list = "2048x4096x14336,2048x4096x4096,2048x4096x1024,2048x14336x4096", device, markdown, section;
  int repeats = 5;
  CLI::App app{"Cooperative-matrix GEMM: the time of each part of its slice loop, on probe builds"};
  app.add_option("--shapes", shape_list, "Products TxKxN (rows, inner, columns), comma-separated")
      ->capture_default_str();
  app.add_option("--repeats", repeats, "Rounds after the warm-up round")->capture_default_str();
  app.add_option("--device", device, "Vulkan device (index or name substring)");
  app.add_option("--markdown", markdown, "Also write the result into this Markdown file");
  app.add_option("--section", section, "The section's name in --markdown (default: DEVICE-coop-ceiling)");
  CLI11_PARSE(app, argc, argv);
  if (repeats < 1) throw tapdiff::UsageError(fmt::format("--repeats: expected at least 1, found {}", repeats));
  std::vector<Shape> shapes;
  for (std::string_view s : tapdiff::model::split_commas(shape_list)) shapes.push_back(parse_shape(std::string(s)));

  const auto instance = gpu::shared_instance(gpu::InstanceOptions{});
  const gpu::Device dev(*instance, gpu::select_device(gpu::devices_of(*instance), device),
                        gpu::DeviceNeeds{true, true});
  gpu::Pipelines pipelines(dev, gpu::Activations::f16);
  gpu::Stream stream(dev);
  const gpu::DeviceProfile profile = gpu::device_profile(dev, gpu::Activations::f16, std::array{128});
  gpu::Kernels kernels(gpu::KernelChoice(profile, {}, kHeads, tapdiff::model::Block{}), pipelines);
  std::vector<std::unique_ptr<gpu::Kernels>> forced(std::size(kLevels));  // the levels that force a kernel
  for (std::size_t l = 0; l < std::size(kLevels); ++l)
    if (*kLevels[l].kernels != 0)
      forced[l] = std::make_unique<gpu::Kernels>(
          gpu::KernelChoice(profile, gpu::parse_kernel_overrides(kLevels[l].kernels), kHeads, tapdiff::model::Block{}),
          pipelines);
  gpu::Arena arena(dev, "operands", gpu::MemoryKind::device_local, 64ull << 20);
  stream.set_timestamps(true);

  std::string out = fmt::format(
      "Machine: {}; CPU {} ({} hardware threads); {}.\n\nCommand: `tapdiff_bench_coop --shapes {} --repeats {}`\n\n"
      "Device milliseconds per product (timestamps), median (min - max) of {} rounds after a warm-up round, each "
      "round every level in turn; TFLOP/s counts the product's 2 T K N whatever the level leaves out.\n\n"
      "| product T x K x N | level | ms | TFLOP/s | x probe 0's time | Y as the engine's kernel's |\n"
      "|---|---|---|---|---|---|\n",
      gpu::summary(dev.info()), bench::cpu_model(), std::thread::hardware_concurrency(), bench::today(), shape_list,
      repeats, repeats);
  std::uint32_t seed = 1;
  for (const Shape& shape : shapes) {
    arena.reset();
    gpu::DeviceWeight w;
    w.name = "W";
    w.dtype = tapdiff::model::DType::f16;
    w.rows = shape.cols;
    w.cols = shape.k;
    w.row_bytes = static_cast<std::uint32_t>(shape.k * 2);
    w.region = random_f16(arena, stream, static_cast<std::uint64_t>(shape.cols * shape.k), seed++);
    const gpu::Region x = random_f16(arena, stream, static_cast<std::uint64_t>(shape.rows) * shape.k, seed++);
    const gpu::Region y = arena.allocate(static_cast<std::uint64_t>(shape.rows) * shape.cols * 2, "the product");
    std::vector<std::vector<double>> ms(std::size(kLevels));
    // The warm-up round's products of the whole kernels (the engine's and probe level 0), compared
    // with the engine's bit for bit: a faster build must compute the same sums.
    std::vector<std::vector<std::uint16_t>> product(std::size(kLevels));
    std::vector<std::string> ran(std::size(kLevels));
    for (int round = 0; round <= repeats; ++round) {
      for (std::size_t l = 0; l < std::size(kLevels); ++l) {
        if (kLevels[l].probe < 0)
          ran[l] = gpu::to_string((forced[l] ? *forced[l] : kernels).matmul(stream, x, w, nullptr, y, shape.rows, 0));
        else
          kernels.matmul_coop_probe(stream, x, w, y, shape.rows, static_cast<std::uint32_t>(kLevels[l].probe));
        stream.mark([&, l, round](double s) {
          if (round > 0) ms[l].push_back(s * 1e3);
        });
        if (round == 0 && kLevels[l].probe <= 0)
          stream.download(y, [&, l](const std::byte* bytes) {
            product[l].resize(y.size / 2);
            std::memcpy(product[l].data(), bytes, y.size);
          });
      }
      stream.flush();
    }
    const double flop = 2.0 * shape.rows * static_cast<double>(shape.k) * static_cast<double>(shape.cols);
    const auto probe0 =
        std::find_if(std::begin(kLevels), std::end(kLevels), [](const Level& l) { return l.probe == 0; });
    const double whole = bench::median(ms[static_cast<std::size_t>(probe0 - std::begin(kLevels))]);
    for (std::size_t l = 0; l < std::size(kLevels); ++l) {
      const double m = bench::median(ms[l]);
      const std::string what =
          kLevels[l].probe < 0 ? fmt::format("{} (`{}`)", kLevels[l].what, ran[l]) : kLevels[l].what;
      out += fmt::format("| {}x{}x{} | {} | {:.3f} ({:.3f} - {:.3f}) | {:.0f} | {:.2f} | {} |\n", shape.rows, shape.k,
                         shape.cols, what, m, bench::smallest(ms[l]), bench::largest(ms[l]), flop / (m * 1e-3) / 1e12,
                         m / whole, same_bits(product[l], product[0]));
    }
  }
  out += "\n" + bench::pipeline_statistics_section(pipelines.statistics(), dev.info().name, "tapdiff_bench_coop");
  fmt::print("{}", out);
  if (!markdown.empty())
    bench::write_section(markdown, section.empty() ? fmt::format("{}-coop-ceiling", dev.info().name) : section, out);
  return 0;
} catch (const std::exception& e) {
  fmt::print(stderr, "tapdiff_bench_coop: {}\n", e.what());
  return 2;
}
