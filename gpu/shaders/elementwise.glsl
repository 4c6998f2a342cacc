// The body of the elementwise kernels (add.comp, silu_mul.comp): out[i] = combine(a[i], b[i]) over
// n values. Each invocation takes kWide consecutive values where n is a multiple of kWide, else
// one (Kernels: elementwise_groups). f32 activations: 4 a time, as vec4. f16: 8, read and written
// as one 16-byte uvec4 each (unpackHalf2x16 widens exactly; the values are rounded by round_f16
// before packHalf2x16, so packing is exact too), faster than a value at a time
// (docs/benchmarks.md). Included after common.glsl and the kernel's combine().
layout(std430, binding = 0) readonly buffer A { act_t a[]; };
layout(std430, binding = 1) readonly buffer B { act_t b[]; };
layout(std430, binding = 2) writeonly buffer Output { act_t y[]; };

// kWide values of each input as one `wide_t`, combined
#ifdef ACT_F16
const uint kWide = 8u;
#define wide_t uvec4
#include "combine_pair.glsl"
uvec4 combine_wide(uvec4 x, uvec4 z) { return combine_octet(x, z); }
#else
const uint kWide = 4u;
#define wide_t vec4
vec4 combine_wide(vec4 x, vec4 z) {
  return to_act4(vec4(combine(x.x, z.x), combine(x.y, z.y), combine(x.z, z.z), combine(x.w, z.w)));
}
#endif
layout(std430, binding = 0) readonly buffer AWide { wide_t a_wide[]; };
layout(std430, binding = 1) readonly buffer BWide { wide_t b_wide[]; };
layout(std430, binding = 2) writeonly buffer OutputWide { wide_t y_wide[]; };

void main() {
  const uint i = group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (pc.n % kWide != 0u) {
    if (i < pc.n) y[i] = to_act(combine(float(a[i]), float(b[i])));
    return;
  }
  if (i < pc.n / kWide) y_wide[i] = combine_wide(a_wide[i], b_wide[i]);
}
