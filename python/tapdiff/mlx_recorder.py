"""Record an Apple MLX model's run (as mlx-lm builds it) as a tapdiff dump.

    from mlx_lm import utils
    from tapdiff import MlxRecorder
    model, _ = utils.load_model(folder)   # in the checkpoint's dtype; model.set_dtype(...) for another
    with MlxRecorder(model, "mlx.h5", folder) as recorder:
        generated = recorder.generate(prompt_ids, chunk=64, generate=16)

Every op tapdiff's graph has for the model (`tapdiff model-info --model FOLDER`) is kept from what
mlx-lm's own modules return: each module the op is the output of (or, for the attention's output,
the activation and the stream after attention, the input of) is wrapped in a module that keeps its
value and calls it unchanged, and each attention's RoPE is wrapped to keep its outputs (the queries,
then the keys, held [1, heads, rows, head_dim] as MLX's attention holds them: written here as
[rows, heads x head_dim]). Nothing of mlx-lm's arithmetic is rewritten: its cache, masks and fused
attention run as they do. Values are read in the dtype MLX computes in and stored exactly (f32
storage holds bf16 and f16 values); the dump states that dtype as its compute_dtype.

mlx-lm's modules of Llama, Mistral, Qwen2, Qwen3, OLMo 2, Gemma, Granite, Helium, ERNIE 4.5,
Seed-OSS, SmolLM3, Nemotron and StableLM are read (LAYOUTS: each model_type's norms and what their
inputs and outputs are; the attention's q_proj/k_proj/v_proj/o_proj, optional q/k norms and `rope`,
and the MLP's gate_proj/up_proj/down_proj are alike in all). A model whose forward leaves one of
tapdiff's ops unseen is refused at its first forward pass, naming the ops.
"""
from __future__ import annotations

import numpy as np

from .dump_writer import DumpWriter, model_info
from .recording import Recording, greedy


class Layout:
    """How one mlx-lm model_type lays out a decoder layer: its norm modules, each with the op of its
    output and of its input (None: not an op); whether the embedding is scaled after embed_tokens
    (Gemma: the op is then the first layer's input); whether the MLP reads the stream after
    attention itself (no norm before it: the op attn_residual is then the MLP's input)."""

    def __init__(self, norms: dict, embedding_scaled: bool = False, mlp_reads_stream: bool = False):
        self.norms, self.embedding_scaled, self.mlp_reads_stream = norms, embedding_scaled, mlp_reads_stream


_PRE_NORMS = {"input_layernorm": ("attn_norm", None), "post_attention_layernorm": ("ffn_norm", "attn_residual")}
# OLMo 2 norms after attention and MLP only: the MLP reads the stream after attention.
_POST_NORMS = {"post_attention_layernorm": ("attn_post_norm", None),
               "post_feedforward_layernorm": ("ffn_post_norm", None)}
LAYOUTS = {
    **{name: Layout(_PRE_NORMS) for name in ("llama", "mistral", "qwen2", "qwen3", "helium", "ernie4_5", "seed_oss",
                                             "smollm3", "nemotron", "stablelm")},
    "olmo2": Layout(_POST_NORMS, mlp_reads_stream=True),
    "gemma": Layout(_PRE_NORMS, embedding_scaled=True),
    "granite": Layout(_PRE_NORMS, embedding_scaled=True),  # its embedding_multiplier, after embed_tokens
}
SUPPORTED = tuple(LAYOUTS)


def _rows(x) -> np.ndarray:
    """An MLX array [1, rows, ...] as numpy [rows, width] in float32, which holds bf16 and f16
    values exactly."""
    import mlx.core as mx

    if x.dtype != mx.float32:
        x = x.astype(mx.float32)
    value = np.array(x, copy=True)
    return value.reshape(value.shape[1], -1)


def _heads_rows(x) -> np.ndarray:
    """RoPE's [1, heads, rows, head_dim] as [rows, heads x head_dim]."""
    return _rows(x.transpose(0, 2, 1, 3))


def module_wrappers():
    """The module wrappers (Kept, KeptRope), made once mlx is imported (the package itself does not
    need mlx). Kept also serves a hand-made MLX recorder (tests/conformance/mlx_recorder.py) with a
    `convert` of its own."""
    import mlx.nn as nn

    class Kept(nn.Module):
        """Calls `inner` unchanged; keeps its output under `output` and its input under `input`
        (and, used as the output matrix, its logits under `_logits`), each through `convert`."""

        def __init__(self, inner, keep, output=None, input=None, convert=_rows):
            super().__init__()
            self.inner = inner
            self._keep, self._output, self._input, self._convert = keep, output, input, convert

        def __call__(self, x, *args, **kwargs):
            if self._input:
                self._keep(self._input, self._convert(x))
            y = self.inner(x, *args, **kwargs)
            if self._output:
                self._keep(self._output, self._convert(y))
            return y

        def __getattr__(self, key):  # what the model reads of the module it wrapped (use_sliding, weight)
            try:
                return super().__getattr__(key)
            except AttributeError:
                inner = dict.get(self, "inner")
                if inner is None:
                    raise
                return getattr(inner, key)

        def as_linear(self, x):  # a tied embedding used as the output matrix: the logits
            y = self.inner.as_linear(x)
            self._keep(self._logits, self._convert(y))
            return y

    class KeptRope(nn.Module):
        """An attention's RoPE, called on its queries, then its keys, once each per forward pass."""

        def __init__(self, inner, keep, layer):
            super().__init__()
            self.inner = inner
            self._keep, self._layer, self._calls = keep, layer, 0

        def __call__(self, x, *args, **kwargs):
            y = self.inner(x, *args, **kwargs)
            self._keep((self._layer, "rope_q" if self._calls % 2 == 0 else "rope_k"), _heads_rows(y))
            self._calls += 1
            return y

    return Kept, KeptRope


class MlxRecorder(Recording):
    """Wraps an mlx-lm causal LM (batch of one) and records each forward pass it makes through
    `generate` (or `forward`) into a DumpWriter dump."""

    def __init__(self, model, path, model_path, *, compute_dtype=None, storage_dtype="f32", tapdiff="tapdiff",
                 info=None, engine="mlx-lm"):
        import mlx.core as mx
        from mlx_lm.models import cache as mlx_cache

        model_type = getattr(getattr(model, "args", None), "model_type", None)
        if model_type not in SUPPORTED:
            raise ValueError(f"MlxRecorder reads mlx-lm's modules of {', '.join(SUPPORTED)}: found model_type "
                             f"{model_type!r}")
        super().__init__()
        self.model, self.layout = model, LAYOUTS[model_type]
        self.info = info if info is not None else model_info(model_path, tapdiff)
        self.config = self.info["model_config"]
        self.taps = {(t["layer"], t["op"]) for t in self.info["taps"]}
        weight = model.model.embed_tokens.weight
        dtype = {mx.float32: "f32", mx.float16: "f16", mx.bfloat16: "bf16"}
        if compute_dtype is None and weight.dtype not in dtype:
            raise ValueError(f"the model's weights are {weight.dtype}: give compute_dtype= (a quantized model "
                             f"computes in its activations' dtype)")
        self.writer = DumpWriter(path, model_path, engine=engine, device=str(mx.default_device()),
                                 compute_dtype=compute_dtype or dtype[weight.dtype], storage_dtype=storage_dtype,
                                 info=self.info)
        self.cache = mlx_cache.make_prompt_cache(model)  # before the wrapping: it reads the layers
        self.values: dict[tuple[int, str], np.ndarray] = {}
        self._wrap()

    def _keep(self, key, value):
        if key in self.taps:
            self.values[key] = value

    def _wrap(self):
        Kept, KeptRope = module_wrappers()
        inner = self.model.model
        n = len(inner.layers)

        def kept(owner, name, output=None, input=None):
            if hasattr(owner, name):
                self.swap(owner, name, Kept(getattr(owner, name), self._keep, output, input))

        scaled = self.layout.embedding_scaled
        kept(inner, "embed_tokens", None if scaled else (-1, "embed"))
        inner.embed_tokens._logits = (n, "logits")
        for i, layer in enumerate(inner.layers):
            attn, mlp = layer.self_attn, layer.mlp
            for norm, (output, input) in self.layout.norms.items():
                kept(layer, norm, (i, output), input and (i, input))
            for proj in ("q_proj", "k_proj", "v_proj"):
                kept(attn, proj, (i, proj))
            for norm in ("q_norm", "k_norm"):
                kept(attn, norm, (i, norm))
            kept(attn, "o_proj", (i, "o_proj"), (i, "attn"))
            self.swap(attn, "rope", KeptRope(attn.rope, self._keep, i))
            if self.layout.mlp_reads_stream:
                kept(layer, "mlp", None, (i, "attn_residual"))
            kept(mlp, "gate_proj", (i, "ffn_gate"))
            kept(mlp, "up_proj", (i, "ffn_up"))
            kept(mlp, "down_proj", (i, "ffn_down"), (i, "ffn_act"))
            embed = (-1, "embed") if scaled and i == 0 else None
            self.swap(inner.layers, i, Kept(layer, self._keep, (i, "ffn_residual"), embed))
        kept(inner, "norm", (n, "final_norm"))
        kept(self.model, "lm_head", (n, "logits"))

    def forward(self, tokens, decode=False):
        """One forward pass over `tokens` (a prefill chunk or a decode step's token) after those
        the recorder's cache holds, recorded; returns its logits [rows, vocab] as numpy float32."""
        import mlx.core as mx

        self.values = {}
        with self.writer.chunk(tokens, decode=decode) as chunk:
            logits = self.model(mx.array([[int(t) for t in tokens]]), cache=self.cache)
            mx.eval(logits)
            rows = _rows(logits)
            self._keep((self.config["n_layers"], "logits"), rows)
            missing = sorted(self.taps - set(self.values))
            if missing:
                raise RuntimeError(f"mlx-lm's modules gave no value for {', '.join(f'{l}/{o}' for l, o in missing)}")
            for (layer, op), value in self.values.items():
                chunk.record(layer, op, value)
        return rows

    def generate(self, prompt, chunk=0, generate=0):
        """Prefills `prompt` in chunks of `chunk` tokens (0: whole), then generates greedily;
        records every pass, finishes the dump and returns the generated tokens."""
        generated = greedy(self.forward, prompt, chunk, generate)
        self.writer.finish(generated=generated)
        return generated
