"""tapdiff.MlxRecorder (python/tapdiff/mlx_recorder.py) on mlx-lm's own models of the families both
it and tapdiff read, in float32 and bfloat16, with chunked prefill and greedy decode through
mlx-lm's cache: `tapdiff run --tokens-from` the recorded dump follows its rows, and `compare
--model` says match; an attention norm's epsilon changed in mlx-lm's module is named as the
culprit."""
from __future__ import annotations

import json
from pathlib import Path

import mlx.core as mx
import pytest
from mlx_lm import utils as mlx_utils

import hf_models
from mlx_recorder import peaked_llama
from tapdiff import MlxRecorder
from test_python_writer import TAPDIFF, tapdiff

PROMPT = [1] + [(i * 53) % 150 + 3 for i in range(35)]
CHUNK, GENERATE = 12, 4
FAMILIES = {  # name: how its tiny folder is made (transformers 4.x configs: mlx-lm 0.32 reads rope_theta)
    "llama": peaked_llama,
    "qwen2": lambda folder: hf_models.make_model(hf_models.Case("qwen2", "qwen2"), folder, "4.x", seed=4),
    "qwen3": lambda folder: hf_models.make_model(
        hf_models.Case("qwen3", "qwen3", {"rope_type": "default", "rope_theta": 1000000.0}, {"head_dim": 32}),
        folder, "4.x", seed=5),
}
DTYPES = {"f32": mx.float32, "bf16": mx.bfloat16}


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def folder(request, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp(f"mlx-{request.param}") / "model"
    FAMILIES[request.param](path)
    return path


def record(folder: Path, dtype: str, out: Path, fault: bool = False) -> list[int]:
    model, _ = mlx_utils.load_model(folder)
    model.set_dtype(DTYPES[dtype])
    if fault:  # an engine bug: layer 1's attention norm with another epsilon
        model.model.layers[1].input_layernorm.eps = 0.5
    with MlxRecorder(model, out, folder, tapdiff=TAPDIFF) as recorder:
        return recorder.generate(PROMPT, chunk=CHUNK, generate=GENERATE)


def compare(folder: Path, b: Path) -> tuple[int, dict, str]:
    a, report = b.with_suffix(".ref.h5"), b.with_suffix(".json")
    run = tapdiff("run", "--model", str(folder), "--dtype", "f64", "--tokens-from", str(b), "--dump", str(a))
    assert run.returncode == 0, run.stdout + run.stderr
    done = tapdiff("compare", str(a), str(b), "--model", str(folder), "--json", str(report))
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return done.returncode, json.loads(report.read_text()), done.stdout


@pytest.mark.parametrize("dtype", DTYPES)
def test_an_mlx_lm_run_recorded_matches(folder, dtype):
    b = folder.parent / f"mlx-{dtype}.h5"
    generated = record(folder, dtype, b)
    assert len(generated) == GENERATE
    code, report, out = compare(folder, b)
    assert code == 0 and report["verdict"] == "match", out
    assert report["tolerances"]["dtype"] == dtype and report["tolerances"]["dtype_from"] == "stated", out
    assert report["rows"]["compared"] == len(PROMPT) + GENERATE - 1, out
    assert report["summary"]["ops"] == len(json.loads(tapdiff("model-info", "--model", str(folder)).stdout)["taps"])


def test_a_bug_in_mlx_lm_is_named(folder):
    b = folder.parent / "mlx-fault.h5"
    record(folder, "bf16", b, fault=True)
    code, report, out = compare(folder, b)
    assert code == 1 and report["culprit"] is not None, out
    assert f"{report['culprit']['layer']}/{report['culprit']['op']}" == "1/attn_norm", out


def test_a_model_of_another_layout_is_refused(tmp_path):
    class Other:
        class args:
            model_type = "gemma3_text"
    with pytest.raises(ValueError, match="MlxRecorder reads mlx-lm's modules of llama, mistral, qwen2, qwen3: found "
                                         "model_type 'gemma3_text'"):
        MlxRecorder(Other(), tmp_path / "x.h5", tmp_path)
