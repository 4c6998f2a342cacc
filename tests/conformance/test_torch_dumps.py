"""PyTorch .pt dumps (python/tapdiff/torch_dumps.py): SGLang's dumper folders (one .pt per value,
named and saved as `sglang.srt.debug_utils.dumper` does, its module names as its non-intrusive mode
gives them) and dicts of tensors per forward pass, converted to safetensors with torch's
weights-only unpickler, compare exactly as the safetensors of the same values do; a .pt holding
another pickled object is refused and nothing in it runs."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from numpy_llama import NumpyLlama
from tapdiff.torch_dumps import convert, sglang_name
from test_outside_formats import VLLM, StepFiles
from test_python_writer import CHUNK, GENERATE, MODEL, PROMPT, compare, info, reference, tapdiff  # noqa: F401


def engine_steps(tmp_path: Path, info: dict, faults=()) -> tuple[Path, list[dict]]:
    """The numpy engine's run under vLLM's names, as a folder of safetensors and as its arrays."""
    folder = tmp_path / "safetensors"
    folder.mkdir()
    engine = NumpyLlama(info["model_path"], info["model_config"], faults)
    files = StepFiles(folder, "safetensors", VLLM, engine, rotate_half=True)
    engine.run(files, PROMPT, CHUNK, GENERATE)
    return folder, files.steps


def sglang_dumper_name(vllm_name: str) -> str:
    """The name SGLang's dumper gives a value vLLM's map names so (the inverse of sglang_name)."""
    if vllm_name in ("input_ids",):
        return vllm_name
    if vllm_name == "position_ids":
        return "positions"
    module, dot, part = vllm_name.rpartition(".")
    if dot and part.isdigit():
        return f"non_intrusive__{module}.output.{part}"
    return f"non_intrusive__{vllm_name}.output"


def write_sglang(folder: Path, steps: list[dict], rank: int = 0, tp_size: int = 1) -> None:
    """Each value as the dumper saves it: {"value": tensor, "meta": {...}} in its own file."""
    folder.mkdir(parents=True, exist_ok=True)
    index = 0
    for step, arrays in enumerate(steps):
        for name, value in arrays.items():
            if name in ("decode", "logits"):  # SGLang keeps no decode flag, and logits of the last rows only
                continue
            index += 1
            dumped = sglang_dumper_name(name)
            layer = re.search(r"layers\.(\d+)", name)
            tags = {"step": step, "rank": rank, "dump_index": index, "name": dumped, "recompute_status": "disabled"}
            if layer:
                tags["layer_id"] = int(layer.group(1))
            meta = {**tags, "world_rank": rank, "world_size": tp_size,
                    "sglang_parallel_info": {"tp_rank": rank, "tp_size": tp_size}}
            file = folder / ("___".join(f"{k}={v}" for k, v in tags.items()) + ".pt")
            torch.save({"value": torch.from_numpy(np.ascontiguousarray(value)), "meta": meta}, file)


def test_sglang_names_read_as_the_vllm_map_holds_them():
    assert sglang_name("non_intrusive__model.layers.3.self_attn.qkv_proj.output") == "model.layers.3.self_attn.qkv_proj"
    assert sglang_name("non_intrusive__model.layers.3.output.1") == "model.layers.3.1"
    assert sglang_name("non_intrusive__model.layers.3.mlp.down_proj.inputs.0") == "model.layers.3.mlp.down_proj:input"
    assert sglang_name("positions") == "positions" and sglang_name("layer_start__hidden_states") == \
        "layer_start__hidden_states"


def test_an_sglang_dump_compares_as_the_safetensors_of_its_values(info, reference, tmp_path):
    folder, steps = engine_steps(tmp_path, info)
    for f in folder.iterdir():  # the same values without the logits SGLang does not keep per row
        from safetensors.numpy import load_file, save_file
        arrays = {k: v for k, v in load_file(str(f)).items() if k not in ("logits", "decode")}
        save_file(arrays, str(f))
    write_sglang(tmp_path / "sglang", steps)
    written = convert(tmp_path / "sglang", tmp_path / "converted")
    assert len(written) == len(steps)
    code_pt, pt, out = compare(reference, tmp_path / "converted", tmp_path, "--map", "vllm", "--common-ops")
    assert code_pt == 0 and pt["verdict"] == "match", out
    code_st, st, out_st = compare(reference, folder, tmp_path, "--map", "vllm", "--common-ops")
    assert code_st == 0, out_st
    assert [(o["layer"], o["op"], o["metrics"]["nmse"]) for o in pt["ops"]] == \
        [(o["layer"], o["op"], o["metrics"]["nmse"]) for o in st["ops"]]
    assert pt["rows"]["compared"] == len(PROMPT) + GENERATE - 1, out


def test_a_planted_bug_in_an_sglang_dump_is_named(info, reference, tmp_path):
    _, steps = engine_steps(tmp_path, info, faults=["attn-scale"])
    write_sglang(tmp_path / "sglang", steps)
    convert(tmp_path / "sglang", tmp_path / "converted")
    # SGLang's dump says nothing of decode steps: A follows B's rows (its generated tokens too).
    a = tmp_path / "a.h5"
    run = tapdiff("run", "--model", MODEL, "--dtype", "f64", "--tokens-from", str(tmp_path / "converted"), "--map",
                  "vllm", "--dump", str(a))
    assert run.returncode == 0, run.stdout + run.stderr
    code, report, out = compare(a, tmp_path / "converted", tmp_path, "--map", "vllm", "--model", MODEL)
    assert code == 1 and f"{report['culprit']['layer']}/{report['culprit']['op']}" == "0/attn", out


class Payload:
    """A pickled object whose loading would create a file: what weights_only must never run."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_a_pt_holding_another_object_is_refused_and_nothing_in_it_runs(tmp_path):
    marker = tmp_path / "ran"
    evil = tmp_path / "evil"
    evil.mkdir()
    torch.save({"value": torch.zeros(2, 3), "meta": Payload(marker)},
               evil / "step=0___rank=0___dump_index=1___name=input_ids.pt")
    with pytest.raises(ValueError, match=r"evil/step=0___rank=0___dump_index=1___name=input_ids.pt: expected tensors "
                                         r"saved by torch.save \(read with weights_only=True\)"):
        convert(evil, tmp_path / "out")
    run = subprocess.run([sys.executable, "-m", "tapdiff.torch_dumps", str(evil), str(tmp_path / "out2")],
                         capture_output=True, text=True)
    assert run.returncode == 2 and "weights_only" in run.stderr, run.stderr
    assert not marker.exists() and not (tmp_path / "out").exists()


def test_a_sharded_dump_and_an_output_in_use_are_refused(info, tmp_path):
    _, steps = engine_steps(tmp_path, info)
    write_sglang(tmp_path / "ranks", steps[:1], rank=0)
    write_sglang(tmp_path / "ranks", steps[:1], rank=1)
    with pytest.raises(ValueError, match="expected one rank's values, found ranks 0, 1"):
        convert(tmp_path / "ranks", tmp_path / "out")
    one = tmp_path / "rank0-of-2"  # one rank's files of a run with tensor parallelism 2
    write_sglang(one, steps[:1], rank=0, tp_size=2)
    with pytest.raises(ValueError, match=r"expected a run on one rank, found tp_size = 2 in its meta"):
        convert(one, tmp_path / "out")
    used = tmp_path / "used"
    used.mkdir()
    (used / "mine.txt").write_text("keep")
    with pytest.raises(ValueError, match="expected a new or empty folder"):
        convert(tmp_path / "ranks", used)
    assert (used / "mine.txt").read_text() == "keep"


def test_dicts_of_tensors_per_forward_pass_convert(info, reference, tmp_path):
    _, steps = engine_steps(tmp_path, info)
    plain = tmp_path / "plain"
    plain.mkdir()
    for i, arrays in enumerate(steps):
        torch.save({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in arrays.items()}, plain / f"pass_{i}.pt")
    convert(plain, tmp_path / "converted")
    code, report, out = compare(reference, tmp_path / "converted", tmp_path, "--map", "vllm")
    assert code == 0 and report["verdict"] == "match", out


def test_tapdiff_names_the_converter_for_a_pt_file(tmp_path):
    torch.save({"x": torch.zeros(2)}, tmp_path / "pass.pt")
    run = tapdiff("inspect", str(tmp_path / "pass.pt"))
    assert run.returncode == 2 and "found a PyTorch .pt file (a pickle, which tapdiff does not load): convert it " \
        "with python -m tapdiff.torch_dumps" in run.stderr, run.stderr


def test_steps_without_values_leave_no_gap(info, tmp_path):
    """SGLang counts its scheduler's idle steps: passes 0, 2 and 5 become step_0, step_1, step_2."""
    _, steps = engine_steps(tmp_path, info)
    write_sglang(tmp_path / "sglang", steps[:3])
    for f in (tmp_path / "sglang").iterdir():
        step = int(f.name.split("___")[0].split("=")[1])
        f.rename(f.with_name(f.name.replace(f"step={step}___", f"step={[0, 2, 5][step]}___", 1)))
    written = convert(tmp_path / "sglang", tmp_path / "converted")
    assert [p.name for p in written] == ["step_0.safetensors", "step_1.safetensors", "step_2.safetensors"]
