#version 450
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
// The experts' grouped products' plan (Kernels::moe_plan): the (token, expert) pairs of a pass,
// ids[p] the expert of pair p, grouped by expert in tiles of at most TILE pairs, one workgroup:
//   sorted[]: the pairs, expert after expert (within an expert in any order: each pair's output is
//             its own dot products, so the order changes no value);
//   tiles[0] = the number of tiles; tile t at tiles[1 + 3t ..]: (expert, first index into sorted, pairs).
// At most MAX_EXPERTS experts (Kernels::moe_plan refuses more).
layout(local_size_x_id = 1) in;
layout(std430, binding = 0) readonly buffer Ids { act_t ids[]; };
layout(std430, binding = 1) writeonly buffer Tiles { uint tiles[]; };
layout(std430, binding = 2) writeonly buffer Sorted { uint sorted_pairs[]; };
#include "push_constants.h"
layout(push_constant) uniform Push { PlanPush pc; };
#include "common.glsl"

const uint MAX_EXPERTS = 256u, TILE = 64u;
shared uint counts[MAX_EXPERTS];
shared uint cursor[MAX_EXPERTS];

uint expert_of(uint p) { return min(uint(float(ids[p])), pc.experts - 1u); }

void main() {
  const uint lid = gl_LocalInvocationID.x;
  for (uint e = lid; e < pc.experts; e += gl_WorkGroupSize.x) counts[e] = 0u;
  barrier();
  for (uint p = lid; p < pc.pairs; p += gl_WorkGroupSize.x) atomicAdd(counts[expert_of(p)], 1u);
  barrier();
  if (lid == 0u) {
    uint first = 0u, n_tiles = 0u;
    for (uint e = 0u; e < pc.experts; ++e) {
      cursor[e] = first;
      for (uint at = 0u; at < counts[e]; at += TILE) {
        tiles[1u + 3u * n_tiles] = e;
        tiles[2u + 3u * n_tiles] = first + at;
        tiles[3u + 3u * n_tiles] = min(TILE, counts[e] - at);
        ++n_tiles;
      }
      first += counts[e];
    }
    tiles[0] = n_tiles;
  }
  barrier();
  for (uint p = lid; p < pc.pairs; p += gl_WorkGroupSize.x) sorted_pairs[atomicAdd(cursor[expert_of(p)], 1u)] = p;
}
