#pragma once
// matmul-coop2: Y[T, N] = X[T, K] W[N, K]^T (+ bias[N]) on tensor cores through
// VK_NV_cooperative_matrix2, f16 mode, f16 weights. Debian 12's glslang (12.0) has no GLSL for that
// extension, so the kernel is written here as SPIR-V (gpu/spirv_module.h), once per process.
//
// A workgroup computes a Tile (rows x cols of Y) as one workgroup-scope matrix of f32 sums. K
// advances in slices of `k`: the X rows and W rows of a slice are loaded as workgroup-scope matrices
// through tensor layouts (the driver stages them; W through a transposed view), `unroll` slices per
// loop pass. Tiles inside Y, with K a whole number of passes, use unclamped layouts; edge tiles load
// through layouts that read zeros past T, N and K and store only inside Y. Row strides are
// declared multiples of 8 values (the engine runs this kernel only where they are), so the driver
// reads 16-byte chunks. It runs the products faster than matmul-coop (gpu/README.md,
// docs/benchmarks.md).
//
// Numerics, as the other f16 kernels': f16 inputs, f32 sums (the order of the f32 additions inside
// the tensor cores is the driver's, fixed), the bias added after the sum (a per-element function,
// only where there is a bias), each output rounded once to f16 by the conversion, which the module
// declares ties-to-even with f16 subnormals kept (RoundingModeRTE 16, DenormPreserve 16): the
// rounding round_f16 computes in the other kernels, not a choice left to the driver. The
// gemm-f16-accum fault's build keeps f16 sums instead.
//
// Bindings: 0 W (f16), 1 X (f16), 2 bias (f32; read only when has_bias), 3 Y (f16). Push
// constants: rows (T), k, n, row_bytes (of W, a multiple of 16), has_bias.
#include <cstdint>
#include <vector>

namespace tapdiff::gpu {

struct Coop2Tile {
  std::uint32_t rows = 128;  // of Y per workgroup (T)
  std::uint32_t cols = 128;  // (N)
  std::uint32_t k = 64;      // K per slice
  std::uint32_t unroll = 4;  // slices per loop pass (a power of two with k)
  std::uint32_t invocations = 256;
};

// The engine's tiles (gpu/kernels.cpp); the device must list workgroup-scope f16 matrices for
// workgroups of `invocations` whose granularity divides rows, cols and k. The wide tile takes the
// products it makes at least kCoop2WideMinWorkgroups workgroups of: faster on those, slower on
// products that make fewer (docs/benchmarks.md).
inline constexpr Coop2Tile kCoop2Tile{};
inline constexpr Coop2Tile kCoop2WideTile{128, 256, 64, 4, 256};
inline constexpr std::uint64_t kCoop2WideMinWorkgroups = 128;

// The kernel's SPIR-V words: f32 sums, or f16 sums (the gemm-f16-accum fault).
std::vector<std::uint32_t> matmul_coop2_spirv(const Coop2Tile& tile, bool f16_sums);

}  // namespace tapdiff::gpu
