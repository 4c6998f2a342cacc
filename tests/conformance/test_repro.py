"""`tapdiff compare A B --model M --repro DIR`: the culprit as a test case for the engine's own suite.
Bugs planted in tapdiff's Vulkan engine (synth:tiny, 48 prompt tokens in chunks of 16, 3
generated): each written check fails on the engine's output with tapdiff's numbers and passes on
the reference's, in Python and in C (repro_checks.py); kernels written here in numpy as an engine
developer would write them pass where they compute the op and fail where they carry the bug, which
holds the case's inputs, K/V rows, weights and positions to what the op really reads. `bisect
--repro` writes the case on A's inputs the same way. A folder holding files a repro does not write
is refused and left as it was."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from repro_checks import assert_replays, python_check
from test_python_writer import tapdiff

PROMPT = [1 + (i * 37) % 500 for i in range(48)]
RMS_NORM = '''
import numpy as np

def kernel(case):
    (x,) = (value.astype(np.float64) for value in case.inputs.values())
    eps = case.config["norm_eps"]
    scale = {scale}
    return x * scale * case.weights["attn_norm"].astype(np.float64)
'''
ATTENTION = '''
import numpy as np

def kernel(case):
    c = case.config
    heads, kv_heads, head_dim = c["n_heads"], c["n_kv_heads"], c["head_dim"]
    q = case.inputs["{q}"].astype(np.float64).reshape(len(case.positions), heads, head_dim)
    k = case.kv["k"].astype(np.float64).reshape(-1, kv_heads, head_dim)
    v = case.kv["v"].astype(np.float64).reshape(-1, kv_heads, head_dim)
    out = np.empty_like(q)
    for r, position in enumerate(case.positions):
        for h in range(heads):
            g = h // (heads // kv_heads)
            scores = k[:position + 1, g] @ q[r, h] / np.sqrt(head_dim)
            p = np.exp(scores - scores.max())
            out[r, h] = (p / p.sum()) @ v[:position + 1, g]
    return out.reshape(len(case.positions), heads * head_dim)
'''


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("repro")


def repro(workdir: Path, fault: str, name: str = "") -> tuple[Path, dict, str]:
    """The Vulkan engine with `fault` planted, its reference on the same rows, and the repro of the culprit."""
    case = workdir / (name or fault.replace("@", "-"))
    case.mkdir()
    a, b, report, folder = case / "a.h5", case / "b.h5", case / "r.json", case / "repro"
    run = tapdiff("run", "--model", "synth:tiny", "--tokens", ",".join(map(str, PROMPT)), "--chunk", "16",
                  "--generate", "3", "--engine", "vulkan", "--inject", fault, "--dump", str(b))
    assert run.returncode == 0, run.stdout + run.stderr
    run = tapdiff("run", "--model", "synth:tiny", "--dtype", "f64", "--tokens-from", str(b), "--dump", str(a))
    assert run.returncode == 0, run.stdout + run.stderr
    done = tapdiff("compare", str(a), str(b), "--model", "synth:tiny", "--json", str(report), "--repro", str(folder))
    assert done.returncode == 1, done.stdout + done.stderr
    return folder, json.loads(report.read_text()), done.stdout


def case_meta(folder: Path) -> dict:
    sys.path.insert(0, str(folder))
    try:
        import check  # noqa: PLC0415 (the check.py just written)
        return check.Case(folder / "case.safetensors").meta
    finally:
        sys.path.pop(0)
        sys.modules.pop("check", None)


def with_kernel(folder: Path, text: str) -> subprocess.CompletedProcess:
    (folder / "kernel.py").write_text(text)
    return python_check(folder)


@pytest.mark.parametrize("fault, culprit", [
    ("rmsnorm-eps@0", "0/attn_norm"),
    ("kv-stale-chunk@0", "0/attn"),
    ("rope-chunk-reset@1", "1/rope_q"),
    ("gemm-f16-accum@1", "1/ffn_down"),
])
def test_the_culprits_checks_fail_on_the_engine_and_pass_on_the_reference(workdir, fault, culprit):
    folder, report, out = repro(workdir, fault)
    assert f"{report['culprit']['layer']}/{report['culprit']['op']}" == culprit, out
    assert f"repro: {folder}: {culprit}'s case on B's inputs" in out, out
    meta = case_meta(folder)
    assert f"{meta['layer']}/{meta['op']}" == culprit and meta["tolerance_source"], meta
    assert_replays(folder)
    readme = (folder / "README.md").read_text()
    assert culprit in readme and "python3 check.py --replay engine" in readme, readme
    # The folder after its checks ran (the C check built in it) takes the case again.
    again = tapdiff("compare", str(folder.parent / "a.h5"), str(folder.parent / "b.h5"), "--model", "synth:tiny",
                    "--repro", str(folder))
    assert again.returncode == 1 and f"repro: {folder}: {culprit}'s case" in again.stdout, again.stdout + again.stderr


def test_a_kernel_that_computes_the_op_passes_and_one_with_the_bug_fails(workdir):
    folder, report, out = repro(workdir, "rmsnorm-eps@0", "rmsnorm-kernel")
    assert report["culprit"]["op"] == "attn_norm", out
    right = with_kernel(folder, RMS_NORM.format(scale="1 / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps)"))
    assert right.returncode == 0 and "PASS" in right.stdout, right.stdout + right.stderr
    planted = with_kernel(folder, RMS_NORM.format(scale="1 / (np.sqrt((x * x).mean(axis=1, keepdims=True)) + eps)"))
    assert planted.returncode == 1 and "FAIL: nmse" in planted.stdout, planted.stdout + planted.stderr


def test_an_attention_kernel_reads_every_k_and_v_row_it_needs(workdir):
    """The stale-KV bug's case: a plain attention over the case's K/V rows and positions passes."""
    folder, _, out = repro(workdir, "kv-stale-chunk@1")
    meta = case_meta(folder)
    assert meta["op"] == "attn", out
    right = with_kernel(folder, ATTENTION.format(q=f"{meta['layer']}/rope_q"))
    assert right.returncode == 0 and "PASS" in right.stdout, right.stdout + right.stderr


def test_bisect_writes_its_culprits_case_on_as_inputs(workdir):
    folder, report = workdir / "bisect-repro", workdir / "bisect.json"
    done = tapdiff("bisect", "--model", "synth:tiny", "--tokens", ",".join(map(str, PROMPT)), "--chunk", "16",
                   "--generate", "3", "--inject", "kv-stale-chunk@1", "--json", str(report), "--repro", str(folder))
    assert done.returncode == 1, done.stdout + done.stderr
    culprit = json.loads(report.read_text())["culprit"]
    assert (culprit["layer"], culprit["op"]) == (1, "attn"), done.stdout
    assert f"repro: {folder}: 1/attn's case on A's inputs" in done.stdout, done.stdout
    meta = case_meta(folder)
    assert meta["reference"] == "ref (f64)" and meta["engine"].startswith("vulkan (f32"), meta
    assert_replays(folder)
    right = with_kernel(folder, ATTENTION.format(q="1/rope_q"))
    assert right.returncode == 0 and "PASS" in right.stdout, right.stdout + right.stderr


def test_a_folder_holding_other_files_is_refused_and_left_alone(workdir, tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    a = b = workdir / "unused.h5"
    done = tapdiff("compare", str(a), str(b), "--model", "synth:tiny", "--repro", str(folder))
    assert done.returncode == 2 and "notes.txt, which a repro does not write" in done.stderr, done.stderr
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]
    done = tapdiff("compare", str(a), str(b), "--repro", str(tmp_path / "new"))
    assert done.returncode == 2 and "--repro: give --model too" in done.stderr, done.stderr
