// Shared by every tapdiff compute shader.
//
// Conventions: bindings are storage buffers, inputs first and the output last; specialization
// constant 0 is the weight storage type (dequant.glsl), 1 the workgroup size where it is not
// fixed, 2 the faults --inject plants (faults.glsl; 0 = none); push constants hold the shapes (at
// most 64 bytes).

// The workgroup's index in a dispatch folded onto two dimensions, x fastest: a dispatch of more
// groups than maxComputeWorkGroupCount[0] also uses y (Kernels::dispatch), so the last row of
// groups may run past the work and must return early.
uint group_index() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }
