#pragma once
// attention-coop2: the prefill attention of attention_coop.comp (same bindings, push constants and
// row table; gpu/shaders/attention_rows.glsl) on VK_NV_cooperative_matrix2, written as SPIR-V
// (gpu/spirv_module.h) as matmul-coop2 is: Debian 12's glslang has no GLSL for the extension.
//
// A workgroup of 128 takes 64 (query row, head) pairs that read the same K/V head (the heads of a
// GQA group side by side, as take_tile() lays them out) and holds, as workgroup-scope matrices:
// their q (pairs x HD f16, staged through shared memory), the running row max m and sum l (pairs x
// BC f32, every column of a row the same value) and the sums of p v (pairs x HD f32). The tiles of
// BC cache rows from the first any pair sees to the last run in three loops: the tiles some pair
// does not wholly see before the first every pair sees whole (a window's start), the whole tiles
// (no mask, no clamped reads: the hot loop has no branch), then the rest (the diagonal). Per tile:
//   K and V of the tile are read, both before the softmax, through an unclamped tensor layout, or
//   where the tile runs past the last row any pair sees a clamped one that reads zeros there;
//   S = q K^T; s' = s * scale * log2(e), -inf where the pair does not see the key (a per-element
//   function that reads the pair's visible range, in the two masked loops);
//   m' = max(m, row max of s'), p = exp2(s' - m'), a = exp2(m - m') (0 while m' is -inf: the row
//   has seen no key), l = l a + P 1 (the row sums of p, on the tensor cores), O = O a + P V.
// P goes into the tensor cores as two f16 matrices, hi (p cut to 11 significant bits) and lo =
// f16(p - hi), so p keeps ~22 bits, as attention_coop.comp does. out = O / l, rounded once to f16
// (ties to even, subnormals kept, as the module declares), staged through shared memory and
// written to each pair's row and head. The row reductions and the order of every sum are the
// driver's, fixed: deterministic.
//
// HD and BC are specialization constants 3 and 4: BC = coop2_attention_keys(HD). Every pairs x BC
// matrix takes registers of its own (S, P and its halves, m, l, a), so the tile of keys is short:
// 16 keys at HD 128 and 32 at HD 64, the fastest of the tiles measured at each. The three loops,
// which keep the mask and the clamped reads out of the hot loop, are faster than one loop with
// per-tile branches (gpu/README.md).
//
// Needs: what matmul-coop2 needs, and the extension's reductions and conversions
// (gpu/device_coop2.h); HD a multiple of 16 up to kCoop2AttentionMaxHeadDim. No faults, one split:
// the engine runs attention_coop.comp where a fault is planted.
#include <cstdint>
#include <vector>

namespace tapdiff::gpu {

struct Coop2AttentionTile {
  std::uint32_t rows = 64;  // (query row, head) pairs per workgroup
  std::uint32_t invocations = 128;
};

inline constexpr Coop2AttentionTile kCoop2AttentionTile{};
inline constexpr std::uint32_t kCoop2AttentionMaxHeadDim = 128;

// BC, the cache rows per tile, for head dimension hd (specialization constant 4).
inline constexpr std::uint32_t coop2_attention_keys(std::uint32_t hd) { return hd > 64 ? 16 : 32; }

std::vector<std::uint32_t> attention_coop2_spirv(const Coop2AttentionTile& tile);

}  // namespace tapdiff::gpu
