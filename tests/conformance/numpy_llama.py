"""An engine outside tapdiff: a Llama forward pass in numpy (float64), written from the GGUF
layout alone (weights read with the gguf package), that records every op through the tapdiff
dump writer (python/tapdiff). Faults can be planted, as an engine's bugs."""
from __future__ import annotations

import numpy as np
from gguf import GGUFReader


class NumpyLlama:
    def __init__(self, path, config, faults=()):
        reader = GGUFReader(str(path))
        self.w = {t.name: np.array(t.data, dtype=np.float64) for t in reader.tensors}
        self.c = config
        self.faults = set(faults)
        self.k_cache = [np.zeros((0, config["n_kv_heads"] * config["head_dim"])) for _ in range(config["n_layers"])]
        self.v_cache = [np.zeros_like(k) for k in self.k_cache]

    def norm(self, x, weight):
        eps = self.c["norm_eps"] * (1000 if "norm-eps" in self.faults else 1)
        return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps) * weight

    def rope(self, x, positions, heads):
        d = self.c["head_dim"]
        if "rope-chunk-restart" in self.faults:
            positions = positions - positions[0]  # each chunk's positions restart at 0
        inv = self.c["rope_base"] ** (-np.arange(0, d, 2) / d)
        angle = positions[:, None] * inv[None, :]
        cos, sin = np.cos(angle), np.sin(angle)
        out = x.copy().reshape(len(positions), heads, d)
        even, odd = out[:, :, 0::2].copy(), out[:, :, 1::2].copy()
        out[:, :, 0::2] = even * cos[:, None, :] - odd * sin[:, None, :]
        out[:, :, 1::2] = even * sin[:, None, :] + odd * cos[:, None, :]
        return out.reshape(len(positions), heads * d)

    def rotate_half_order(self, x):
        """Each head's interleaved pairs (2j, 2j+1) moved to rotate-half places (j, j + d/2)."""
        d = self.c["head_dim"]
        heads = x.reshape(x.shape[0], -1, d)
        return np.concatenate([heads[:, :, 0::2], heads[:, :, 1::2]], axis=2).reshape(x.shape)

    def attend(self, q, layer, positions):
        c = self.c
        hd, nh, nkv = c["head_dim"], c["n_heads"], c["n_kv_heads"]
        keys, values = self.k_cache[layer], self.v_cache[layer]
        scale = 1 / np.sqrt(hd) * (2 if "attn-scale" in self.faults else 1)
        out = np.zeros((len(positions), nh * hd))
        for h in range(nh):
            kv = h // (nh // nkv)
            qh = q[:, h * hd:(h + 1) * hd]
            scores = qh @ keys[:, kv * hd:(kv + 1) * hd].T * scale
            visible = np.arange(keys.shape[0])[None, :] <= positions[:, None]
            scores = np.where(visible, scores, -np.inf)
            weights = np.exp(scores - scores.max(axis=1, keepdims=True))
            weights /= weights.sum(axis=1, keepdims=True)
            out[:, h * hd:(h + 1) * hd] = weights @ values[:, kv * hd:(kv + 1) * hd]
        return out

    def forward(self, tokens, positions, chunk):
        """One forward pass; records every op into chunk; returns the logits."""
        c, w = self.c, self.w
        x = w["token_embd.weight"][tokens]
        chunk.record(-1, "embed", x)
        for layer in range(c["n_layers"]):
            b = f"blk.{layer}."
            rec = lambda op, value: (chunk.record(layer, op, value), value)[1]
            h = rec("attn_norm", self.norm(x, w[b + "attn_norm.weight"]))
            q = h @ w[b + "attn_q.weight"].T
            k = h @ w[b + "attn_k.weight"].T
            if "qk-permuted" in self.faults:  # recorded in rotate-half channel order
                chunk.record(layer, "q_proj", self.rotate_half_order(q)), chunk.record(layer, "k_proj",
                                                                                     self.rotate_half_order(k))
            else:
                rec("q_proj", q), rec("k_proj", k)
            v = rec("v_proj", h @ w[b + "attn_v.weight"].T)
            q = rec("rope_q", self.rope(q, positions, c["n_heads"]))
            k = rec("rope_k", self.rope(k, positions, c["n_kv_heads"]))
            self.k_cache[layer] = np.vstack([self.k_cache[layer], k])
            self.v_cache[layer] = np.vstack([self.v_cache[layer], v])
            attn = rec("attn", self.attend(q, layer, positions))
            o = rec("o_proj", attn @ w[b + "attn_output.weight"].T)
            x = rec("attn_residual", x + o)
            h = rec("ffn_norm", self.norm(x, w[b + "ffn_norm.weight"]))
            gate = rec("ffn_gate", h @ w[b + "ffn_gate.weight"].T)
            up = rec("ffn_up", h @ w[b + "ffn_up.weight"].T)
            act = rec("ffn_act", gate / (1 + np.exp(-gate)) * up)
            if "f16-down" in self.faults:
                down = (act.astype(np.float16) @ w[b + "ffn_down.weight"].astype(np.float16).T).astype(np.float64)
            else:
                down = act @ w[b + "ffn_down.weight"].T
            rec("ffn_down", down)
            block_input = x - o  # the stream entering the layer
            x = x + down
            # output_hidden_states off by one: the layer's input recorded as its output
            chunk.record(layer, "ffn_residual", block_input if "hidden-off-by-one" in self.faults else x)
        n = c["n_layers"]
        x = self.norm(x, w["output_norm.weight"])
        chunk.record(n, "final_norm", x)
        logits = x @ w["output.weight" if "output.weight" in w else "token_embd.weight"].T
        chunk.record(n, "logits", logits)
        return logits

    def run(self, writer, prompt, chunk_size, generate):
        """Prefills prompt in chunks, then generates greedily; returns the generated tokens."""
        generated, position = [], 0
        for first in range(0, len(prompt), chunk_size):
            tokens = np.array(prompt[first:first + chunk_size])
            positions = np.arange(position, position + len(tokens))
            with writer.chunk(tokens, positions=None if "rope-chunk-restart" not in self.faults else
                              positions - positions[0]) as chunk:
                logits = self.forward(tokens, positions, chunk)
            position += len(tokens)
        for step in range(generate):
            generated.append(int(np.argmax(logits[-1])))
            if step + 1 == generate:
                break
            with writer.chunk([generated[-1]], decode=True) as chunk:
                logits = self.forward(np.array([generated[-1]]), np.array([position]), chunk)
            position += 1
        return generated
