// The SPIR-V writer (gpu/spirv_module.h) and the modules matmul-coop2 and attention-coop2 are
// (gpu/matmul_coop2.h, gpu/attention_coop2.h), taken apart word by word: no GPU needed. Whether a
// driver runs them and computes the right results is the op-conformance suite's
// (test_vulkan_ops.cpp, matmul=coop2 and attention=coop2 cases, skipped where the device lacks
// VK_NV_cooperative_matrix2).
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gpu/attention_coop2.h"
#include "gpu/matmul_coop2.h"
#include "gpu/spirv_module.h"

namespace tapdiff::testing {
namespace {

using gpu::spirv::Module;
using gpu::spirv::Section;

TEST(SpirvModule, StringsAreNulTerminatedAndPaddedToWholeWords) {
  EXPECT_EQ(gpu::spirv::string_words(""), (std::vector<std::uint32_t>{0}));
  EXPECT_EQ(gpu::spirv::string_words("abc"), (std::vector<std::uint32_t>{0x00636261}));
  EXPECT_EQ(gpu::spirv::string_words("main"), (std::vector<std::uint32_t>{0x6E69616D, 0}));
  EXPECT_EQ(gpu::spirv::string_words("GLSL.std.450").size(), 4u);
}

TEST(SpirvModule, SectionsComeInLayoutOrderWhateverTheOrderOfWriting) {
  Module m;
  const auto uint_type = m.id();
  m.set_uint_type(uint_type);
  m.add(Section::globals, 21, {uint_type, 32, 0});  // OpTypeInt
  const auto seven = m.u32(7);
  EXPECT_EQ(m.u32(7), seven);             // declared once
  m.add(Section::capabilities, 17, {1});  // OpCapability Shader, written last
  const std::vector<std::uint32_t> words = m.words(gpu::spirv::kVersion1_6);
  const std::vector<std::uint32_t> expected = {
      gpu::spirv::kMagic,
      gpu::spirv::kVersion1_6,
      0,
      3,
      0,  // bound: ids 1 and 2 handed out
      2u << 16 | 17,
      1,  // OpCapability first
      4u << 16 | 21,
      uint_type,
      32,
      0,  // then the globals in order
      4u << 16 | 43,
      uint_type,
      seven,
      7,
  };
  EXPECT_EQ(words, expected);
}

// Which instructions of the kernel define an id, and at which operand (0: result type first).
struct Defines {
  bool type;
  bool result;
};
const std::map<std::uint16_t, Defines> kKernelOps = {
    {10, {false, false}},
    {11, {false, true}},
    {12, {true, true}},
    {14, {false, false}},
    {15, {false, false}},
    {16, {false, false}},
    {17, {false, false}},
    {19, {false, true}},
    {20, {false, true}},
    {21, {false, true}},
    {22, {false, true}},
    {23, {false, true}},
    {29, {false, true}},
    {30, {false, true}},
    {32, {false, true}},
    {33, {false, true}},
    {42, {true, true}},
    {43, {true, true}},
    {44, {true, true}},
    {54, {true, true}},
    {55, {true, true}},
    {56, {false, false}},
    {59, {true, true}},
    {61, {true, true}},
    {65, {true, true}},
    {71, {false, false}},
    {72, {false, false}},
    {81, {true, true}},
    {115, {true, true}},
    {124, {true, true}},
    {128, {true, true}},
    {129, {true, true}},
    {132, {true, true}},
    {133, {true, true}},
    {167, {true, true}},
    {169, {true, true}},
    {170, {true, true}},
    {171, {true, true}},
    {172, {true, true}},
    {176, {true, true}},
    {178, {true, true}},
    {194, {true, true}},
    {197, {true, true}},
    {198, {true, true}},
    {199, {true, true}},
    {245, {true, true}},
    {246, {false, false}},
    {247, {false, false}},
    {248, {false, true}},
    {249, {false, false}},
    {250, {false, false}},
    {253, {false, false}},
    {254, {false, false}},
    {4456, {false, true}},
    {4459, {true, true}},
    {5367, {true, true}},
    {5368, {false, false}},
    {5369, {true, true}},
    {5370, {false, true}},
    {5371, {false, true}},
    {5372, {true, true}},
    {5373, {true, true}},
    {5374, {true, true}},
    {5375, {true, true}},
    {5377, {true, true}},
    // and those attention-coop2 adds
    {28, {false, true}},
    {50, {true, true}},
    {62, {false, false}},
    {80, {true, true}},
    {130, {true, true}},
    {131, {true, true}},
    {134, {true, true}},
    {136, {true, true}},
    {143, {true, true}},
    {174, {true, true}},
    {180, {true, true}},
    {224, {false, false}},
    {237, {true, true}},
    {239, {true, true}},
    {4457, {true, true}},
    {4458, {false, false}},
    {5366, {true, true}},
};

struct Walked {
  std::map<std::uint16_t, int> counts;  // instructions per opcode
  std::vector<std::uint32_t> local_size;
  std::string failure;  // "" when the stream is well formed
};

Walked walk(const std::vector<std::uint32_t>& words) {
  Walked w;
  if (words.size() < 5 || words[0] != gpu::spirv::kMagic) return {{}, {}, "no SPIR-V header"};
  const std::uint32_t bound = words[3];
  std::set<std::uint32_t> defined;
  for (std::size_t at = 5; at < words.size();) {
    const std::uint16_t opcode = words[at] & 0xFFFF;
    const std::uint32_t count = words[at] >> 16;
    if (count == 0 || at + count > words.size())
      return {{}, {}, "an instruction runs past the end at word " + std::to_string(at)};
    const auto op = kKernelOps.find(opcode);
    if (op == kKernelOps.end()) return {{}, {}, "opcode " + std::to_string(opcode) + " is not one the kernel uses"};
    if (op->second.result) {
      const std::uint32_t id = words[at + (op->second.type ? 2 : 1)];
      if (id == 0 || id >= bound) return {{}, {}, "id " + std::to_string(id) + " outside the bound"};
      if (!defined.insert(id).second) return {{}, {}, "id " + std::to_string(id) + " defined twice"};
    }
    if (opcode == 16 && words[at + 2] == 17) w.local_size.assign(words.begin() + at + 3, words.begin() + at + count);
    ++w.counts[opcode];
    at += count;
  }
  if (defined.size() + 1 != bound) w.failure = "ids handed out but not defined";
  return w;
}

TEST(MatmulCoop2Spirv, IsWellFormedWithOneProductPerSliceOfEachLoop) {
  for (const bool f16_sums : {false, true}) {
    const gpu::Coop2Tile tile{128, 64, 32, 8, 128};
    const Walked w = walk(gpu::matmul_coop2_spirv(tile, f16_sums));
    ASSERT_EQ(w.failure, "") << "f16 sums " << f16_sums;
    EXPECT_EQ(w.local_size, (std::vector<std::uint32_t>{128, 1, 1}));
    EXPECT_EQ(w.counts.at(4459), 8 + 1);            // products: the unrolled pass, the edge loop's slice
    EXPECT_EQ(w.counts.at(5367), 2 * (8 + 1));      // a load of X and one of W each
    EXPECT_EQ(w.counts.at(5368), 2);                // the tile's store: unclamped inside Y, clamped at its edges
    EXPECT_EQ(w.counts.at(5372), 6);                // layouts of X, W and Y: unclamped and clamped each
    EXPECT_EQ(w.counts.at(246), 2);                 // two loops
    EXPECT_EQ(w.counts.at(4456), 4);                // A, B and the sums in f32 and in f16
    EXPECT_EQ(w.counts.at(115), f16_sums ? 2 : 1);  // the f16 sums widened before the epilogue
  }
}

TEST(MatmulCoop2Spirv, TheFaultBuildDiffersFromTheCleanOne) {
  EXPECT_NE(gpu::matmul_coop2_spirv(gpu::kCoop2Tile, false), gpu::matmul_coop2_spirv(gpu::kCoop2Tile, true));
  EXPECT_EQ(gpu::matmul_coop2_spirv(gpu::kCoop2Tile, false), gpu::matmul_coop2_spirv(gpu::kCoop2Tile, false));
}

// Three loops over the tiles of keys (masked, whole, masked), each with the tile's five products
// and two row reductions.
TEST(AttentionCoop2Spirv, IsWellFormedWithThreeTileLoopsOfFiveProductsAndTwoRowReductions) {
  const Walked w = walk(gpu::attention_coop2_spirv(gpu::kCoop2AttentionTile));
  ASSERT_EQ(w.failure, "");
  EXPECT_EQ(w.local_size, (std::vector<std::uint32_t>{gpu::kCoop2AttentionTile.invocations, 1, 1}));
  EXPECT_EQ(w.counts.at(4459), 15);  // S = q K^T, then P's hi and lo halves times the ones and times V
  EXPECT_EQ(w.counts.at(5367), 10);  // K and V: unclamped or clamped in the masked loops, unclamped in the whole one
  EXPECT_EQ(w.counts.at(5366), 7);   // the row max and a spread over the head dimension; l spread once
  EXPECT_EQ(w.counts.at(5369), 14);  // m', p, a, hi; the mask in the masked loops only
  EXPECT_EQ(w.counts.at(246), 5);    // q in, the three runs of tiles, out
  EXPECT_EQ(w.counts.at(4456), 8);   // q, K^T, V, S, P, O in f32 and in f16, the ones
  EXPECT_EQ(w.counts.at(50), 2);     // the head dimension and the keys per tile (constants 3 and 4)
  EXPECT_EQ(w.counts.at(224), 4);    // barriers: the bounds, q staged, before and after out is staged
}

TEST(AttentionCoop2Spirv, TheTileShapesTheModule) {
  EXPECT_EQ(gpu::attention_coop2_spirv(gpu::kCoop2AttentionTile), gpu::attention_coop2_spirv(gpu::kCoop2AttentionTile));
  EXPECT_NE(gpu::attention_coop2_spirv(gpu::kCoop2AttentionTile), gpu::attention_coop2_spirv({32, 128}));
  EXPECT_EQ(gpu::coop2_attention_keys(128), 16u);
  EXPECT_EQ(gpu::coop2_attention_keys(64), 32u);
}

}  // namespace
}  // namespace tapdiff::testing
