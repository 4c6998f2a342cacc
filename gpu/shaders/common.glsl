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

// tanh, its argument clamped where tanh is +-1 in f32: no driver's exp overflows inside it.
float bounded_tanh(float x) { return tanh(clamp(x, -15.0, 15.0)); }

// cap * tanh(x / cap) where cap > 0 (a soft-cap: Gemma 2's attention scores and logits), x where
// cap is 0.
float soft_cap(float x, float cap) { return cap > 0.0 ? cap * bounded_tanh(x / cap) : x; }
