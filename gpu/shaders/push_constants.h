// The push constants of every shader, one struct per layout: the shaders read them as
// `layout(push_constant) uniform Push { XPush pc; };` after including this file, gpu/kernels.cpp
// fills the same structs (and the SPIR-V that gpu/matmul_coop2.cpp and gpu/attention_coop2.cpp
// write takes its members' offsets from them). Valid GLSL and C++: 4-byte scalars only, which lay
// out alike in both (std430 push constants; C++ without padding). At most 64 bytes each
// (shaders.h kPushConstantBytes).
#ifndef TAPDIFF_GPU_SHADERS_PUSH_CONSTANTS_H
#define TAPDIFF_GPU_SHADERS_PUSH_CONSTANTS_H
#ifdef __cplusplus
#include <cstdint>
namespace tapdiff::gpu {
using uint = std::uint32_t;
#endif

struct EmbedPush {  // embed.comp
  uint rows;
  uint dim;
  uint row_bytes;  // bytes of one table row as stored
  float scale;     // 1 but in Gemma (sqrt(dim)) and Granite (embedding_multiplier)
};

struct LayerInputPush {  // layer_input.comp
  uint rows;
  uint dim;        // the layer's channels of the table's row
  uint row_bytes;  // bytes of one table row as stored
  uint first_col;  // the layer's first channel in that row
  float table_scale;
  float sum_scale;
};

struct NormPush {  // rms_norm.comp, rms_norm_ggml.comp
  uint rows;
  uint dim;
  float eps;
  float residual_scale;  // rms_norm.comp with ADD_FIRST only
};

struct LayerNormPush {  // layer_norm.comp, layer_norm_ggml.comp
  uint rows;
  uint dim;
  float eps;
  uint has_bias;
};

struct MatmulPush {  // matmul_tiled.comp, matmul_coop.comp, matvec.comp, matmul-coop2
  uint rows;         // T
  uint k;            // K
  uint n;            // N
  uint row_bytes;    // bytes of one W row as stored
  uint has_bias;
  uint per_token;     // EXPERTS: experts per token
  uint shared_input;  // EXPERTS: pair t reads X row t / per_token (its token's), else row t
  uint experts;       // EXPERTS: experts stacked in the weights
};

struct RopePush {  // rope.comp
  uint rows;
  uint width;  // heads * head_dim
  uint head_dim;
  uint rotate_half;   // 0: interleaved pairs, 1: rotate-half pairs
  uint rotary_dim;    // channels of a head that rotate (even, <= head_dim), from rotary_first
  uint rotary_first;  // even: the head's channels before them pass (latent attention's q: its no-RoPE part)
};

struct AttentionPush {  // attention.comp, attention_rows.glsl (flash, split, coop, decode), attention-coop2
  uint rows;
  uint heads;
  uint group;  // heads / kv_heads
  uint head_dim;
  uint window;      // 0: no sliding window
  uint q_stride;    // heads * head_dim
  uint kv_stride;   // kv_heads * head_dim
  float scale;      // 1 / sqrt(head_dim) (or the model's scale), rounded from double on the host
  uint split_keys;  // attention_flash.comp with SPLIT: positions per split (a multiple of BC); decode: likewise
  uint splits;      // ... and workgroups per (tile, head)
  float softcap;    // scores = softcap * tanh(q.k scale / softcap) where > 0 (common.glsl soft_cap)
  float q_scale;    // LLAMA_CPP: q times this before its rounding to f16: 1, or the scale where
                    // llama.cpp's graph scales q first (Gemma, Phi-3; `scale` is then 1)
  uint sinks;       // 1: the Sinks binding holds each head's sink logit (gpt-oss); 0: none (attention-two-pass,
                    // attention-flash; the split kernels' combine takes them)
  uint chunk;       // > 0: a row sees its own chunk of this many positions only (key_span.glsl; not attention-coop2)
  uint kept;        // > 0: a row sees only the positions of its row of the Kept binding, this many wide, -1 ending
                    // them (attention-two-pass only: DeepSeek-V3.2's idx_ids)
};

struct CombinePush {  // attention_combine.comp
  uint rows;
  uint heads;
  uint head_dim;
  uint splits;
  uint sinks;  // 1: the Sinks binding holds each head's sink logit
};

struct ColumnsPush {  // head_columns.comp
  uint rows;
  uint heads;
  uint width;     // each head's output channels
  uint a_cols;    // the first of them from A
  uint a_stride;  // A's values per row
  uint a_first;   // A's value of row 0's first channel
  uint a_head;    // from one head to the next in A
  uint b_cols;    // then from B (0: none; the rest are 0)
  uint b_stride;
  uint b_first;
};

struct CountPush {  // copy.comp
  uint n;
};

struct GeluTablePush {  // gelu_llama_cpp.comp
  uint n;
  uint gated;  // 1: gelu(gate) * up; 0: gelu(gate), a plain FFN's (up unread)
};

struct AddPush {  // add.comp
  uint n;
  float scale;
};

struct ActivationPush {  // gated_act.comp
  uint n;
  uint activation;  // model::Activation
  uint gated;       // 1: act(a) * b; 0: act(a) (a plain FFN; b is bound to a and unread)
  float alpha_p;    // xielu: the layer's scalars (model/xielu.h)
  float alpha_n;
  float beta;
  float eps;
  float alpha;  // swiglu_oai: the sigmoid's gain and the clamp (model::SwigluClamp)
  float limit;
};

struct ScaleSoftcapPush {  // scale_softcap.comp
  uint n;
  float scale;
  float cap;
  float clip;  // > 0: then clamped to [-clip, clip]
};

struct RoutePush {  // moe_route.comp
  uint rows;
  uint experts;
  uint k;
  uint normalize;  // WEIGHTS: the chosen weights divided by their sum
  uint sigmoid;    // WEIGHTS, SCORES: each expert's sigmoid, not the softmax over all
  uint groups;     // topk: the experts in this many groups, the choice among the top_groups best
  uint top_groups;
  uint has_bias;     // SCORES: binding 1 holds the selection bias
  float scale;       // WEIGHTS: the weights times this
  uint sparsemixer;  // WEIGHTS: PhiMoE's sparsemixer over two experts, of this eps
  float mixer_eps;
  uint has_scales;  // WEIGHTS: binding 3 holds each expert's learned scale of its weight
  uint group_best;  // topk with groups: a group scored by its best one (1) or the sum of its best two (2)
};

struct IndexPush {  // index_topk.comp
  uint rows;
  uint heads;
  uint head_dim;
  uint top_k;
  uint scratch_stride;  // floats of a row's scores in the scratch
  float head_scale;     // heads^-1/2
  float key_scale;      // head_dim^-1/2
};

struct SumPush {  // moe_sum.comp
  uint rows;
  uint dim;
  uint k;
};

struct PlanPush {  // moe_plan.comp
  uint pairs;
  uint experts;
};

struct RoundDotPush {  // round_dot.comp
  uint units;          // blocks, or values for f16 and bf16
  uint type;           // formats::DotType
};

struct Q81CorrectionPush {  // q8_1_correction.comp
  uint rows;
  uint n;
  uint blocks;       // per row of w
  uint row_bytes;    // of w
  uint block_bytes;  // 20 (Q4_1) or 24 (Q5_1); the minimum is the f16 after the block's scale
};

#ifdef __cplusplus
}  // namespace tapdiff::gpu
#endif
#endif
