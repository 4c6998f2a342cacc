"""tapdiff.MlxRecorder (python/tapdiff/mlx_recorder.py) on mlx-lm's own models of the families both
it and tapdiff read, in float32 and bfloat16, with chunked prefill and greedy decode through
mlx-lm's cache: `tapdiff run --tokens-from` the recorded dump follows its rows, and `compare
--model` says match; a norm's epsilon changed in mlx-lm's module is named as the culprit. mlx-lm's
Gemma and Starcoder 2 compute the exact GELU where the checkpoint asks for the tanh one, its GPT-NeoX
the tanh one where the checkpoint asks for the exact one: named in float32; its Mistral without layer_types, its Starcoder 2 and its Gemma 2 ignore the sliding window:
named at the first attention; its Gemma 3 caps no final logits: named at the logits; its GLM
rotates every channel of a half-rotary head: named at RoPE; its ERNIE-4.5-MoE chooses experts
without the selection bias: the chosen experts part first."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import mlx.core as mx
import pytest
import safetensors.numpy
from mlx_lm import utils as mlx_utils

import hf_models
from mlx_recorder import peaked_llama
from tapdiff import MlxRecorder
from tapdiff.mlx_recorder import LAYOUTS
from test_python_writer import TAPDIFF, tapdiff

PROMPT = [1] + [(i * 53) % 150 + 3 for i in range(35)]
CHUNK, GENERATE = 12, 4
def without_window(name: str) -> hf_models.Case:
    case = next(c for c in hf_models.CASES if c.name == name)
    extra = {**case.extra, "sliding_window": None}
    if "use_sliding_window" in extra:
        extra["use_sliding_window"] = False
    return dataclasses.replace(case, extra=extra)


def with_extra(name: str, **extra) -> hf_models.Case:
    case = without_window(name)
    return dataclasses.replace(case, extra={**case.extra, **extra})


GLM = next(c for c in hf_models.CASES if c.name == "glm")
COHERE2 = next(c for c in hf_models.CASES if c.name == "cohere2")
GEMMA2 = hf_models.Case("gemma2", "gemma2", extra={"head_dim": 16, "sliding_window": 64, "query_pre_attn_scalar": 24,
                                                  "attn_logit_softcapping": 5.0, "final_logit_softcapping": 3.0,
                                                  "tie_word_embeddings": True})
def neox(name: str, **extra) -> hf_models.Case:
    """A GPT-NeoX case as mlx-lm reads it: the MLP 4 x hidden_size wide, biases on attention."""
    case = next(c for c in hf_models.CASES if c.name == name)
    shape = {**{k: v for k, v in hf_models.SHAPE.items() if k not in case.drop}, "intermediate_size": 256,
             case.eps_key: 1e-5}
    return dataclasses.replace(case, shape=shape, extra={**case.extra, "attention_bias": True, **extra})


def make_gpt2(folder: Path) -> None:
    """A GPT-2 as its original checkpoint lays it out, the names without "transformer." (mlx-lm
    reads no other), its MLP 4 x n_embd wide and n_ctx stated (mlx-lm takes both so)."""
    case = next(c for c in hf_models.CASES if c.name == "gpt2")
    hf_models.make_model(dataclasses.replace(case, shape={**case.shape, "n_inner": None},
                                             extra={**case.extra, "n_ctx": case.shape["n_positions"]}),
                         folder, "4.x", seed=6)
    weights = safetensors.numpy.load_file(folder / "model.safetensors")
    safetensors.numpy.save_file({k.removeprefix("transformer."): v for k, v in weights.items()},
                                folder / "model.safetensors", metadata={"format": "pt"})


def make_minimax_m2(folder: Path) -> None:
    """A MiniMax-M2 with the keys its released configs state and mlx-lm requires: rotary_dim and
    shared_intermediate_size 0."""
    hf_models.make_model(next(c for c in hf_models.CASES if c.name == "minimax-m2"), folder, "4.x", seed=6)
    config = json.loads((folder / "config.json").read_text())
    config.update(rotary_dim=int(config["partial_rotary_factor"] * config["head_dim"]), shared_intermediate_size=0)
    (folder / "config.json").write_text(json.dumps(config, indent=2))


def make_apertus(folder: Path) -> None:
    """An Apertus with the keys its released configs state and mlx-lm requires (qk_norm, post_norm,
    mlp_bias), without attention biases (mlx-lm's has none)."""
    case = next(c for c in hf_models.CASES if c.name == "apertus")
    hf_models.make_model(dataclasses.replace(case, extra={**case.extra, "attention_bias": False}), folder, "4.x",
                         seed=6)
    config = json.loads((folder / "config.json").read_text())
    config.update(qk_norm=True, post_norm=False, mlp_bias=False)
    (folder / "config.json").write_text(json.dumps(config, indent=2))


def make_exaone4(folder: Path) -> None:
    """An EXAONE 4 with its sliding_window_pattern in letters, as released configs write it and as
    mlx-lm reads it (not layer_types)."""
    hf_models.make_model(next(c for c in hf_models.CASES if c.name == "exaone4"), folder, "4.x", seed=6)
    config = json.loads((folder / "config.json").read_text())
    config["sliding_window_pattern"] = "LG"
    (folder / "config.json").write_text(json.dumps(config, indent=2))


def make_cohere2(folder: Path) -> None:
    """A Cohere 2 as transformers 4.x saved it, with sliding_window_pattern (mlx-lm reads no layer_types)
    and head_dim = hidden_size / heads (mlx-lm takes it so)."""
    hf_models.make_model(dataclasses.replace(COHERE2, extra={**COHERE2.extra, "head_dim": 16}), folder, "4.x", seed=6)
    config = json.loads((folder / "config.json").read_text())
    config["sliding_window_pattern"] = COHERE2.extra["sliding_window_pattern"]
    (folder / "config.json").write_text(json.dumps(config, indent=2))


def make_gpt_oss(folder: Path, **extra) -> None:
    """gpt-oss as mlx-lm reads it: its released MXFP4 experts (mlx-lm splits gate and up from the
    blocks' rows; a float checkpoint's columns it would misread), layer_types stated (without them
    mlx-lm makes num_hidden_layers // 2 sliding-full pairs: two entries for three layers), YaRN truncated (mlx-lm has no
    other), biases on the attention (mlx-lm always has them) and the clamp at gpt-oss's own alpha and
    limit (test_mlx_lm_gpt_oss_clamps_at_its_own_limit_whatever_the_config_says) unless `extra` says otherwise."""
    case = next(c for c in hf_models.CASES if c.name == "gpt-oss")
    rope = {key: value for key, value in case.rope.items() if key != "truncate"}
    hf_models.make_model(dataclasses.replace(case, rope=rope, layer_types_in_4x=True, extra={
        **case.extra, "swiglu_alpha": 1.702, "swiglu_limit": 7.0,
        "layer_types": ["sliding_attention", "full_attention", "sliding_attention"], **extra}), folder, "4.x", seed=6)
    hf_models.to_mxfp4_checkpoint(folder)


FAMILIES = {  # name: how its tiny folder is made (transformers 4.x configs: mlx-lm 0.32 reads rope_theta)
    "llama": peaked_llama,
    "qwen2": lambda folder: hf_models.make_model(hf_models.Case("qwen2", "qwen2"), folder, "4.x", seed=4),
    "qwen3": lambda folder: hf_models.make_model(
        hf_models.Case("qwen3", "qwen3", {"rope_type": "default", "rope_theta": 1000000.0}, {"head_dim": 32}),
        folder, "4.x", seed=5),
    **{name: (lambda name: lambda folder: hf_models.make_model(
        next(c for c in hf_models.CASES if c.name == name), folder, "4.x", seed=6))(name)
       for name in ("mistral-head-dim", "olmo2", "granite", "helium", "ernie4_5", "seed-oss", "smollm3", "nemotron",
                    "stablelm", "phi3", "glm4", "hunyuan")},
    # mlx-lm's Gemma 2 ties the embeddings and slides no layer (test_mlx_lm_ignores_a_sliding_window): a
    # window past the prompt; its Gemma 3 caps no logits (test_mlx_lm_gemma3_caps_no_final_logits): none
    "gemma2": lambda folder: hf_models.make_model(GEMMA2, folder, "4.x", seed=6),
    # mlx-lm's GLM rotates every channel (test_mlx_lm_glm_rotates_every_channel): a GLM that does too
    "glm": lambda folder: hf_models.make_model(dataclasses.replace(
        GLM, rope={**GLM.rope, "partial_rotary_factor": 1.0}), folder, "4.x", seed=6),
    # mixtures of experts: mlx-lm's Mixtral, PhiMoE and Qwen2-MoE slide no layer, so none slides here
    **{name: (lambda name: lambda folder: hf_models.make_model(without_window(name), folder, "4.x", seed=6))(name)
       for name in ("qwen3-moe", "olmoe", "mixtral", "phimoe", "qwen2-moe", "granitemoe")},
    # mlx-lm's GLM-4.5 reads head_dim from the config; its dots1 has no attention biases
    "glm4-moe": lambda folder: hf_models.make_model(with_extra("glm4-moe", head_dim=16), folder, "4.x", seed=6),
    "dots1": lambda folder: hf_models.make_model(with_extra("dots1", attention_bias=False), folder, "4.x", seed=6),
    # mlx-lm's Cohere 2 takes head_dim as hidden_size / heads
    "cohere": lambda folder: hf_models.make_model(next(c for c in hf_models.CASES if c.name == "cohere"), folder, "4.x",
                                                  seed=6),
    "cohere2": make_cohere2,
    # mlx-lm's OLMo 3 reads layer_types (the 4.x config keeps them)
    "olmo3": lambda folder: hf_models.make_model(dataclasses.replace(
        next(c for c in hf_models.CASES if c.name == "olmo3"), layer_types_in_4x=True), folder, "4.x", seed=6),
    "exaone4": make_exaone4,
    "gpt2": make_gpt2,
    "minimax-m2": make_minimax_m2,
    "apertus": make_apertus,
    "gpt-oss": make_gpt_oss,
    # DeepSeek-V3 (latent attention with YaRN's mscale, a dense layer, grouped sigmoid routing beside
    # a shared expert), as transformers 4.x saved it: mlx-lm reads rope_theta and rope_scaling
    "deepseek-v3": lambda folder: hf_models.make_model(next(c for c in hf_models.CASES if c.name == "deepseek-v3"),
                                                       folder, "4.x", seed=6),
    # DeepSeek-V3.2: the same with an indexer keeping 7 positions of each row's
    "deepseek-v32": lambda folder: hf_models.make_model(next(c for c in hf_models.CASES if c.name == "deepseek-v32"),
                                                        folder, "4.x", seed=6),
    "phi": lambda folder: hf_models.make_model(next(c for c in hf_models.CASES if c.name == "phi"), folder, "4.x",
                                               seed=6),
    # mlx-lm's GPT-NeoX computes the tanh GELU whatever the config says
    # (test_mlx_lm_gpt_neox_computes_the_tanh_gelu_where_the_config_asks_for_the_exact_one): a tanh one
    "gpt-neox": lambda folder: hf_models.make_model(neox("gpt-neox", hidden_act="gelu_new"), folder, "4.x", seed=6),
    "gpt-neox-sequential": lambda folder: hf_models.make_model(neox("gpt-neox-sequential-tanh"), folder, "4.x", seed=6),
    # mlx-lm's Ministral 3 reads rope_parameters (the 5.x config) and slides only the layers layer_types marks
    "ministral3": lambda folder: hf_models.make_model(with_extra("ministral3"), folder, "5.x", seed=6),
    "gemma3": lambda folder: hf_models.make_model(hf_models.Case(
        "gemma3", "gemma3_text", {"full_attention": {"rope_type": "default", "rope_theta": 500000.0},
                                  "sliding_attention": {"rope_type": "default", "rope_theta": 20000.0}},
        {"head_dim": 16, "sliding_window": 5, "sliding_window_pattern": 2, "tie_word_embeddings": True}),
        folder, "4.x", seed=6),
}
# mlx-lm's Starcoder 2 has no sliding window (test_mlx_lm_ignores_a_sliding_window) and an exact GELU
# (test_mlx_lm_computes_the_exact_gelu_where_the_config_asks_for_tanh): a tiny one without a window.
STARCODER2 = hf_models.Case("starcoder2", "starcoder2", extra={**hf_models.IDS, "sliding_window": None,
                                                                "tie_word_embeddings": True}, eps_key="norm_epsilon")
DTYPES = {"f32": mx.float32, "bf16": mx.bfloat16}
# MLX's CPU build multiplies the chosen experts (gather_mm) in float32 only: mixtures run in it alone.
MIXTURES = ("qwen3-moe", "olmoe", "mixtral", "phimoe", "qwen2-moe", "granitemoe", "glm4-moe", "dots1", "minimax-m2",
            "gpt-oss", "deepseek-v3", "deepseek-v32")
RUNS = [(family, dtype) for family in sorted(FAMILIES) for dtype in DTYPES if dtype == "f32" or family not in MIXTURES]


@pytest.fixture(scope="module")
def folder(request, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp(f"mlx-{request.param}") / "model"
    FAMILIES[request.param](path)
    return path


def as_transformers(model) -> None:
    """mlx-lm's known departures from transformers set back, so that its runs compare clean (each
    has a test of its own in which tapdiff names it)."""
    if model.args.model_type == "deepseek_v32":  # test_mlx_lm_deepseek_v32_indexer_takes_layernorms_default_eps
        for layer in model.layers:
            layer.self_attn.indexer.k_norm.eps = 1e-6


def record(folder: Path, dtype: str, out: Path, fault: str | None = None, as_released: bool = False) -> list[int]:
    model, _ = mlx_utils.load_model(folder)
    model.set_dtype(DTYPES[dtype])
    if not as_released:
        as_transformers(model)
    if fault:  # an engine bug: a norm module of layer 1 with another epsilon
        getattr(model.layers[1], fault).eps = 0.5
    with MlxRecorder(model, out, folder, tapdiff=TAPDIFF) as recorder:
        return recorder.generate(PROMPT, chunk=CHUNK, generate=GENERATE)


def compare(folder: Path, b: Path) -> tuple[int, dict, str]:
    a, report = b.with_suffix(".ref.h5"), b.with_suffix(".json")
    run = tapdiff("run", "--model", str(folder), "--dtype", "f64", "--tokens-from", str(b), "--dump", str(a))
    assert run.returncode == 0, run.stdout + run.stderr
    # What mlx-lm computes inline is not recorded (MlxRecorder.inline): the ops both dumps tap compare.
    done = tapdiff("compare", str(a), str(b), "--model", str(folder), "--json", str(report), "--common-ops")
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return done.returncode, json.loads(report.read_text()), done.stdout


@pytest.mark.parametrize("folder, dtype", RUNS, indirect=["folder"], ids=[f"{f}-{d}" for f, d in RUNS])
def test_an_mlx_lm_run_recorded_matches(folder, dtype):
    b = folder.parent / f"mlx-{dtype}.h5"
    generated = record(folder, dtype, b)
    assert len(generated) == GENERATE
    code, report, out = compare(folder, b)
    assert code == 0 and report["verdict"] == "match", out
    assert report["tolerances"]["dtype"] == dtype and report["tolerances"]["dtype_from"] == "stated", out
    assert report["rows"]["compared"] == len(PROMPT) + GENERATE - 1, out
    # Every op but those mlx-lm computes inline (MlxRecorder.inline: a parallel block's attn_residual,
    # Ministral 3's rope_q, most of a mixture, DeepSeek's expanded keys and values) is compared.
    taps = json.loads(tapdiff("model-info", "--model", str(folder)).stdout)["taps"]
    inline = report["not_compared"]["only_in_a"] if report.get("not_compared") else []
    assert report["summary"]["ops"] + len(inline) == len(taps), out
    inline_ops = ("moe_router", "moe_scores", "moe_weights", "moe_out", "moe_shared", "attn_residual", "rope_q",
                  "k_proj", "v_proj", "idx_scores")
    assert all(tap.split("/")[1] in inline_ops for tap in inline), inline


@pytest.mark.parametrize("folder", sorted(FAMILIES), indirect=True)
def test_a_bug_in_mlx_lm_is_named(folder):
    b = folder.parent / "mlx-fault.h5"
    config = mlx_utils.load_config(folder)
    norm, (op, _) = next(iter(LAYOUTS[config["model_type"]].norms.items()))  # the layer's first norm
    mixture = any(key in config for key in ("num_experts", "num_local_experts", "n_routed_experts"))
    record(folder, "f32" if mixture else "bf16", b, fault=norm)
    code, report, out = compare(folder, b)
    assert code == 1 and report["culprit"] is not None, out
    assert f"{report['culprit']['layer']}/{report['culprit']['op']}" == f"1/{op}", out


def test_mlx_lm_deepseek_v32_indexer_takes_layernorms_default_eps(tmp_path):
    """mlx-lm's DeepSeek-V3.2 indexer normalises its key with nn.LayerNorm's default epsilon, 1e-5,
    where transformers' takes 1e-6 (nn.LayerNorm(index_head_dim, eps=1e-6)): an error of about 5e-11
    (NMSE) that float32 shows at each layer's idx_k_norm, the culprit in layer 0, every op before it
    matching; with the epsilon set to 1e-6 the run matches (test_an_mlx_lm_run_recorded_matches)."""
    folder = tmp_path / "model"
    FAMILIES["deepseek-v32"](folder)
    record(folder, "f32", tmp_path / "mlx.h5", as_released=True)
    code, report, out = compare(folder, tmp_path / "mlx.h5")
    assert code == 1 and f"{report['culprit']['layer']}/{report['culprit']['op']}" == "0/idx_k_norm", out
    first = next(op for op in report["ops"] if not op["pass"])
    assert (first["layer"], first["op"]) == (0, "idx_k_norm") and 1e-12 < first["metrics"]["nmse"] < 1e-9, out


def assert_activation_named_in_f32_only(folder: Path, tmp_path: Path) -> None:
    """Another GELU than the config's: the first activation is the culprit in float32; bfloat16 matches."""
    record(folder, "f32", tmp_path / "f32.h5")
    code, report, out = compare(folder, tmp_path / "f32.h5")
    assert code == 1 and f"{report['culprit']['layer']}/{report['culprit']['op']}" == "0/ffn_act", out
    record(folder, "bf16", tmp_path / "bf16.h5")
    code, report, out = compare(folder, tmp_path / "bf16.h5")
    assert code == 0 and report["verdict"] == "match", out


@pytest.mark.parametrize("case", [next(c for c in hf_models.CASES if c.name == "gemma"), STARCODER2],
                         ids=lambda c: c.name)
def test_mlx_lm_computes_the_exact_gelu_where_the_config_asks_for_tanh(tmp_path, case):
    """mlx-lm's Gemma and Starcoder 2 MLPs call nn.gelu (erf) where the config says gelu_pytorch_tanh:
    an error of about 1e-8 (NMSE) that float32 shows at the first activation and bfloat16 hides (where
    every other op of the recorder's dump matches)."""
    folder = tmp_path / case.name
    hf_models.make_model(case, folder, "4.x", seed=6)
    config = json.loads((folder / "config.json").read_text())
    assert config.get("hidden_activation", config.get("hidden_act", "gelu_pytorch_tanh")) == "gelu_pytorch_tanh"
    assert_activation_named_in_f32_only(folder, tmp_path)


def test_mlx_lm_gpt_neox_computes_the_tanh_gelu_where_the_config_asks_for_the_exact_one(tmp_path):
    """mlx-lm's GPT-NeoX MLP calls nn.gelu_approx (tanh) whatever hidden_act says; with "gelu" (erf,
    transformers' default for GPT-NeoX) float32 shows it at the first activation; bfloat16 hides it."""
    folder = tmp_path / "gpt-neox"
    hf_models.make_model(neox("gpt-neox"), folder, "4.x", seed=6)
    assert json.loads((folder / "config.json").read_text())["hidden_act"] == "gelu"
    assert_activation_named_in_f32_only(folder, tmp_path)


@pytest.mark.parametrize("case", [
    next(c for c in hf_models.CASES if c.name == "mistral"),
    next(c for c in hf_models.CASES if c.name == "starcoder2"),
    hf_models.Case("gemma2", "gemma2", extra={**GEMMA2.extra, "sliding_window": 6}),
], ids=lambda c: c.model_type)
def test_mlx_lm_ignores_a_sliding_window(tmp_path, case):
    """mlx-lm's Llama (which runs Mistral) slides only the layers its config's layer_types marks, and
    its Starcoder 2 and Gemma 2 never: a config with sliding_window and no layer_types attends over
    every past token where transformers keeps the last sliding_window. Named at the first attention,
    from the first row past the window."""
    folder = tmp_path / case.name
    hf_models.make_model(case, folder, "4.x", seed=6)
    config = json.loads((folder / "config.json").read_text())
    assert config["sliding_window"] in (6, 8) and "layer_types" not in config
    record(folder, "f32", tmp_path / "f32.h5")
    code, report, out = compare(folder, tmp_path / "f32.h5")
    assert code == 1 and f"{report['culprit']['layer']}/{report['culprit']['op']}" == "0/attn", out
    assert report["first"]["first_bad_position"] == config["sliding_window"], out


def test_mlx_lm_gemma3_caps_no_final_logits(tmp_path):
    """mlx-lm's Gemma 3 leaves out final_logit_softcapping, which transformers' applies: every op
    before the logits matches, and the logits are the culprit."""
    folder = tmp_path / "gemma3"
    hf_models.make_model(next(c for c in hf_models.CASES if c.name == "gemma3-pattern-capped"), folder, "4.x", seed=6)
    assert json.loads((folder / "config.json").read_text())["final_logit_softcapping"] == 3.0
    record(folder, "f32", tmp_path / "f32.h5")
    code, report, out = compare(folder, tmp_path / "f32.h5")
    assert code == 1 and f"{report['culprit']['layer']}/{report['culprit']['op']}" == "3/logits", out
    assert report["first"]["op"] == "logits", out


def test_mlx_lm_glm_rotates_every_channel(tmp_path):
    """mlx-lm's GLM applies RoPE to the whole head where GLM's config rotates the first half
    (partial_rotary_factor 0.5, its default): the queries' RoPE is the culprit."""
    folder = tmp_path / "glm"
    hf_models.make_model(GLM, folder, "4.x", seed=6)
    assert json.loads((folder / "config.json").read_text())["partial_rotary_factor"] == 0.5
    record(folder, "f32", tmp_path / "f32.h5")
    code, report, out = compare(folder, tmp_path / "f32.h5")
    assert code == 1 and f"{report['culprit']['layer']}/{report['culprit']['op']}" == "0/rope_q", out


def test_mlx_lm_gpt_oss_clamps_at_its_own_limit_whatever_the_config_says(tmp_path):
    """mlx-lm's gpt-oss experts compute the clamped SwiGLU at alpha 1.702 and limit 7 (SwigluOAI's
    defaults) and never read swiglu_alpha or swiglu_limit: with a limit of 0.2 that bites, the
    router's choice matches and the mixture's output is the first op past tolerance. mlx-lm computes
    the expert weights inline, so moe_out cannot be checked on the recorder's own inputs: no culprit
    is claimed, and the report names the tap that would decide it."""
    folder = tmp_path / "gpt-oss"
    make_gpt_oss(folder, swiglu_limit=0.2)
    record(folder, "f32", tmp_path / "f32.h5")
    code, report, out = compare(folder, tmp_path / "f32.h5")
    assert code == 1 and (report["first"]["layer"], report["first"]["op"]) == (0, "moe_out"), out
    assert report["culprit"] is None and "tapping 0/moe_weights" in out, out


def test_mlx_lm_ernie_moe_chooses_experts_without_the_selection_bias(tmp_path):
    """mlx-lm's ERNIE-4.5-MoE picks the top-k of the plain scores, leaving out the selection bias
    (moe_statics.e_score_correction_bias) that transformers adds to choose: the router's logits
    match, and the chosen experts are the first op past tolerance."""
    folder = tmp_path / "ernie"
    hf_models.make_model(next(c for c in hf_models.CASES if c.name == "ernie4_5-moe"), folder, "4.x", seed=6)
    record(folder, "f32", tmp_path / "f32.h5")
    code, report, out = compare(folder, tmp_path / "f32.h5")
    layer = report["first"]["layer"]
    assert code == 1 and report["first"]["op"] == "moe_ids", out
    router = next(o for o in report["ops"] if (o["layer"], o["op"]) == (layer, "moe_router"))
    assert router["pass"], out


def test_a_model_of_another_layout_is_refused(tmp_path):
    class Other:
        class args:
            model_type = "rwkv7"
    with pytest.raises(ValueError, match="MlxRecorder reads mlx-lm's modules of llama, mistral, qwen2, qwen3, "
                                         "helium, .*: found model_type 'rwkv7'"):
        MlxRecorder(Other(), tmp_path / "x.h5", tmp_path)
