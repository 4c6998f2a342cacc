"""Dumps in the formats outside engines already write (docs/import.md): the numpy engine of
numpy_llama.py saves its values as safetensors or .npz, in one file or a folder of one file per
forward pass, under Hugging Face's, vLLM's or llama.cpp's names (in each one's q/k channel order,
vLLM's q/k/v and gate/up fused, its residual stream in two halves). `tapdiff compare` against
`tapdiff run` of the same model matches, and with each planted bug `compare --model` names the same
culprit as from the engine's HDF5 dump."""
from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from numpy_llama import NumpyLlama
from test_python_writer import CHUNK, GENERATE, MODEL, PROMPT, compare, info, reference, tapdiff  # noqa: F401

# Per map: the name of each op's value (None: the op's tapdiff name "LAYER/OP"). {L}: the layer.
HF = {"embed": "model.embed_tokens", "attn_norm": "model.layers.{L}.input_layernorm",
      "q_proj": "model.layers.{L}.self_attn.q_proj", "k_proj": "model.layers.{L}.self_attn.k_proj",
      "v_proj": "model.layers.{L}.self_attn.v_proj", "attn": "model.layers.{L}.self_attn.o_proj:input",
      "o_proj": "model.layers.{L}.self_attn.o_proj", "attn_residual": "model.layers.{L}.post_attention_layernorm:input",
      "ffn_norm": "model.layers.{L}.post_attention_layernorm", "ffn_gate": "model.layers.{L}.mlp.gate_proj",
      "ffn_up": "model.layers.{L}.mlp.up_proj", "ffn_act": "model.layers.{L}.mlp.down_proj:input",
      "ffn_down": "model.layers.{L}.mlp.down_proj", "ffn_residual": "model.layers.{L}", "final_norm": "model.norm",
      "logits": "logits"}
LLAMA_CPP = {"embed": "embd", "attn_norm": "attn_norm-{L}", "rope_q": "Qcur-{L}", "rope_k": "Kcur-{L}",
             "v_proj": "Vcur-{L}", "attn": "kqv_out-{L}", "o_proj": "attn_out-{L}", "attn_residual": "ffn_inp-{L}",
             "ffn_norm": "ffn_norm-{L}", "ffn_gate": "ffn_gate-{L}", "ffn_up": "ffn_up-{L}",
             "ffn_act": "ffn_swiglu-{L}", "ffn_down": "ffn_out-{L}", "ffn_residual": "l_out-{L}",
             "final_norm": "result_norm", "logits": "result_output"}
VLLM = {"embed": "model.embed_tokens", "attn_norm": "model.layers.{L}.input_layernorm",
        "rope_q": "model.layers.{L}.self_attn.rotary_emb.0", "rope_k": "model.layers.{L}.self_attn.rotary_emb.1",
        "attn": "model.layers.{L}.self_attn.attn", "o_proj": "model.layers.{L}.self_attn.o_proj.0",
        "ffn_norm": "model.layers.{L}.post_attention_layernorm.0",
        "attn_residual": "model.layers.{L}.post_attention_layernorm.1", "ffn_act": "model.layers.{L}.mlp.act_fn",
        "ffn_down": "model.layers.{L}.mlp.down_proj.0", "final_norm": "model.norm.0", "logits": "logits"}
ROTATE_HALF = {"q_proj", "k_proj", "rope_q", "rope_k"}  # Hugging Face's and vLLM's q/k channel order


class StepFiles:
    """A dump as an outside engine writes one: the values of each forward pass under the map's
    names (an op the map has no name for under tapdiff's, LAYER/OP), saved as one file per pass (a folder) or, at close, as one file of every row."""

    def __init__(self, path: Path, fmt: str, names: dict, engine: NumpyLlama, rotate_half: bool,
                 one_file: bool = False, compressed: bool = False):
        self.path, self.fmt, self.names, self.engine = path, fmt, names, engine
        self.rotate_half, self.one_file, self.compressed = rotate_half, one_file, compressed
        self.steps: list[dict] = []
        self.next_position = 0

    def name(self, layer: int, op: str) -> str:
        pattern = self.names.get(op)
        return f"{layer}/{op}" if pattern is None else pattern.replace("{L}", str(layer))

    @contextlib.contextmanager
    def chunk(self, tokens, *, positions=None, decode=False):
        tokens = np.asarray(tokens, dtype=np.int64).reshape(-1)
        if positions is None:
            positions = np.arange(self.next_position, self.next_position + tokens.size)
        self.next_position = int(positions[-1]) + 1
        arrays = {"input_ids": tokens, "position_ids": np.asarray(positions, dtype=np.int64),
                  "decode": np.full(tokens.size, int(decode), dtype=np.int32)}
        values: dict[tuple[int, str], np.ndarray] = {}
        writer = self

        class Pass:
            @staticmethod
            def record(layer, op, value):
                value = np.asarray(value, dtype=np.float64)
                if writer.rotate_half and op in ROTATE_HALF:
                    value = writer.engine.rotate_half_order(value)
                values[(layer, op)] = value

        yield Pass
        for (layer, op), value in values.items():
            arrays[self.name(layer, op)] = value
        if self.names is VLLM:  # q/k/v and gate/up fused, the layer's output in two halves
            for layer in {layer for layer, _ in values if layer >= 0 and layer < self.engine.c["n_layers"]}:
                qkv = [values[(layer, op)] for op in ("q_proj", "k_proj", "v_proj")]
                arrays[f"model.layers.{layer}.self_attn.qkv_proj.0"] = np.concatenate(qkv, axis=1)
                gate_up = [values[(layer, op)] for op in ("ffn_gate", "ffn_up")]
                arrays[f"model.layers.{layer}.mlp.gate_up_proj.0"] = np.concatenate(gate_up, axis=1)
                residual = values[(layer, "attn_residual")]
                arrays[f"model.layers.{layer}.0"] = values[(layer, "ffn_residual")] - residual
                arrays[f"model.layers.{layer}.1"] = residual
                for op in ("q_proj", "k_proj", "v_proj", "ffn_gate", "ffn_up", "ffn_residual"):
                    arrays.pop(self.name(layer, op))
        self.steps.append(arrays)
        if not self.one_file:
            self.save(self.path / f"step_{len(self.steps) - 1}.{self.fmt}", arrays)

    def close(self):
        if self.one_file:
            self.save(self.path, {k: np.concatenate([s[k] for s in self.steps]) for k in self.steps[0]})

    def save(self, path: Path, arrays: dict):
        arrays = {k: np.ascontiguousarray(v) for k, v in arrays.items()}
        if self.fmt == "safetensors":
            save_file(arrays, str(path))
        else:
            (np.savez_compressed if self.compressed else np.savez)(path, **arrays)


LAYOUTS = {  # name: (map, file format, names, q/k in rotate-half order, one file)
    "hf-safetensors-folder": ("hf", "safetensors", HF, True, False),
    "hf-npz-file": ("hf", "npz", HF, True, True),
    "tapdiff-npz-compressed-folder": ("tapdiff", "npz", {}, False, False),
    "vllm-safetensors-file": ("vllm", "safetensors", VLLM, True, True),
    "llama.cpp-npz-folder": ("llama.cpp", "npz", LLAMA_CPP, False, False),
}


def outside_dump(tmp_path: Path, layout: str, info: dict, faults=()) -> Path:
    _, fmt, names, rotate_half, one_file = LAYOUTS[layout]
    path = tmp_path / (f"dump.{fmt}" if one_file else "dump")
    if not one_file:
        path.mkdir()
    engine = NumpyLlama(info["model_path"], info["model_config"], faults)
    files = StepFiles(path, fmt, names, engine, rotate_half, one_file, compressed="compressed" in layout)
    engine.run(files, PROMPT, CHUNK, GENERATE)
    files.close()
    return path


@pytest.mark.parametrize("layout", LAYOUTS)
def test_an_outside_dump_in_its_own_format_matches_tapdiff_run(info, reference, tmp_path, layout):
    b = outside_dump(tmp_path, layout, info)
    code, report, out = compare(reference, b, tmp_path, "--map", LAYOUTS[layout][0])
    assert code == 0, out
    assert report["verdict"] == "match", out
    assert report["rows"]["compared"] == len(PROMPT) + GENERATE - 1, out
    assert report["summary"]["ops"] == len(info["taps"]), out  # the ops a map has no name for as LAYER/OP


@pytest.mark.parametrize("layout", ["hf-safetensors-folder", "vllm-safetensors-file", "tapdiff-npz-compressed-folder"])
@pytest.mark.parametrize("fault, culprit", [
    ("attn-scale", "0/attn"),
    ("norm-eps", "0/attn_norm"),
    ("rope-chunk-restart", "0/rope_q"),
    ("f16-down", "0/ffn_down"),
    ("hidden-off-by-one", "0/ffn_residual"),
    ("qk-permuted", "0/q_proj"),
])
def test_compare_model_names_the_culprit_from_an_outside_format(info, reference, tmp_path, layout, fault, culprit):
    b = outside_dump(tmp_path, layout, info, faults=[fault])
    code, report, out = compare(reference, b, tmp_path, "--model", MODEL, "--map", LAYOUTS[layout][0])
    assert code == 1, out
    assert f"{report['culprit']['layer']}/{report['culprit']['op']}" == culprit, out
    if fault == "rope-chunk-restart":
        assert "positions-anomaly" in [p["code"] for p in report["problems"]], out


def test_a_user_map_in_toml_splits_and_sums(info, reference, tmp_path):
    """A Candle-like engine with names of its own: q/k/v fused in one array, the layer output in
    two halves, described by a TOML map."""
    b = outside_dump(tmp_path, "vllm-safetensors-file", info)
    renamed = tmp_path / "candle.safetensors"
    from safetensors.numpy import load_file
    arrays = load_file(str(b))
    out = {}
    for name, value in arrays.items():
        out[name.replace("model.layers.", "blocks.").replace("self_attn.qkv_proj.0", "qkv")
               .replace("post_attention_layernorm.1", "mid")] = value
    save_file(out, str(renamed))
    toml = tmp_path / "candle.toml"
    toml.write_text('base = "vllm"\ntokens = "input_ids"\n'
                    '[taps]\n"blocks.{L}.qkv" = ["q_proj", "k_proj", "v_proj"]\n"blocks.{L}.mid" = "attn_residual"\n'
                    '[sums]\nffn_residual = ["blocks.{L}.0", "blocks.{L}.1"]\n')
    code, report, text = compare(reference, renamed, tmp_path, "--map", str(toml), "--common-ops")
    assert code == 0, text
    compared = {f"{o['layer']}/{o['op']}" for o in report["ops"]}
    assert {"0/q_proj", "0/k_proj", "0/v_proj", "1/attn_residual", "1/ffn_residual"} <= compared, text


def test_an_outside_dump_needs_its_model_and_names_what_it_cannot_read(info, reference, tmp_path):
    b = outside_dump(tmp_path, "hf-npz-file", info)
    alone = tapdiff("inspect", str(b))
    assert alone.returncode == 2 and "carries no model: give --model" in alone.stderr, alone.stderr
    inspected = tapdiff("inspect", str(b), "--model", MODEL, "--map", "hf")
    assert inspected.returncode == 0, inspected.stderr
    assert "imported npz (map hf)" in inspected.stdout, inspected.stdout
    np.savez(tmp_path / "bad.npz", input_ids=np.arange(3), **{"model.layers.0.self_attn.q_proj": np.zeros((3, 65))})
    bad = tapdiff("inspect", str(tmp_path / "bad.npz"), "--model", MODEL, "--map", "hf")
    assert bad.returncode == 2, bad.stdout + bad.stderr
    assert "'model.layers.0.self_attn.q_proj' has shape [3, 65]: expected 3 rows (the step's token ids) of width 64" \
        in bad.stderr, bad.stderr


def test_each_tap_is_held_to_the_tolerance_of_its_own_storage(info, reference, tmp_path):
    """An engine that stores one tap in f16 and the rest in f32: the f16 tap gets f16's bound, the
    others f32's, so an error of one part in a thousand in an f32 tap still diverges."""
    from safetensors.numpy import load_file
    b = outside_dump(tmp_path, "hf-safetensors-folder", info)
    last = info["model_config"]["n_layers"] - 1
    for step in b.iterdir():
        arrays = {k: v.astype(np.float32) if v.dtype == np.float64 else v for k, v in load_file(str(step)).items()}
        arrays["model.layers.0.input_layernorm"] = arrays["model.layers.0.input_layernorm"].astype(np.float16)
        arrays[f"model.layers.{last}.mlp.down_proj"] *= np.float32(1.001)
        save_file(arrays, str(step))
    code, report, out = compare(reference, b, tmp_path, "--map", "hf")
    assert code == 1 and report["verdict"] == "diverged", out
    first = next(o for o in report["ops"] if not o["pass"])
    assert f"{first['layer']}/{first['op']}" == f"{last}/ffn_down", out
    assert "built-in f32" in first["tolerance"]["source"], out
    norm = next(o for o in report["ops"] if o["layer"] == 0 and o["op"] == "attn_norm")
    assert "built-in f16" in norm["tolerance"]["source"], out
    assert (report["tolerances"]["builtin_dtype"], report["tolerances"]["builtin_dtype_finest"]) == ("f16", "f32"), out
    assert report["tolerances"]["dtype"] == "f32", out
    assert "built-in tolerances for f32 to f16, each op by the type its tap is stored in" in out, out
    noted = tapdiff("inspect", str(b), "--model", MODEL, "--map", "hf")
    assert "taps stored in mixed types, 1 f16 (0/attn_norm);" in noted.stdout + noted.stderr, noted.stdout + noted.stderr


@pytest.mark.parametrize("layout", LAYOUTS)
def test_run_tokens_from_an_outside_dump_follows_its_rows(info, tmp_path, layout):
    """`run --tokens-from` an outside engine's dump, read through its map: A runs B's tokens,
    positions and chunking, so every row of B compares."""
    b = outside_dump(tmp_path, layout, info)
    a = tmp_path / "a.h5"
    run = tapdiff("run", "--model", MODEL, "--dtype", "f64", "--tokens-from", str(b), "--map", LAYOUTS[layout][0],
                  "--dump", str(a))
    assert run.returncode == 0, run.stdout + run.stderr
    code, report, out = compare(a, b, tmp_path, "--map", LAYOUTS[layout][0])
    assert code == 0 and report["verdict"] == "match", out
    rows = report["rows"]
    assert rows["compared"] == len(PROMPT) + GENERATE - 1 and rows["only_a"] == rows["only_b"] == 0, out


def test_map_without_tokens_from_is_refused():
    run = tapdiff("run", "--model", MODEL, "--tokens", "1,2", "--map", "hf")
    assert run.returncode == 2 and "--map says how --tokens-from's dump is read" in run.stderr, run.stderr
