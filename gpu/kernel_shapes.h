#pragma once
// The shaders' layouts as the host must know them (each constant names where its shader declares
// it): tiles, workgroup sizes, shared memory, limits. Read by the choice of variants
// (gpu/kernel_choice.h) and by the grids of their dispatches (gpu/kernels.cpp).
#include <algorithm>
#include <cstdint>

namespace tapdiff::gpu {

inline constexpr std::uint32_t kTile = 64;           // matmul_tiled.comp: BM = BN
inline constexpr std::uint32_t kTiledThreads = 256;  // matmul_tiled.comp: local_size_x
inline constexpr std::uint32_t kTiledShared = 8192;  // matmul_tiled.comp: xs + ws bytes
// matmul_coop.comp's tile (COOP_*): subgroups along T and N, 16 x 16 fragments per subgroup along
// T and N, the K slice and the padding of a staged row in halves.
inline constexpr std::uint32_t kCoopSubgroupsM = 2, kCoopSubgroupsN = 4, kCoopFragsM = 4, kCoopFragsN = 2;
inline constexpr std::uint32_t kCoopSlice = 32, kCoopPad = 8;
// The subgroup size it is laid out for, its tile (BM x BN) and its workgroup size.
inline constexpr std::uint32_t kCoopSubgroup = 32;
inline constexpr std::uint32_t kCoopRows = kCoopSubgroupsM * kCoopFragsM * 16;
inline constexpr std::uint32_t kCoopCols = kCoopSubgroupsN * kCoopFragsN * 16;
inline constexpr std::uint32_t kCoopSubgroups = kCoopSubgroupsM * kCoopSubgroupsN;
inline constexpr std::uint32_t kCoopThreads = kCoopSubgroup * kCoopSubgroups;
// Bytes of shared memory: two staged slices of f16, or one 16 x 16 f32 fragment per subgroup (the
// slices of 32, the larger build).
inline constexpr std::uint32_t kCoopShared =
    std::max(2 * (kCoopRows + kCoopCols) * (kCoopSlice + kCoopPad) * 2, kCoopSubgroups * 16 * 16 * 4);
inline constexpr std::uint32_t kMatvecSubgroups = 4;  // matvec.comp SUBGROUP: subgroups per workgroup at most
// matvec.comp SUBGROUP splits K over more subgroups per output until a product has this many
// subgroups (an H100 keeps 132 x 64 subgroups of 32 resident), or each has one pass over K.
inline constexpr std::uint64_t kMatvecTargetSubgroups = 8192;
inline constexpr std::uint32_t kAttentionChannels = 4;   // attention.comp: CHANNELS
inline constexpr std::uint32_t kMaxHeadDim = 256;        // attention.comp: MAX_HEAD_DIM
inline constexpr std::uint32_t kFlashThreads = 128;      // attention_flash.comp: local_size_x
inline constexpr std::uint32_t kFlashRows = 32;          // attention_flash.comp: BR
inline constexpr std::uint32_t kFlashMaxHeadDim = 256;   // attention_flash.comp: OUT_COLS <= 4
inline constexpr std::uint32_t kCoopAttentionRows = 64;  // attention_coop.comp: BR, 4 subgroups of 16 ...
inline constexpr std::uint32_t kCoopAttentionKeys = 32;  // ... and BC
inline constexpr std::uint32_t kDecodeKeys = 32;         // attention_decode.comp: LANES, keys per tile ...
inline constexpr std::uint32_t kDecodeMaxPack = 16;      // ... and MAX_PACK, heads per K/V head at most
inline constexpr int kFlashMinRowsPerSequence = 16;      // fewer rows per sequence: split the keys
inline constexpr std::uint32_t kSplitMinKeys = 32;       // positions per split at least ...
inline constexpr std::uint32_t kMaxSplits = 64;          // ... and splits at most (attention_combine.comp: MAX_SPLITS)
inline constexpr int kMaxActiveExperts = 64;             // moe_route.comp: MAX_K
inline constexpr int kMaxExpertGroups = 64;              // moe_route.comp: MAX_GROUPS
inline constexpr int kMaxPlanExperts = 256;              // moe_plan.comp: MAX_EXPERTS (more: the products run per pair)
inline constexpr int kMaxKeptPositions = 2048;           // index_topk.comp: MAX_KEPT
inline constexpr std::uint64_t kExpertTile = 64;         // moe_plan.comp: TILE, matmul_tiled.comp: BM and BN

// The widest heads the cooperative-matrix and the decode attention take (the decode kernel: HD4 <=
// LANES); flash's tiles meet the device's shared memory before kFlashMaxHeadDim (kernel_choice.cpp).
inline constexpr std::uint32_t kCoopAttentionMaxHeadDim = 128;  // attention_coop.comp
inline constexpr std::uint32_t kDecodeMaxHeadDim = 128;         // attention_decode.comp

}  // namespace tapdiff::gpu
