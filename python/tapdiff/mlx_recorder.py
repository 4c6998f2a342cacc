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

mlx-lm's modules of Llama, Mistral, Ministral 3, Qwen2, Qwen3, OLMo 2, OLMo 3, EXAONE 4, Gemma,
Gemma 2, Gemma 3, Granite, Helium, ERNIE 4.5, Apertus, Seed-OSS, SmolLM3, Nemotron, StableLM, Phi,
Phi-3, GLM, GLM-4, Starcoder 2, Hunyuan, Cohere, Cohere 2, GPT-2 and GPT-NeoX are read (LAYOUTS:
each model_type's norm, attention and MLP modules and which ops their inputs and outputs are, a
fused product split into its ops; each attention's `rope`; what a parallel block or Ministral 3's
query temperature computes inline), and the mixtures of experts of Qwen3-MoE, OLMoE, Mixtral,
PhiMoE, Qwen2-MoE, ERNIE-4.5-MoE, Granite-MoE, GLM-4.5, dots1, MiniMax-M2, gpt-oss (its released
MXFP4 checkpoints, the only ones mlx-lm reads) and DeepSeek-V3 (its latent attention: q's and the
latent's products and norms, the RoPE parts, not the keys and values its prefill expands and its
decode never does): the router's logits
(or, where the gate returns them, the chosen ids and their weights), the ids the block's SwitchGLU
is called with (each row sorted ascending) and the block's output; what they compute inline (the
routing scores and weights, beside a shared expert the routed sum) is not recorded
(MlxRecorder.inline). A model whose forward leaves one of tapdiff's ops unseen is refused at its
first forward pass, naming the ops.
"""
from __future__ import annotations

import numpy as np

from .dump_writer import DumpWriter, model_info
from .recording import Recording, greedy


class Layout:
    """How one mlx-lm model_type lays out a decoder layer. norms: its norm modules, each with the op
    of its output and of its input (None: not an op); attention and mlp: the modules of the layer's
    attention (`attention_module`) and mlp the same way, where an output of several ops is a fused
    product, split into them by their widths (`per_head`: modules whose product holds each head's q,
    k and v side by side, GPT-NeoX's query_key_value); whether the embedding is completed after the
    embedding module, scaled or with positions added (the op is then the first layer's input);
    whether the MLP reads the stream after attention itself (no norm before it: the op
    attn_residual is then the MLP's input); whether attention and MLP run in parallel on the layer's
    input (True, or the layer's attribute that says so), which adds their outputs to the stream at
    once: attn_residual is then not computed; the ops each layer computes inline otherwise
    (`inline`); the modules that see heads first; the name of a
    layer's mixture-of-experts block (its switch_mlp called with the chosen experts' ids, its output
    moe_out) and of the block's module whose output is the router's logits; the names of the model's
    embedding, list of layers, final norm and output matrix (`outer`)."""

    def __init__(self, norms: dict, embed_is_layer_input: bool = False, mlp_reads_stream: bool = False,
                 attention: dict | None = None, mlp: dict | None = None, heads_first: tuple = (),
                 moe_block: str = "mlp", router: str = "gate", gate_chooses: bool = False, switch: str = "switch_mlp",
                 attention_module: str = "self_attn", per_head: tuple = (), parallel: bool | str = False,
                 inline: tuple = (), outer: dict | None = None):
        self.norms, self.embed_is_layer_input, self.mlp_reads_stream = norms, embed_is_layer_input, mlp_reads_stream
        self.attention = {**_ATTENTION, **(attention or {})}
        self.mlp = mlp or _GATED_MLP
        self.heads_first = heads_first  # modules called on [1, heads, rows, head_dim], as RoPE is
        self.moe_block = moe_block  # the layer's module that is its mixture of experts, where it has a switch_mlp
        self.router = router  # the block's module whose output is the router's logits (a dotted path)
        # The block's gate returns the chosen ids and their weights (the logits stay inside it)
        self.gate_chooses = gate_chooses
        self.switch = switch  # the block's SwitchGLU, called with the tokens and the chosen ids
        self.attention_module, self.per_head, self.parallel, self.inline = attention_module, per_head, parallel, inline
        self.outer = {**_OUTER, **(outer or {})}

    def is_parallel(self, layer) -> bool:
        return bool(getattr(layer, self.parallel)) if isinstance(self.parallel, str) else self.parallel


_PRE_NORMS = {"input_layernorm": ("attn_norm", None), "post_attention_layernorm": ("ffn_norm", "attn_residual")}
# OLMo 2 norms after attention and MLP only: the MLP reads the stream after attention.
_POST_NORMS = {"post_attention_layernorm": ("attn_post_norm", None),
               "post_feedforward_layernorm": ("ffn_post_norm", None)}
# Gemma 2 and 3: both, the MLP's pre norm named pre_feedforward_layernorm.
_GEMMA_NORMS = {"input_layernorm": ("attn_norm", None), "post_attention_layernorm": ("attn_post_norm", None),
                "pre_feedforward_layernorm": ("ffn_norm", "attn_residual"),
                "post_feedforward_layernorm": ("ffn_post_norm", None)}
# GLM-4: both, its post norms named its own way.
_FOUR_NORMS = {**_PRE_NORMS, "post_self_attn_layernorm": ("attn_post_norm", None),
               "post_mlp_layernorm": ("ffn_post_norm", None)}
_ATTENTION = {"q_proj": ("q_proj", None), "k_proj": ("k_proj", None), "v_proj": ("v_proj", None),
              "q_norm": ("q_norm", None), "k_norm": ("k_norm", None), "o_proj": ("o_proj", "attn")}
# DeepSeek's latent attention: q through q_a_proj, its norm and q_b_proj (or q_proj alone), the
# latent and the shared key part from kv_a_proj_with_mqa, the latent's norm.
_LATENT_ATTENTION = {"q_a_proj": ("q_a_proj", None), "q_a_layernorm": ("q_a_norm", None), "q_b_proj": ("q_proj", None),
                     "kv_a_proj_with_mqa": ("kv_a_proj", None), "kv_a_layernorm": ("kv_a_norm", None)}
_OUTER = {"embed": "embed_tokens", "layers": "layers", "norm": "norm", "head": "lm_head"}
_GATED_MLP = {"gate_proj": ("ffn_gate", None), "up_proj": ("ffn_up", None), "down_proj": ("ffn_down", "ffn_act")}
_FUSED_MLP = {"gate_up_proj": (("ffn_gate", "ffn_up"), None), "down_proj": ("ffn_down", "ffn_act")}
LAYOUTS = {
    **{name: Layout(_PRE_NORMS) for name in ("llama", "mistral", "qwen2", "qwen3", "helium", "ernie4_5", "seed_oss",
                                             "smollm3", "nemotron", "stablelm", "qwen3_moe", "olmoe", "qwen2_moe",
                                             "ernie4_5_moe")},
    **{name: Layout(_PRE_NORMS, moe_block="block_sparse_moe") for name in ("mixtral", "phimoe", "minimax_m2")},
    "glm4_moe": Layout(_PRE_NORMS, gate_chooses=True),
    "dots1": Layout(_PRE_NORMS, gate_chooses=True, switch="experts"),
    "gpt_oss": Layout(_PRE_NORMS, router="router", switch="experts"),
    **{name: Layout(_POST_NORMS, mlp_reads_stream=True) for name in ("olmo2", "olmo3", "exaone4")},
    "gemma": Layout(_PRE_NORMS, embed_is_layer_input=True),
    "granite": Layout(_PRE_NORMS, embed_is_layer_input=True),  # its embedding_multiplier, after embed_tokens
    "granitemoe": Layout(_PRE_NORMS, embed_is_layer_input=True, moe_block="block_sparse_moe", router="router.layer"),
    "gemma2": Layout(_GEMMA_NORMS, embed_is_layer_input=True),
    "gemma3_text": Layout(_GEMMA_NORMS, embed_is_layer_input=True, heads_first=("q_norm", "k_norm")),
    "phi3": Layout(_PRE_NORMS, attention={"qkv_proj": (("q_proj", "k_proj", "v_proj"), None)}, mlp=_FUSED_MLP),
    "glm": Layout(_PRE_NORMS, mlp=_FUSED_MLP),
    "glm4": Layout(_FOUR_NORMS, mlp=_FUSED_MLP),
    "starcoder2": Layout(_PRE_NORMS, mlp={"c_fc": ("ffn_up", None), "c_proj": ("ffn_down", "ffn_act")}),
    "hunyuan_v1_dense": Layout(_PRE_NORMS, attention={"query_layernorm": ("q_norm", None),
                                                      "key_layernorm": ("k_norm", None)},
                               heads_first=("query_layernorm", "key_layernorm")),
    "apertus": Layout({"attention_layernorm": ("attn_norm", None),
                       "feedforward_layernorm": ("ffn_norm", "attn_residual")}),
    # Cohere and Phi: one norm before attention and MLP side by side
    **{name: Layout({"input_layernorm": ("attn_norm", None)}, parallel=True) for name in ("cohere", "cohere2")},
    "phi": Layout({"input_layernorm": ("attn_norm", None)}, parallel=True,
                  attention={"dense": ("o_proj", "attn")},
                  mlp={"fc1": ("ffn_up", None), "fc2": ("ffn_down", "ffn_act")},
                  outer={"norm": "final_layernorm"}),
    "gpt_neox": Layout(_PRE_NORMS, parallel="use_parallel_residual", attention_module="attention",
                       attention={"query_key_value": (("q_proj", "k_proj", "v_proj"), None),
                                  "dense": ("o_proj", "attn")}, per_head=("query_key_value",),
                       mlp={"dense_h_to_4h": ("ffn_up", None), "dense_4h_to_h": ("ffn_down", "ffn_act")},
                       outer={"embed": "embed_in", "layers": "h", "norm": "final_layer_norm", "head": "embed_out"}),
    "gpt2": Layout({"ln_1": ("attn_norm", None), "ln_2": ("ffn_norm", "attn_residual")}, embed_is_layer_input=True,
                   attention_module="attn", attention={"c_attn": (("q_proj", "k_proj", "v_proj"), None),
                                                       "c_proj": ("o_proj", "attn")},
                   mlp={"c_fc": ("ffn_up", None), "c_proj": ("ffn_down", "ffn_act")},
                   outer={"embed": "wte", "layers": "h", "norm": "ln_f"}),
    # Ministral 3 multiplies RoPE's queries by the query temperature inline (tapdiff's rope_q holds the product)
    "ministral3": Layout(_PRE_NORMS, inline=("rope_q",)),
    # DeepSeek-V3: its RoPE turns q's RoPE part alone (rope_q is q_proj's heads with it in place); its
    # prefill expands every cached position's keys and values from the latent (embed_q, unembed_out)
    # and its decode never does (the absorbed form): k_proj and v_proj are not recorded.
    "deepseek_v3": Layout(_PRE_NORMS, attention=_LATENT_ATTENTION, gate_chooses=True, inline=("k_proj", "v_proj")),
    # DeepSeek-V3.2: the same, with its indexer (MlxRecorder._wrap): its products, key norm, RoPE
    # and kept positions recorded, its scores inline
    "deepseek_v32": Layout(_PRE_NORMS, attention=_LATENT_ATTENTION, gate_chooses=True,
                           inline=("k_proj", "v_proj")),
}
SUPPORTED = tuple(LAYOUTS)


def _rows(x) -> np.ndarray:
    """An MLX array [1, rows, ...] (or [rows, width]) as numpy [rows, width] in float32, which holds
    bf16 and f16 values, and expert ids, exactly."""
    import mlx.core as mx

    if x.dtype != mx.float32:
        x = x.astype(mx.float32)
    value = np.array(x, copy=True)
    return value.reshape(value.shape[1] if value.ndim > 2 else value.shape[0], -1)


def _heads_rows(x) -> np.ndarray:
    """RoPE's [1, heads, rows, head_dim] as [rows, heads x head_dim]."""
    return _rows(x.transpose(0, 2, 1, 3))


def _per_head(heads: int):
    """A product [1, rows, heads x (q, k, v)] as [rows, q of every head, then k, then v]."""

    def convert(x) -> np.ndarray:
        value = _rows(x)
        return value.reshape(len(value), heads, 3, -1).transpose(0, 2, 1, 3).reshape(len(value), -1)

    return convert


def module_wrappers():
    """The module wrappers (Kept, KeptIds, KeptChoice, KeptRope, KeptPositions), made once mlx is imported (the
    package itself does not need mlx). Kept also serves a hand-made MLX recorder
    (tests/conformance/mlx_recorder.py) with a `convert` of its own."""
    import mlx.nn as nn

    class Wrapper(nn.Module):
        """A module around `inner` that lends it what the model reads of the module it wrapped
        (use_sliding, weight)."""

        def __getattr__(self, key):
            try:
                return super().__getattr__(key)
            except AttributeError:
                inner = dict.get(self, "inner")
                if inner is None:
                    raise
                return getattr(inner, key)

    class Kept(Wrapper):
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

        def as_linear(self, x):  # a tied embedding used as the output matrix: the logits
            y = self.inner.as_linear(x)
            self._keep(self._logits, self._convert(y))
            return y

    class KeptIds(nn.Module):
        """A mixture's switch_mlp, called with the tokens and the experts chosen for each: keeps
        the ids, each row ascending (as moe_ids holds them), and calls it unchanged."""

        def __init__(self, inner, keep, key):
            super().__init__()
            self.inner = inner
            self._keep, self._key = keep, key

        def __call__(self, x, indices, *args, **kwargs):
            self._keep(self._key, np.sort(_rows(indices), axis=1))
            return self.inner(x, indices, *args, **kwargs)

    class KeptChoice(nn.Module):
        """A mixture's gate that returns the experts it chose and their weights: keeps both, each
        row in the order that sorts its ids ascending, and returns them unchanged."""

        def __init__(self, inner, keep, layer):
            super().__init__()
            self.inner = inner
            self._keep, self._layer = keep, layer

        def __call__(self, x, *args, **kwargs):
            indices, weights = self.inner(x, *args, **kwargs)
            ids = _rows(indices)
            order = np.argsort(ids, axis=1, kind="stable")
            self._keep((self._layer, "moe_ids"), np.take_along_axis(ids, order, axis=1))
            self._keep((self._layer, "moe_weights"), np.take_along_axis(_rows(weights), order, axis=1))
            return indices, weights

    class KeptRope(nn.Module):
        """An attention's RoPE (or its indexer's: `ops`), called on its queries, then its keys, once
        each per forward pass."""

        def __init__(self, inner, keep, layer, ops=("rope_q", "rope_k")):
            super().__init__()
            self.inner = inner
            self._keep, self._layer, self._calls, self._ops = keep, layer, 0, ops

        def __call__(self, x, *args, **kwargs):
            y = self.inner(x, *args, **kwargs)
            self._keep((self._layer, self._ops[self._calls % 2]), _heads_rows(y))
            self._calls += 1
            return y

    class KeptPositions(Wrapper):
        """DeepSeek-V3.2's indexer, called on the pass's rows with the cache of its keys: returns the
        top-k positions of each row ([1, 1, rows, k], in no order; those after the row's own where it
        has fewer), or None where every cached position is kept. Keeps them as idx_ids: the row's
        own and earlier ones ascending, -1 after them."""

        def __init__(self, inner, keep, layer, top_k):
            super().__init__()
            self.inner = inner
            self._keep, self._layer, self._top_k = keep, layer, top_k

        def __call__(self, x, qr, mask, cache=None):
            first = cache.offset if cache is not None else 0
            picked = self.inner(x, qr, mask, cache=cache)
            rows = x.shape[1]
            kept = np.full((rows, self._top_k), -1.0)
            for t in range(rows):
                own = first + t
                row = range(own + 1) if picked is None else sorted(int(p) for p in _heads_rows(picked)[t] if p <= own)
                kept[t, :len(row)] = row
            self._keep((self._layer, "idx_ids"), kept)
            return picked

    return Kept, KeptIds, KeptChoice, KeptRope, KeptPositions


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
        self.widths = {(t["layer"], t["op"]): t["width"] for t in self.info["taps"]}
        self.taps = set(self.widths)
        weight = getattr(model.model, self.layout.outer["embed"]).weight
        dtype = {mx.float32: "f32", mx.float16: "f16", mx.bfloat16: "bf16"}
        if compute_dtype is None and weight.dtype not in dtype:
            raise ValueError(f"the model's weights are {weight.dtype}: give compute_dtype= (a quantized model "
                             f"computes in its activations' dtype)")
        self.writer = DumpWriter(path, model_path, engine=engine, device=str(mx.default_device()),
                                 compute_dtype=compute_dtype or dtype[weight.dtype], storage_dtype=storage_dtype,
                                 info=self.info)
        self.cache = mlx_cache.make_prompt_cache(model)  # before the wrapping: it reads the layers
        self.values: dict[tuple[int, str], np.ndarray] = {}
        # The ops mlx-lm computes inline, in no module of their own (a parallel block's attn_residual,
        # Ministral 3's rope_q, most of a mixture of experts): not recorded (`tapdiff compare` lists
        # them as tapped only in the reference; the check on B's own inputs of the ops that read them
        # names them as the taps that would decide it).
        self.inline: set[tuple[int, str]] = set()
        self._wrap()

    def _keep(self, key, value):
        if isinstance(key[0], tuple):  # a fused product: its ops side by side, each its tap's width
            ends = np.cumsum([self.widths[k] for k in key])
            if ends[-1] != value.shape[1]:
                raise RuntimeError(f"mlx-lm's fused {'+'.join(f'{l}/{o}' for l, o in key)} has {value.shape[1]} "
                                   f"columns: expected {ends[-1]}")
            for k, part in zip(key, np.split(value, ends[:-1], axis=1)):
                self._keep(k, part)
        elif key in self.taps and key not in self.inline:
            self.values[key] = self._rope_part_in_place(key, value) if key[1] == "rope_q" else value

    def _rope_part_in_place(self, key, rotated):
        """Latent attention's RoPE turns q's RoPE part alone, [rows, heads x rope_dim]: put in place
        after each head's no-RoPE channels of q_proj's output, as tapdiff's rope_q holds them."""
        mla = self.config.get("mla", {})
        if not mla.get("kv_rank"):
            return rotated
        q = self.values[(key[0], "q_proj")].copy()
        rows, heads = len(q), self.config["n_heads"]
        q.reshape(rows, heads, -1)[:, :, mla["nope_dim"]:] = rotated.reshape(rows, heads, mla["rope_dim"])
        return q

    def _wrap(self):
        Kept, KeptIds, KeptChoice, KeptRope, KeptPositions = module_wrappers()
        inner, outer = self.model.model, self.layout.outer
        layers = getattr(inner, outer["layers"])
        n = len(layers)
        per_head = _per_head(self.config["n_heads"])

        def kept(owner, name, output=None, input=None):
            if hasattr(owner, name):
                convert = _heads_rows if name in self.layout.heads_first else \
                    per_head if name in self.layout.per_head else _rows
                self.swap(owner, name, Kept(getattr(owner, name), self._keep, output, input, convert))

        def at(i, ops):  # the key of an op, or of each op of a fused product, at layer i
            if ops is None:
                return None
            return (i, ops) if isinstance(ops, str) else tuple((i, op) for op in ops)

        scaled = self.layout.embed_is_layer_input
        kept(inner, outer["embed"], None if scaled else (-1, "embed"))
        getattr(inner, outer["embed"])._logits = (n, "logits")
        for i, layer in enumerate(layers):
            parallel = self.layout.is_parallel(layer)
            self.inline.update((i, op) for op in self.layout.inline + (("attn_residual",) if parallel else ()))
            attn, mlp = getattr(layer, self.layout.attention_module), getattr(layer, "mlp", None)  # Mixtral: no mlp
            for owner, modules in ((layer, self.layout.norms), (attn, self.layout.attention),
                                   (mlp, self.layout.mlp)):
                for name, (output, input) in modules.items():
                    kept(owner, name, at(i, output), None if parallel and input == "attn_residual" else at(i, input))
            if hasattr(attn, "rope"):  # GPT-2 has none
                self.swap(attn, "rope", KeptRope(attn.rope, self._keep, i))
            if hasattr(attn, "indexer"):  # DeepSeek-V3.2's: its scores are computed inline
                indexer = attn.indexer
                for name, op in (("wq_b", "idx_q_proj"), ("wk", "idx_k_proj"), ("k_norm", "idx_k_norm"),
                                 ("weights_proj", "idx_weights")):
                    kept(indexer, name, (i, op))
                self.swap(indexer, "rope", KeptRope(indexer.rope, self._keep, i, ("idx_rope_q", "idx_rope_k")))
                self.swap(attn, "indexer", KeptPositions(indexer, self._keep, i, self.config["indexer"]["top_k"]))
                self.inline.add((i, "idx_scores"))
            if self.layout.mlp_reads_stream:
                kept(layer, "mlp", None, (i, "attn_residual"))
            block = getattr(layer, self.layout.moe_block, None)
            if hasattr(block, self.layout.switch):
                self._wrap_mixture(layer, block, i, kept, KeptIds, KeptChoice)
            embed = (-1, "embed") if scaled and i == 0 else None
            self.swap(layers, i, Kept(layer, self._keep, (i, "ffn_residual"), embed))
        kept(inner, outer["norm"], (n, "final_norm"))
        kept(self.model if hasattr(self.model, outer["head"]) else inner, outer["head"], (n, "logits"))

    def _wrap_mixture(self, layer, block, i, kept, KeptIds, KeptChoice):
        """A layer's mixture of experts: its router's logits (or, where its gate chooses, the ids
        and weights it returns), the ids its switch_mlp is called with, and its output: moe_out,
        or with a shared expert beside it moe_sum, the shared expert's output moe_shared (inline
        where a sigmoid gate scales it) and the routed sum inline."""
        self.inline.add((i, "moe_scores"))
        if self.layout.gate_chooses:
            self.swap(block, "gate", KeptChoice(block.gate, self._keep, i))
            self.inline.add((i, "moe_router"))
        else:
            self.inline.add((i, "moe_weights"))
            *path, name = self.layout.router.split(".")
            owner = block
            for step in path:
                owner = getattr(owner, step)
            kept(owner, name, (i, "moe_router"))
        switch = self.layout.switch
        self.swap(block, switch, KeptIds(getattr(block, switch), self._keep, (i, "moe_ids")))
        shared = next((name for name in ("shared_experts", "shared_expert") if hasattr(block, name)), None)
        if shared is None:
            kept(layer, self.layout.moe_block, (i, "moe_out"))
            return
        self.inline.add((i, "moe_out"))
        if hasattr(block, "shared_expert_gate"):
            self.inline.add((i, "moe_shared"))
        else:
            kept(block, shared, (i, "moe_shared"))
        kept(layer, self.layout.moe_block, (i, "moe_sum"))

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
            missing = sorted(self.taps - set(self.values) - self.inline)
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
