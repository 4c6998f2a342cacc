"""Writes a pair of full-tap dumps of a Llama shape for timing `tapdiff compare` on each input
format (docs/benchmarks.md): A as tapdiff HDF5, and B (A plus noise of relative size 1e-3) as
HDF5, as one safetensors file and as one .npz, all f32, with the same rows.

    python bench/outside_dumps.py OUT_DIR --layers 32 --dim 4096 --heads 32 --kv-heads 8 \
        --ffn 14336 --vocab 128256 --rows 128

Then: tapdiff compare OUT_DIR/a.h5 OUT_DIR/b.h5 (or b.safetensors, b.npz).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import h5py
import numpy as np
from safetensors.numpy import save_file

LAYER_OPS = ["attn_norm", "q_proj", "k_proj", "v_proj", "rope_q", "rope_k", "attn", "o_proj", "attn_residual",
             "ffn_norm", "ffn_gate", "ffn_up", "ffn_act", "ffn_down", "ffn_residual"]


def widths(a) -> dict[str, int]:
    q, kv = a.heads * a.head_dim, a.kv_heads * a.head_dim
    return {"attn_norm": a.dim, "q_proj": q, "k_proj": kv, "v_proj": kv, "rope_q": q, "rope_k": kv, "attn": q,
            "o_proj": a.dim, "attn_residual": a.dim, "ffn_norm": a.dim, "ffn_gate": a.ffn, "ffn_up": a.ffn,
            "ffn_act": a.ffn, "ffn_down": a.dim, "ffn_residual": a.dim, "embed": a.dim, "final_norm": a.dim,
            "logits": a.vocab}


def taps(a):
    yield -1, "embed"
    for layer in range(a.layers):
        for op in LAYER_OPS:
            yield layer, op
    yield a.layers, "final_norm"
    yield a.layers, "logits"


def write_h5(path: Path, a, values) -> None:
    config = {"arch": "llama", "n_layers": a.layers, "dim": a.dim, "n_heads": a.heads, "n_kv_heads": a.kv_heads,
              "head_dim": a.head_dim, "ffn_dim": a.ffn, "vocab": a.vocab, "rope_style": "interleaved"}
    with h5py.File(path, "w") as f:
        for key, value in {"schema_version": 1, "complete": 1, "rows_complete": a.rows, "engine": "bench",
                           "device": "", "compute_dtype": "f32", "storage_dtype": "f32", "model_path": "",
                           "model_sha256": "", "model_config": json.dumps(config), "tool_version": "bench",
                           "kernels": "{}", "chunk_size": 0, "command_line": "", "created": "",
                           "compression": "none"}.items():
            f.attrs[key] = value
        rows = f.create_group("rows")
        rows["position"] = np.arange(a.rows, dtype=np.int32)
        rows["chunk"] = np.zeros(a.rows, dtype=np.int32)
        rows["decode"] = np.zeros(a.rows, dtype=np.uint8)
        rows["token"] = (np.arange(a.rows, dtype=np.int32) % (a.vocab - 3)) + 3
        for layer, op in taps(a):
            f.create_dataset(f"taps/{layer}/{op}", data=values(layer, op), chunks=(min(a.rows, 64), widths(a)[op]))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("out", type=Path)
    for name, default in (("layers", 32), ("dim", 4096), ("heads", 32), ("kv-heads", 8), ("head-dim", 128),
                          ("ffn", 14336), ("vocab", 128256), ("rows", 128)):
        p.add_argument(f"--{name}", type=int, default=default)
    a = p.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    width = widths(a)

    def reference(layer, op):
        return np.random.default_rng(hash((layer, op)) % 2**32).standard_normal((a.rows, width[op]), dtype=np.float32)

    def engine(layer, op):
        x = reference(layer, op)
        return x + np.float32(1e-3) * rng.standard_normal(x.shape, dtype=np.float32)

    write_h5(a.out / "a.h5", a, reference)
    b = {f"{layer}/{op}": engine(layer, op) for layer, op in taps(a)}
    write_h5(a.out / "b.h5", a, lambda layer, op: b[f"{layer}/{op}"])
    b["tokens"] = ((np.arange(a.rows) % (a.vocab - 3)) + 3).astype(np.int64)
    save_file(b, str(a.out / "b.safetensors"))
    np.savez(a.out / "b.npz", **b)


if __name__ == "__main__":
    main()
