#include "gpu/gemm_variants.h"

#include <array>

#include <fmt/core.h>

#include "gpu/kernel_shapes.h"
#include "gpu/matmul_coop2.h"
#include "model/errors.h"

namespace tapdiff::gpu {
namespace {

constexpr std::array<GemmVariant, 5> kGemmVariants = {{
    {Gemm::tiled, "matmul-tiled", "", kTile, kTile, Shader::matmul_tiled, true, std::nullopt, true, false},
    {Gemm::coop, "matmul-coop", "", kCoopRows, kCoopCols, Shader::matmul_coop, true, std::nullopt, true, true},
    {Gemm::coop_k16, "matmul-coop", "-k16", kCoopRows, kCoopCols, Shader::matmul_coop_k16, true, std::nullopt, true,
     true},
    {Gemm::coop2, "matmul-coop2", "", kCoop2Tile.rows, kCoop2Tile.cols, Shader::matmul_coop2, false,
     Shader::matmul_coop2_fault, false, true},
    {Gemm::coop2_wide, "matmul-coop2", "", kCoop2WideTile.rows, kCoop2WideTile.cols, Shader::matmul_coop2_wide, false,
     std::nullopt, false, true},
}};

}  // namespace

std::string GemmVariant::label() const { return fmt::format("{}-{}x{}{}", family, tile_rows, tile_cols, suffix); }

const GemmVariant& gemm_variant(Gemm gemm) {
  for (const GemmVariant& v : kGemmVariants)
    if (v.gemm == gemm) return v;
  TAPDIFF_ASSERT(false, "Gemm {} has no tile kernel", static_cast<int>(gemm));
  return kGemmVariants.front();
}

}  // namespace tapdiff::gpu
