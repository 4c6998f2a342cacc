"""The dump writer shipped in python/tapdiff, used by an engine outside tapdiff (numpy_llama.py,
a numpy Llama in float64): its dump compares clean against `tapdiff run` of the same model, and
with a planted bug `tapdiff compare --model` names the culprit from that dump alone. The writer
also refuses what does not fit the model, and leaves a readable dump when the engine stops."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import h5py
import numpy as np
import pytest

from numpy_llama import NumpyLlama
from tapdiff import DumpWriter, model_info

ROOT = Path(__file__).resolve().parents[2]
TAPDIFF = os.environ.get("TAPDIFF_BINARY", str(ROOT / "build" / "tapdiff"))
MODEL = "synth:tiny"
PROMPT = [1] + [int(t) for t in np.random.default_rng(5).integers(3, 512, size=47)]
CHUNK, GENERATE = 16, 4


def tapdiff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([TAPDIFF, *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def info() -> dict:
    return model_info(MODEL, TAPDIFF)


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("ref") / "ref.h5"
    run = tapdiff("run", "--model", MODEL, "--dtype", "f64", "--tokens", ",".join(map(str, PROMPT)), "--chunk",
                  str(CHUNK), "--generate", str(GENERATE), "--dump", str(path))
    assert run.returncode == 0, run.stderr
    return path


def numpy_dump(path: Path, info: dict, faults=()) -> list[int]:
    engine = NumpyLlama(info["model_path"], info["model_config"], faults)
    with DumpWriter(path, MODEL, engine="numpy", device="CPU", compute_dtype="f64", storage_dtype="f64",
                    info=info) as dump:
        generated = engine.run(dump, PROMPT, CHUNK, GENERATE)
        dump.finish(generated=generated)
    return generated


def compare(a: Path, b: Path, tmp_path: Path, *extra: str) -> tuple[int, dict, str]:
    report = tmp_path / "report.json"
    run = tapdiff("compare", str(a), str(b), "--json", str(report), *extra)
    assert run.returncode in (0, 1), run.stdout + run.stderr
    return run.returncode, json.loads(report.read_text()), run.stdout


def test_an_outside_engine_dump_matches_tapdiff_run(info, reference, tmp_path):
    b = tmp_path / "numpy.h5"
    generated = numpy_dump(b, info)
    code, report, out = compare(reference, b, tmp_path)
    assert code == 0, out
    assert report["verdict"] == "match"
    assert report["summary"]["ops"] == len(info["taps"])
    assert report["rows"]["compared"] == len(PROMPT) + GENERATE - 1
    assert report["tokens"]["b"] == generated
    with h5py.File(b) as f:
        assert f.attrs["model_sha256"] == info["model_sha256"]
        assert f.attrs["complete"] == 1


@pytest.mark.parametrize("fault, culprit, diagnosis", [
    ("attn-scale", "0/attn", "position-zero-exact"),
    ("norm-eps", "0/attn_norm", None),
    ("rope-chunk-restart", "0/rope_q", "rope-frequency"),
    ("f16-down", "0/ffn_down", None),
    ("hidden-off-by-one", "0/ffn_residual", "neighbour"),
    ("qk-permuted", "0/q_proj", "permuted"),
])
def test_compare_model_names_the_culprit_of_an_outside_engine(info, reference, tmp_path, fault, culprit, diagnosis):
    b = tmp_path / "numpy.h5"
    with pytest.warns(UserWarning) if fault == "rope-chunk-restart" else _no_warning():
        numpy_dump(b, info, faults=[fault])
    code, report, out = compare(reference, b, tmp_path, "--model", MODEL)
    assert code == 1, out
    assert f"{report['culprit']['layer']}/{report['culprit']['op']}" == culprit, out
    assert report["isolation"]["itself_wrong"], out
    codes = [p["code"] for p in report["problems"]]
    if fault == "rope-chunk-restart":
        assert "positions-anomaly" in codes, out
    if diagnosis:
        assert diagnosis in [d["code"] for d in report["diagnosis"]], out


class _no_warning:
    def __enter__(self):
        import warnings
        self._catch = warnings.catch_warnings()
        self._catch.__enter__()
        warnings.simplefilter("error")

    def __exit__(self, *exc):
        return self._catch.__exit__(*exc)


def test_the_writer_refuses_what_does_not_fit_the_model(info, tmp_path):
    with DumpWriter(tmp_path / "bad.h5", MODEL, info=info) as dump:
        with pytest.raises(ValueError, match=r"0/q_proj: expected shape \[3, 64\]"):
            with dump.chunk([1, 2, 3]) as chunk:
                chunk.record(0, "q_proj", np.zeros((3, 65)))
        with pytest.raises(ValueError, match="not an op of this model at that layer"):
            with dump.chunk([1, 2, 3]) as chunk:
                chunk.record(7, "q_proj", np.zeros((3, 64)))
        with pytest.raises(ValueError, match="a decode step feeds one token"):
            dump.chunk([1, 2], decode=True)
    with pytest.raises(ValueError, match="storage_dtype"):
        DumpWriter(tmp_path / "x.h5", MODEL, info=info, storage_dtype="bf16")


@pytest.mark.parametrize("tokens, positions, values, message", [
    ([1.7, 2.0], None, None, r"tokens: expected whole numbers, found \[1.7, 2.0\]"),
    ([1, None], None, None, r"tokens: expected whole numbers"),
    ([1, 2], [0.5, 1.5], None, r"positions: expected whole numbers"),
    ([1, 100000], None, None, r"tokens: expected ids in \[0, 512\)"),
    ([1, 2], None, [[None] * 64] * 2, r"0/q_proj: expected numbers, found an array of object"),
])
def test_the_writer_never_rounds_an_id_nor_writes_none_as_nan(info, tmp_path, tokens, positions, values, message):
    """A token id of 1.7 was written as 1, None as NaN: refused, naming what was found."""
    with DumpWriter(tmp_path / "bad.h5", MODEL, info=info) as dump:
        with pytest.raises(ValueError, match=message):
            with dump.chunk(tokens, positions=positions) as chunk:
                chunk.record(0, "q_proj", values)


def test_a_finished_writer_refuses_more(info, tmp_path):
    dump = DumpWriter(tmp_path / "done.h5", MODEL, info=info)
    with dump.chunk([1, 2]) as chunk:
        chunk.record(0, "q_proj", np.zeros((2, 64)))
    dump.finish()
    with pytest.raises(RuntimeError, match=r"finish\(\) after the dump was finished or closed"):
        dump.finish()
    with pytest.raises(RuntimeError, match=r"chunk\(\) after the dump was finished or closed"):
        dump.chunk([3])


def test_the_writer_refuses_expert_ids_out_of_order(tmp_path):
    """moe_ids hold each row's chosen experts ascending (tapdiff compares the choice as a set): an
    engine's top-k order is refused, naming the row, not compared as another choice."""
    with DumpWriter(tmp_path / "moe.h5", "synth:tiny-moe", tapdiff=TAPDIFF) as dump:
        with pytest.raises(ValueError, match=r"0/moe_ids: expected each row's expert ids ascending.*in row 1"):
            with dump.chunk([1, 2]) as chunk:
                chunk.record(0, "moe_ids", np.array([[1.0, 6.0], [5.0, 2.0]]))
        with dump.chunk([1, 2]) as chunk:
            chunk.record(0, "moe_ids", np.array([[1.0, 6.0], [2.0, 5.0]]))
        # An id that names no expert is what the engine did: written, with a warning, and listed
        # by validate (compare reports it as a routing fault, never a near tie).
        with pytest.warns(UserWarning, match=r"0/moe_ids: 2 value\(s\) name no expert of \[0, 8\)"):
            with dump.chunk([1, 2]) as chunk:
                chunk.record(0, "moe_ids", np.array([[1.0, 100.0], [2.5, 5.0]]))
        dump.finish()
    run = subprocess.run([TAPDIFF, "validate", str(tmp_path / "moe.h5")], capture_output=True, text=True)
    assert run.returncode != 0 and "0/moe_ids: expected expert ids in [0, 8), found 100 at row 2" in run.stdout + run.stderr, \
        run.stdout + run.stderr


def test_an_engine_that_stops_leaves_a_dump_readable_up_to_rows_complete(info, tmp_path):
    path = tmp_path / "stopped.h5"
    engine = NumpyLlama(info["model_path"], info["model_config"])
    with DumpWriter(path, MODEL, info=info, compute_dtype="f64") as dump:
        with dump.chunk(PROMPT[:CHUNK]) as chunk:
            engine.forward(np.array(PROMPT[:CHUNK]), np.arange(CHUNK), chunk)
        with pytest.raises(RuntimeError):
            with dump.chunk(PROMPT[CHUNK:2 * CHUNK]) as chunk:
                raise RuntimeError("the engine crashed mid-chunk")
    inspected = tapdiff("inspect", str(path))
    assert inspected.returncode == 0, inspected.stderr
    assert f"rows     {CHUNK} " in inspected.stdout, inspected.stdout
    with h5py.File(path) as f:
        assert f.attrs["complete"] == 0 and f.attrs["rows_complete"] == CHUNK
