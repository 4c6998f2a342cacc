"""Tiny random models written as GGUF by the gguf package (llama.cpp's own GGUF library), F32
tensors (the matrices of the blocks and the output quantized by that package where asked), with
the metadata llama.cpp's converter writes for each case."""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path

import gguf
import numpy as np
from safetensors.numpy import load_file

DIM, LAYERS, HEADS, KV_HEADS, HEAD_DIM, FFN, VOCAB = 64, 3, 4, 2, 16, 96, 320


@dataclass(frozen=True)
class Layout:
    """What an architecture's GGUF holds, as llama.cpp's converter writes it and its loader reads it."""
    norm: str = "rms"  # rms | layer (with biases) | layer_nobias | none (no norm tensors: OLMo)
    pre_norms: bool = True  # attn_norm before the attention (and ffn_norm before the FFN, where ffn_norm)
    post_norms: bool = False  # post_attention_norm and post_ffw_norm
    ffn_norm: bool = True  # False: attention and FFN side by side from attn_norm (Phi-2, Command R, Falcon)
    ffn_norm_name: str = "ffn_norm"  # the FFN norm's name (Seed-OSS: post_attention_norm)
    attn_norm_2: bool = False  # Falcon 40B: the attention's own norm, attn_norm the FFN's
    qk_norm: str | None = None  # head | whole
    ffn: str = "gated"  # gated | plain (ffn_up, ffn_down) | fused (gate and up in ffn_up)
    qkv: str = "split"  # split | fused (attn_qkv)
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False  # on ffn_up and ffn_down of a plain FFN
    output: bool = True  # False: the logits from token_embd.weight (no output tensor)
    output_bias: bool = False
    positions: bool = False  # position_embd.weight, one row per position of the context
    xielu: bool = False  # xIELU's learned scalars as the xielu.* arrays
    sinks: bool = False  # attn_sinks.weight, a logit per head (gpt-oss)
    expert_biases: bool = False  # ffn_gate_inp.bias and the experts' ffn_*_exps.bias (gpt-oss)


LAYOUTS = {
    "llama": Layout(), "smollm3": Layout(), "granite": Layout(),
    "phi3": Layout(qkv="fused", ffn="fused"),
    "qwen2": Layout(qkv_bias=True),
    "qwen3": Layout(qk_norm="head"), "qwen3moe": Layout(qk_norm="head"), "olmoe": Layout(qk_norm="whole"),
    "qwen2moe": Layout(qkv_bias=True), "granitemoe": Layout(),
    "glm4moe": Layout(qkv_bias=True, qk_norm="head", ffn_norm_name="post_attention_norm"),
    "dots1": Layout(qk_norm="head"), "minimax-m2": Layout(qk_norm="whole"), "ernie4_5-moe": Layout(output=False),
    "hunyuan-moe": Layout(qk_norm="head"), "cohere2moe": Layout(ffn_norm=False, output=False),
    "gpt-oss": Layout(qkv_bias=True, o_bias=True, ffn_norm_name="post_attention_norm", sinks=True,
                      expert_biases=True),
    "olmo2": Layout(pre_norms=False, post_norms=True, qk_norm="whole"),
    "gemma": Layout(output=False),
    "gemma2": Layout(post_norms=True, output=False),
    "gemma3": Layout(post_norms=True, qk_norm="head", output=False),
    "gpt2": Layout(norm="layer", ffn="plain", qkv="fused", qkv_bias=True, o_bias=True, mlp_bias=True, positions=True,
                   output=False),
    "starcoder2": Layout(norm="layer", ffn="plain", qkv_bias=True, o_bias=True, mlp_bias=True, output=False),
    "gptneox": Layout(norm="layer", ffn="plain", qkv="fused", qkv_bias=True, o_bias=True, mlp_bias=True),
    "phi2": Layout(norm="layer", ffn_norm=False, ffn="plain", qkv="fused", qkv_bias=True, o_bias=True, mlp_bias=True,
                   output_bias=True),
    "stablelm": Layout(norm="layer", qkv_bias=True),
    "falcon": Layout(norm="layer", ffn_norm=False, ffn="plain", qkv="fused"),
    "olmo": Layout(norm="none"),
    "nemotron": Layout(norm="layer", ffn="plain", o_bias=True, mlp_bias=True),
    "command-r": Layout(norm="layer_nobias", ffn_norm=False, output=False),
    "cohere2": Layout(norm="layer_nobias", ffn_norm=False, output=False),
    "seed_oss": Layout(qkv_bias=True, ffn_norm_name="post_attention_norm"),
    "ernie4_5": Layout(output=False),
    "arcee": Layout(ffn="plain"),
    "hunyuan-dense": Layout(qk_norm="head"),
    "exaone4": Layout(pre_norms=False, post_norms=True, qk_norm="head"),
    "apertus": Layout(ffn="plain", qk_norm="head", xielu=True),
    "glm4": Layout(post_norms=True, ffn="fused", qkv_bias=True),
    "chatglm": Layout(ffn="fused", qkv_bias=True),
    "mistral3": Layout(),
    "llama4": Layout(),  # its q/k norms have no weight
}


@dataclass
class GgufCase:
    name: str
    arch: str = "llama"  # a key of LAYOUTS: llama.cpp's general.architecture
    rope_base: float = 10000.0
    head_dim: int = HEAD_DIM  # written as attention.key_length / value_length where not DIM / HEADS
    rotary_dim: int = 0  # 0: head_dim
    linear_factor: float = 0.0  # rope.scaling.type linear when > 0
    yarn: tuple[float, int] | None = None  # rope.scaling.type yarn: (factor, original context)
    llama3: bool = False  # rope_freqs.weight as llama.cpp's converter computes it for Llama 3.1
    longrope: int = 0  # Phi-3's LongRoPE when > 0: its original context, rope_factors_long/short.weight, attn_factor
    extra: dict = field(default_factory=dict)
    layers: int = LAYERS
    kv_heads: int = KV_HEADS  # OLMoE's, dots1's and MiniMax-M2's k in llama.cpp is n_embd wide: every head a KV head
    post_norm_gain: float = 1.0  # the post-norms' weights times this: updates as large as the stream
    experts: tuple[int, int, int] | None = None  # (count, used per token, FFN width of each): a mixture of experts
    expert_gain: float = 1.0  # the experts' gate and up matrices times this (gpt-oss: past its clamp at 7)
    # the experts' matrices in this ggml type (gpt-oss's converter: mxfp4); "<type>-values": F32 holding
    # the values that type's blocks decode to
    expert_storage: str | None = None
    shared_expert: int = 0  # the width of a shared expert beside the mixture
    shared_gate: bool = True  # its output scaled by a sigmoid gate (Qwen2-MoE's; not Granite-MoE-Shared's)
    selection_bias: bool = False  # a sigmoid router's exp_probs_b.bias (GLM-4.5)
    dense_layers: int = 0  # layers before the first mixture keep a dense FFN (leading_dense_block_count)
    moe_step: int = 1  # of the others, layer l a mixture where (l + 1) % moe_step == 0 (interleave_moe_layer_step)
    layout: Layout | None = None  # None: LAYOUTS[arch]

    def __post_init__(self):
        self.layout = self.layout or LAYOUTS[self.arch]


GGUF_CASES = [
    GgufCase("llama"),
    GgufCase("llama-linear", linear_factor=4.0),
    GgufCase("llama3-rope-freqs", rope_base=500000.0, llama3=True),
    # SmolLM3: layers 3 and 7 without RoPE (llama.cpp's fixed step of 4).
    GgufCase("smollm3", arch="smollm3", rope_base=5000000.0, layers=8),
    # Phi-3 with q, k, v and gate, up fused, and a window llama.cpp disables (the prompt is longer).
    GgufCase("phi3", arch="phi3", extra={"sliding_window": 24}),
    GgufCase("qwen2", arch="qwen2", rope_base=1000000.0),
    GgufCase("qwen3", arch="qwen3", rope_base=1000000.0),
    GgufCase("granite", arch="granite", extra={"embedding_scale": 6.0, "residual_scale": 0.22,
                                               "attention_scale": 0.2, "logit_scale": 8.0}),
    GgufCase("olmo2", arch="olmo2", rope_base=500000.0),
    GgufCase("gemma", arch="gemma"),
    GgufCase("gemma2", arch="gemma2", extra={"attn_logit_softcapping": 20.0, "final_logit_softcapping": 15.0,
                                             "sliding_window": 24}),
    # Heads of 24: an attention scale (1/sqrt(24)) that is no power of two, which llama.cpp's Gemma
    # graph applies to Q before rounding it to f16.
    GgufCase("gemma2-hd24", arch="gemma2", head_dim=24,
             extra={"attn_logit_softcapping": 20.0, "final_logit_softcapping": 15.0, "sliding_window": 24}),
    # Six layers: llama.cpp's fixed pattern slides layers 0-4, layer 5 attends fully. The updates
    # are made as large as the embedding (times sqrt(DIM)), else the tied logits pick the input token.
    # Mixtral as llama.cpp's converter writes it (arch llama with experts), Qwen3-MoE, OLMoE,
    # Qwen2-MoE (a gated shared expert beside the mixture) and Granite-MoE (with and without a shared
    # expert, ungated).
    GgufCase("mixtral", rope_base=1000000.0, experts=(4, 2, FFN)),
    GgufCase("qwen3moe", arch="qwen3moe", rope_base=1000000.0, experts=(8, 3, 40)),
    GgufCase("olmoe", arch="olmoe", rope_base=50000.0, kv_heads=HEADS, experts=(6, 2, FFN)),
    GgufCase("qwen2moe", arch="qwen2moe", rope_base=1000000.0, experts=(6, 2, 40), shared_expert=56),
    GgufCase("granitemoe", arch="granitemoe", experts=(5, 2, FFN),
             extra={"embedding_scale": 6.0, "residual_scale": 0.3, "attention_scale": 0.2, "logit_scale": 4.0}),
    # GLM-4.5: a dense first layer, then sigmoid routing with a selection bias over 4 groups of 2
    # experts (2 chosen), renormalised and scaled, beside an ungated shared expert; half of each head rotates.
    GgufCase("glm4moe", arch="glm4moe", rope_base=1000000.0, rotary_dim=8, experts=(8, 2, 40), shared_expert=40,
             shared_gate=False, selection_bias=True, dense_layers=1,
             extra={"expert_gating_func": gguf.ExpertGatingFuncType.SIGMOID, "expert_weights_norm": True,
                    "expert_weights_scale": 2.5, "expert_group_count": 4, "expert_group_used_count": 2,
                    "expert_shared_count": 1, "leading_dense_block_count": 1}),
    GgufCase("dots1", arch="dots1", rope_base=500000.0, kv_heads=HEADS, experts=(6, 2, 32), shared_expert=64, shared_gate=False,
             selection_bias=True, dense_layers=1,
             extra={"expert_gating_func": gguf.ExpertGatingFuncType.SIGMOID, "expert_weights_scale": 1.5,
                    "expert_shared_count": 2, "leading_dense_block_count": 1}),
    GgufCase("minimax-m2", arch="minimax-m2", rope_base=5000000.0, rotary_dim=8, kv_heads=HEADS, experts=(6, 3, FFN),
             selection_bias=True, extra={"expert_gating_func": gguf.ExpertGatingFuncType.SIGMOID}),
    GgufCase("ernie4_5-moe", arch="ernie4_5-moe", rope_base=500000.0, experts=(6, 2, 32), shared_expert=64,
             shared_gate=False, selection_bias=True, dense_layers=1,
             extra={"interleave_moe_layer_step": 1, "leading_dense_block_count": 1}),
    # Hunyuan-MoE: q/k norms after RoPE (the converter bakes the NTK alpha into the base), every
    # layer a renormalised mixture beside an ungated shared MLP of its own width.
    GgufCase("hunyuan-moe", arch="hunyuan-moe", rope_base=11158839.9, experts=(4, 2, FFN), shared_expert=56,
             shared_gate=False, extra={"expert_shared_count": 1}),
    # Cohere 2 MoE: the parallel block with RMSNorms, a dense first layer (rotated though it attends
    # fully), then sigmoid routing (the absent expert_gating_func), renormalised, beside two experts'
    # worth of shared MLP, averaged in.
    GgufCase("cohere2moe", arch="cohere2moe", rope_base=50000.0, layers=4, experts=(6, 2, 40), shared_expert=80,
             shared_gate=False, dense_layers=1,
             extra={"logit_scale": 0.5, "sliding_window": 24, "sliding_window_pattern": [False, True, False, True],
                    "leading_dense_block_count": 1, "expert_weights_norm": True, "expert_shared_count": 2}),
    GgufCase("granitemoe-shared", arch="granitemoe", experts=(4, 3, FFN), shared_expert=40, shared_gate=False,
             extra={"embedding_scale": 3.0, "residual_scale": 0.5, "logit_scale": 2.0}),
    GgufCase("gemma3", arch="gemma3", rope_base=1000000.0, linear_factor=4.0, extra={"sliding_window": 12}, layers=6,
             post_norm_gain=8.0),
    # gpt-oss: sinks, biases on q/k/v/o, the router and the experts, the even layers sliding, YaRN;
    # the experts' gate and up 8 times as large, so that llama.cpp's clamp at 7 bites.
    GgufCase("gpt-oss", arch="gpt-oss", rope_base=150000.0, yarn=(4.0, 32), experts=(6, 2, 40), expert_gain=8.0,
             extra={"sliding_window": 24}),
    # Llama 4: layer 3 without RoPE (llama.cpp's fixed step of 4), weightless q/k norms on the others;
    # layers 1 and 3 mixtures (interleave_moe_layer_step 2) of one expert per token, its input scaled
    # by its sigmoid, beside a shared expert as wide.
    GgufCase("llama4", arch="llama4", rope_base=500000.0, layers=4, experts=(4, 1, 40), shared_expert=40,
             shared_gate=False, moe_step=2, extra={"interleave_moe_layer_step": 2}),

]

# The architectures llama.cpp has for Hugging Face's gpt2, starcoder2, gpt_neox, phi, stablelm,
# falcon, olmo, nemotron, cohere, cohere2, seed_oss, ernie4_5, arcee, hunyuan_v1_dense, exaone4,
# apertus, glm4, glm, ministral3 and olmo3, with values away from the defaults.
FAMILY_CASES = [
    GgufCase("gpt2", arch="gpt2"),
    GgufCase("starcoder2", arch="starcoder2", rope_base=100000.0),
    GgufCase("gptneox", arch="gptneox", rotary_dim=4, extra={"parallel_residual": True}),
    GgufCase("gptneox-sequential", arch="gptneox", rotary_dim=8, extra={"parallel_residual": False}),
    GgufCase("phi2", arch="phi2", rotary_dim=6),
    GgufCase("stablelm", arch="stablelm", rotary_dim=4, extra={"parallel_residual": False}),
    GgufCase("stablelm-parallel", arch="stablelm", rotary_dim=4, extra={"parallel_residual": True},
             layout=dataclasses.replace(LAYOUTS["stablelm"], ffn_norm=False)),
    GgufCase("falcon", arch="falcon"),
    GgufCase("falcon-40b", arch="falcon", layout=dataclasses.replace(LAYOUTS["falcon"], attn_norm_2=True)),
    GgufCase("olmo", arch="olmo", extra={"clamp_kqv": 1.5}),
    GgufCase("nemotron", arch="nemotron", rope_base=20000.0, rotary_dim=8),
    GgufCase("command-r", arch="command-r", rope_base=500000.0, extra={"logit_scale": 0.5}),
    GgufCase("cohere2", arch="cohere2", rope_base=50000.0, layers=8, extra={"logit_scale": 0.5, "sliding_window": 24}),
    GgufCase("seed_oss", arch="seed_oss", rope_base=20000.0),
    GgufCase("ernie4_5", arch="ernie4_5", rope_base=500000.0),
    GgufCase("arcee", arch="arcee", rope_base=40000.0),
    GgufCase("hunyuan-dense", arch="hunyuan-dense", rope_base=30000.0),
    GgufCase("exaone4", arch="exaone4", rope_base=1000000.0),
    GgufCase("apertus", arch="apertus", rope_base=500000.0, llama3=True),
    GgufCase("glm4", arch="glm4", rotary_dim=8),
    GgufCase("chatglm", arch="chatglm", rope_base=50000.0, rotary_dim=8),
    # Ministral 3 as llama.cpp's converter writes it (mistral3): YaRN over 16 positions with the
    # converter's mscale_all_dim as yarn_log_multiplier, Llama 4's temperature stepping every 16.
    GgufCase("mistral3", arch="mistral3", rope_base=1000000.0, yarn=(4.0, 16),
             extra={"rope_scaling_yarn_beta_fast": 16.0, "rope_scaling_yarn_beta_slow": 2.0,
                    "rope_scaling_yarn_log_mul": 0.8, "attn_temperature_scale": 0.3}),
    # OLMo 3 as llama.cpp's converter writes it: arch olmo2, a window, and its layer types.
    GgufCase("olmo3", arch="olmo2", rope_base=500000.0, layers=4,
             extra={"sliding_window": 24, "sliding_window_pattern": [True, False, True, False],
                    "rope_freq_base_swa": 500000.0}),
]


def llama3_rope_factors(base: float, dim: int, factor=8.0, low=1.0, high=4.0, original=64) -> np.ndarray:
    """The divisors llama.cpp's converter writes as rope_freqs.weight for a Llama 3.1 config."""
    freqs = 1.0 / base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    factors = []
    for f in freqs:
        wavelen = 2 * np.pi / f
        if wavelen < original / high:
            factors.append(1.0)
        elif wavelen > original / low:
            factors.append(factor)
        else:
            smooth = (original / wavelen - low) / (high - low)
            factors.append(1.0 / ((1 - smooth) / factor + smooth))
    return np.array(factors, dtype=np.float32)


def write_gguf(case: GgufCase, path: Path, seed: int = 0, storage: str = "f32") -> None:
    """`storage`: the type of the attention's, the FFN's and the output's matrices (f32, or a ggml
    type the gguf package quantizes, such as q8_0); the embedding, the norms and the biases stay F32."""
    rng = np.random.default_rng(seed)
    layout = case.layout
    w = gguf.GGUFWriter(str(path), case.arch)
    quant = None if storage == "f32" else gguf.GGMLQuantizationType[storage.upper()]

    def add_matrix(name: str, values: np.ndarray) -> None:
        if quant is None:
            w.add_tensor(name, values)
        else:
            w.add_tensor(name, gguf.quants.quantize(values, quant), raw_dtype=quant)

    context = 4096
    w.add_context_length(context)
    w.add_embedding_length(DIM)
    w.add_block_count(case.layers)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(case.kv_heads)
    if layout.norm == "rms":
        w.add_layer_norm_rms_eps(1e-5)
    else:  # away from llama.cpp's default of 1e-5, so that a misread key shows
        w.add_layer_norm_eps(3e-5)
    w.add_rope_freq_base(case.rope_base)
    hd = case.head_dim
    rotary_dim = case.rotary_dim or hd
    if hd * HEADS != DIM:
        w.add_key_length(hd)
        w.add_value_length(hd)
    w.add_rope_dimension_count(rotary_dim)
    if case.longrope:  # as llama.cpp's converter writes Phi-3's (conversion/phi.py)
        w.add_rope_scaling_orig_ctx_len(case.longrope)
        w.add_rope_scaling_attn_factors(float(np.sqrt(1 + np.log(4096 / case.longrope) / np.log(case.longrope))))
    if case.linear_factor > 0:
        w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(case.linear_factor)
    if case.yarn:
        w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        w.add_rope_scaling_factor(case.yarn[0])
        w.add_rope_scaling_orig_ctx_len(case.yarn[1])
    if case.experts:
        w.add_expert_count(case.experts[0])
        w.add_expert_used_count(case.experts[1])
        if case.arch in ("qwen3moe", "qwen2moe", "glm4moe", "dots1", "minimax-m2", "ernie4_5-moe", "hunyuan-moe",
                         "cohere2moe", "gpt-oss", "llama4"):
            w.add_expert_feed_forward_length(case.experts[2])
        # glm4moe's and dots1's: expert_shared_count experts'; llama4's: one expert's width
        if case.shared_expert and case.arch not in ("glm4moe", "dots1", "llama4"):
            w.add_expert_shared_feed_forward_length(case.shared_expert)
    for key, value in case.extra.items():  # add_embedding_scale(6.0), add_sliding_window(24), ...
        getattr(w, f"add_{key}")(value)
    if layout.xielu:  # as transformers initialises them (alpha_p, alpha_n before their softplus), spread
        for key, centre in (("alpha_p", 0.55), ("alpha_n", 0.55), ("beta", 0.5), ("eps", -1e-6)):
            getattr(w, f"add_xielu_{key}")([float(centre * (1 + 0.3 * rng.standard_normal())) for _ in range(case.layers)])
    add_vocabulary(w)

    def matrix(rows: int, cols: int) -> np.ndarray:
        return (rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float32)

    def vector(n: int, scale: float = 0.1) -> np.ndarray:
        return (scale * rng.standard_normal(n)).astype(np.float32)

    def norm(name: str, gain: float = 1.0) -> None:
        if layout.norm == "none":
            return
        w.add_tensor(name + ".weight", (gain * (1.0 + 0.3 * rng.standard_normal(DIM))).astype(np.float32))
        if layout.norm == "layer":
            w.add_tensor(name + ".bias", vector(DIM))

    w.add_tensor("token_embd.weight", rng.standard_normal((VOCAB, DIM)).astype(np.float32))
    if layout.positions:
        w.add_tensor("position_embd.weight", vector(context * DIM, 0.5).reshape(context, DIM))
    if case.llama3:
        w.add_tensor("rope_freqs.weight", llama3_rope_factors(case.rope_base, rotary_dim))
    if case.longrope:  # short factors near 1, long ones growing toward the low frequencies, as Phi-3's
        pairs = rotary_dim // 2
        w.add_tensor("rope_factors_long.weight", (1.0 + np.linspace(0, 12, pairs) ** 1.5).astype(np.float32))
        w.add_tensor("rope_factors_short.weight", (1.0 + 0.2 * rng.random(pairs)).astype(np.float32))
    for layer in range(case.layers):
        p = f"blk.{layer}."
        if layout.pre_norms:
            norm(p + "attn_norm")
        if layout.attn_norm_2:
            norm(p + "attn_norm_2")
        kv = case.kv_heads * hd
        q, k, v = matrix(HEADS * hd, DIM), matrix(kv, DIM), matrix(kv, DIM)
        biases = (vector(HEADS * hd), vector(kv), vector(kv)) if layout.qkv_bias else ()
        if layout.qkv == "fused":
            add_matrix(p + "attn_qkv.weight", np.concatenate([q, k, v]))
            if layout.qkv_bias:
                w.add_tensor(p + "attn_qkv.bias", np.concatenate(biases))
        else:
            add_matrix(p + "attn_q.weight", q)
            add_matrix(p + "attn_k.weight", k)
            add_matrix(p + "attn_v.weight", v)
            if layout.qkv_bias:
                for name, bias in zip(("attn_q.bias", "attn_k.bias", "attn_v.bias"), biases):
                    w.add_tensor(p + name, bias)
        if layout.qk_norm:
            per_head = layout.qk_norm == "head"
            w.add_tensor(p + "attn_q_norm.weight", (1.0 + 0.3 * rng.standard_normal(hd if per_head else HEADS * hd))
                         .astype(np.float32))
            w.add_tensor(p + "attn_k_norm.weight", (1.0 + 0.3 * rng.standard_normal(hd if per_head else kv))
                         .astype(np.float32))
        add_matrix(p + "attn_output.weight", matrix(DIM, HEADS * hd))
        if layout.o_bias:
            w.add_tensor(p + "attn_output.bias", vector(DIM))
        if layout.sinks:  # as large as the scores they compete with
            w.add_tensor(p + "attn_sinks.weight", vector(HEADS, 1.0))
        if layout.post_norms:
            norm(p + "post_attention_norm", case.post_norm_gain)
        if layout.pre_norms and layout.ffn_norm:
            norm(p + layout.ffn_norm_name)
        if case.experts and layer >= case.dense_layers and (layer + 1) % case.moe_step == 0:  # the router (its logits well past f32's rounding), experts
            count, _, ffn = case.experts
            w.add_tensor(p + "ffn_gate_inp.weight", 4.0 * matrix(count, DIM))
            if case.selection_bias:
                w.add_tensor(p + "exp_probs_b.bias", vector(count))
            gain = case.expert_gain
            expert_type = (case.expert_storage or "").removesuffix("-values")
            expert_quant = gguf.GGMLQuantizationType[expert_type.upper()] if expert_type else None

            def add_experts(name: str, values: np.ndarray) -> None:
                if expert_quant is None:
                    add_matrix(name, values)
                elif case.expert_storage.endswith("-values"):
                    w.add_tensor(name, gguf.quants.dequantize(gguf.quants.quantize(values, expert_quant), expert_quant))
                else:
                    w.add_tensor(name, gguf.quants.quantize(values, expert_quant), raw_dtype=expert_quant)
            add_experts(p + "ffn_gate_exps.weight", np.stack([gain * matrix(ffn, DIM) for _ in range(count)]))
            add_experts(p + "ffn_up_exps.weight", np.stack([gain * matrix(ffn, DIM) for _ in range(count)]))
            add_experts(p + "ffn_down_exps.weight", np.stack([matrix(DIM, ffn) / gain for _ in range(count)]))
            if layout.expert_biases:  # [experts, width] here, [width, experts] in the file
                w.add_tensor(p + "ffn_gate_inp.bias", vector(count))
                for name, width in (("ffn_gate_exps.bias", ffn), ("ffn_up_exps.bias", ffn),
                                    ("ffn_down_exps.bias", DIM)):
                    w.add_tensor(p + name, np.stack([vector(width) for _ in range(count)]))
            if case.shared_expert and case.shared_gate:  # its gate's logits spread around 0: the sigmoid matters
                w.add_tensor(p + "ffn_gate_inp_shexp.weight", vector(DIM, 2.0 / np.sqrt(DIM)))
            if case.shared_expert:
                add_matrix(p + "ffn_gate_shexp.weight", matrix(case.shared_expert, DIM))
                add_matrix(p + "ffn_up_shexp.weight", matrix(case.shared_expert, DIM))
                add_matrix(p + "ffn_down_shexp.weight", matrix(DIM, case.shared_expert))
        else:
            gate, up = matrix(FFN, DIM), matrix(FFN, DIM)
            if layout.ffn == "fused":
                add_matrix(p + "ffn_up.weight", np.concatenate([gate, up]))
            else:
                if layout.ffn == "gated":
                    add_matrix(p + "ffn_gate.weight", gate)
                add_matrix(p + "ffn_up.weight", up)
            add_matrix(p + "ffn_down.weight", matrix(DIM, FFN))
            if layout.mlp_bias:
                w.add_tensor(p + "ffn_up.bias", vector(FFN))
                w.add_tensor(p + "ffn_down.bias", vector(DIM))
        if layout.post_norms:
            norm(p + "post_ffw_norm", case.post_norm_gain)
    norm("output_norm")
    if layout.output:
        add_matrix("output.weight", matrix(VOCAB, DIM) * 4.0)
        if layout.output_bias:
            w.add_tensor("output.bias", vector(VOCAB))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def add_vocabulary(w: gguf.GGUFWriter) -> None:
    """A SentencePiece-style vocabulary: unk, bos, eos, 256 byte tokens, then made-up pieces."""
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    tokens += [f"\u2581t{i}" for i in range(VOCAB - len(tokens))]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    types += [gguf.TokenType.BYTE] * 256 + [gguf.TokenType.NORMAL] * (VOCAB - 259)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * 259 + [-float(i) for i in range(VOCAB - 259)])
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)


def write_tiny_llama(path: Path, dim: int, vocab: int, add_vocab, embedding: np.ndarray | None = None,
                     embedding_type: gguf.GGMLQuantizationType | None = None, seed: int = 0) -> None:
    """A one-layer Llama of width dim (4 heads, FFN 2 * dim), F32 matrices, its vocabulary written by
    add_vocab(writer); token_embd is `embedding` (raw blocks of embedding_type) when given."""
    rng = np.random.default_rng(seed)
    ffn, heads = 2 * dim, 4
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_context_length(1024)
    w.add_embedding_length(dim)
    w.add_block_count(1)
    w.add_feed_forward_length(ffn)
    w.add_head_count(heads)
    w.add_head_count_kv(heads)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(dim // heads)
    add_vocab(w)

    def matrix(rows: int, cols: int) -> np.ndarray:
        return (rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float32)

    if embedding is None:
        w.add_tensor("token_embd.weight", matrix(vocab, dim))
    else:
        w.add_tensor("token_embd.weight", embedding, raw_dtype=embedding_type)
    for name, shape in (("attn_q", (dim, dim)), ("attn_k", (dim, dim)), ("attn_v", (dim, dim)),
                        ("attn_output", (dim, dim)), ("ffn_gate", (ffn, dim)), ("ffn_up", (ffn, dim)),
                        ("ffn_down", (dim, ffn))):
        w.add_tensor(f"blk.0.{name}.weight", matrix(*shape))
    for name in ("blk.0.attn_norm", "blk.0.ffn_norm", "output_norm"):
        w.add_tensor(f"{name}.weight", np.ones(dim, dtype=np.float32))
    w.add_tensor("output.weight", matrix(vocab, dim))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_deepseek2(folder: Path, path: Path, absorbed: bool = True, extra: dict | None = None,
                    storage: str = "f32") -> None:
    """The Hugging Face DeepSeek-V2 or V3 model saved in `folder` (one safetensors file, its experts
    one tensor each) written as llama.cpp's converter writes it (DeepseekV2Model): where `absorbed`,
    as one KV head over the latent (key_length and value_length the latent's, key_length_mla and
    value_length_mla the heads'), kv_b_proj split into attn_k_b (each head's key rows transposed)
    and attn_v_b; else attn_kv_b with a KV head per head, as older files hold it. The vocabulary is
    add_vocabulary's (the model's must be VOCAB tokens); `extra`: more metadata, as GgufCase's;
    `storage`: the layers' and the output's matrices F32, or of a ggml type the gguf package
    quantizes where their rows are whole blocks, else F16 (as the converter falls back); the
    embedding, the norms and the selection bias F32."""
    c = json.loads((folder / "config.json").read_text())
    t = load_file(folder / "model.safetensors")
    heads, layers, kv_rank = c["num_attention_heads"], c["num_hidden_layers"], c["kv_lora_rank"]
    nope, rope, v_dim = c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"]
    scaling = c["rope_parameters"]
    assert c["vocab_size"] == VOCAB and not c.get("attention_bias") and scaling["rope_type"] in ("default", "yarn")
    w = gguf.GGUFWriter(str(path), "deepseek2")
    w.add_context_length(c["max_position_embeddings"])
    w.add_embedding_length(c["hidden_size"])
    w.add_block_count(layers)
    w.add_feed_forward_length(c["intermediate_size"])
    w.add_head_count(heads)
    w.add_head_count_kv(1 if absorbed else heads)
    w.add_rope_freq_base(scaling["rope_theta"])
    if scaling["rope_type"] == "yarn":
        w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        w.add_rope_scaling_factor(scaling["factor"])
        w.add_rope_scaling_orig_ctx_len(scaling["original_max_position_embeddings"])
        for key in ("beta_fast", "beta_slow"):
            if key in scaling:
                getattr(w, f"add_rope_scaling_yarn_{key}")(scaling[key])
        if "mscale_all_dim" in scaling:  # as the converter writes it (its TAG_DEEPSEEK2_YARN_LOG_MUL_FIX)
            w.add_rope_scaling_yarn_log_mul(0.1 * scaling["mscale_all_dim"])
    w.add_layer_norm_rms_eps(c["rms_norm_eps"])
    w.add_leading_dense_block_count(c["first_k_dense_replace"])
    w.add_vocab_size(c["vocab_size"])
    if c.get("q_lora_rank"):
        w.add_q_lora_rank(c["q_lora_rank"])
    w.add_kv_lora_rank(kv_rank)
    if absorbed:
        w.add_key_length(kv_rank + rope)
        w.add_value_length(kv_rank)
        w.add_key_length_mla(nope + rope)
        w.add_value_length_mla(v_dim)
    else:
        w.add_key_length(nope + rope)
        w.add_value_length(v_dim)
    w.add_rope_dimension_count(rope)
    w.add_expert_count(c["n_routed_experts"])
    w.add_expert_used_count(c["num_experts_per_tok"])
    w.add_expert_feed_forward_length(c["moe_intermediate_size"])
    w.add_expert_shared_count(c["n_shared_experts"])
    w.add_expert_weights_scale(c["routed_scaling_factor"])
    if c.get("norm_topk_prob"):
        w.add_expert_weights_norm(True)
    sigmoid = c["model_type"] == "deepseek_v3"
    w.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID if sigmoid else gguf.ExpertGatingFuncType.SOFTMAX)
    if (c.get("n_group") or 1) > 1:
        w.add_expert_group_count(c["n_group"])
        w.add_expert_group_used_count(c["topk_group"])
    for key, value in (extra or {}).items():
        getattr(w, f"add_{key}")(value)
    add_vocabulary(w)
    quant = None if storage == "f32" else gguf.GGMLQuantizationType[storage.upper()]

    def add(name: str, values: np.ndarray) -> None:
        if quant is None or values.ndim < 2:
            w.add_tensor(name, values)
        elif values.shape[-1] % gguf.GGML_QUANT_SIZES[quant][0] == 0:
            w.add_tensor(name, gguf.quants.quantize(values, quant), raw_dtype=quant)
        else:
            w.add_tensor(name, values.astype(np.float16))
    w.add_tensor("token_embd.weight", t["model.embed_tokens.weight"])
    for layer in range(layers):
        hf, p = f"model.layers.{layer}.", f"blk.{layer}."
        names = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
                 "self_attn.q_a_proj": "attn_q_a", "self_attn.q_a_layernorm": "attn_q_a_norm",
                 "self_attn.q_b_proj": "attn_q_b", "self_attn.q_proj": "attn_q",
                 "self_attn.kv_a_proj_with_mqa": "attn_kv_a_mqa", "self_attn.kv_a_layernorm": "attn_kv_a_norm",
                 "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
                 "mlp.down_proj": "ffn_down", "mlp.gate": "ffn_gate_inp", "mlp.shared_experts.gate_proj": "ffn_gate_shexp",
                 "mlp.shared_experts.up_proj": "ffn_up_shexp", "mlp.shared_experts.down_proj": "ffn_down_shexp"}
        for ours, theirs in names.items():
            if hf + ours + ".weight" in t:
                add(p + theirs + ".weight", t[hf + ours + ".weight"])
        if hf + "mlp.gate.e_score_correction_bias" in t:
            w.add_tensor(p + "exp_probs_b.bias", t[hf + "mlp.gate.e_score_correction_bias"])
        if hf + "mlp.gate.weight" in t:
            for proj in ("gate", "up", "down"):
                add(p + f"ffn_{proj}_exps.weight", np.stack(
                    [t[f"{hf}mlp.experts.{e}.{proj}_proj.weight"] for e in range(c["n_routed_experts"])]))
        kv_b = t[hf + "self_attn.kv_b_proj.weight"]
        if absorbed:
            per_head = kv_b.reshape(heads, nope + v_dim, kv_rank)
            add(p + "attn_k_b.weight", np.ascontiguousarray(per_head[:, :nope].transpose(0, 2, 1)))
            add(p + "attn_v_b.weight", np.ascontiguousarray(per_head[:, nope:]))
        else:
            add(p + "attn_kv_b.weight", kv_b)
    w.add_tensor("output_norm.weight", t["model.norm.weight"])
    add("output.weight", t["lm_head.weight"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_gemma4(folder: Path, path: Path, extra: dict | None = None, storage: str = "f32") -> None:
    """The Hugging Face Gemma 4 text model saved in `folder` written as llama.cpp's converter writes
    it (Gemma4Model): tensors renamed by the gguf package's map for gemma4 (layer_scalar,
    router.scale and per_expert_scale as layer_output_scale.weight, ffn_gate_inp.scale and
    ffn_down_exps.scale; the experts' gate_up_proj as ffn_gate_up_exps); the layers' kinds as a bool
    per layer; the full layers' head width as key_length, the sliding ones' as key_length_swa; KV
    heads and FFN widths per layer where they differ; rope_freqs.weight turning the full layers'
    first partial_rotary_factor of pairs (1) and holding the others still (1e30). `extra` and
    `storage` as write_deepseek2's. (Biases, which llama.cpp's gemma4 has none of, are written as
    the converter writes them.)"""
    c = json.loads((folder / "config.json").read_text())
    t = load_file(folder / "model.safetensors")
    layers, swa = c["num_hidden_layers"], [kind == "sliding_attention" for kind in c["layer_types"]]
    assert c["vocab_size"] == VOCAB
    shapes = [{"head_dim": c["head_dim"], "num_key_value_heads": c["num_key_value_heads"]} for _ in range(layers)]
    for index, overrides in (c.get("per_layer_config") or {}).items():
        shapes[int(index)].update(overrides)
    full_dim = next(s["head_dim"] for s, slides in zip(shapes, swa) if not slides)
    shared = c.get("num_kv_shared_layers") or 0
    rope = c["rope_parameters"]
    w = gguf.GGUFWriter(str(path), "gemma4")
    w.add_context_length(c["max_position_embeddings"])
    w.add_embedding_length(c["hidden_size"])
    w.add_block_count(layers)
    ffn = c["intermediate_size"]
    w.add_feed_forward_length([ffn * (2 if c.get("use_double_wide_mlp") and l >= layers - shared else 1)
                               for l in range(layers)] if c.get("use_double_wide_mlp") else ffn)
    w.add_head_count(c["num_attention_heads"])
    kv = [s["num_key_value_heads"] for s in shapes]
    w.add_head_count_kv(kv if len(set(kv)) > 1 else kv[0])
    w.add_layer_norm_rms_eps(c["rms_norm_eps"])
    w.add_rope_freq_base(rope["full_attention"]["rope_theta"])
    w.add_rope_freq_base_swa(rope["sliding_attention"]["rope_theta"])
    if c.get("final_logit_softcapping"):
        w.add_final_logit_softcapping(c["final_logit_softcapping"])
    w.add_sliding_window(c["sliding_window"])
    w.add_shared_kv_layers(shared)
    w.add_embedding_length_per_layer_input(c.get("hidden_size_per_layer_input") or 0)
    w.add_sliding_window_pattern(swa)
    w.add_key_length(full_dim)
    w.add_value_length(full_dim)
    w.add_key_length_swa(c["head_dim"])
    w.add_value_length_swa(c["head_dim"])
    w.add_rope_dimension_count(full_dim)
    w.add_rope_dimension_count_swa(c["head_dim"])
    if c.get("enable_moe_block"):
        w.add_expert_count(c["num_experts"])
        w.add_expert_used_count(c["top_k_experts"])
        w.add_expert_feed_forward_length(c["moe_intermediate_size"])
    for key, value in (extra or {}).items():
        getattr(w, f"add_{key}")(value)
    add_vocabulary(w)
    quant = None if storage == "f32" else gguf.GGMLQuantizationType[storage.upper()]
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.GEMMA4, layers)
    for name, values in t.items():
        layer = name.split(".")[2] if name.startswith("model.layers.") else None
        if name.endswith("router.scale"):
            gguf_name = f"blk.{layer}.ffn_gate_inp.scale"
        elif name.endswith("router.per_expert_scale"):
            gguf_name = f"blk.{layer}.ffn_down_exps.scale"
        else:
            suffixed = name if name.endswith((".weight", ".bias")) else name + ".weight"
            gguf_name = names.get_name(suffixed, try_suffixes=(".weight", ".bias"))
            assert gguf_name is not None, name
        if quant is not None and values.ndim >= 2 and "token_embd" not in gguf_name and \
                values.shape[-1] % gguf.GGML_QUANT_SIZES[quant][0] == 0:
            w.add_tensor(gguf_name, gguf.quants.quantize(values, quant), raw_dtype=quant)
        else:
            w.add_tensor(gguf_name, values)
    turned = int(full_dim * rope["full_attention"]["partial_rotary_factor"] / 2)
    w.add_tensor("rope_freqs.weight", np.array([1.0] * turned + [1e30] * (full_dim // 2 - turned), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
