"""Tiny random models written as GGUF by the gguf package (llama.cpp's own GGUF library), F32
tensors (the matrices of the blocks and the output quantized by that package where asked), with
the metadata llama.cpp's converter writes for each case."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import gguf
import numpy as np

DIM, LAYERS, HEADS, KV_HEADS, HEAD_DIM, FFN, VOCAB = 64, 3, 4, 2, 16, 96, 320


@dataclass
class GgufCase:
    name: str
    arch: str = "llama"  # llama | smollm3 | phi3 | qwen2 | qwen3 | qwen3moe | granite | olmo2 | gemma | gemma2 | gemma3
    rope_base: float = 10000.0
    head_dim: int = HEAD_DIM  # written as attention.key_length / value_length where not DIM / HEADS
    rotary_dim: int = 0  # 0: head_dim
    linear_factor: float = 0.0  # rope.scaling.type linear when > 0
    llama3: bool = False  # rope_freqs.weight as llama.cpp's converter computes it for Llama 3.1
    longrope: int = 0  # Phi-3's LongRoPE when > 0: its original context, rope_factors_long/short.weight, attn_factor
    extra: dict = field(default_factory=dict)
    layers: int = LAYERS
    post_norm_gain: float = 1.0  # the post-norms' weights times this: updates as large as the stream
    experts: tuple[int, int, int] | None = None  # (count, used per token, FFN width of each): a mixture of experts


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
    # Mixtral as llama.cpp's converter writes it (arch llama with experts), and Qwen3-MoE.
    GgufCase("mixtral", rope_base=1000000.0, experts=(4, 2, FFN)),
    GgufCase("qwen3moe", arch="qwen3moe", rope_base=1000000.0, experts=(8, 3, 40)),
    GgufCase("gemma3", arch="gemma3", rope_base=1000000.0, linear_factor=4.0, extra={"sliding_window": 12}, layers=6,
             post_norm_gain=8.0),
]

# What each architecture's block has, as llama.cpp's converter writes it: norms before the
# attention and the FFN, after them, and q/k norms of head_dim or of the whole projection.
PRE_NORMS = {"olmo2": False}
POST_NORMS = {"olmo2", "gemma2", "gemma3"}
QK_NORM = {"qwen3": "head", "qwen3moe": "head", "olmo2": "whole", "gemma3": "head"}  # per head, or the whole projection
TIED = {"gemma", "gemma2", "gemma3"}
FUSED = {"phi3"}  # q, k and v in attn_qkv, gate and up in ffn_up, as llama.cpp's converter writes them


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
    type the gguf package quantizes, such as q8_0); the embedding and the norms stay F32."""
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(str(path), case.arch)
    quant = None if storage == "f32" else gguf.GGMLQuantizationType[storage.upper()]

    def add_matrix(name: str, values: np.ndarray) -> None:
        if quant is None:
            w.add_tensor(name, values)
        else:
            w.add_tensor(name, gguf.quants.quantize(values, quant), raw_dtype=quant)

    w.add_context_length(4096)
    w.add_embedding_length(DIM)
    w.add_block_count(case.layers)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_layer_norm_rms_eps(1e-5)
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
    if case.experts:
        w.add_expert_count(case.experts[0])
        w.add_expert_used_count(case.experts[1])
        if case.arch == "qwen3moe":
            w.add_expert_feed_forward_length(case.experts[2])
    for key, value in case.extra.items():  # add_embedding_scale(6.0), add_sliding_window(24), ...
        getattr(w, f"add_{key}")(value)
    add_vocabulary(w)

    def matrix(rows: int, cols: int) -> np.ndarray:
        return (rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float32)

    def norm(n: int, gain: float = 1.0) -> np.ndarray:
        return (gain * (1.0 + 0.3 * rng.standard_normal(n))).astype(np.float32)

    w.add_tensor("token_embd.weight", rng.standard_normal((VOCAB, DIM)).astype(np.float32))
    if case.llama3:
        w.add_tensor("rope_freqs.weight", llama3_rope_factors(case.rope_base, rotary_dim))
    if case.longrope:  # short factors near 1, long ones growing toward the low frequencies, as Phi-3's
        pairs = rotary_dim // 2
        w.add_tensor("rope_factors_long.weight", (1.0 + np.linspace(0, 12, pairs) ** 1.5).astype(np.float32))
        w.add_tensor("rope_factors_short.weight", (1.0 + 0.2 * rng.random(pairs)).astype(np.float32))
    for layer in range(case.layers):
        p = f"blk.{layer}."
        if PRE_NORMS.get(case.arch, True):
            w.add_tensor(p + "attn_norm.weight", norm(DIM))
        q, k, v = matrix(HEADS * hd, DIM), matrix(KV_HEADS * hd, DIM), matrix(KV_HEADS * hd, DIM)
        if case.arch in FUSED:
            add_matrix(p + "attn_qkv.weight", np.concatenate([q, k, v]))
        else:
            add_matrix(p + "attn_q.weight", q)
            add_matrix(p + "attn_k.weight", k)
            add_matrix(p + "attn_v.weight", v)
        if case.arch == "qwen2":
            for name, n in (("attn_q.bias", HEADS * hd), ("attn_k.bias", KV_HEADS * hd), ("attn_v.bias", KV_HEADS * hd)):
                w.add_tensor(p + name, (0.1 * rng.standard_normal(n)).astype(np.float32))
        if case.arch in QK_NORM:
            per_head = QK_NORM[case.arch] == "head"
            w.add_tensor(p + "attn_q_norm.weight", norm(hd if per_head else HEADS * hd))
            w.add_tensor(p + "attn_k_norm.weight", norm(hd if per_head else KV_HEADS * hd))
        add_matrix(p + "attn_output.weight", matrix(DIM, HEADS * hd))
        if case.arch in POST_NORMS:
            w.add_tensor(p + "post_attention_norm.weight", norm(DIM, case.post_norm_gain))
        if PRE_NORMS.get(case.arch, True):
            w.add_tensor(p + "ffn_norm.weight", norm(DIM))
        if case.experts:  # the router (its logits spread well past f32's rounding) and the stacked experts
            count, _, ffn = case.experts
            w.add_tensor(p + "ffn_gate_inp.weight", 4.0 * matrix(count, DIM))
            add_matrix(p + "ffn_gate_exps.weight", np.stack([matrix(ffn, DIM) for _ in range(count)]))
            add_matrix(p + "ffn_up_exps.weight", np.stack([matrix(ffn, DIM) for _ in range(count)]))
            add_matrix(p + "ffn_down_exps.weight", np.stack([matrix(DIM, ffn) for _ in range(count)]))
        else:
            gate, up = matrix(FFN, DIM), matrix(FFN, DIM)
            if case.arch in FUSED:
                add_matrix(p + "ffn_up.weight", np.concatenate([gate, up]))
            else:
                add_matrix(p + "ffn_gate.weight", gate)
                add_matrix(p + "ffn_up.weight", up)
            add_matrix(p + "ffn_down.weight", matrix(DIM, FFN))
        if case.arch in POST_NORMS:
            w.add_tensor(p + "post_ffw_norm.weight", norm(DIM, case.post_norm_gain))
    w.add_tensor("output_norm.weight", norm(DIM))
    if case.arch not in TIED:
        add_matrix("output.weight", matrix(VOCAB, DIM) * 4.0)
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
