// Faults planted by `tapdiff --inject` (gpu/faults.h), for the shaders that can carry one.
// Specialization constant 2 holds a set of the bits below (kernels.h mirrors them); 0, the
// default, is the clean kernel: every fault branch tests a constant, so the driver compiles it
// away and the clean kernels run exactly the code of a build without fault branches.
layout(constant_id = 2) const uint FAULTS = 0u;

const uint FAULT_NORM_EPS_OUTSIDE_SQRT = 1u;  // rms_norm.comp: x / (sqrt(mean(x^2)) + eps)
const uint FAULT_GEMM_F16_ACCUMULATE = 1u;    // matmul_tiled.comp, matvec.comp: f16 running sums
const uint FAULT_SILU_HARD_SIGMOID = 1u;      // silu_mul.comp: sigmoid ~ clamp(0.5 + x/4, 0, 1)
const uint FAULT_ATTENTION_CHUNK_MASK = 1u;   // attention.comp: keys of the row's own chunk only
const uint FAULT_ATTENTION_HEAD_MODULO = 2u;  // attention.comp: KV head h % kv_heads
const uint FAULT_ATTENTION_NO_MAX = 4u;       // attention.comp: exp(s) without the row max
const uint FAULT_ATTENTION_BATCH_LEAK = 8u;   // attention.comp: + the previous sequence's last rows
const uint FAULT_TOPK_SKIPS_BEST = 1u;        // moe_route.comp: the experts ranked 2 .. k+1
const uint FAULT_ROUTER_TOKEN_SOFTMAX = 1u;   // moe_route.comp WEIGHTS: each expert's softmax over the tokens
const uint FAULT_ROUTER_UNNORMALISED = 2u;    // moe_route.comp WEIGHTS: no renormalisation
const uint FAULT_EXPERT_NEXT = 2u;            // matvec.comp EXPERTS: expert e + 1's weights (mod the count)
const uint FAULT_SHARED_GATE_DROPPED = 1u;    // moe_sum.comp SIGMOID_GATE: the shared expert's gate left out
const uint FAULT_SELECTION_BIAS_SIGN = 1u;    // moe_route.comp SCORES: the selection bias subtracted
const uint FAULT_GROUP_LIMIT_IGNORED = 2u;    // moe_route.comp: every expert group eligible
const uint FAULT_ATTENTION_SINKS_DROPPED = 16u;  // attention.comp, attention_flash.comp, its combine: no sinks
const uint FAULT_ATTENTION_CHUNK_BOUNDARY = 32u;  // key_span.glsl: a chunk also sees the key before its start
const uint FAULT_SWIGLU_UNCLAMPED = 4u;       // gated_act.comp (in moe_out): the clamped SwiGLU without its clamps
const uint FAULT_INDEXER_RELU_DROPPED = 1u;   // index_topk.comp: each head's q.k without the ReLU

bool planted(uint fault) { return (FAULTS & fault) != 0u; }

// A running sum of a dot product as the accumulator holds it: rounded to f16 under gemm-f16-accum.
float accumulator(float s) {
  return planted(FAULT_GEMM_F16_ACCUMULATE) ? round_f16(s) : s;
}
float accumulate(float sum, float term) { return accumulator(sum + term); }
