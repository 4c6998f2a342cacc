#pragma once
// The host's RoPE tables: cos and sin of each pair's angle at each position (model::rope_cos_sin,
// what reference::rope rotates by), rounded to f32, [positions, d/2] of (cos, sin); pairs past
// rotary_dim / 2 are (1, 0), and so are the lead pairs before the rotated ones where a row has
// them. Each position's row is computed once per set of frequencies and kept (d floats a position:
// 64 MB for 128K positions of head_dim 128). An 8B-shaped prompt of 2048 tokens needs 131,072 cos
// and sin pairs, which would otherwise be computed on the host before each pass's first dispatch.
#include <map>
#include <utility>
#include <vector>

#include "model/rope.h"

namespace tapdiff::gpu {

// A row's layout: head_dim / 2 pairs, the rotated ones after lead_pairs passing ones.
struct RopeRowLayout {
  int head_dim = 0;
  int lead_pairs = 0;
  auto operator<=>(const RopeRowLayout&) const = default;
};

class RopeTableCache {
 public:
  // Appends the rows of positions first_pos .. first_pos + rows - 1 to `table`.
  void append(std::vector<float>& table, int first_pos, int rows, RopeRowLayout layout,
              const model::RopeFrequencies& f);

 private:
  // Per layout and set of frequencies: the rows of positions 0, 1, ...
  std::map<std::pair<RopeRowLayout, model::RopeFrequencies>, std::vector<float>> rows_;
};

}  // namespace tapdiff::gpu
