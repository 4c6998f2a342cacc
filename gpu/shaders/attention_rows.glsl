// The rows of a tiled attention workgroup (attention_flash.comp, attention_coop.comp): their push
// constants (Kernels' AttentionPush), which (query row, head) pairs a tile holds and which cache
// rows each of them sees, with the faults that change either. Included after the Rows binding
// (row_info) and faults.glsl.
#include "push_constants.h"
layout(push_constant) uniform Push { AttentionPush pc; };
#include "key_span.glsl"

const uint NONE = 0xFFFFFFFFu;
#define NEG_INF uintBitsToFloat(0xFF800000u)

// The workgroup's tile: `pack` heads side by side per query row (the GQA group, or 1 with
// gqa-head-map planted, whose heads do not share K/V in groups), pairs from p0 on, heads of
// unit * pack .. (take_tile sets them).
uint pack, p0, unit;
uint pair_row(uint i) { return (p0 + i) / pack; }                 // tile row i's query row
uint pair_head(uint i) { return unit * pack + (p0 + i) % pack; }  // and its head

// Workgroup g of `splits` per tile of `tile_rows` pairs: sets pack, unit and p0, and split; false
// past the last workgroup (uniform over the workgroup). The last tiles come first: causal rows
// further on see more keys, so the longest workgroups start early instead of trailing at the end.
bool take_tile(uint g, uint tile_rows, uint splits, out uint split) {
  pack = planted(FAULT_ATTENTION_HEAD_MODULO) ? 1u : pc.group;
  const uint units = pc.heads / pack;
  const uint tiles = (pc.rows * pack + tile_rows - 1u) / tile_rows;
  split = g % splits;
  if (g >= tiles * units * splits) return false;
  const uint from_last = g / splits / units;
  unit = g / splits - from_last * units;
  p0 = (tiles - 1u - from_last) * tile_rows;
  return true;
}

// The K/V head the tile reads.
uint tile_kv_head() { return planted(FAULT_ATTENTION_HEAD_MODULO) ? unit % (pc.heads / pc.group) : unit; }

bool sees(uvec4 v, uint row) { return (row >= v.x && row < v.y) || (row >= v.z && row < v.w); }

// The first cache row at or after `from` that a row with visible ranges v sees; NONE if none.
uint first_seen(uvec4 v, uint from) {
  const uint own = max(from, v.x), leak = max(from, v.z);
  return min(own < v.y ? own : NONE, leak < v.w ? leak : NONE);
}

// The cache rows tile row i sees: [x, y) its own (causal, from span_start; its chunk only with
// mask-kv-offset), [z, w) the previous sequence's rows leaked by batch-seq-leak; none past the
// last row of the pass. With splits > 1, split s sees positions [lo + s S, lo + (s+1) S) of its
// own range [lo, pos] (S = split_keys) and the leaked rows in split 0 only.
uvec4 visible_rows(uint i, uint split, uint splits) {
  uvec4 v = uvec4(0u);
  const uint t = pair_row(i);
  if (t >= pc.rows) return v;
  const uvec4 info = row_info[t];
  const uint pos = info.y;
  const uint causal_lo = span_start(pos);
  const uint first = planted(FAULT_ATTENTION_CHUNK_MASK) ? max(causal_lo, info.z) : causal_lo;
  v.xy = uvec2(info.x + first, info.x + pos + 1u);
  if (planted(FAULT_ATTENTION_BATCH_LEAK)) v.zw = uvec2((info.w >> 3) - (info.w & 7u), info.w >> 3);
  if (splits > 1u) {
    v.x += split * pc.split_keys;
    v.y = min(v.y, v.x + pc.split_keys);
    if (split > 0u) v.zw = uvec2(0u);
  }
  return v;
}
