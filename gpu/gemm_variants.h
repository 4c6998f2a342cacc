#pragma once
// The GEMM's tile kernels, one entry each (gpu/gemm_variants.cpp): the name each reports, its
// tile, its shader, how a fault is planted in it and how its grid lays the tiles out. KernelChoice
// picks a variant per product (gpu/kernel_choice.h), Kernels::matmul records it (gpu/kernels.h): a
// new tile kernel is a line of gpu/shaders/shaders.def, an entry here and its case in the choice.
// Gemm::matvec, the matrix-vector kernel of one-row products, has no entry: its grid follows the
// split of K that KernelChoice::matvec_split works out.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "gpu/shaders.h"

namespace tapdiff::gpu {

enum class Gemm : std::uint8_t { tiled, coop, coop_k16, coop2, coop2_wide, matvec };

struct GemmVariant {
  Gemm gemm;
  std::string_view family;  // the name before the tile: "matmul-tiled", ...
  std::string_view suffix;  // the name after the tile: "-k16", or ""
  std::uint32_t tile_rows, tile_cols;
  Shader shader;
  // A planted fault (kFaultGemmF16Accumulate): specialization constant 2 of the shader, or else
  // a build of its own (none: the variant takes no fault; KernelChoice::gemm avoids it then)
  bool faults_by_constant;
  std::optional<Shader> fault_build;
  bool dtype_constant;        // constant 0 is the weights' dtype (matmul-coop2 takes f16 weights only)
  bool rows_along_x;          // row tiles along x: workgroups next in line share a tile of W
  std::string label() const;  // "matmul-coop-128x128-k16"
};

// The tile kernels' entries (every Gemm but matvec).
const GemmVariant& gemm_variant(Gemm gemm);

}  // namespace tapdiff::gpu
