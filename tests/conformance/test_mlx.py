"""Apple MLX (mlx[cpu], mlx-lm's Llama) in bfloat16 and float16, recorded per forward pass as
safetensors (mlx_recorder.py), against tapdiff's f64 reference of the same Hugging Face folder:
a clean run matches with no flag (its precision read from its values) and with --b-precision; each
bug planted in mlx-lm's modules is named as its culprit, and the culprit's `--repro` checks (Python
and C) fail on MLX's output and pass on the reference's; a dump missing passes does not pass."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import mlx_recorder
from repro_checks import assert_replays
from test_python_writer import tapdiff

PROMPT = [1] + [(i * 37) % 150 + 3 for i in range(39)]
CHUNK, GENERATE = 16, 4
DTYPES = ("bf16", "f16")


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("mlx") / "model"
    mlx_recorder.peaked_llama(folder)
    return folder


@pytest.fixture(scope="module")
def reference(model: Path) -> Path:
    path = model.parent / "ref.h5"
    run = tapdiff("run", "--model", str(model), "--dtype", "f64", "--tokens", ",".join(map(str, PROMPT)), "--chunk",
                  str(CHUNK), "--generate", str(GENERATE), "--dump", str(path))
    assert run.returncode == 0, run.stdout + run.stderr
    return path


def mlx_dump(model: Path, dtype: str, faults=()) -> Path:
    out = model.parent / f"mlx-{dtype}-{'-'.join(faults) or 'clean'}"
    if not out.exists():
        mlx_recorder.run(model, out, dtype, PROMPT, CHUNK, GENERATE, set(faults))
    return out


def heads_first_map(folder: Path) -> Path:
    """tapdiff's names, RoPE's outputs held [1, heads, rows, head_dim] as MLX's attention holds them."""
    path = folder / "mlx-map.toml"
    path.write_text('base = "tapdiff"\nheads_first = true\n')
    return path


def compare(reference: Path, b: Path, model: Path, *extra: str) -> tuple[int, dict, str]:
    report = b.parent / f"{b.name}.json"
    run = tapdiff("compare", str(reference), str(b), "--model", str(model), "--json", str(report),
                  "--map", str(heads_first_map(b.parent)), *extra)
    assert run.returncode in (0, 1), run.stdout + run.stderr
    return run.returncode, json.loads(report.read_text()), run.stdout


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_clean_mlx_run_matches_with_its_precision_read_from_its_values(model, reference, dtype):
    b = mlx_dump(model, dtype)
    code, report, out = compare(reference, b, model)
    assert code == 0, out
    assert report["tolerances"]["dtype"] == dtype, out
    assert report["tolerances"]["dtype_from"] == "inferred", out
    assert f"precision B computes in {dtype}, inferred: every one of" in out, out
    assert "tolerances calibrated against ref " + dtype + " on A's passes (k = 10)" in out, out
    assert report["rows"]["compared"] == len(PROMPT) + GENERATE - 1, out
    # The margin a clean MLX run keeps below its bounds, op by op (docs/tolerances.md quotes it).
    shares = [op["metrics"]["nmse"] / op["tolerance"]["nmse"] for op in report["ops"]]
    assert max(shares) < 0.5, sorted(shares)[-3:]
    given, _, out = compare(reference, b, model, "--b-precision", dtype)
    assert given == 0, out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fault, culprit", [
    ("rope-restart@all", "0/rope_q"),
    ("mask-offset@all", "0/attn"),
    ("attn-scale@1", "1/attn"),
    ("norm-eps@1", "1/attn_norm"),
])
def test_a_bug_planted_in_mlx_is_named_as_the_culprit(model, reference, dtype, fault, culprit):
    b = mlx_dump(model, dtype, [fault])
    repro = b.parent / f"{b.name}.repro"
    code, report, out = compare(reference, b, model, "--repro", str(repro))
    assert code == 1, out
    assert report["culprit"] is not None, out
    assert f"{report['culprit']['layer']}/{report['culprit']['op']}" == culprit, out
    # The culprit as a test for MLX's own suite: its checks fail on MLX's output and pass on the reference's.
    assert f"repro: {repro}: {culprit}'s case" in out, out
    assert_replays(repro)
    # MLX's tokens are the ones its decode rows were fed: where they part from A's, the step, both
    # tokens and A's margin between them are reported.
    tokens = report["tokens"]
    if tokens["first_mismatch_step"] is not None:
        tie = tokens["tie"]
        assert tie["a"] != tie["b"] and tie["margin"] is not None and tie["margin"] >= 0, tokens
        assert tie["near_tie"] is False, tokens


def test_an_mlx_dump_missing_passes_does_not_pass(model, reference, tmp_path):
    clean = mlx_dump(model, "bf16")
    passes = sorted(clean.iterdir())
    crashed = tmp_path / "crashed"  # the engine stopped after its first pass
    crashed.mkdir()
    shutil.copy(passes[0], crashed)
    code, report, out = compare(reference, crashed, model)
    assert code == 1, out
    assert [p["code"] for p in report["problems"]] == ["rows-only-in-a"], out
    assert f"A holds {len(PROMPT) + GENERATE - 1 - CHUNK} positions that B does not" in out, out
    assert report["verdict"] == "incomplete", out
    gapped = tmp_path / "gapped"  # one pass of the middle lost
    gapped.mkdir()
    for p in passes[:1] + passes[2:]:
        shutil.copy(p, gapped)
    run = tapdiff("compare", str(reference), str(gapped), "--model", str(model), "--map",
                  str(heads_first_map(tmp_path)))
    assert run.returncode == 2, run.stdout
    assert "found pass_002.safetensors after pass_000.safetensors: step 1 is missing" in run.stderr, run.stderr
