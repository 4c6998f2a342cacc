"""tapdiff's greedy tokens and logits against llama.cpp's own (its prebuilt CPU build from npm's
node-llama-cpp): on GGUF files of every family llama.cpp has, written by the gguf package as its
converter lays them out (tests/conformance/gguf_models.py) with F32 and Q8_0 matrices, and on synth
models stored in every ggml block type tapdiff reads and in llama.cpp's Q4_K_M and Q5_K_M mixes; a
200-token prompt, 16 generated tokens, on the reference and on the Vulkan engine."""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
from pathlib import Path

import gguf
import h5py
import numpy as np
import pytest

import hf_models
from gguf_models import FAMILY_CASES, GGUF_CASES, VOCAB, GgufCase, write_deepseek2, write_gemma4, write_gguf

ROOT = Path(__file__).resolve().parents[2]
TAPDIFF = os.environ.get("TAPDIFF_BINARY", str(ROOT / "build" / "tapdiff"))
GENERATE = 16
PROMPT = [1] + [int(t) for t in np.random.default_rng(11).integers(3, VOCAB, size=199)]


def node_script(name: str) -> Path:
    """The script copied beside node-llama-cpp's node_modules: ES modules resolve from there."""
    peers = Path(subprocess.run([str(ROOT / "scripts" / "node-peers.sh")], capture_output=True, text=True,
                                check=True).stdout.strip())
    shutil.copyfile(Path(__file__).with_name(name), peers / name)
    return peers / name


def llama_cpp_tokens(model: Path, *context: str) -> list[int]:
    """llama.cpp's greedy tokens after PROMPT; `context`: its context size (n_ctx) when given."""
    script = node_script("llama_cpp_greedy.mjs")
    run = subprocess.run(["node", str(script), str(model), str(GENERATE), ",".join(map(str, PROMPT)), *context],
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


# llama.cpp's logits with F32 matrices part from the exact answer by its f16 KV cache and GELU
# table only: an NMSE of 4e-9 to 4e-7 on these models; a misread key or tensor gives 1e-3 and more.
# The llama.cpp emulation (--dtype llama.cpp), which rounds as llama.cpp does, comes 6 to 175 times
# nearer on the families' cases (it holds the other families' op by op: test_llama_cpp_taps.py).
F32_LOGIT_NMSE = 1e-5


def nmse(ours: np.ndarray, theirs: np.ndarray) -> float:
    return float(((ours - theirs) ** 2).sum() / (theirs ** 2).sum())


@pytest.mark.parametrize("case", GGUF_CASES + FAMILY_CASES, ids=lambda c: c.name)
def test_greedy_tokens_equal_llama_cpp(case, tmp_path):
    """Each family's GGUF: the greedy tokens after PROMPT equal llama.cpp's on the reference (f64,
    f32) and the Vulkan engine in chunks, and the exact logits at each step equal llama.cpp's to its
    rounding (a check that holds where a tied model repeats one token)."""
    model = tmp_path / f"{case.name}.gguf"
    write_gguf(case, model)
    expected = llama_cpp_tokens(model)
    assert len(expected) == GENERATE
    assert tapdiff_tokens(model, "--engine", "ref", "--dtype", "f64") == expected
    assert tapdiff_tokens(model, "--engine", "ref", "--dtype", "f32") == expected
    assert tapdiff_tokens(model, "--engine", "vulkan", "--chunk", "64") == expected
    rows = GENERATE + 1
    theirs = llama_cpp_logits(model, PROMPT + expected, rows)[:GENERATE]
    exact = tapdiff_logits(model, PROMPT + expected, rows, tmp_path / "exact.h5")[:GENERATE]
    error = nmse(exact, theirs)
    print(f"{case.name}: logits NMSE against llama.cpp {error:.2e}")
    assert error < F32_LOGIT_NMSE
    if case in FAMILY_CASES:
        for engine in EMULATIONS:
            emulated = nmse(tapdiff_logits(model, PROMPT + expected, rows, tmp_path / "emulated.h5", engine)[:GENERATE],
                            theirs)
            print(f"{case.name} {engine[1]} --dtype llama.cpp: logits NMSE against llama.cpp {emulated:.2e}")
            assert emulated < error / 2


# gpt-oss as its converter writes it: the experts in MXFP4 (each 64 wide: whole blocks of 32).
GPT_OSS_MXFP4 = GgufCase("gpt-oss-mxfp4", arch="gpt-oss", rope_base=150000.0, yarn=(4.0, 32), experts=(6, 2, 64),
                         expert_gain=8.0, expert_storage="mxfp4", extra={"sliding_window": 24})


def test_mxfp4_experts_hold_the_values_llama_cpp_reads(tmp_path):
    """MXFP4 experts read as llama.cpp reads them: tapdiff's run of the MXFP4 file equals its run
    of a twin whose F32 experts hold the values those blocks decode to, and llama.cpp's tokens and
    logits on that twin to its f32 rounding. (llama.cpp's own run of the MXFP4 file multiplies by
    Q8_0-rounded inputs, its CPU kernels' dot-product type for MXFP4, which the llama.cpp emulation
    does not model in a mixture of experts: printed, not asserted.)"""
    blocks, values = tmp_path / "mxfp4.gguf", tmp_path / "values.gguf"
    write_gguf(GPT_OSS_MXFP4, blocks)
    write_gguf(dataclasses.replace(GPT_OSS_MXFP4, expert_storage="mxfp4-values"), values)
    tokens = tapdiff_tokens(blocks, "--engine", "ref", "--dtype", "f64")
    assert tokens == tapdiff_tokens(values, "--engine", "ref", "--dtype", "f64")
    assert tapdiff_tokens(blocks, "--engine", "vulkan", "--chunk", "64") == tokens
    assert llama_cpp_tokens(values) == tokens
    rows = GENERATE + 1
    exact = tapdiff_logits(blocks, PROMPT + tokens, rows, tmp_path / "exact.h5")[:GENERATE]
    np.testing.assert_array_equal(exact, tapdiff_logits(values, PROMPT + tokens, rows, tmp_path / "v.h5")[:GENERATE])
    error = nmse(exact, llama_cpp_logits(values, PROMPT + tokens, rows)[:GENERATE])
    print(f"MXFP4 experts: logits NMSE against llama.cpp on their values {error:.2e}, against llama.cpp on the "
          f"blocks {nmse(exact, llama_cpp_logits(blocks, PROMPT + tokens, rows)[:GENERATE]):.2e}")
    assert error < F32_LOGIT_NMSE


def transformers_logits(folder: Path, tokens: list[int]) -> np.ndarray:
    import torch
    model = hf_models.load_float64(folder)
    with torch.no_grad():
        return model(torch.tensor([tokens])).logits[0].numpy()


@pytest.mark.parametrize("name,absorbed", [("deepseek-v3", True), ("deepseek-v3", False), ("deepseek-v3-yarn", True),
                                           ("deepseek-v2", True)],
                         ids=["deepseek-v3", "deepseek-v3-kv-b", "deepseek-v3-yarn", "deepseek-v2"])
def test_deepseek_gguf_equals_transformers_and_llama_cpps_tokens(name, absorbed, tmp_path):
    """The GGUF llama.cpp's converter makes of a DeepSeek model (its kv_b_proj split per head, the
    key rows transposed, where `absorbed`): tapdiff's exact logits on it equal transformers' float64
    forward of the folder it came from, its greedy tokens (f64, f32, the Vulkan engine's) llama.cpp's,
    and its logits along them llama.cpp's to its rounding."""
    folder, model = tmp_path / "hf", tmp_path / f"{name}.gguf"
    hf_models.make_model(hf_models.DEEPSEEK_GGUF_CASES[name], folder, "5.x")
    write_deepseek2(folder, model, absorbed)
    ours = tapdiff_logits(model, PROMPT, len(PROMPT), tmp_path / "all.h5")
    error = nmse(ours, transformers_logits(folder, PROMPT))
    print(f"{name} {'absorbed' if absorbed else 'kv_b'}: logits NMSE against transformers float64 {error:.2e}")
    assert error < 1e-10
    expected = llama_cpp_tokens(model)
    assert len(expected) == GENERATE
    assert tapdiff_tokens(model, "--engine", "ref", "--dtype", "f64") == expected
    assert tapdiff_tokens(model, "--engine", "ref", "--dtype", "f32") == expected
    assert tapdiff_tokens(model, "--engine", "vulkan", "--chunk", "64") == expected
    rows = GENERATE + 1
    theirs = llama_cpp_logits(model, PROMPT + expected, rows)[:GENERATE]
    error = nmse(tapdiff_logits(model, PROMPT + expected, rows, tmp_path / "exact.h5")[:GENERATE], theirs)
    print(f"{name}: logits NMSE against llama.cpp {error:.2e}")
    assert error < F32_LOGIT_NMSE


def test_a_quantized_deepseek_gguf_is_held_to_llama_cpps_rounding(tmp_path):
    """DeepSeek-V3's GGUF with Q8_0 matrices (F16 where a row is no whole block: attn_k_b, read
    transposed, and attn_v_b among them): the exact logits along llama.cpp's tokens within its
    rounding, the tokens equal up to a near tie."""
    folder, model = tmp_path / "hf", tmp_path / "deepseek2-q8_0.gguf"
    hf_models.make_model(hf_models.DEEPSEEK_GGUF_CASES["deepseek-v3"], folder, "5.x")
    write_deepseek2(folder, model, storage="q8_0")
    assert_held_to_llama_cpps_rounding(model, "deepseek-v3 q8_0", tmp_path)


def test_synth_latent_attention_is_llama_cpps_deepseek2(tmp_path):
    """synth --shape tiny-mla writes deepseek2 as llama.cpp reads it (q's and the latent's ranks,
    attn_kv_b with a KV head per head, values narrower than keys, a dense layer, then DeepSeek-V3's
    grouped sigmoid router beside a shared expert): the exact logits along llama.cpp's greedy tokens
    are llama.cpp's to its f16 cache's rounding, and the reference's and the Vulkan engine's tokens
    llama.cpp's up to a near tie."""
    model = tmp_path / "tiny-mla.gguf"
    synth = subprocess.run([TAPDIFF, "synth", "--shape", "tiny-mla", "-o", str(model)], capture_output=True, text=True)
    assert synth.returncode == 0, synth.stderr
    assert_held_to_llama_cpps_rounding(model, "synth tiny-mla", tmp_path)
    expected = llama_cpp_tokens(model)
    rows = GENERATE + 1
    error = nmse(tapdiff_logits(model, PROMPT + expected, rows, tmp_path / "f32.h5")[:GENERATE],
                 llama_cpp_logits(model, PROMPT + expected, rows)[:GENERATE])
    assert error < F32_LOGIT_NMSE, error


DEEPSEEK_REFUSALS = [
    ({"attn_temperature_scale": 0.1}, "metadata 'deepseek2.attention.temperature_scale'"),
    ({"rope_scaling_type": gguf.RopeScalingType.LINEAR, "rope_scaling_factor": 2.0},
     "metadata 'deepseek2.rope.scaling.type'"),
    ({"rope_scaling_attn_factors": 1.25},
     "metadata 'deepseek2.rope.scaling.attn_factor' without rope.scaling.type yarn is not supported"),
]


def test_what_tapdiff_does_not_compute_of_a_deepseek_gguf_is_refused(tmp_path):
    """Mistral-Large's query temperature, a RoPE scaling other than YaRN and the attention factor
    without YaRN (llama.cpp's graph scales cos, sin and the scores by it) are refused by name, as is
    the llama.cpp emulation (which does not round latent attention's products)."""
    folder, model = tmp_path / "hf", tmp_path / "plain.gguf"
    hf_models.make_model(hf_models.DEEPSEEK_GGUF_CASES["deepseek-v3"], folder, "5.x")
    write_deepseek2(folder, model)
    run = subprocess.run([TAPDIFF, "run", "--model", str(model), "--tokens", "1,2", "--dtype", "llama.cpp"],
                         capture_output=True, text=True)
    assert run.returncode == 2 and "does not round latent attention's products" in run.stderr, run.stderr
    for extra, message in DEEPSEEK_REFUSALS:
        write_deepseek2(folder, tmp_path / "refused.gguf", extra=extra)
        run = subprocess.run([TAPDIFF, "run", "--model", str(tmp_path / "refused.gguf"), "--tokens", "1,2"],
                             capture_output=True, text=True)
        assert run.returncode == 2 and message in run.stderr, (extra, run.stderr)


def test_a_deepseek_gguf_whose_key_rows_are_misplaced_is_refused(tmp_path, monkeypatch):
    """attn_k_b not transposed (as a converter that forgot it writes it), or beside attn_kv_b (two
    sources of the same keys): refused, naming the tensor and what was expected."""
    folder = tmp_path / "hf"
    case = hf_models.DEEPSEEK_GGUF_CASES["deepseek-v3"]
    hf_models.make_model(case, folder, "5.x")
    add_tensor = gguf.GGUFWriter.add_tensor
    heads, nope = hf_models.SHAPE["num_attention_heads"], case.extra["qk_nope_head_dim"]

    def untransposed(self, name, tensor, *args, **kwargs):
        if name.endswith("attn_k_b.weight"):
            tensor = np.ascontiguousarray(tensor.transpose(0, 2, 1))
        return add_tensor(self, name, tensor, *args, **kwargs)

    def both(self, name, tensor, *args, **kwargs):
        if name.endswith("attn_kv_b.weight"):
            per_head = tensor.reshape(heads, -1, tensor.shape[-1])[:, :nope]
            add_tensor(self, name.replace("attn_kv_b", "attn_k_b"), np.ascontiguousarray(per_head.transpose(0, 2, 1)))
        return add_tensor(self, name, tensor, *args, **kwargs)

    for writer, absorbed, message in ((untransposed, True, "tensor 'blk.0.attn_k_b.weight': expected shape [12, 20, 4]"),
                                      (both, False, "are both wk of layer 0")):
        monkeypatch.setattr(gguf.GGUFWriter, "add_tensor", writer)
        model = tmp_path / f"{writer.__name__}.gguf"
        write_deepseek2(folder, model, absorbed)
        monkeypatch.setattr(gguf.GGUFWriter, "add_tensor", add_tensor)
        run = subprocess.run([TAPDIFF, "run", "--model", str(model), "--tokens", "1,2"], capture_output=True, text=True)
        assert run.returncode == 2 and message in run.stderr, (writer.__name__, run.stderr)


def family_case(name: str) -> GgufCase:
    return next(c for c in FAMILY_CASES + GGUF_CASES if c.name == name)


# A GGUF of each family that llama.cpp's graph would compute otherwise than the file says, or
# cannot load: refused, naming the key or tensor.
REFUSED_FAMILY_FILES = [
    ("gptneox", {"extra": {}}, "missing metadata key 'gptneox.use_parallel_residual' (expected a bool)"),
    ("gptneox", {"layout": {"output": False}}, "missing tensor: expected output.weight (llama.cpp's gptneox reads"),
    ("exaone4", {"extra": {"sliding_window": 8}},
     "metadata 'exaone4.attention.sliding_window' is not supported: llama.cpp's exaone4 computes nothing with it"),
    ("cohere2", {"extra": {"logit_scale": 0.5, "sliding_window": 24, "rope_freq_base_swa": 20000.0}},
     "metadata 'cohere2.rope.freq_base_swa' = 20000 is not supported: llama.cpp's cohere2 rotates its sliding layers "
     "with cohere2.rope.freq_base, 50000"),
    ("command-r", {"layout": {"output": True}},
     "tensor 'output.weight' is not supported: llama.cpp's command-r ties the output to token_embd.weight"),
    ("stablelm", {"layout": {"qk_norm": "head"}}, "tensor 'blk.0.attn_q_norm.weight' is not supported"),
    ("olmo", {"layout": {"norm": "layer"}}, "tensor 'output_norm.weight' is not supported: olmo's norms have no weight"),
    ("falcon", {"layout": {"qkv_bias": True}}, "tensor 'blk.0.attn_qkv.bias[0:64]' is not supported"),
    ("ernie4_5", {"layout": {"o_bias": True}}, "tensor 'blk.0.attn_output.bias' is not supported"),
    ("starcoder2", {"layout": {"norm": "rms"}},
     "metadata 'starcoder2.attention.layer_norm_rms_epsilon' is not supported: llama.cpp's starcoder2 norms are "
     "LayerNorms, of 'starcoder2.attention.layer_norm_epsilon'"),
    ("phi2", {"rotary_dim": 5}, "phi2.rope.dimension_count = 5: expected an even count of channels up to the head's 16"),
    ("cohere2", {"extra": {"sliding_window": 24}}, "missing metadata key 'cohere2.logit_scale' (llama.cpp's cohere2 "
     "requires it)"),
    ("mistral3", {"yarn": None, "extra": {"rope_scaling_attn_factors": 1.25}},
     "metadata 'mistral3.rope.scaling.attn_factor' without rope.scaling.type yarn is not supported"),
    ("mistral3", {"extra": {"sliding_window": 8}},
     "metadata 'mistral3.attention.sliding_window' is not supported: llama.cpp's mistral3 computes nothing with it"),
    ("olmo3", {"extra": {"sliding_window": 24, "sliding_window_pattern": [True, False]}},
     "metadata 'olmo2.attention.sliding_window_pattern': expected 4 values (one per layer), found 2"),
    ("dots1", {"extra": {"expert_gating_func": gguf.ExpertGatingFuncType.SIGMOID, "expert_weights_scale": 1.5, "expert_shared_count": 2**30,
                         "leading_dense_block_count": 1}},
     "metadata 'dots1.expert_shared_count': expected shared experts whose width fits an int, found 34359738368 wide"),
    ("cohere2moe", {"extra": {"logit_scale": 0.5, "sliding_window": 24, "sliding_window_pattern": [False, True] * 2,
                              "leading_dense_block_count": 1, "expert_shared_count": 2**30}},
     "metadata 'cohere2moe.expert_shared_count': expected shared experts whose width fits an int, found "
     "42949672960 wide"),
]


@pytest.mark.parametrize("name,change,message", REFUSED_FAMILY_FILES,
                         ids=[f"{n}-{m.split(':')[0][:40]}" for n, _, m in REFUSED_FAMILY_FILES])
def test_a_family_file_llama_cpp_computes_otherwise_is_refused(name, change, message, tmp_path):
    case = family_case(name)
    layout = dataclasses.replace(case.layout, **change.get("layout", {}))
    changed = dataclasses.replace(case, layout=layout, **{k: v for k, v in change.items() if k != "layout"})
    model = tmp_path / f"{name}.gguf"
    write_gguf(changed, model)
    run = subprocess.run([TAPDIFF, "run", "--model", str(model), "--tokens", "1,2"], capture_output=True, text=True)
    assert run.returncode == 2, run.stdout + run.stderr
    assert message in run.stderr, run.stderr


def test_a_logit_scale_of_0_scales_nothing_as_in_llama_cpp(tmp_path):
    """Command R's graph in llama.cpp scales the logits by logit_scale where it is not 0: a file
    saying 0 gives llama.cpp's tokens unscaled, not logits of 0."""
    model = tmp_path / "command-r-unscaled.gguf"
    write_gguf(dataclasses.replace(family_case("command-r"), extra={"logit_scale": 0.0}), model)
    assert tapdiff_tokens(model, "--engine", "ref", "--dtype", "f64") == llama_cpp_tokens(model)


@pytest.mark.parametrize("original", [64, 2048])
def test_phi3_longrope_takes_the_factors_llama_cpps_context_picks(original, tmp_path):
    """Phi-3's LongRoPE in a GGUF: llama.cpp divides each pair's frequency by rope_factors_long when
    the context it runs with (n_ctx, 512 here) exceeds the original one (64), else by
    rope_factors_short (2048), and scales cos and sin by rope.scaling.attn_factor. Given that
    context (--context 512), tapdiff's greedy tokens equal llama.cpp's on the reference and on the
    Vulkan engine; the other factors give other tokens; without it, a run is refused naming the
    option (a choice of the run, not of the file)."""
    model = tmp_path / "phi3-longrope.gguf"
    write_gguf(dataclasses.replace(next(c for c in GGUF_CASES if c.arch == "phi3"), longrope=original), model)
    expected = llama_cpp_tokens(model, "512")
    assert tapdiff_tokens(model, "--context", "512", "--engine", "ref", "--dtype", "f64") == expected
    assert tapdiff_tokens(model, "--context", "512", "--engine", "ref", "--dtype", "f32") == expected
    assert tapdiff_tokens(model, "--context", "512", "--engine", "vulkan", "--chunk", "64") == expected
    if original == 2048:  # a context past 2048 takes the long factors, which llama.cpp did not
        assert tapdiff_tokens(model, "--context", "4096", "--engine", "ref", "--dtype", "f64") != expected
    plain = tmp_path / "phi3.gguf"  # a model that does not read the context: said so
    write_gguf(next(c for c in GGUF_CASES if c.arch == "phi3"), plain)
    run = subprocess.run([TAPDIFF, "run", "--model", str(plain), "--tokens", "1,2", "--context", "512"],
                         capture_output=True, text=True)
    assert run.returncode == 0 and "warning: --context 512 changes nothing for" in run.stderr, run.stderr
    run = subprocess.run([TAPDIFF, "run", "--model", str(model), "--tokens", "1,2"], capture_output=True, text=True)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "pick the long or the short factors by the context size it runs with (n_ctx, -c): give that size with " \
           "--context N" in run.stderr, run.stderr


def test_an_attention_factor_without_longrope_factors_is_refused(tmp_path):
    """llama.cpp scales cos and sin by rope.scaling.attn_factor with or without LongRoPE's tensors;
    tapdiff implements it with them only, and refuses it alone, naming it."""
    model = tmp_path / "phi3-attn-factor.gguf"
    case = next(c for c in GGUF_CASES if c.arch == "phi3")
    write_gguf(dataclasses.replace(case, extra={**case.extra, "rope_scaling_attn_factors": 1.25}), model)
    run = subprocess.run([TAPDIFF, "run", "--model", str(model), "--tokens", "1,2"], capture_output=True, text=True)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "phi3.rope.scaling.attn_factor = 1.25 without LongRoPE's factor tensors is not supported" in run.stderr, \
        run.stderr


@pytest.mark.parametrize("arch", ["granite", "gemma", "smollm3"])
def test_a_window_llama_cpp_does_not_apply_is_refused(arch, tmp_path):
    case = next(c for c in GGUF_CASES if c.arch == arch)
    model = tmp_path / f"{arch}.gguf"
    write_gguf(dataclasses.replace(case, extra={**case.extra, "sliding_window": 8}), model)
    run = subprocess.run([TAPDIFF, "run", "--model", str(model), "--tokens", "1,2"], capture_output=True, text=True)
    assert run.returncode == 2, run.stdout + run.stderr
    expected = f"metadata '{arch}.attention.sliding_window' is not supported: llama.cpp's {arch} computes nothing with it"
    assert expected in run.stderr, run.stderr



def llama_cpp_logits(model: Path, tokens: list[int], rows: int, kv_cache: str | None = None) -> np.ndarray:
    """llama.cpp's logits after each of the last `rows` tokens, the tokens evaluated as one sequence;
    `kv_cache`: its KV cache's ggml type ("F32") in place of its default F16."""
    script = node_script("llama_cpp_logits.mjs")
    run = subprocess.run(["node", str(script), str(model), ",".join(map(str, tokens)), str(rows),
                          *([kv_cache] if kv_cache else [])], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return np.array(json.loads(run.stdout.strip().splitlines()[-1]), dtype=np.float64)


EXACT = ("--engine", "ref", "--dtype", "f64")
EMULATIONS = (("--engine", "ref", "--dtype", "llama.cpp"), ("--engine", "vulkan", "--dtype", "llama.cpp"))


def tapdiff_logits(model: Path, tokens: list[int], rows: int, dump: Path, engine=EXACT) -> np.ndarray:
    run = subprocess.run([TAPDIFF, "run", "--model", str(model), "--tokens", ",".join(map(str, tokens)), *engine,
                          "--taps", "logits", "--dump", str(dump)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    with h5py.File(dump, "r") as f:
        (layer,) = f["taps"].keys()
        return f["taps"][layer]["logits"][-rows:].astype(np.float64)


# Every block type and llama.cpp's _M mixes, in a synth model whose matrices are whole super-blocks
# wide (dim 256, ffn 768). llama.cpp converts the activations before each product (to Q8_0 blocks
# for the 32-element types, Q8_K for the super-blocks: 8 bits per value) and caches K and V as f16,
# so its logits part from the exact answer by that rounding: an NMSE of 6e-4 to 2.6e-3 on these
# models (peaked attention, as trained models have, amplifies it), bounded here by 1e-2 (a misread
# block gives NMSE near 1). Its greedy tokens equal the
# exact answer's until a step whose top two tokens are closer than llama.cpp's own deviation
# there: a near tie, after which the two continuations differ.
BLOCK_STORAGE = ["q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "iq4_xs",
                 "mxfp4", "q4_k_m", "q5_k_m"]
LLAMA_CPP_LOGIT_NMSE = 1e-2


def assert_held_to_llama_cpps_rounding(model: Path, label: str, tmp_path: Path, emulated: bool = False,
                                       vulkan: bool = True) -> None:
    """The exact logits along llama.cpp's greedy tokens within LLAMA_CPP_LOGIT_NMSE of llama.cpp's,
    and the reference's and (where `vulkan`) the Vulkan engine's tokens equal to llama.cpp's up to a
    near tie; `emulated`: the llama.cpp emulation's logits nearer llama.cpp's than the exact ones, on
    both engines."""
    expected = llama_cpp_tokens(model)
    assert len(expected) == GENERATE
    rows = GENERATE + 1  # after the prompt's last token, then after each generated one but the last
    theirs = llama_cpp_logits(model, PROMPT + expected, rows)[:GENERATE]
    exact = tapdiff_logits(model, PROMPT + expected, rows, tmp_path / "exact.h5")[:GENERATE]
    error = nmse(exact, theirs)
    print(f"{label}: logits NMSE against llama.cpp {error:.2e}")
    assert error < LLAMA_CPP_LOGIT_NMSE
    for engine in EMULATIONS if emulated else ():
        ours = nmse(tapdiff_logits(model, PROMPT + expected, rows, tmp_path / "emulated.h5", engine)[:GENERATE], theirs)
        print(f"{label} {engine[1]} --dtype llama.cpp: logits NMSE against llama.cpp {ours:.2e}")
        assert ours < error
    engines = [["--engine", "ref", "--dtype", "f64"]] + ([["--engine", "vulkan", "--chunk", "64"]] if vulkan else [])
    for engine in engines:
        ours = tapdiff_tokens(model, *engine)
        step = next((s for s, (a, b) in enumerate(zip(ours, expected)) if a != b), None)
        if step is None:
            continue
        margin = exact[step, ours[step]] - exact[step, expected[step]]
        deviation = np.abs(exact[step] - theirs[step]).max()
        print(f"{label} {engine[1]}: parts from llama.cpp at step {step}, a near tie: margin {margin:.2e}, "
              f"llama.cpp's deviation there {deviation:.2e}")
        assert abs(margin) <= deviation, (step, margin, deviation)


@pytest.mark.parametrize("storage", BLOCK_STORAGE)
def test_block_types_follow_llama_cpp_to_its_rounding(storage, tmp_path):
    model = tmp_path / f"synth-{storage}.gguf"
    synth = subprocess.run([TAPDIFF, "synth", "--shape", "small", "--ffn", "768", "--dtype", storage, "-o", str(model)],
                           capture_output=True, text=True)
    assert synth.returncode == 0, synth.stderr
    assert_held_to_llama_cpps_rounding(model, storage, tmp_path)


@pytest.mark.parametrize("case", FAMILY_CASES, ids=lambda c: c.name)
def test_each_familys_q8_0_file_follows_llama_cpp_to_its_rounding(case, tmp_path):
    """Each family's GGUF with Q8_0 matrices, whose products llama.cpp computes on Q8_0 activations:
    the emulation, which rounds them so, 1.5 to 47 times nearer llama.cpp's logits than the exact."""
    model = tmp_path / f"{case.name}-q8_0.gguf"
    write_gguf(case, model, storage="q8_0")
    assert_held_to_llama_cpps_rounding(model, f"{case.name} q8_0", tmp_path, emulated=True)


@pytest.mark.parametrize("name", sorted(hf_models.GEMMA4_GGUF_CASES))
def test_gemma4_gguf_equals_transformers_and_llama_cpps_tokens(name, tmp_path):
    """The GGUF llama.cpp's converter makes of a Gemma 4 model (per-layer inputs and shared caches,
    or the mixture beside the MLP with the full layers' values their keys): tapdiff's exact logits
    on it equal transformers' float64 forward of the folder it came from, its greedy tokens (f64,
    f32, and the Vulkan engine's f32) llama.cpp's, and its logits along them llama.cpp's to its
    rounding. Gemma 4's attention is unscaled over normed q and k (scores of a few units), so
    llama.cpp's f16 KV cache moves its logits by an NMSE of 1e-5 to 1e-4 (and a routing near tie by
    more): the logits are held to llama.cpp's with an F32 cache, its f16 ones printed."""
    folder, model = tmp_path / "hf", tmp_path / f"{name}.gguf"
    hf_models.make_model(hf_models.GEMMA4_GGUF_CASES[name], folder, "5.x")
    write_gemma4(folder, model)
    ours = tapdiff_logits(model, PROMPT, len(PROMPT), tmp_path / "all.h5")
    error = nmse(ours, transformers_logits(folder, PROMPT))
    print(f"{name}: logits NMSE against transformers float64 {error:.2e}")
    assert error < 1e-10
    expected = llama_cpp_tokens(model)
    assert len(expected) == GENERATE
    assert tapdiff_tokens(model, "--engine", "ref", "--dtype", "f64") == expected
    assert tapdiff_tokens(model, "--engine", "ref", "--dtype", "f32") == expected
    assert tapdiff_tokens(model, "--engine", "vulkan", "--dtype", "f32") == expected
    rows = GENERATE + 1
    exact = tapdiff_logits(model, PROMPT + expected, rows, tmp_path / "exact.h5")[:GENERATE]
    print(f"{name}: logits NMSE against llama.cpp (F16 KV cache) "
          f"{nmse(exact, llama_cpp_logits(model, PROMPT + expected, rows)[:GENERATE]):.2e}")
    error = nmse(exact, llama_cpp_logits(model, PROMPT + expected, rows, "F32")[:GENERATE])
    print(f"{name}: logits NMSE against llama.cpp (F32 KV cache) {error:.2e}")
    assert error < F32_LOGIT_NMSE


GEMMA4_REFUSALS = [
    # transformers shares layer 1's cache with layer 2 (the last sliding layer before it), llama.cpp
    # layer 0's (the second-last with a cache), a full layer's
    ("gemma4-e2b", {"layer_types": ["full_attention", "sliding_attention", "sliding_attention", "full_attention"]},
     "layer 2 (sliding) would read layer 0's"),
    ("gemma4-moe", {"attention_bias": True}, "tensor 'blk.0.attn_q.bias' is not supported: llama.cpp's gemma4 adds no "
                                             "biases"),
]


@pytest.mark.parametrize("name,change,message", GEMMA4_REFUSALS, ids=["kv-source-of-another-kind", "biases"])
def test_a_gemma4_gguf_llama_cpp_computes_otherwise_is_refused(name, change, message, tmp_path):
    """A Gemma 4 GGUF whose shared layers llama.cpp would give another kind of layer's cache, or
    with biases (which llama.cpp's gemma4 graph never adds), is refused by name."""
    folder, model = tmp_path / "hf", tmp_path / f"{name}.gguf"
    case = hf_models.GEMMA4_GGUF_CASES[name]
    hf_models.make_model(dataclasses.replace(case, extra={**case.extra, **change}), folder, "5.x")
    write_gemma4(folder, model)
    run = subprocess.run([TAPDIFF, "run", "--model", str(model), "--tokens", "1,2"], capture_output=True, text=True)
    assert run.returncode == 2 and message in run.stderr, run.stderr
