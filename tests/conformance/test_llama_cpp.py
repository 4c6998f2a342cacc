"""tapdiff's greedy tokens against llama.cpp's own (its prebuilt CPU build from npm's
node-llama-cpp) on F32 GGUF files written by the gguf package (tests/conformance/gguf_models.py):
a 200-token prompt, 16 generated tokens, on the reference and on the Vulkan engine."""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from gguf_models import GGUF_CASES, VOCAB, write_gguf

ROOT = Path(__file__).resolve().parents[2]
TAPDIFF = os.environ.get("TAPDIFF_BINARY", str(ROOT / "build" / "tapdiff"))
GENERATE = 16
PROMPT = [1] + [int(t) for t in np.random.default_rng(11).integers(3, VOCAB, size=199)]


def llama_cpp_tokens(model: Path) -> list[int]:
    peers = Path(subprocess.run([str(ROOT / "scripts" / "node-peers.sh")], capture_output=True, text=True,
                                check=True).stdout.strip())
    script = peers / "llama_cpp_greedy.mjs"  # beside its node_modules: ES modules resolve from there
    shutil.copyfile(Path(__file__).with_name("llama_cpp_greedy.mjs"), script)
    run = subprocess.run(["node", str(script), str(model), str(GENERATE), ",".join(map(str, PROMPT))],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


def tapdiff_tokens(model: Path, *engine: str) -> list[int]:
    summary = model.with_suffix(".json")  # not stdout: the terminal summary's text may hold any character
    run = subprocess.run([TAPDIFF, "run", "--model", str(model), "--tokens", ",".join(map(str, PROMPT)),
                          "--generate", str(GENERATE), "--json", str(summary), *engine], capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stderr
    return json.loads(summary.read_text())["generated"]


@pytest.mark.parametrize("case", GGUF_CASES, ids=lambda c: c.name)
def test_greedy_tokens_equal_llama_cpp(case, tmp_path):
    model = tmp_path / f"{case.name}.gguf"
    write_gguf(case, model)
    expected = llama_cpp_tokens(model)
    assert len(expected) == GENERATE
    assert tapdiff_tokens(model, "--engine", "ref", "--dtype", "f64") == expected
    assert tapdiff_tokens(model, "--engine", "ref", "--dtype", "f32") == expected
    assert tapdiff_tokens(model, "--engine", "vulkan", "--chunk", "64") == expected


@pytest.mark.parametrize("arch", ["granite", "olmo2", "gemma"])
def test_a_window_llama_cpp_does_not_apply_is_refused(arch, tmp_path):
    case = next(c for c in GGUF_CASES if c.arch == arch)
    model = tmp_path / f"{arch}.gguf"
    write_gguf(dataclasses.replace(case, extra={**case.extra, "sliding_window": 8}), model)
    run = subprocess.run([TAPDIFF, "run", "--model", str(model), "--tokens", "1,2"], capture_output=True, text=True)
    assert run.returncode == 2, run.stdout + run.stderr
    expected = f"metadata '{arch}.attention.sliding_window' is not supported: llama.cpp's {arch} computes nothing with it"
    assert expected in run.stderr, run.stderr
