#version 450
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
// residual add: out = a + scale * b, elementwise over n values (elementwise.glsl); scale is 1 but
// in Granite (residual_multiplier).
layout(local_size_x_id = 1) in;
#include "push_constants.h"
layout(push_constant) uniform Push { AddPush pc; };
#include "common.glsl"

float combine(float a, float b) { return a + pc.scale * b; }

#include "elementwise.glsl"
