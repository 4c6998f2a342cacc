#version 450
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
// gated_act: out = act(gate) * up, elementwise over n values (elementwise.glsl: a = gate, b = up);
// with pc.gated 0, out = act(gate) (a plain FFN: b is a again, unread). act by pc.activation
// (model::Activation):
//   0 silu       gate / (1 + exp(-gate))
//   1 gelu       gate/2 (1 + erf(gate / sqrt 2))
//   2 gelu_tanh  gate/2 (1 + tanh(sqrt(2/pi) (gate + 0.044715 gate^3)))
//   3 relu       max(gate, 0)
//   4 relu2      max(gate, 0)^2
//   5 xielu      alpha_p gate^2 + beta gate where gate > 0, else
//                alpha_n (expm1(min(gate, eps)) - gate) + beta gate (pc's scalars: model/xielu.h)
//   6 swiglu_oai (gated only) g * sigmoid(alpha g) * (clamp(up, -limit, limit) + 1), g = min(gate, limit)
// (silu-approx, faults.glsl: silu's sigmoid as the hard sigmoid clamp(0.5 + gate/4, 0, 1);
// swiglu-unclamped: the clamped SwiGLU without its clamps.)
layout(local_size_x_id = 1) in;
#include "push_constants.h"
layout(push_constant) uniform Push { ActivationPush pc; };
#include "common.glsl"
#include "faults.glsl"

// erf to within about 1.2e-7 of its value (Numerical Recipes' erfc, a Chebyshev fit): GLSL has no erf.
float erf_approx(float x) {
  const float z = abs(x);
  const float t = 1.0 / (1.0 + 0.5 * z);
  const float r =
      t * exp(-z * z - 1.26551223 +
              t * (1.00002368 +
                   t * (0.37409196 +
                        t * (0.09678418 +
                             t * (-0.18628806 +
                                  t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
  return x >= 0.0 ? 1.0 - r : r - 1.0;
}

float act(float g) {
  if (pc.activation == 1u) return 0.5 * g * (1.0 + erf_approx(g * 0.70710678118654752));
  if (pc.activation == 2u) return 0.5 * g * (1.0 + bounded_tanh(0.79788456080286536 * (g + 0.044715 * g * g * g)));
  if (pc.activation == 3u) return max(g, 0.0);
  if (pc.activation == 4u) return max(g, 0.0) * max(g, 0.0);
  if (pc.activation == 5u) {
    const float m = min(g, pc.eps);  // expm1 near 0 without cancellation: exp(m) - 1 loses it
    const float expm1 = abs(m) < 1e-3 ? m + 0.5 * m * m + m * m * m / 6.0 : exp(m) - 1.0;
    return g > 0.0 ? pc.alpha_p * g * g + pc.beta * g : (expm1 - g) * pc.alpha_n + pc.beta * g;
  }
  return planted(FAULT_SILU_HARD_SIGMOID) ? g * clamp(0.5 + 0.25 * g, 0.0, 1.0) : g / (1.0 + exp(-g));
}

float combine(float g, float u) {
  if (pc.activation == 6u) {
    const bool unclamped = planted(FAULT_SWIGLU_UNCLAMPED);
    const float c = unclamped ? g : min(g, pc.limit);
    return c / (1.0 + exp(-pc.alpha * c)) * ((unclamped ? u : clamp(u, -pc.limit, pc.limit)) + 1.0);
  }
  return pc.gated != 0u ? act(g) * u : act(g);
}

#include "elementwise.glsl"
