#pragma once
// attention-coop2: the prefill attention of attention_coop.comp (same bindings, push constants and
// row table; gpu/shaders/attention_rows.glsl) on VK_NV_cooperative_matrix2, written as SPIR-V
// (gpu/spirv_module.h) as matmul-coop2 is: Debian 12's glslang has no GLSL for the extension.
//
// A workgroup takes `rows` (query row, head) pairs that read the same K/V head (the heads of a GQA
// group side by side, as take_tile() lays them out) and holds, as workgroup-scope matrices: their q
// (rows x HD f16, staged through shared memory), the running row max m and sum l (rows x keys f32,
// every column of a row the same value) and the sums of p v (rows x HD f32). For each tile of `keys`
// cache rows from the first any pair sees to the last:
//   S = q K^T (K and V read through a tensor layout that reads zeros past the last row any pair
//   sees); s' = s * scale * log2(e), -inf where the pair does not see the key (a per-element
//   function that reads the pair's visible range; skipped where every pair sees the whole tile);
//   m' = max(m, row max of s'), p = exp2(s' - m'), a = exp2(m - m') (0 while m' is -inf: the row
//   has seen no key), l = l a + row sum of p, O = O a + P V.
// P goes into the tensor cores as two f16 matrices, hi (p cut to 11 significant bits) and lo =
// f16(p - hi), so p keeps ~22 bits, as attention_coop.comp does. out = O / l, rounded once to f16
// (ties to even, subnormals kept, as the module declares), staged through shared memory and
// written to each pair's row and head. The row reductions and the order of every sum are the
// driver's, fixed: deterministic.
//
// Needs: what matmul-coop2 needs, and the extension's reductions and conversions
// (gpu/device_coop2.h); HD (specialization constant 3) a multiple of 16 up to kCoop2AttentionMaxHeadDim.
// No faults, one split: the engine runs attention_coop.comp where a fault is planted.
#include <cstdint>
#include <vector>

namespace tapdiff::gpu {

struct Coop2AttentionTile {
  std::uint32_t rows = 64;  // (query row, head) pairs per workgroup
  std::uint32_t keys = 64;  // cache rows per tile
  std::uint32_t invocations = 128;
};

inline constexpr Coop2AttentionTile kCoop2AttentionTile{};
inline constexpr std::uint32_t kCoop2AttentionMaxHeadDim = 128;

std::vector<std::uint32_t> attention_coop2_spirv(const Coop2AttentionTile& tile);

}  // namespace tapdiff::gpu
