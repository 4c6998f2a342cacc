// The body of the elementwise kernels (add.comp, silu_mul.comp): out[i] = combine(a[i], b[i]) over
// n values, each invocation taking 4 consecutive values where n is a multiple of 4 (read 4 at a
// time: half the instructions and wider reads), else one (Kernels: elementwise_groups). Included
// after common.glsl and the kernel's combine().
layout(std430, binding = 0) readonly buffer A { act_t a[]; };
layout(std430, binding = 1) readonly buffer B { act_t b[]; };
layout(std430, binding = 2) writeonly buffer Output { act_t y[]; };
layout(std430, binding = 0) readonly buffer AQuads { act4 a_quads[]; };
layout(std430, binding = 1) readonly buffer BQuads { act4 b_quads[]; };

void main() {
  const uint i = group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (pc.n % 4u != 0u) {
    if (i < pc.n) y[i] = to_act(combine(float(a[i]), float(b[i])));
    return;
  }
  if (i >= pc.n / 4u) return;
  const vec4 x = vec4(a_quads[i]), z = vec4(b_quads[i]);
  y[4u * i] = to_act(combine(x.x, z.x));
  y[4u * i + 1u] = to_act(combine(x.y, z.y));
  y[4u * i + 2u] = to_act(combine(x.z, z.z));
  y[4u * i + 3u] = to_act(combine(x.w, z.w));
}
