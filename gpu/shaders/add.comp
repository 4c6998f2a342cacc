#version 450
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
// residual add: out = a + b, elementwise over n values (elementwise.glsl).
layout(local_size_x_id = 1) in;
layout(push_constant) uniform Push { uint n; } pc;
#include "common.glsl"

float combine(float a, float b) { return a + b; }

#include "elementwise.glsl"
