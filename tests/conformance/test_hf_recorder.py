"""The Hugging Face recorder shipped in python/tapdiff (HfRecorder): on a tiny model of every
family and RoPE type tapdiff reads (hf_models.py, made by transformers from PyPI), its dump of
transformers' own float64 run in chunks with decode steps compares clean against `tapdiff run` of
the same folder, with no edits; with a bug planted in the model's forward, `compare --model` names
the culprit."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import torch

from hf_models import CASES, load_float64, make_model
from tapdiff import HfRecorder

ROOT = Path(__file__).resolve().parents[2]
TAPDIFF = os.environ.get("TAPDIFF_BINARY", str(ROOT / "build" / "tapdiff"))
PROMPT = [1, 17, 42, 99, 7, 123, 58, 31, 77, 12, 64, 150, 3, 88, 41, 19, 120, 9, 33, 71]
CHUNK, GENERATE = 8, 4


def float64_model(folder: Path, patch=None):
    """transformers' model of the folder in float64 (hf_models.load_float64), with `patch` applied."""
    model = load_float64(folder)
    if patch:
        patch(model)
    return model


def record(folder: Path, dump: Path, patch=None) -> list[int]:
    model = float64_model(folder, patch)
    with HfRecorder(model, dump, folder, tapdiff=TAPDIFF) as recorder:
        return recorder.generate(PROMPT, chunk=CHUNK, generate=GENERATE)


def tapdiff_run(folder: Path, dump: Path) -> None:
    run = subprocess.run([TAPDIFF, "run", "--model", str(folder), "--engine", "ref", "--dtype", "f64",
                          "--tokens", ",".join(map(str, PROMPT)), "--chunk", str(CHUNK), "--generate",
                          str(GENERATE), "--dump", str(dump)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def compare(a: Path, b: Path, report: Path, *extra: str) -> tuple[int, dict, str]:
    run = subprocess.run([TAPDIFF, "compare", str(a), str(b), "--json", str(report), *extra], capture_output=True,
                         text=True)
    assert run.returncode in (0, 1), run.stdout + run.stderr
    return run.returncode, json.loads(report.read_text()), run.stdout


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_recorders_dump_matches_tapdiff_run(case, tmp_path):
    folder = tmp_path / "model"
    make_model(case, folder, "5.x")
    record(folder, tmp_path / "hf.h5")
    tapdiff_run(folder, tmp_path / "ref.h5")
    # DeepSeek-V3.2's indexer computes its scores inside its forward, where no hook sees them
    unseen = "idx_scores" if case.model_type == "deepseek_v32" else None
    code, report, out = compare(tmp_path / "ref.h5", tmp_path / "hf.h5", tmp_path / "report.json",
                                *(["--common-ops"] if unseen else []))
    assert code == 0, out
    assert report["rows"]["compared"] == len(PROMPT) + GENERATE - 1, out
    assert report["summary"]["ops"] > 0 and not report.get("problems"), out
    if unseen:
        assert {t.split("/")[1] for t in report["not_compared"]["only_in_a"]} == {unseen}, out


def test_run_tokens_from_the_recorders_dump_follows_its_rows(tmp_path):
    """`run --tokens-from` the recorder's dump: A runs its tokens, positions, chunks and decode steps."""
    folder = tmp_path / "model"
    make_model(next(c for c in CASES if c.name == "qwen3"), folder, "5.x")
    record(folder, tmp_path / "hf.h5")
    run = subprocess.run([TAPDIFF, "run", "--model", str(folder), "--dtype", "f64", "--tokens-from",
                          str(tmp_path / "hf.h5"), "--dump", str(tmp_path / "ref.h5")], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    code, report, out = compare(tmp_path / "ref.h5", tmp_path / "hf.h5", tmp_path / "report.json")
    assert code == 0 and report["rows"]["compared"] == len(PROMPT) + GENERATE - 1, out


def scale_attention(model):
    model.model.layers[1].self_attn.scaling *= 1.5


def shift_norm(model):
    with torch.no_grad():
        model.model.layers[2].post_attention_layernorm.weight.add_(0.05)


def shift_latent_norm(model):
    with torch.no_grad():
        model.model.layers[1].self_attn.kv_a_layernorm.weight.add_(0.05)


def negate_index_scores(model):
    """DeepSeek-V3.2's indexer scoring by each head's q.k negated: it keeps other positions."""
    model.model.layers[1].self_attn.indexer.softmax_scale *= -1.0


def double_temperature(model):
    model.model.layers[1].self_attn.attn_scale *= 2


def mlp_reads_attention(model):
    """A parallel block's MLP fed the attention's output in place of the normed input."""
    layer, seen = model.model.layers[1], {}
    layer.self_attn.register_forward_hook(lambda _m, _args, out: seen.__setitem__("attention", out[0]))
    layer.mlp.register_forward_pre_hook(lambda _m, _args: (seen["attention"],))


def drop_renormalisation(model):
    model.model.layers[1].mlp.gate.norm_topk_prob = False


def open_shared_gate(model):
    """The shared expert's sigmoid gate left out: its logit pushed to where the sigmoid is 1."""
    model.model.layers[1].mlp.shared_expert_gate.register_forward_hook(lambda _m, _args, out: out + 100.0)


def skip_value_norm(model):
    """Gemma 4's weightless norm of the values left out (the values cached as k_proj gave them)."""
    model.model.layers[1].self_attn.v_norm.forward = lambda x: x


def drop_layer_scalar(model):
    """Gemma 4's layer_scalar not applied to the layer's output."""
    model.model.layers[2].layer_scalar.fill_(1.0)


def unscaled_layer_inputs(model):
    """Gemma 4's per-layer inputs without the 1/sqrt(2) of their two parts' sum."""
    model.model.per_layer_input_scale = 1.0


def drop_expert_scales(model):
    """Gemma 4's router without its per_expert_scale (the experts' weights as renormalised)."""
    model.model.layers[1].router.per_expert_scale.data.fill_(1.0)


def unscaled_router_input(model):
    """Gemma 4's router input without its 1/sqrt(hidden_size)."""
    model.model.layers[2].router.scalar_root_size = 1.0


@pytest.mark.parametrize("name, patch, culprit", [
    ("qwen3-moe", drop_renormalisation, "1/moe_weights"),
    ("qwen2-moe", open_shared_gate, "1/moe_shared"),
    ("llama-default", scale_attention, "1/attn"),
    ("qwen3", scale_attention, "1/attn"),
    ("gemma2", scale_attention, "1/attn"),
    ("llama-yarn", shift_norm, "2/ffn_norm"),
    ("gemma3", shift_norm, "2/attn_post_norm"),
    ("phi", mlp_reads_attention, "1/ffn_up"),
    ("cohere", mlp_reads_attention, "1/ffn_gate"),
    ("deepseek-v3", shift_latent_norm, "1/kv_a_norm"),
    ("deepseek-v2", scale_attention, "1/attn"),
    ("deepseek-v32", negate_index_scores, "1/idx_ids"),
    ("llama4", double_temperature, "1/rope_q"),
    ("llama4-plain", shift_norm, "2/ffn_norm"),
    ("gemma4", skip_value_norm, "1/v_norm"),
    ("gemma4-layer-inputs", drop_layer_scalar, "2/ple_residual"),
    ("gemma4-layer-inputs", unscaled_layer_inputs, "0/ple_input"),
    ("gemma4-moe", drop_expert_scales, "1/moe_weights"),
    ("gemma4-moe", unscaled_router_input, "2/moe_router_norm"),
])
def test_a_bug_in_the_models_forward_is_named(name, patch, culprit, tmp_path):
    case = next(c for c in CASES if c.name == name)
    folder = tmp_path / "model"
    make_model(case, folder, "5.x")
    record(folder, tmp_path / "hf.h5", patch)
    tapdiff_run(folder, tmp_path / "ref.h5")
    code, report, out = compare(tmp_path / "ref.h5", tmp_path / "hf.h5", tmp_path / "report.json", "--model",
                                str(folder))
    assert code == 1, out
    assert f"{report['culprit']['layer']}/{report['culprit']['op']}" == culprit, out
