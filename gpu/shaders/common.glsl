// Shared by every tapdiff compute shader.
//
// Conventions: bindings are storage buffers, inputs first and the output last; specialization
// constant 0 is the weight storage type (dequant.glsl), 1 the workgroup size where it is not
// fixed, 2 the faults --inject plants (faults.glsl; 0 = none); push constants hold the shapes, as
// the structs of push_constants.h (at most 64 bytes).

// The workgroup's index in a dispatch folded onto two dimensions, x fastest: a dispatch of more
// groups than maxComputeWorkGroupCount[0] also uses y (Kernels::dispatch), so the last row of
// groups may run past the work and must return early.
uint group_index() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }

// tanh to f32's precision at every argument: drivers' tanh (lavapipe's (e^2x - 1) / (e^2x + 1))
// loses small arguments' leading digits, which a soft-cap of 30 over logits near 0.1 shows. Below
// 0.55 Lambert's continued fraction x / (1 + x^2 / (3 + x^2 / (5 + ...))) to depth 13 (relative
// error under 1e-13 there); above, 1 - 2 / (e^2|x| + 1), at least 0.5, its argument clamped where
// tanh is 1 in f32 (no driver's exp overflows).
float bounded_tanh(float x) {
  const float a = abs(x);
  if (a < 0.55) {
    const float x2 = x * x;
    float d = 13.0;
    for (float k = 11.0; k >= 1.0; k -= 2.0) d = k + x2 / d;
    return x / d;
  }
  return sign(x) * (1.0 - 2.0 / (exp(2.0 * min(a, 15.0)) + 1.0));
}

// cap * tanh(x / cap) where cap > 0 (a soft-cap: Gemma 2's attention scores and logits), x where
// cap is 0.
float soft_cap(float x, float cap) { return cap > 0.0 ? cap * bounded_tanh(x / cap) : x; }
