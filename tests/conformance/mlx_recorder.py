"""Apple MLX running a Llama as mlx-lm builds it (mlx[cpu]: the same kernels' CPU build), recorded
op by op into one safetensors file per forward pass under tapdiff's own names, as an engine
developer would record it: every module of mlx-lm's Llama is wrapped to keep what it returns, and
nothing of its arithmetic is rewritten. The model runs in bfloat16 or float16 (its weights cast, as
mlx-lm runs a checkpoint of that dtype), with chunked prefill over its KV cache and greedy decode.

A bug is planted as it would live in an engine: in mlx-lm's own modules.
  rope-restart@all   RoPE positions restart at 0 in every forward pass (the cache offset ignored)
  mask-offset@all    the causal mask ignores the KV cache's offset (row i sees keys 0..i)
  attn-scale@L       layer L's attention scale from the width of all heads, 1/sqrt(heads x head_dim),
                     instead of one head's
  norm-eps@L         layer L's attention norm with epsilon 0.5 instead of the model's
"""
from __future__ import annotations

from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
from mlx_lm import utils as mlx_utils
from mlx_lm.models import cache as mlx_cache
from mlx_lm.models import llama as mlx_llama
from safetensors.torch import load_file, save_file

import hf_models
from tapdiff.mlx_recorder import module_wrappers

DTYPES = {"bf16": mx.bfloat16, "f16": mx.float16}


def peaked_llama(folder: Path) -> None:
    """A tiny Llama saved by transformers, with biases and a RoPE base away from the defaults, its
    q and k weights 10x what random initialisation gives, so that attention is peaked enough for
    its scale to matter. Its config as transformers 4.x wrote it: mlx-lm 0.32 reads rope_theta, not
    5.x's rope_parameters (it runs a 5.x config at base 10000 whatever it says)."""
    case = hf_models.Case("llama-mlx", "llama", {"rope_type": "default", "rope_theta": 50000.0},
                          {"attention_bias": True, "mlp_bias": True})
    hf_models.make_model(case, folder, "4.x", seed=3)
    weights = load_file(folder / "model.safetensors")
    for name in weights:
        if name.endswith(("q_proj.weight", "k_proj.weight")):
            weights[name] = weights[name] * 10
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})


def rows(x: mx.array) -> mx.array:
    """[1, L, ...] as [L, width]; [1, H, L, D] (RoPE's output, heads first as the attention holds
    it) kept as it is: the map that reads the dump says heads_first (test_mlx.py)."""
    return x if x.ndim == 4 else x.reshape(x.shape[1], -1)


class Taps:
    """What the wrapped modules of one forward pass returned, by tapdiff name (LAYER/OP)."""

    def __init__(self):
        self.values: dict[str, mx.array] = {}

    def keep(self, name: str, value: mx.array) -> None:
        self.values[name] = rows(value)


class TappedRope(nn.Module):
    """RoPE, called on the queries then the keys in each layer's attention."""

    def __init__(self, rope, taps: Taps, layer: int, restart: bool):
        super().__init__()
        self.inner = rope
        self._taps, self._layer, self._restart, self._calls = taps, layer, restart, 0

    def __call__(self, x, offset=0):
        y = self.inner(x, offset=0 if self._restart else offset)
        self._taps.keep(f"{self._layer}/{'rope_q' if self._calls % 2 == 0 else 'rope_k'}", y)
        self._calls += 1
        return y


def load(folder: Path, dtype: str, faults: set[str] = frozenset()):
    """mlx-lm's model of the Hugging Face folder in `dtype`, every op tapped, the faults planted,
    and its KV cache (made before the layers are wrapped: it reads them)."""
    model, _ = mlx_utils.load_model(folder)
    model.set_dtype(DTYPES[dtype])
    cache = mlx_cache.make_prompt_cache(model)
    taps = Taps()
    inner = model.model
    n = len(inner.layers)
    Kept, *_ = module_wrappers()

    def Tapped(module, name, input_name=None):  # noqa: N802 (it stands for a module class)
        """A module whose output is kept under `name` and its input under `input_name`."""
        return Kept(module, taps.values.__setitem__, name, input_name, convert=rows)

    embed = Tapped(inner.embed_tokens, "-1/embed")
    embed._logits = f"{n}/logits"
    inner.embed_tokens = embed
    for i, layer in enumerate(inner.layers):
        attn, mlp = layer.self_attn, layer.mlp
        if f"attn-scale@{i}" in faults:
            attn.scale = (attn.n_heads * attn.head_dim) ** -0.5
        if f"norm-eps@{i}" in faults:
            layer.input_layernorm.eps = 0.5
        layer.input_layernorm = Tapped(layer.input_layernorm, f"{i}/attn_norm")
        for proj in ("q_proj", "k_proj", "v_proj"):
            setattr(attn, proj, Tapped(getattr(attn, proj), f"{i}/{proj}"))
        attn.o_proj = Tapped(attn.o_proj, f"{i}/o_proj", f"{i}/attn")
        attn.rope = TappedRope(attn.rope, taps, i, "rope-restart@all" in faults)
        layer.post_attention_layernorm = Tapped(layer.post_attention_layernorm, f"{i}/ffn_norm",
                                                f"{i}/attn_residual")
        mlp.gate_proj = Tapped(mlp.gate_proj, f"{i}/ffn_gate")
        mlp.up_proj = Tapped(mlp.up_proj, f"{i}/ffn_up")
        mlp.down_proj = Tapped(mlp.down_proj, f"{i}/ffn_down", f"{i}/ffn_act")
        inner.layers[i] = Tapped(layer, f"{i}/ffn_residual")
    inner.norm = Tapped(inner.norm, f"{n}/final_norm")
    if hasattr(model, "lm_head"):
        model.lm_head = Tapped(model.lm_head, f"{n}/logits")
    if "mask-offset@all" in faults:
        mlx_llama.create_attention_mask = mask_ignoring_offset
    else:
        mlx_llama.create_attention_mask = CREATE_MASK
    return model, taps, cache


CREATE_MASK = mlx_llama.create_attention_mask


def mask_ignoring_offset(h, cache=None, *args, **kwargs):
    """An explicit causal mask built as if the cache were empty: query i sees keys 0..i only."""
    length = h.shape[1]
    offset = cache.offset if cache is not None else 0
    keys = mx.arange(offset + length)
    return keys[None, :] <= mx.arange(length)[:, None]


def run(folder: Path, out: Path, dtype: str, prompt: list[int], chunk: int, generate: int,
        faults: set[str] = frozenset()) -> list[int]:
    """Prefills the prompt in chunks, then generates greedily; writes out/pass_NNN.safetensors per
    forward pass (its taps, tokens, positions, decode flags). Returns the generated tokens."""
    model, taps, cache = load(folder, dtype, set(faults))
    out.mkdir(parents=True, exist_ok=True)
    generated: list[int] = []
    passes = [(prompt[i:i + chunk], False) for i in range(0, len(prompt), chunk)]
    position = 0
    index = 0

    def forward(tokens: list[int], decode: bool) -> int:
        nonlocal position, index
        taps.values.clear()
        logits = model(mx.array([tokens]), cache=cache)
        mx.eval(logits, *taps.values.values())
        arrays = dict(taps.values)
        arrays["tokens"] = mx.array(tokens, dtype=mx.int32)
        arrays["positions"] = mx.arange(position, position + len(tokens), dtype=mx.int32)
        arrays["decode"] = mx.array([1 if decode else 0] * len(tokens), dtype=mx.int32)
        mx.save_safetensors(str(out / f"pass_{index:03d}.safetensors"), arrays)
        position += len(tokens)
        index += 1
        return int(mx.argmax(logits[0, -1].astype(mx.float32)).item())

    for tokens, _ in passes:
        next_token = forward(tokens, False)
    for step in range(generate):
        generated.append(next_token)
        if step + 1 < generate:
            next_token = forward([next_token], True)
    mlx_llama.create_attention_mask = CREATE_MASK
    return generated
