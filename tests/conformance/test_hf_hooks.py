"""A dump as a user writes one from transformers with plain forward hooks (every module's output under
its name, a tuple's members as NAME.0, NAME.1, a module's input as NAME:input, the expert ids as the
router returns them: int64, in its top-k order), read by `tapdiff compare --map hf`: on the mixtures
of experts transformers 5.x builds (router, chosen experts and their weights, the experts' sum, a
shared expert and the block's output; Gemma 4's mixture beside the MLP with its norms) it matches `tapdiff run` of the same folder, every op compared
but those transformers computes inline; with the router's renormalisation left out, the culprit is
named from the hook dump alone."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import transformers
from safetensors.numpy import save_file

from hf_models import CASES, make_model
from tapdiff.recording import greedy
from test_hf_recorder import CHUNK, GENERATE, PROMPT, compare, float64_model, tapdiff_run

# What transformers computes outside any module: RoPE (a function), a parallel block's attn_residual
# (Cohere's), the mixtures' routing scores, where a sigmoid gate scales the shared expert (Qwen2-MoE)
# the gated output, and where the layer holds the shared expert (Granite-MoE-Shared) the sum.
INLINE = {"rope_q", "rope_k", "attn_residual", "moe_scores", "moe_shared", "moe_sum"}


class HookDump:
    """Forward hooks on every module of `model`; each forward pass, through the model's own cache,
    saved as step_N.safetensors."""

    def __init__(self, model, folder: Path):
        self.model, self.folder, self.values, self.steps, self.position = model, folder, {}, 0, 0
        self.cache = transformers.DynamicCache(config=model.config)
        folder.mkdir()
        for name, module in model.named_modules():
            if name:
                module.register_forward_hook(self.hook(name))

    def hook(self, name: str):
        def keep(_module, args, output):
            if args and torch.is_tensor(args[0]) and args[0].is_floating_point():
                self.values[f"{name}:input"] = args[0]
            members = output if isinstance(output, tuple) else (output,)
            for i, member in enumerate(members):
                if torch.is_tensor(member):
                    self.values[name if not isinstance(output, tuple) else f"{name}.{i}"] = member

        return keep

    def forward(self, tokens: list[int], decode: bool) -> np.ndarray:
        self.values = {}
        positions = list(range(self.position, self.position + len(tokens)))
        self.position += len(tokens)
        with torch.no_grad():
            out = self.model(input_ids=torch.tensor([tokens]), position_ids=torch.tensor([positions]),
                             cache=self.cache, use_cache=True)
        arrays = {name: np.ascontiguousarray(v.detach().numpy()) for name, v in self.values.items()}
        arrays.update(logits=out.logits.numpy(), input_ids=np.array(tokens), position_ids=np.array(positions),
                      decode=np.full(len(tokens), int(decode), dtype=np.int32))
        save_file(arrays, str(self.folder / f"step_{self.steps}.safetensors"))
        self.steps += 1
        return arrays["logits"][0]


def record(folder: Path, out: Path, patch=None) -> None:
    greedy(HookDump(float64_model(folder, patch), out).forward, PROMPT, CHUNK, GENERATE)


MIXTURES = ["gpt-oss", "qwen3-moe", "qwen3-moe-dense-layer", "qwen2-moe", "mixtral", "olmoe", "glm4-moe", "granitemoe", "phimoe",
            "dots1", "minimax-m2", "ernie4_5-moe", "cohere2-moe", "granitemoeshared", "qwen2-moe-sparse-step",
            "deepseek-v3", "deepseek-v2", "gemma4-moe"]
# DeepSeek's latent attention: its hook dump holds the latent and q's projections, but no expanded
# keys and values under tapdiff's names (kv_b_proj's output; DeepSeek-V3's expands the whole cache
# each pass).
LATENT_OPS, EXPANDED = {"q_a_proj", "q_a_norm", "kv_a_proj", "kv_a_norm"}, {"k_proj", "v_proj"}


@pytest.mark.parametrize("name", MIXTURES)
def test_a_hook_dump_of_a_mixture_matches(name, tmp_path):
    folder = tmp_path / "model"
    make_model(next(c for c in CASES if c.name == name), folder, "5.x")
    record(folder, tmp_path / "hooks")
    tapdiff_run(folder, tmp_path / "ref.h5")
    code, report, out = compare(tmp_path / "ref.h5", tmp_path / "hooks", tmp_path / "report.json", "--map", "hf")
    assert code == 1 and report["verdict"] == "incomplete", out  # the ops computed inline: not judged
    assert {p["code"] for p in report["problems"]} == {"ops-only-in-a"}, out
    code, report, out = compare(tmp_path / "ref.h5", tmp_path / "hooks", tmp_path / "report.json", "--map", "hf",
                                "--common-ops")
    assert code == 0 and report["verdict"] == "match", out
    assert report["rows"]["compared"] == len(PROMPT) + GENERATE - 1, out
    ops = {t.split("/")[1] for t in report["not_compared"]["only_in_a"]} if report.get("not_compared") else set()
    latent = name.startswith("deepseek")
    assert ops <= INLINE | (EXPANDED if latent else set()) and (not latent or EXPANDED <= ops), out
    moe_ops = {"moe_router", "moe_ids", "moe_weights", "moe_out"} | (LATENT_OPS if latent else set())
    compared = {row["op"] for row in report["ops"]}
    assert moe_ops <= compared, out


def test_a_router_without_its_renormalisation_is_named_from_the_hook_dump(tmp_path):
    folder = tmp_path / "model"
    make_model(next(c for c in CASES if c.name == "qwen3-moe"), folder, "5.x")
    record(folder, tmp_path / "hooks", lambda model: setattr(model.model.layers[1].mlp.gate, "norm_topk_prob", False))
    tapdiff_run(folder, tmp_path / "ref.h5")
    code, report, out = compare(tmp_path / "ref.h5", tmp_path / "hooks", tmp_path / "report.json", "--map", "hf",
                                "--model", str(folder))
    assert code == 1, out
    assert f"{report['culprit']['layer']}/{report['culprit']['op']}" == "1/moe_weights", out


def test_gpt_oss_sinks_dropped_and_its_clamp_left_out_are_found_from_the_hook_dump(tmp_path):
    """gpt-oss's own pieces broken in transformers' run and found from its hook dump: the experts'
    clamp left out (swiglu_limit lifted past every gate) is the culprit at that layer's moe_out; a
    layer's sinks dropped (its softmax over the keys alone) is the first divergence at that layer's
    attn, which a hook dump cannot check on its own inputs (RoPE runs inside the attention module,
    so q and k after it are not in the dump): the report says so and names the taps that would."""
    folder = tmp_path / "model"
    make_model(next(c for c in CASES if c.name == "gpt-oss"), folder, "5.x")
    tapdiff_run(folder, tmp_path / "ref.h5")

    def unclamped(model):
        model.model.layers[2].mlp.experts.limit = 1e30

    def no_sinks(model):
        with torch.no_grad():
            model.model.layers[1].self_attn.sinks.fill_(-1e30)

    record(folder, tmp_path / "clamp", unclamped)
    code, report, out = compare(tmp_path / "ref.h5", tmp_path / "clamp", tmp_path / "clamp.json", "--map", "hf",
                                "--model", str(folder))
    assert code == 1 and f"{report['culprit']['layer']}/{report['culprit']['op']}" == "2/moe_out", out
    record(folder, tmp_path / "sinks", no_sinks)
    code, report, out = compare(tmp_path / "ref.h5", tmp_path / "sinks", tmp_path / "sinks.json", "--map", "hf",
                                "--model", str(folder))
    assert code == 1 and f"{report['first']['layer']}/{report['first']['op']}" == "1/attn", out
    assert report["culprit"] is None and "1/rope_q" in out and "1/rope_k" in out, out
