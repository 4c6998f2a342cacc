"""Record a Hugging Face transformers model's run as a tapdiff dump.

    import transformers
    from tapdiff import HfRecorder
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float64)
    # a mixture of experts in float64 on the CPU: also experts_implementation="eager" (the grouped
    # kernels refuse float64)
    with HfRecorder(model, "hf.h5", folder, compute_dtype="f64") as recorder:
        generated = recorder.generate(prompt_ids, chunk=64, generate=16)

Every op tapdiff's graph has for the model (`tapdiff model-info --model FOLDER`) is recorded from
forward hooks on the model's modules, and from what hooks cannot see: RoPE's outputs (the modeling
module's apply_rotary_pos_emb, wrapped while recording; where it rotates part of each head, the
channels it leaves are the projection's; where Llama 4's temperature scales q after it, Ministral 3's
get_llama_4_attn_scale, wrapped alike), the attention's output (o_proj's input) and the
activation (down_proj's input); in a mixture of experts the router's logits, chosen ids and
weights (what its top-k router returns) and the mixed output (Gemma 4's beside the MLP: also the
router's normed input, the experts' norms and the sum of the two branches, a norm's input). In a parallel block (Phi-2, Cohere,
StableLM's parallel residual), which adds attention and MLP to the stream at once, attn_residual is
the layer's input plus o_proj's output, added here in float64; where OLMo clamps q, k and v after
their projections (clip_qkv, outside any module), the recorded projections are clamped alike. `tapdiff compare` of this dump against `tapdiff run
--model FOLDER` needs no edits; with `--model FOLDER` it names the culprit of a bug in the model's
forward (docs/import.md, docs/bisect.md).
"""
from __future__ import annotations

import inspect
import sys

import numpy as np

from .dump_writer import DumpWriter, model_info
from .recording import Recording, greedy


def _rows(tensor) -> np.ndarray:
    """A [1, seq, ...] activation, or one already flattened to [seq, width] (OPT's FFN), as [seq,
    width] float64, copied: the model may add into it in place afterwards (Falcon's MLP output)."""
    value = tensor.detach().to("cpu").double().numpy().copy()
    if value.ndim >= 3:
        return value.reshape(value.shape[1], -1)
    return value.reshape(value.shape[0], -1) if value.ndim == 2 else value.reshape(1, -1)


def _heads_rows(tensor) -> np.ndarray:
    """RoPE's [1, heads, seq, head_dim] output as [seq, heads * head_dim]."""
    return _rows(tensor.transpose(1, 2))


def decoder_of(model):
    """The text decoder of a causal LM: its base model, a multimodal model's language model, OPT's
    decoder, Llama 4's model."""
    inner = getattr(model.base_model, "language_model", model.base_model)
    return _first(inner, DECODER) or inner


def _first(owner, names):
    """The first of the named submodules `owner` has (the families name one module apart), or None."""
    return next((getattr(owner, n) for n in names if hasattr(owner, n)), None)


# The modules' names across families: the decoder (OPT's, under the base model), its layers (GPT-2:
# h), the attention (GPT-NeoX: attention; GPT-2: attn; Falcon: self_attention), the norms before the attention and the FFN
# (GPT-2: ln_1, ln_2; OPT: self_attn_layer_norm, final_layer_norm; Falcon: ln_attn, ln_mlp;
# Apertus: attention_layernorm, feedforward_layernorm), o_proj (Phi-2, GPT-NeoX:
# dense; GPT-2: c_proj; OPT: out_proj; OPT's fc1 and fc2 sit on the layer itself), the q/k norms (HunYuan: query_layernorm, key_layernorm), the FFN's first and
# last matrices (StarCoder 2: c_fc and c_proj; Phi-2: fc1 and fc2; GPT-NeoX: dense_h_to_4h and
# dense_4h_to_h), the final norm (Phi-2: final_layernorm; GPT-NeoX: final_layer_norm).
DECODER = ("decoder", "model")  # (model: Llama 4's causal LM, whose base_model_prefix names no module of it)
LAYERS = ("layers", "h")
ATTENTION = ("self_attn", "attention", "attn", "self_attention")
ATTN_NORM = ("input_layernorm", "ln_1", "self_attn_layer_norm", "ln_attn", "attention_layernorm")
FFN_NORM = ("post_attention_layernorm", "ln_2", "final_layer_norm", "ln_mlp", "feedforward_layernorm")
O_PROJ = ("o_proj", "dense", "c_proj", "out_proj")
Q_NORM = ("q_norm", "query_layernorm")
K_NORM = ("k_norm", "key_layernorm")
UP = ("up_proj", "c_fc", "fc1", "dense_h_to_4h")
DOWN = ("down_proj", "c_proj", "fc2", "dense_4h_to_h")
FINAL_NORM = ("norm", "final_layernorm", "final_layer_norm", "ln_f")
FFN = ("mlp", "feed_forward")  # a layer's FFN (Llama 4: feed_forward)
MIXTURE = FFN + ("block_sparse_moe",)  # a layer's mixture of experts (Granite-MoE: block_sparse_moe), its router
ROUTER = ("gate", "router")  # and a shared expert beside it (Qwen2-MoE; DeepSeek; Granite-MoE-Shared, on the layer)
SHARED_EXPERT = ("shared_expert", "shared_experts", "shared_mlp")
# RoPE as the modeling modules apply it: (function, whether its output lists each pair's first
# channels then their second where the weights hold the pairs interleaved: DeepSeek-V3's
# rope_interleave). DeepSeek-V2's and Llama 4's apply_rotary_emb turn the pairs in place.
ROPE_FUNCTIONS = (("apply_rotary_pos_emb", False), ("apply_rotary_pos_emb_interleave", True),
                  ("apply_rotary_emb", False))
# The modeling modules whose RoPE function takes q and k [1, seq, heads, head_dim] (the others':
# [1, heads, seq, head_dim]).
SEQ_FIRST_ROPE = ("llama4",)


class HfRecorder(Recording):
    """Hooks a transformers causal LM (batch of one) and records each forward pass it makes
    through `generate` (or `forward`) into a DumpWriter dump."""

    def __init__(self, model, path, model_path, *, compute_dtype=None, storage_dtype="f64", tapdiff="tapdiff",
                 info=None, engine="transformers"):
        import torch

        super().__init__()
        self.model = model
        self.info = info if info is not None else model_info(model_path, tapdiff)
        self.config = self.info["model_config"]
        self.taps = {(t["layer"], t["op"]) for t in self.info["taps"]}
        dtype = {torch.float64: "f64", torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}
        compute = compute_dtype or dtype.get(next(model.parameters()).dtype, "f32")
        self.writer = DumpWriter(path, model_path, engine=engine, device=str(next(model.parameters()).device),
                                 compute_dtype=compute, storage_dtype=storage_dtype, info=self.info)
        self.decoder = decoder_of(model)
        self.values: dict[tuple[int, str], np.ndarray] = {}
        self.handles = []
        self.layer = None  # the layer whose attention is running (for RoPE's outputs)
        self.rope_calls = 0  # RoPE calls in that layer so far (Gemma 4 turns q, then k, one call each)
        self.nope_layers = set()  # Llama 4's layers without RoPE (their q's temperature: _llama4_attention)
        self._hook_modules()
        self._wrap_rope()

    # --- hooks ---------------------------------------------------------------------------------

    def _keep(self, layer, op, value):
        if (layer, op) in self.taps:
            self.values[(layer, op)] = value

    def _output(self, module, layer, op, convert=_rows):
        if module is not None:
            self.handles.append(module.register_forward_hook(
                lambda _m, _args, out: self._keep(layer, op, convert(out[0] if isinstance(out, tuple) else out))))

    def _input(self, module, layer, op):
        if module is not None:
            self.handles.append(module.register_forward_pre_hook(
                lambda _m, args, kwargs: self._keep(layer, op, _rows(args[0] if args else
                                                                    kwargs["hidden_states"])),
                with_kwargs=True))

    def _split(self, module, layer, ops_widths, runs=1):
        """A fused projection's output: the ops' columns side by side, in `runs` runs (query_key_value:
        per KV head, its query heads' columns, its k's and v's)."""
        def hook(_m, _args, out):
            value, at = _rows(out), 0
            value = value.reshape(value.shape[0], runs, -1)
            for op, width in ops_widths:
                self._keep(layer, op, value[:, :, at:at + width].reshape(value.shape[0], -1))
                at += width
        if module is not None:
            self.handles.append(module.register_forward_hook(hook))

    def _enter_layer(self, layer):
        self.layer, self.rope_calls = layer, 0

    def _head_norm(self, module, layer, op, projections):
        """A per-head norm, whose input a family views as [1, seq, heads, head_dim] (Qwen3) or already
        transposed to [1, heads, seq, head_dim] (Gemma 3): told apart by the values of the first of
        `projections` recorded (Gemma 4's v_norm reads k_proj's output where keys are values)."""
        def hook(_m, args, out):
            x = args[0]
            projected = next((self.values[(layer, p)] for p in projections if (layer, p) in self.values), None)
            seq_first = x.ndim != 4 or (projected is not None and projected.shape == _rows(x).shape and
                                        np.array_equal(_rows(x), projected))
            self._keep(layer, op, _rows(out) if seq_first else _heads_rows(out))
        if module is not None:
            self.handles.append(module.register_forward_hook(hook))

    def _routing(self, router, mixture, layer, logits_first=True):
        """A mixture of experts' router: the (logits, weights, ids) per token that transformers 5's top-k
        routers return, as tapdiff's moe_router, moe_weights and moe_ids (each row's ids ascending,
        the weights in their order), and where tapdiff's graph has them the moe_scores it chooses by
        (the logits' sigmoid or softmax, plus the router's e_score_correction_bias). A router that returns its logits alone (transformers 4.x) is
        refused: what it chose is not visible to a hook. Where its first member is not the logits
        (`logits_first` false: Gemma 4's probabilities), moe_router is recorded elsewhere."""
        def hook(_m, _args, out):
            if not isinstance(out, tuple) or len(out) != 3:
                raise TypeError(f"layer {layer}: the router {type(router).__name__} returns {type(out).__name__}, "
                                "expected (logits, weights, ids) as transformers 5's top-k routers do")
            logits, weights, ids = (t.detach().to("cpu") for t in out)
            order = ids.argsort(dim=-1)
            if logits_first:
                self._keep(layer, "moe_router", logits.double().numpy().reshape(-1, logits.shape[-1]))
            if (layer, "moe_scores") in self.taps:  # what the router chooses by: its scores plus its selection bias
                owners = (router, mixture, getattr(router, "moe_statics", None))  # MiniMax-M2's block, ERNIE's statics
                bias = next((b for b in (getattr(m, "e_score_correction_bias", None) for m in owners)
                             if b is not None), None)
                sigmoid = self.config["experts"].get("score") == "sigmoid"
                scores = logits.double().sigmoid() if sigmoid else logits.double().softmax(dim=-1)
                scores = scores + (0.0 if bias is None else bias.detach().to("cpu").double().reshape(-1))
                self._keep(layer, "moe_scores", scores.numpy().reshape(-1, logits.shape[-1]))
            self._keep(layer, "moe_ids", ids.gather(-1, order).double().numpy().reshape(-1, ids.shape[-1]))
            self._keep(layer, "moe_weights", weights.gather(-1, order).double().numpy().reshape(-1, ids.shape[-1]))
        self.handles.append(router.register_forward_hook(hook))

    def _mixture_beside_mlp(self, layer, i):
        """Gemma 4's MoE block, beside the layer's MLP: the router's normed input (its projection's
        input) and logits (the projection's output), its choice, the experts' own norm, their output
        and its norm, the MLP's output normed, and the sum of the two (the post-FFN norm's input)."""
        self._input(layer.router.proj, i, "moe_router_norm")
        self._output(layer.router.proj, i, "moe_router")
        self._routing(layer.router, layer, i, logits_first=False)
        self._output(layer.pre_feedforward_layernorm_2, i, "moe_norm")
        self._output(layer.experts, i, "moe_out")
        self._output(layer.post_feedforward_layernorm_2, i, "moe_post_norm")
        self._output(layer.post_feedforward_layernorm_1, i, "dense_post_norm")
        self._input(layer.post_feedforward_layernorm, i, "ffn_sum")

    def _shared_expert(self, expert, gate, layer):
        """A shared expert's output as tapdiff's moe_shared: scaled by the sigmoid of its gate's logit
        where it has one (Qwen2-MoE's shared_expert_gate, applied outside any module, after both ran)."""
        seen = {}

        def keep(part, value):
            seen[part] = value
            if gate is None:
                self._keep(layer, "moe_shared", seen.pop("expert"))
            elif len(seen) == 2:
                self._keep(layer, "moe_shared", seen.pop("expert") / (1.0 + np.exp(-seen.pop("gate"))))
        self.handles.append(expert.register_forward_hook(lambda _m, _args, out: keep("expert", _rows(out))))
        if gate is not None:
            self.handles.append(gate.register_forward_hook(lambda _m, _args, out: keep("gate", _rows(out))))

    def _hook_modules(self):
        c = self.config
        block = c.get("block", {})
        q_dim, kv_dim, ffn = c["n_heads"] * c["head_dim"], c["n_kv_heads"] * c["head_dim"], c["ffn_dim"]
        layers = _first(self.decoder, LAYERS)
        n = len(layers)
        self._input(layers[0], -1, "embed")  # after any embedding scale the model applies
        parallel = block.get("parallel", "none") != "none"
        # OLMo clamps q, k and v after their Linear modules (clip_qkv), outside any module a hook sees.
        limit = block.get("clip_qkv", 0)
        clip = (lambda out: np.clip(_rows(out), -limit, limit)) if limit > 0 else _rows
        for i, layer in enumerate(layers):
            attn, mlp = _first(layer, ATTENTION), _first(layer, FFN) or layer
            o_proj, down = _first(attn, O_PROJ), _first(mlp, DOWN)
            self.handles.append(attn.register_forward_pre_hook(lambda _m, _a, i=i: self._enter_layer(i)))
            self._output(_first(layer, ATTN_NORM), i, "attn_norm")
            for op in ("q_proj", "k_proj", "v_proj"):
                self._output(getattr(attn, op, None), i, op, clip)
            if getattr(attn, "v_proj", None) is None and c.get("values_from_keys", [False] * n)[i]:
                self._output(_first(attn, ("k_proj",)), i, "v_proj", clip)  # Gemma 4's values: k_proj's output
            self._output(o_proj, i, "o_proj")
            if hasattr(attn, "kv_a_proj_with_mqa"):
                self._latent_attention(attn, i)
            if hasattr(attn, "use_rope"):
                self._llama4_attention(attn, i)
            self._head_norm(_first(attn, Q_NORM), i, "q_norm", ("q_proj",))
            self._head_norm(_first(attn, K_NORM), i, "k_norm", ("k_proj",))
            self._head_norm(getattr(attn, "v_norm", None), i, "v_norm", ("v_proj", "k_proj"))  # Gemma 4's
            for fused in ("qkv_proj", "c_attn"):
                self._split(getattr(attn, fused, None), i, [("q_proj", q_dim), ("k_proj", kv_dim), ("v_proj", kv_dim)])
            group = c["n_heads"] // c["n_kv_heads"]  # query_key_value: per KV head, its query heads, k, v
            self._split(getattr(attn, "query_key_value", None), i, [("q_proj", group * c["head_dim"]),
                                                                    ("k_proj", c["head_dim"]),
                                                                    ("v_proj", c["head_dim"])], c["n_kv_heads"])
            self._input(o_proj, i, "attn")
            post_norms = block.get("post_norms", False)
            after_attention = _first(layer, FFN_NORM)
            before_ffn = getattr(layer, "pre_feedforward_layernorm", None)
            after_ffn = getattr(layer, "post_feedforward_layernorm", None)
            if hasattr(layer, "post_self_attn_layernorm"):  # GLM-4's sandwich norms
                after_attention, before_ffn = layer.post_self_attn_layernorm, after_attention
                after_ffn = layer.post_mlp_layernorm
            if post_norms:
                self._output(after_attention, i, "attn_post_norm")
                self._output(before_ffn, i, "ffn_norm")
            else:
                self._output(after_attention, i, "ffn_norm")
            if parallel:
                self._attn_residual(layer, o_proj, i)
            elif block.get("pre_norms", True):
                self._input(before_ffn if post_norms else after_attention, i, "attn_residual")
            else:
                self._input(mlp, i, "attn_residual")
            mixture = _first(layer, MIXTURE)
            if mixture is not None and hasattr(mixture, "experts") and c["experts"].get("weights_scale_input"):
                self._llama4_mixture(mixture, i)
            elif mixture is not None and hasattr(mixture, "experts"):  # a mixture of experts' layer
                self._routing(_first(mixture, ROUTER), mixture, i)
                shared = _first(mixture, SHARED_EXPERT) or _first(layer, SHARED_EXPERT)
                if shared is None:
                    self._output(mixture, i, "moe_out")
                else:
                    self._output(mixture.experts, i, "moe_out")
                    self._shared_expert(shared, getattr(mixture, "shared_expert_gate", None), i)
                    half = 0.5 if c["experts"].get("shared_average", False) else 1.0  # Cohere 2 MoE averages
                    self.handles.append(layer.register_forward_hook(lambda *_, i=i, half=half: self._keep(
                        i, "moe_sum", half * (self.values[(i, "moe_out")] + self.values[(i, "moe_shared")]))))
            else:
                self._output(getattr(mlp, "gate_proj", None), i, "ffn_gate")
                self._output(_first(mlp, UP), i, "ffn_up")
                self._split(getattr(mlp, "gate_up_proj", None), i, [("ffn_gate", ffn), ("ffn_up", ffn)])
                self._input(down, i, "ffn_act")
                self._output(down, i, "ffn_down")
            if hasattr(layer, "router") and hasattr(layer, "experts"):
                self._mixture_beside_mlp(layer, i)
            self._output(after_ffn, i, "ffn_post_norm")
            gate = getattr(layer, "per_layer_input_gate", None)
            if gate is None:
                self._output(layer, i, "ffn_residual")
            else:  # Gemma 4's per-layer input ends the layer: its own input is the layer's second argument
                self.handles.append(layer.register_forward_pre_hook(
                    lambda _m, args, i=i: self._keep(i, "ple_input", _rows(args[1]))))
                self._input(gate, i, "ffn_residual")
                self._output(gate, i, "ple_gate")
                self._input(layer.per_layer_projection, i, "ple_act")
                self._output(layer.per_layer_projection, i, "ple_proj")
                self._output(layer.post_per_layer_input_norm, i, "ple_norm")
                self._output(layer, i, "ple_residual")
        self._output(_first(self.decoder, FINAL_NORM), n, "final_norm")

    def _latent_attention(self, attn, layer):
        """DeepSeek's latent attention: q_a_proj, its norm and q_b_proj (tapdiff's q_proj),
        kv_a_proj_with_mqa, the latent's norm, and kv_b_proj, per head its key rows and its value
        rows, as tapdiff's k_proj and v_proj (DeepSeek-V3's expands the whole cached latent: the
        pass's own rows are its last)."""
        mla, heads = self.config["mla"], self.config["n_heads"]
        rows = {}
        self._output(getattr(attn, "q_a_proj", None), layer, "q_a_proj")
        self._output(getattr(attn, "q_a_layernorm", None), layer, "q_a_norm")
        self._output(getattr(attn, "q_b_proj", None), layer, "q_proj")
        self._output(attn.kv_a_proj_with_mqa, layer, "kv_a_proj")
        self.handles.append(attn.kv_a_proj_with_mqa.register_forward_hook(
            lambda _m, _args, out: rows.__setitem__("n", _rows(out).shape[0])))
        self._output(attn.kv_a_layernorm, layer, "kv_a_norm")

        def expanded(_m, _args, out):
            value = out.detach().to("cpu").double().numpy().reshape(-1, heads, mla["nope_dim"] + mla["v_dim"])
            value = value[-rows["n"]:]
            self._keep(layer, "k_proj", value[:, :, :mla["nope_dim"]].reshape(len(value), -1))
            self._keep(layer, "v_proj", value[:, :, mla["nope_dim"]:].reshape(len(value), -1))
        self.handles.append(attn.kv_b_proj.register_forward_hook(expanded))
        if hasattr(attn, "indexer"):
            self._indexer(attn.indexer, layer)

    def _indexer(self, indexer, layer):
        """DeepSeek-V3.2's indexer: its products, its key's norm and the positions it keeps (its
        top-k per query, those after the query's own left out, ascending, -1 after them); its RoPE
        outputs through the wrapped RoPE function (_indexer_rope). Its scores are computed inside
        its forward, where no hook sees them: not recorded."""
        self._output(indexer.wq_b, layer, "idx_q_proj")
        self._output(indexer.wk, layer, "idx_k_proj")
        self._output(indexer.k_norm, layer, "idx_k_norm")
        self._output(indexer.weights_proj, layer, "idx_weights")
        self.taps.discard((layer, "idx_scores"))
        top_k = self.config["indexer"]["top_k"]

        def kept(_m, args, picked):
            mask = args[3]  # [batch, rows, keys]: the rows are the last of the keys' positions
            rows, keys = mask.shape[-2], mask.shape[-1]
            out = np.full((rows, top_k), -1.0)
            for t, row in enumerate(picked[0].tolist()):
                positions = sorted(p for p in row if p <= keys - rows + t)
                out[t, :len(positions)] = positions
            self._keep(layer, "idx_ids", out)
        self.handles.append(indexer.register_forward_hook(kept))

    def _llama4_attention(self, attn, layer):
        """Llama 4's attention: one weightless norm module for q, then k (after RoPE, on the layers
        that rotate); on a layer without RoPE, q under the temperature, as the attention function
        receives it (tapdiff's rope_q there)."""
        seen = []

        def norm(_m, _args, out):
            seen.append(None)
            self._keep(layer, "q_norm" if len(seen) % 2 else "k_norm", _rows(out))
        if hasattr(attn, "qk_norm"):
            self.handles.append(attn.qk_norm.register_forward_hook(norm))
        if not attn.use_rope:
            self.nope_layers.add(layer)

    def _llama4_mixture(self, mixture, layer):
        """Llama 4's mixture: its router returns every expert's score (the top k logits' sigmoids,
        0 for the others) and the logits; its experts run on every token (the unchosen ones' input
        scaled to 0), their outputs summed over the experts; the shared expert's beside them."""
        k = self.config["experts"]["active"]

        def route(_m, _args, out):
            scores, logits = (t.detach().to("cpu").double() for t in out)
            ids = logits.topk(k, dim=-1).indices.sort(dim=-1).values
            self._keep(layer, "moe_router", logits.numpy())
            self._keep(layer, "moe_ids", ids.double().numpy())
            self._keep(layer, "moe_weights", scores.gather(-1, ids).numpy())

        def experts(_m, _args, out):
            value = out.detach().to("cpu").double().numpy()
            tokens = len(self.values.get((layer, "moe_router"), value))
            self._keep(layer, "moe_out", value.reshape(-1, tokens, value.shape[-1]).sum(axis=0))
        self.handles.append(mixture.router.register_forward_hook(route))
        self.handles.append(mixture.experts.register_forward_hook(experts))
        self._output(mixture.shared_expert, layer, "moe_shared")
        self._output(mixture, layer, "moe_sum")

    def _latent_rope(self, q_rot, k_rot, deinterleaved):
        """Latent attention's RoPE outputs (each head's RoPE part of q, the key part every head shares)
        as tapdiff's rope_q (whole heads, the no-RoPE channels q_proj's) and rope_k; pairs put back in
        place where transformers listed their first channels then their second."""
        mla, heads = self.config["mla"], self.config["n_heads"]
        q, k = _heads_rows(q_rot), _heads_rows(k_rot)
        if deinterleaved:
            q, k = (x.reshape(len(x), -1, 2, mla["rope_dim"] // 2).swapaxes(2, 3).reshape(len(x), -1) for x in (q, k))
        self._keep(self.layer, "rope_k", k)
        source = self.values.get((self.layer, "q_proj"))
        if source is not None:
            whole = source.reshape(len(source), heads, -1).copy()
            whole[:, :, mla["nope_dim"]:] = q.reshape(len(q), heads, -1)
            self._keep(self.layer, "rope_q", whole.reshape(len(source), -1))

    def _indexer_rope(self, q_rot, k_rot):
        """DeepSeek-V3.2's indexer's RoPE outputs ([1, seq, heads, rope_dim], its leading channels) as
        tapdiff's idx_rope_q and idx_rope_k: whole heads, the other channels its projection's and
        its key norm's."""
        rope_dim = self.config["mla"]["rope_dim"]
        for op, source, rotated in (("idx_rope_q", "idx_q_proj", q_rot), ("idx_rope_k", "idx_k_norm", k_rot)):
            whole = self.values.get((self.layer, source))
            if whole is None:
                continue
            rows = len(whole)
            heads = whole.reshape(rows, -1, self.config["indexer"]["head_dim"]).copy()
            heads[:, :, :rope_dim] = _rows(rotated).reshape(rows, -1, rope_dim)
            self._keep(self.layer, op, heads.reshape(rows, -1))

    def _attn_residual(self, layer, o_proj, i):
        """A parallel block's attn_residual: the layer's input plus o_proj's output."""
        inputs = {}
        self.handles.append(layer.register_forward_pre_hook(
            lambda _m, args, kwargs: inputs.__setitem__(i, _rows(args[0] if args else kwargs["hidden_states"])),
            with_kwargs=True))
        self.handles.append(o_proj.register_forward_hook(
            lambda _m, _args, out: self._keep(i, "attn_residual", inputs[i] + _rows(out))))

    def _wrap_rope(self):
        """RoPE's outputs: the modeling module's apply_rotary_pos_emb, wrapped while recording, and
        the query temperature that multiplies q after it (get_llama_4_attn_scale), where it has one."""
        module = sys.modules[type(_first(_first(self.decoder, LAYERS)[0], ATTENTION)).__module__]
        temperature = getattr(module, "get_llama_4_attn_scale", None)
        heads_rows = _rows if module.__name__.rsplit(".", 1)[-1].removeprefix("modeling_") in SEQ_FIRST_ROPE \
            else _heads_rows

        def rotated(rope, deinterleaved, indexer):
            def apply(q, k, *args, **kwargs):
                out = rope(q, k, *args, **kwargs)
                if indexer:
                    self._indexer_rope(*out)
                    return out
                if not isinstance(out, tuple):  # one tensor a call, q's then k's, sequence first (Gemma 4)
                    op, sources = (("rope_q", ("q_norm", "q_proj")), ("rope_k", ("k_norm", "k_proj")))[self.rope_calls]
                    self.rope_calls += 1
                    self._keep(self.layer, op, self._whole_heads(_rows(out), sources))
                    return out
                q_out, k_out = out
                if "mla" in self.config:
                    self._latent_rope(q_out, k_out, deinterleaved)
                else:
                    self._keep(self.layer, "rope_q", self._whole_heads(heads_rows(q_out), ("q_norm", "q_proj")))
                    self._keep(self.layer, "rope_k", self._whole_heads(heads_rows(k_out), ("k_norm", "k_proj")))
                return q_out, k_out
            return apply

        def attend(original):
            def attention(owner, query, *args, **kwargs):
                if self.layer in self.nope_layers:  # q under Llama 4's temperature: tapdiff's rope_q there
                    self._keep(self.layer, "rope_q", _heads_rows(query))
                return original(owner, query, *args, **kwargs)
            return attention
        if self.nope_layers and (eager := getattr(module, "eager_attention_forward", None)) is not None:
            self.swap(module, "eager_attention_forward", attend(eager))

        def scale(*args, **kwargs):
            factor = temperature(*args, **kwargs)  # [batch, 1, positions, 1]
            if (self.layer, "rope_q") in self.values:
                rows = factor.detach().to("cpu").double().numpy().reshape(-1, 1)
                self.values[(self.layer, "rope_q")] = self.values[(self.layer, "rope_q")] * rows
            return factor

        for name, deinterleaved in ROPE_FUNCTIONS:
            if (rope := getattr(module, name, None)) is not None:
                # DeepSeek-V3.2 turns its attention's pairs interleaved, its indexer's rotate-half
                indexer = "indexer" in self.config and name == "apply_rotary_pos_emb"
                self.swap(module, name, rotated(rope, deinterleaved, indexer))
        if temperature is not None:
            self.swap(module, "get_llama_4_attn_scale", scale)

    def _whole_heads(self, rotated, sources):
        """RoPE's output as whole heads: where the family rotates only the first channels of each head
        (partial_rotary_factor), the others as RoPE's input left them (the q/k norm's or projection's);
        where it rotates k repeated for each query head (Falcon's new layout), each KV head once."""
        head_dim = self.config["head_dim"]
        source = next((self.values[(self.layer, op)] for op in sources if (self.layer, op) in self.values), None)
        if source is not None and rotated.shape[1] > source.shape[1]:  # k repeated for each query head (Falcon)
            group = rotated.shape[1] // source.shape[1]
            rotated = rotated.reshape(rotated.shape[0], -1, head_dim)[:, ::group].reshape(rotated.shape[0], -1)
        if source is None or rotated.shape[1] == source.shape[1]:
            return rotated
        heads, rows = source.shape[1] // head_dim, source.shape[0]
        whole = source.reshape(rows, heads, head_dim).copy()
        whole[:, :, :rotated.shape[1] // heads] = rotated.reshape(rows, heads, -1)
        return whole.reshape(rows, -1)

    def close(self):
        """Removes the hooks and the wrapped functions; the dump stays as far as it was written."""
        for h in self.handles:
            h.remove()
        self.handles = []
        super().close()

    # --- running -------------------------------------------------------------------------------

    def forward(self, tokens, cache=None, decode=False):
        """One forward pass over `tokens` (a prefill chunk or a decode step's token) after those
        `cache` holds (a transformers Cache, None at first), recorded; returns its logits
        [rows, vocab] and the cache to pass next."""
        import torch

        self.values = {}
        # transformers 5.x names the cache argument `cache` (4.x and early 5.x: past_key_values)
        key = "cache" if "cache" in inspect.signature(self.model.forward).parameters else "past_key_values"
        with self.writer.chunk(tokens, decode=decode) as chunk:
            with torch.no_grad():
                out = self.model(input_ids=torch.tensor([list(tokens)]), use_cache=True, **{key: cache})
            logits = _rows(out.logits)
            self._keep(self.config["n_layers"], "logits", logits)
            missing = sorted(self.taps - set(self.values))
            if missing:
                raise RuntimeError(f"the hooks saw no value for {', '.join(f'{l}/{o}' for l, o in missing)}")
            for (layer, op), value in self.values.items():
                chunk.record(layer, op, value)
        return logits, getattr(out, "cache", None) or out.past_key_values

    def generate(self, prompt, chunk=0, generate=0):
        """Prefills `prompt` in chunks of `chunk` tokens (0: whole), then generates greedily;
        records every pass, finishes the dump and returns the generated tokens."""
        cache = None

        def step(tokens, decode):
            nonlocal cache
            logits, cache = self.forward(tokens, cache, decode=decode)
            return logits

        generated = greedy(step, prompt, chunk, generate)
        self.writer.finish(generated=generated)
        return generated
