"""tapdiff's f64 reference against transformers' own float64 forward, on tiny random models that
transformers makes and saves (tests/conformance/hf_models.py), loaded back with from_pretrained as
users load them. Every layer output, the final norm and the logits must agree to NMSE <= 1e-10;
in a mixture of experts also the router's logits and weights, and its chosen experts exactly.

transformers computes RoPE's cos and sin in float32 even in a float64 model (its rotary embedding
casts inv_freq and positions with .float()), so the floor is not 0: about 1e-14 on these models
at the positions used here (printed by -s).
"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch
import transformers

from hf_models import CASES, load_float64, make_model, to_mxfp4_checkpoint
from tapdiff.hf_recorder import FINAL_NORM, LAYERS, decoder_of

TAPDIFF = os.environ.get("TAPDIFF_BINARY", str(Path(__file__).resolve().parents[2] / "build" / "tapdiff"))
NMSE_BOUND = 1e-10
TOKENS = [int(t) for t in np.random.default_rng(7).integers(3, 160, size=40)]


def nmse(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.sum((a - b) ** 2) / max(np.sum(a**2), 1e-300))


def transformers_forward(folder: Path) -> dict[str, np.ndarray]:
    """The float64 forward's layer outputs, final norm and logits, keyed as tapdiff's dump names them."""
    model = load_float64(folder)
    out: dict[str, np.ndarray] = {}

    def keep(name):
        def hook(_module, _inputs, output):
            value = output[0] if isinstance(output, tuple) else output
            out[name] = value[0].detach().numpy()
        return hook

    def keep_routing(layer, logits_first=True):
        """A router's (logits, weights, ids) as tapdiff's ops: each row's chosen ids ascending (Gemma
        4's router returns the probabilities first: its logits are not kept)."""
        def hook(_module, _inputs, output):
            logits, weights, ids = (t.detach() for t in output)
            order = torch.argsort(ids, dim=-1)
            if logits_first:
                out[f"{layer}/moe_router"] = logits.numpy()
            out[f"{layer}/moe_ids"] = torch.gather(ids, -1, order).numpy().astype(np.float64)
            out[f"{layer}/moe_weights"] = torch.gather(weights, -1, order).double().numpy()
        return hook

    def keep_top_k_routing(layer, k):
        """Llama 4's router's (scores, logits): the top k logits' ids ascending, their sigmoids the weights."""
        def hook(_module, _inputs, output):
            scores, logits = (t.detach() for t in output)
            ids = torch.sort(torch.topk(logits, k, dim=-1).indices, dim=-1).values
            out[f"{layer}/moe_router"] = logits.numpy()
            out[f"{layer}/moe_ids"] = ids.numpy().astype(np.float64)
            out[f"{layer}/moe_weights"] = torch.gather(scores, -1, ids).double().numpy()
        return hook

    def keep_kept_positions(layer, top_k):
        """DeepSeek-V3.2's indexer's top-k positions per query as idx_ids: those at or before the
        query's own (its top-k takes masked ones while fewer exist), ascending, -1 after them."""
        def hook(_module, _inputs, picked):
            rows = []
            for t, row in enumerate(picked[0].tolist()):
                kept = sorted(p for p in row if p <= t)
                rows.append(kept + [-1] * (top_k - len(kept)))
            out[f"{layer}/idx_ids"] = np.array(rows, dtype=np.float64)
        return hook

    decoder = decoder_of(model)
    layers = next(getattr(decoder, n) for n in LAYERS if hasattr(decoder, n))
    # A layer's output: its per-layer input's residual where it ends with one (Gemma 4), else the FFN's.
    handles = [layer.register_forward_hook(
        keep(f"{i}/{'ple_residual' if hasattr(layer, 'per_layer_input_gate') else 'ffn_residual'}"))
        for i, layer in enumerate(layers)]
    for i, layer in enumerate(layers):
        moe = getattr(layer, "mlp", None) if hasattr(getattr(layer, "mlp", None), "experts") else \
            getattr(layer, "block_sparse_moe", None)
        if moe is not None:  # the router: gate, or Granite-MoE's router
            router = moe.gate if hasattr(moe, "gate") else moe.router
            handles.append(router.register_forward_hook(keep_routing(i)))
        if hasattr(layer, "router") and hasattr(layer, "experts"):  # Gemma 4's, beside the MLP
            handles.append(layer.router.register_forward_hook(keep_routing(i, logits_first=False)))
            handles.append(layer.router.proj.register_forward_hook(  # on the flattened rows
                lambda _m, _in, logits, i=i: out.__setitem__(f"{i}/moe_router", logits.detach().numpy())))
        if hasattr(getattr(layer, "self_attn", None), "indexer"):  # DeepSeek-V3.2's
            indexer = layer.self_attn.indexer
            handles.append(indexer.register_forward_hook(keep_kept_positions(i, indexer.index_topk)))
        if hasattr(getattr(layer, "feed_forward", None), "router"):  # Llama 4's
            router = layer.feed_forward.router
            handles.append(router.register_forward_hook(keep_top_k_routing(i, router.top_k)))
    n_layers = len(layers)
    final_norm = next(getattr(decoder, n) for n in FINAL_NORM if hasattr(decoder, n))
    handles.append(final_norm.register_forward_hook(keep(f"{n_layers}/final_norm")))
    with torch.no_grad():
        logits = model(torch.tensor([TOKENS])).logits
    for h in handles:
        h.remove()
    out[f"{n_layers}/logits"] = logits[0].numpy()
    return out


def tapdiff_dump(folder: Path, dump: Path) -> dict[str, np.ndarray]:
    tokens = ",".join(str(t) for t in TOKENS)
    run = subprocess.run([TAPDIFF, "run", "--model", str(folder), "--engine", "ref", "--dtype", "f64",
                          "--tokens", tokens, "--dump", str(dump), "--dump-dtype", "f64"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    with h5py.File(dump, "r") as f:
        return {f"{layer}/{op}": f["taps"][layer][op][()] for layer in f["taps"] for op in f["taps"][layer]}


@pytest.mark.parametrize("case, style", [(c, s) for c in CASES for s in ("5.x", "4.x") if s == "5.x" or not c.since_5x],
                         ids=lambda v: v.name if hasattr(v, "name") else v)
def test_reference_matches_transformers_float64(case, style, tmp_path):
    folder = tmp_path / "model"
    make_model(case, folder, style)
    assert_reference_matches(folder, tmp_path / "ref.h5", f"{case.name} ({style})")


def assert_reference_matches(folder: Path, dump: Path, label: str) -> None:
    """tapdiff's f64 reference equals transformers' float64 forward of the folder at every tensor."""
    expected = transformers_forward(folder)
    got = tapdiff_dump(folder, dump)
    worst = 0.0
    for name, want in expected.items():
        assert name in got, f"tapdiff's dump lacks {name}"
        assert got[name].shape == want.shape, name
        if name.endswith(("/moe_ids", "/idx_ids")):  # expert ids, kept positions: exactly
            differ = np.argwhere(want != got[name])
            assert differ.size == 0, f"{label} {name}: other choices at (row, slot) {differ[:5].tolist()}"
            continue
        error = nmse(want, got[name])
        worst = max(worst, error)
        assert error <= NMSE_BOUND, f"{label} {name}: NMSE {error:.3g}"
    print(f"{label}: worst NMSE {worst:.3g} over {len(expected)} tensors")


@pytest.mark.parametrize("style", ["5.x", "4.x"])
def test_minimax_m2_as_released_with_rotary_dim_matches_transformers_float64(style, tmp_path):
    """Released MiniMax-M2 configs state rotary_dim (and shared_intermediate_size 0) where
    transformers writes partial_rotary_factor: transformers takes rotary_dim / head_dim, and so does
    tapdiff."""
    folder = tmp_path / "model"
    make_model(next(c for c in CASES if c.name == "minimax-m2"), folder, style)
    config = json.loads((folder / "config.json").read_text())
    factor = config.pop("partial_rotary_factor", None) or config["rope_parameters"].pop("partial_rotary_factor")
    config.update(rotary_dim=int(factor * config["head_dim"]), shared_intermediate_size=0)
    (folder / "config.json").write_text(json.dumps(config))
    assert_reference_matches(folder, tmp_path / "ref.h5", f"minimax-m2 with rotary_dim ({style})")


def test_exaone4_as_released_with_a_pattern_of_letters_matches_transformers_float64(tmp_path):
    """Released EXAONE 4 configs write sliding_window_pattern as letters ("LLLG") beside layer_types."""
    folder = tmp_path / "model"
    make_model(next(c for c in CASES if c.name == "exaone4"), folder, "5.x")
    config = json.loads((folder / "config.json").read_text())
    assert config["layer_types"] == ["sliding_attention", "full_attention", "sliding_attention"]
    config["sliding_window_pattern"] = "LG"
    (folder / "config.json").write_text(json.dumps(config))
    assert_reference_matches(folder, tmp_path / "ref.h5", "exaone4 with sliding_window_pattern LG")


def test_gpt_oss_with_its_experts_in_mxfp4_as_released_matches_transformers_float64(tmp_path):
    """gpt-oss's released checkpoints hold the experts in MXFP4 (_blocks and _scales,
    quantization_config mxfp4): transformers dequantizes them on a CPU, tapdiff reads the blocks as
    they are; both engines run them, and a projection missing its half or another quant_method is
    refused by name."""
    folder = tmp_path / "model"
    make_model(next(c for c in CASES if c.name == "gpt-oss"), folder, "5.x")
    float_logits = tapdiff_dump(folder, tmp_path / "float.h5")["3/logits"]
    to_mxfp4_checkpoint(folder)
    assert_reference_matches(folder, tmp_path / "ref.h5", "gpt-oss with MXFP4 experts")
    quantized = tapdiff_dump(folder, tmp_path / "mxfp4.h5")["3/logits"]
    assert nmse(float_logits, quantized) > 1e-6, "the MXFP4 experts compute what the float ones did"
    tokens = ",".join(str(t) for t in TOKENS)
    run = subprocess.run([TAPDIFF, "bisect", "--model", str(folder), "--tokens", tokens, "--chunk", "16",
                          "--generate", "4", "--dtype", "f32"], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr

    from safetensors.numpy import load_file, save_file
    tensors = load_file(folder / "model.safetensors")
    scales, blocks = "model.layers.1.mlp.experts.down_proj_scales", "model.layers.1.mlp.experts.down_proj_blocks"
    for edit, message in [
            (lambda t: t.pop(scales), f"'{blocks}': expected its _scales beside it (MXFP4 needs both), found none"),
            (lambda t: t.update({scales: t[scales].astype(np.float32)}),
             f"'{scales}': expected dtype U8 (MXFP4's packed values or exponents), found dtype F32"),
            (lambda t: t.update({blocks: t[blocks][..., :8]}),
             f"'{blocks}': expected shape [6, 64, 3, 16] for this config, found shape [6, 64, 3, 8]")]:
        edited = dict(tensors)
        edit(edited)
        save_file(edited, folder / "model.safetensors")
        run = subprocess.run([TAPDIFF, "run", "--model", str(folder), "--tokens", "1,2,3", "--engine", "ref"],
                             capture_output=True, text=True)
        assert run.returncode == 2 and message in run.stderr, run.stdout + run.stderr
    config = json.loads((folder / "config.json").read_text())
    config["quantization_config"]["quant_method"] = "fp8"
    (folder / "config.json").write_text(json.dumps(config))
    run = subprocess.run([TAPDIFF, "model-info", "--model", str(folder)], capture_output=True, text=True)
    assert run.returncode == 2 and "quant_method" in run.stderr and "fp8" in run.stderr, run.stdout + run.stderr


def test_config_keys_transformers_writes_are_all_classified(tmp_path):
    """Every key of every case's saved config is read or known harmless: loading never refuses."""
    for case in CASES:
        folder = tmp_path / case.name
        make_model(case, folder, "5.x")
        keys = json.loads((folder / "config.json").read_text()).keys()
        run = subprocess.run([TAPDIFF, "run", "--model", str(folder), "--tokens", "1,2"], capture_output=True,
                             text=True)
        assert run.returncode == 0, f"{case.name} {sorted(keys)}: {run.stderr}"


# The families the llama.cpp emulation does not round (it has no llama.cpp graph of them).
NO_LLAMA_CPP_EMULATION = {"deepseek_v3", "deepseek_v2", "gemma4_text"}


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_vulkan_engine_matches_the_reference(case, dtype, tmp_path):
    """No false positive: the Vulkan engine (lavapipe where there is no GPU) bisects to "match"."""
    folder = tmp_path / "model"
    make_model(case, folder, "5.x")
    tokens = ",".join(str(t) for t in TOKENS)
    run = subprocess.run([TAPDIFF, "bisect", "--model", str(folder), "--tokens", tokens, "--chunk", "16",
                          "--generate", "4", "--dtype", dtype], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_a_vulkan_dump_names_the_kernels_of_the_ops_it_composes(tmp_path):
    """Gemma 4's per-layer input runs a product, a norm and layer_input.comp, its scaled layer output
    an add and a scale, and the add before the per-layer input no norm: the dump says so, not the
    kernels of the ops' classes (embed-gather, add+rms_norm-tree)."""
    folder, dump = tmp_path / "model", tmp_path / "run.h5"
    make_model(next(c for c in CASES if c.name == "gemma4-layer-inputs"), folder, "5.x")
    run = subprocess.run([TAPDIFF, "run", "--model", str(folder), "--tokens", "1,2,3", "--chunk", "2", "--engine",
                          "vulkan", "--dump", str(dump)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    with h5py.File(dump) as f:
        kernels = json.loads(f.attrs["kernels"])
        assert f["taps/1/ple_input"].attrs["kernel"] == kernels["ple_input"]
    assert kernels["ple_input"] == ("matmul-tiled-64x64/f32+rms_norm-tree+layer-input/f32, "
                                    "matvec-subgroup/f32+rms_norm-tree+layer-input/f32"), kernels
    assert (kernels["ple_residual"], kernels["ffn_residual"]) == ("add+scale_softcap", "add"), kernels


@pytest.mark.parametrize("case", [c for c in CASES if c.model_type in NO_LLAMA_CPP_EMULATION], ids=lambda c: c.name)
def test_a_family_the_llama_cpp_emulation_lacks_is_refused(case, tmp_path):
    folder = tmp_path / "model"
    make_model(case, folder, "5.x")
    run = subprocess.run([TAPDIFF, "run", "--model", str(folder), "--tokens", "1,2,3", "--engine", "ref", "--dtype",
                          "llama.cpp"], capture_output=True, text=True)
    assert run.returncode == 2 and "the llama.cpp emulation does not round" in run.stderr, run.stdout + run.stderr


def test_an_mla_engines_wrong_up_projection_is_named_with_or_without_the_expanded_keys(tmp_path):
    """An engine whose kv_b_proj is wrong in head 0's key rows of layer 1: its dump with k_proj and
    v_proj names 1/k_proj; without them (the absorbed form never expands keys and values), the
    divergence shows at 1/attn, in head 0, and the report names the taps that would decide it."""
    from safetensors.torch import load_file, save_file
    good, bad = tmp_path / "good", tmp_path / "bad"
    make_model(next(c for c in CASES if c.name == "deepseek-v3"), good, "5.x")
    make_model(next(c for c in CASES if c.name == "deepseek-v3"), bad, "5.x")
    weights = load_file(bad / "model.safetensors")
    weights["model.layers.1.self_attn.kv_b_proj.weight"][3:5] *= 1.5
    save_file(weights, bad / "model.safetensors", metadata={"format": "pt"})
    tokens = ",".join(str(t) for t in TOKENS[:12])
    run = [TAPDIFF, "run", "--tokens", tokens, "--chunk", "4", "--engine", "ref"]
    assert subprocess.run([*run, "--model", str(good), "--dtype", "f64", "--dump", str(tmp_path / "a.h5")],
                          capture_output=True).returncode == 0
    for taps, expected in [("all", ["culprit  layer 1 k_proj (gemm)"]),
                           ("^(?!.*/(k_proj|v_proj)$).*", ["diverged at layer 1 attn", "head 0",
                                                             "tapping 0/k_proj, 0/v_proj, 1/k_proj, 1/v_proj"])]:
        dump = tmp_path / "b.h5"
        made = subprocess.run([*run, "--model", str(bad), "--dtype", "f32", "--dump", str(dump), "--taps", taps],
                              capture_output=True, text=True)
        assert made.returncode == 0, made.stderr
        with h5py.File(tmp_path / "a.h5", "r") as a, h5py.File(dump, "r+") as b:  # B as a dump of the good model
            b.attrs["model_sha256"] = a.attrs["model_sha256"]
        out = subprocess.run([TAPDIFF, "compare", str(tmp_path / "a.h5"), str(dump), "--model", str(good)],
                             capture_output=True, text=True)
        assert out.returncode == 1, out.stdout + out.stderr
        for text in expected:
            assert text in out.stdout, out.stdout


FAMILY_FAULTS = [  # (case, --inject, the culprit bisect must name)
    ("granite", "gqa-head-map@1", "1/attn"),
    ("olmo2", "rope-base@1", "1/rope_q"),
    ("gemma", "attn-scale@2", "2/attn"),
    ("llama-gelu-biases", "mask-kv-offset@0", "0/attn"),
    ("gemma2", "gqa-head-map@0", "0/attn"),
    ("phi3-longrope-partial", "rope-base@2", "2/rope_q"),
    ("smollm3", "rope-base@2", "2/rope_q"),
    ("gemma3", "rope-base@0", "0/rope_q"),
    ("gemma3-pattern-capped", "gqa-head-map@1", "1/attn"),
    ("mixtral", "expert-index@0", "0/moe_out"),
    ("mixtral", "weights-unnormalised@1", "1/moe_weights"),
    ("qwen3-moe", "topk-off-by-one@1", "1/moe_ids"),
    ("qwen3-moe", "router-softmax-axis@2", "2/moe_weights"),
    ("qwen3-moe-dense-layer", "expert-index@2", "2/moe_out"),
    ("starcoder2", "attn-scale@2", "2/attn"),
    ("nemotron", "rope-base@0", "0/rope_q"),
    ("glm4", "rope-base@1", "1/rope_q"),
    ("stablelm-parallel", "gqa-head-map@1", "1/attn"),
    ("cohere2", "mask-kv-offset@0", "0/attn"),
    ("olmoe", "weights-unnormalised@2", "2/moe_weights"),
    ("olmoe-unnormalised", "topk-off-by-one@0", "0/moe_ids"),
    ("qwen2-moe", "shared-gate-dropped@1", "1/moe_shared"),
    ("qwen2-moe-sparse-step", "expert-index@1", "1/moe_out"),
    ("granitemoe", "weights-unnormalised@1", "1/moe_weights"),
    ("granitemoeshared", "topk-off-by-one@2", "2/moe_ids"),
    ("glm4-moe", "selection-bias-sign@1", "1/moe_scores"),
    ("glm4-moe", "group-limit-ignored@2", "2/moe_ids"),
    ("dots1", "router-softmax-axis@2", "2/moe_weights"),
    ("minimax-m2", "selection-bias-sign@0", "0/moe_scores"),
    ("ernie4_5-moe", "selection-bias-sign@2", "2/moe_scores"),
    ("hunyuan-moe", "expert-index@1", "1/moe_out"),
    ("cohere2-moe", "weights-unnormalised@2", "2/moe_weights"),
    ("cohere2-moe-sigmoid", "topk-off-by-one@2", "2/moe_ids"),
    ("phimoe", "router-softmax-axis@1", "1/moe_weights"),
    ("gpt-oss", "sinks-dropped@1", "1/attn"),
    ("gpt-oss", "swiglu-unclamped@2", "2/moe_out"),
    ("gpt-oss-full-first", "expert-index@0", "0/moe_out"),
    ("llama4", "chunk-boundary-off-by-one@2", "2/attn"),
    ("llama4", "rope-off-by-one@1", "1/rope_q"),  # layer 1 has no RoPE: its q's temperature a position late
    ("llama4", "expert-index@0", "0/moe_out"),
    ("llama4-plain", "expert-index@1", "1/moe_out"),
    ("gemma4", "attn-scale@1", "1/attn"),  # a full layer's: wider heads, its values its keys
    ("gemma4-layer-inputs", "rope-base@1", "1/rope_q"),  # proportional RoPE over a quarter of a wide head
    ("gemma4-layer-inputs", "kv-stale-chunk@1", "1/attn"),  # the cache layer 3 shares: layer 1 reads it first
    ("gemma4-moe", "topk-off-by-one@2", "2/moe_ids"),  # the mixture beside the MLP
    ("gemma4-moe", "expert-index@0", "0/moe_out"),
    ("deepseek-v3", "mla-rope-channels@1", "1/rope_q"),  # the RoPE part's channels, after the no-RoPE ones
    ("deepseek-v3", "mscale-missing@0", "0/attn"),
    ("deepseek-v3", "selection-bias-sign@1", "1/moe_scores"),
    ("deepseek-v3", "group-limit-ignored@2", "2/moe_ids"),
    ("deepseek-v3-plain-q", "mla-rope-channels@0", "0/rope_q"),  # rotate-half pairs
    ("deepseek-v2", "mscale-missing@1", "1/attn"),
    ("deepseek-v2-groups", "kv-stale-chunk@1", "1/attn"),
    ("deepseek-v32", "indexer-relu-dropped@1", "1/idx_scores"),  # its scores' ReLU left out
    ("deepseek-v32-mlp-types", "mla-rope-channels@2", "2/rope_q"),
]


@pytest.mark.parametrize("name, fault, culprit", FAMILY_FAULTS)
def test_vulkan_faults_are_localised_in_each_family(name, fault, culprit, tmp_path):
    """The fault catalogue on the blocks the new families add: bisect names the planted op."""
    case = next(c for c in CASES if c.name == name)
    folder = tmp_path / "model"
    make_model(case, folder, "5.x")
    report = tmp_path / "bisect.json"
    tokens = ",".join(str(t) for t in TOKENS)
    run = subprocess.run([TAPDIFF, "bisect", "--model", str(folder), "--tokens", tokens, "--chunk", "16",
                          "--inject", fault, "--json", str(report)], capture_output=True, text=True)
    assert run.returncode == 1, run.stdout + run.stderr
    got = json.loads(report.read_text())["culprit"]
    assert f"{got['layer']}/{got['op']}" == culprit, run.stdout


@pytest.mark.parametrize("name, fault, message", [
    ("olmo2", "rmsnorm-eps", "planted in attn_norm, ffn_norm, and this model computes none of them"),
    ("smollm3", "rope-base@1", "planted in rope_q, rope_k, and this model computes none of them where it is planted"),
    ("gemma", "silu-approx", "planted in silu, and this model's activation is gelu_tanh"),
    ("qwen3-moe-dense-layer", "expert-index@1", "planted in moe_out, and this model computes none of them where"),
    ("qwen3-moe-dense-layer", "weights-unnormalised", "this model does not renormalise them"),
    ("llama-default", "topk-off-by-one", "planted in moe_ids, and this model computes none of them"),
    ("deepseek-v3", "indexer-relu-dropped", "planted in idx_scores, idx_ids, and this model computes none of them"),
    ("qwen3-moe", "shared-gate-dropped", "planted in moe_shared, and this model computes none of them"),
    ("granitemoeshared", "shared-gate-dropped", "this model's shared expert has none"),
    ("glm4-moe", "weights-unnormalised@0", "planted in moe_weights, and this model computes none of them where"),
    ("qwen3-moe", "group-limit-ignored", "this model's router has no groups"),
    ("arcee", "silu-approx", "planted in silu, and this model's activation is relu2"),
    ("qwen3-moe", "sinks-dropped", "this model's attention has none"),
    ("mixtral", "swiglu-unclamped", "planted in the clamped SwiGLU, and this model's activation is silu"),
    ("gpt-oss", "silu-approx", "planted in ffn_act, and this model computes none of them"),
    ("llama4-plain", "chunk-boundary-off-by-one", "this model has no chunked layers"),
    ("gemma4-layer-inputs", "kv-stale-chunk@3", "this model's layers attend over an earlier layer's cache"),
    ("gemma4", "mla-rope-channels", "this model's attention is not latent"),
    ("deepseek-v3-plain-q", "mscale-missing", "this model's scale has none"),
])
def test_a_fault_the_model_would_never_run_is_refused(name, fault, message, tmp_path):
    case = next(c for c in CASES if c.name == name)
    folder = tmp_path / "model"
    make_model(case, folder, "5.x")
    run = subprocess.run([TAPDIFF, "bisect", "--model", str(folder), "--tokens", "1,2,3", "--inject", fault],
                         capture_output=True, text=True)
    assert run.returncode == 2, run.stdout + run.stderr
    assert message in run.stderr, run.stderr


UNIMPLEMENTED = [  # (case, key, value, the key the refusal names): a value whose meaning tapdiff does not implement
    ("starcoder2", "hidden_act", "gelu_fast", "hidden_act"),
    ("arcee", "hidden_act", "gelu_fast", "hidden_act"),
    ("nemotron", "hidden_act", "gelu_10", "hidden_act"),
    ("seed-oss", "rope_parameters", {"rope_type": "mrope", "rope_theta": 10000.0}, "rope_type"),
    ("ernie4_5", "rope_parameters", {"rope_type": "default", "rope_theta": 1e4, "mrope_section": [2, 2, 4]},
     "mrope_section"),
    ("helium", "head_dim", 32, "head_dim"),
    ("ministral", "layer_types", ["sliding_attention", "chunked_attention", "full_attention"], "layer_types"),
    ("ministral3", "layer_types", ["sliding_attention"] * 3, "layer_types"),  # transformers ignores it, warning
    ("glm", "hidden_act", "swiglu", "hidden_act"),
    ("glm4", "mlp_bias", True, "mlp_bias"),
    ("stablelm", "qk_layernorm", True, "qk_layernorm"),
    ("phi", "qk_layernorm", True, "qk_layernorm"),
    ("cohere", "use_qk_norm", True, "use_qk_norm"),
    ("cohere2", "attn_logit_softcapping", 30.0, "attn_logit_softcapping"),
    ("olmo3", "attention_out_bias", True, "attention_out_bias"),
    ("exaone4", "sliding_window_pattern", "LLXG", "sliding_window_pattern"),
    ("hunyuan", "rope_parameters", {"rope_type": "dynamic", "rope_theta": 1e4, "factor": 1.0, "alpha": -2.0},
     "alpha"),
    ("hunyuan-moe", "num_shared_expert", [2, 2, 2], "num_shared_expert"),
    ("hunyuan-moe", "moe_topk", [2, 3, 2], "moe_topk"),
    ("hunyuan-moe", "use_cla", True, "use_cla"),
    ("cohere2-moe", "shared_expert_combination_strategy", "max", "shared_expert_combination_strategy"),
    ("phimoe", "num_experts_per_tok", 3, "num_experts_per_tok"),
    ("phimoe", "rope_parameters", {"rope_type": "longrope", "rope_theta": 1e4, "short_factor": [1.0] * 4,
                                   "long_factor": [2.0] * 4, "short_mscale": 1.2, "long_mscale": 1.3,
                                   "original_max_position_embeddings": 16}, "long_mscale"),
    ("cohere2-moe", "mlp_layer_types", ["dense", "moe", "sparse"], "mlp_layer_types"),
    ("gpt-neox", "rope_theta", 20000.0, "rope_theta"),  # transformers ignores it for GPT-NeoX (rotary_emb_base)
    ("gpt2", "scale_attn_by_inverse_layer_idx", True, "scale_attn_by_inverse_layer_idx"),
    ("opt", "do_layer_norm_before", False, "do_layer_norm_before"),
    ("falcon-multi-query", "alibi", True, "alibi"),
    ("olmo", "layer_norm_eps", 1e-6, "layer_norm_eps"),  # OLMo's norms take 1e-5 whatever the config says
    ("apertus", "mlp_bias", True, "mlp_bias"),
    ("apertus", "post_norm", True, "post_norm"),
    ("apertus", "qk_norm", False, "qk_norm"),
    ("olmoe", "clip_qkv", 0.5, "clip_qkv"),  # OlmoeAttention clamps after the q/k norms
    ("qwen2-moe", "shared_expert_intermediate_size", 0, "shared_expert_intermediate_size"),
    ("ernie4_5-moe", "use_bias", True, "use_bias"),
    ("ernie4_5-moe", "moe_num_shared_experts", -1, "moe_num_shared_experts"),
    ("dots1", "n_shared_experts", 2**30, "n_shared_experts"),  # their width would not fit an int
    ("cohere2-moe", "num_shared_experts", 2**30, "num_shared_experts"),
    ("minimax-m2", "rotary_dim", 12, "rotary_dim"),  # partial_rotary_factor 0.5 of head_dim 16 rotates 8
    ("minimax-m2", "shared_intermediate_size", 64, "shared_intermediate_size"),
    ("gpt-oss", "swiglu_limit", None, "swiglu_limit"),  # null: transformers' config refuses it too
    ("gpt-oss", "swiglu_alpha", None, "swiglu_alpha"),
    ("llama4", "layer_types", ["chunked_attention", "sliding_attention", "full_attention"], "layer_types"),
    ("llama4-plain", "layer_types", ["chunked_attention"] * 3, "attention_chunk_size"),  # chunks of no size
    ("llama4", "floor_scale", 0, "floor_scale"),
    ("llama4", "moe_layers", [0, 3], "moe_layers"),
    ("deepseek-v3", "num_key_value_heads", 2, "num_key_value_heads"),  # transformers' attention breaks
    ("deepseek-v3", "q_lora_rank", 0, "q_lora_rank"),
    ("deepseek-v3", "kv_lora_rank", 0, "kv_lora_rank"),
    ("deepseek-v3", "partial_rotary_factor", 0.5, "partial_rotary_factor"),
    ("deepseek-v2", "topk_method", "noaux_tc", "topk_method"),  # transformers' V2 router has no such branch
    ("deepseek-v2", "norm_topk_prob", True, "norm_topk_prob"),  # transformers' router never renormalises
    ("deepseek-v2", "mlp_bias", True, "mlp_bias"),
    ("deepseek-v32", "q_lora_rank", None, "q_lora_rank"),  # the indexer reads q's low-rank input
    ("deepseek-v32", "rope_interleave", False, "rope_interleave"),  # its attention turns pairs whatever it says
    ("deepseek-v32", "layer_types", ["indexed_attention", "full_attention", "indexed_attention"], "layer_types"),
    ("deepseek-v32", "index_topk", 0, "index_topk"),
    ("deepseek-v32", "mlp_bias", True, "mlp_bias"),
    ("deepseek-v32-mlp-types", "mlp_layer_types", ["sparse", "moe", "dense"], "mlp_layer_types"),
    ("gemma4", "num_kv_shared_layers", 3, "num_kv_shared_layers"),  # every layer: none keeps a cache
    ("gemma4-moe", "top_k_experts", None, "top_k_experts"),  # the MoE block's: required where it is on
    ("gemma4", "use_bidirectional_attention", "all", "use_bidirectional_attention"),
    ("gemma4", "per_layer_config", {"1": {"head_dim": 32, "intermediate_size": 48}}, "intermediate_size"),
    ("gemma4", "per_layer_config", {"1": {"head_dim": 8}}, "per_layer_config"),  # the two full layers differ
    ("gemma4-layer-inputs", "rope_parameters", None, "rope_parameters"),  # the config class's default is proportional
]


@pytest.mark.parametrize("name, key, value, named", UNIMPLEMENTED, ids=[f"{c}-{k}" for c, k, _, _ in UNIMPLEMENTED])
def test_a_config_value_tapdiff_does_not_implement_is_refused_by_name(name, key, value, named, tmp_path):
    folder = tmp_path / "model"
    make_model(next(c for c in CASES if c.name == name), folder, "5.x")
    config = json.loads((folder / "config.json").read_text())
    config[key] = value
    (folder / "config.json").write_text(json.dumps(config))
    run = subprocess.run([TAPDIFF, "run", "--model", str(folder), "--tokens", "1,2"], capture_output=True, text=True)
    assert run.returncode == 2, run.stdout + run.stderr
    assert f"config.json: " in run.stderr and f"'{named}'" in run.stderr, run.stderr


@pytest.mark.parametrize("engine", ["ref", "vulkan"])
def test_a_position_past_the_learned_ones_is_refused(engine, tmp_path):
    """GPT-2 has a row of wpe per position up to n_positions (64 here): the 65th token has none."""
    folder = tmp_path / "model"
    make_model(next(c for c in CASES if c.name == "gpt2"), folder, "5.x")
    tokens = ",".join(str(3 + t % 150) for t in range(65))
    run = subprocess.run([TAPDIFF, "run", "--model", str(folder), "--engine", engine, "--tokens", tokens, "--chunk",
                          "16"], capture_output=True, text=True)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "position 64 is past the model's 64 learned positions" in run.stderr, run.stderr


def test_a_multimodal_model_whose_levels_disagree_on_tying_is_refused(tmp_path):
    """Mistral3Config ties the output by default while its Mistral text config does not: transformers
    ties such a model and saves no lm_head. tapdiff does not pick one of the two levels."""
    case = next(c for c in CASES if c.name == "mistral3-multimodal")
    composite = {key: value for key, value in case.composite.items() if key != "tie_word_embeddings"}
    folder = tmp_path / "model"
    make_model(dataclasses.replace(case, composite=composite), folder, "5.x")
    run = subprocess.run([TAPDIFF, "run", "--model", str(folder), "--tokens", "1,2"], capture_output=True, text=True)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "'tie_word_embeddings': expected text_config's value, false, found true" in run.stderr, run.stderr


def test_a_kernel_without_the_models_soft_cap_is_refused_when_forced(tmp_path):
    """attention-coop2 computes no soft-cap: forcing it on Gemma 2 is refused on any device, not
    replaced by another kernel in silence."""
    folder = tmp_path / "model"
    make_model(next(c for c in CASES if c.name == "gemma2"), folder, "5.x")
    run = subprocess.run([TAPDIFF, "bisect", "--model", str(folder), "--tokens", "1,2,3", "--kernels",
                          "attention=coop2"], capture_output=True, text=True)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "--kernels attention=coop2: attention-coop2 computes no soft-cap" in run.stderr, run.stderr


@pytest.mark.parametrize("name", ["qwen3-moe", "glm4-moe", "hunyuan-moe", "cohere2-moe-sigmoid"])
def test_an_f16_near_tie_between_experts_is_settled_not_a_divergence(name, tmp_path):
    """Two experts whose router rows differ by 1e-4 of their size (and, in a sigmoid router, whose
    selection biases are equal) trade places under f16 noise: bisect reports each such row as a near
    tie, continues with A's choice, and the run matches; in f32 the softmax router flips nowhere, and
    the sigmoid one only at near ties."""
    case = next(c for c in CASES if c.name == name)
    folder = tmp_path / "model"
    make_model(case, folder, "5.x")
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    torch.manual_seed(1)
    with torch.no_grad():
        for layer in model.model.layers:
            gate = getattr(layer.mlp, "gate", None)
            if gate is None:  # a dense layer
                continue
            gate = getattr(gate, "wg", gate)  # Hunyuan-MoE's router holds its linear as wg
            gate.weight[1] = gate.weight[0] * (1 + 1e-4 * torch.randn_like(gate.weight[0]))
            if hasattr(gate, "e_score_correction_bias"):
                gate.e_score_correction_bias[1] = gate.e_score_correction_bias[0]
    model.save_pretrained(folder)
    tokens = ",".join(str(t) for t in TOKENS)
    reports = {}
    for dtype in ("f16", "f32"):
        report = tmp_path / f"bisect-{dtype}.json"
        run = subprocess.run([TAPDIFF, "bisect", "--model", str(folder), "--tokens", tokens, "--chunk", "16",
                              "--generate", "4", "--dtype", dtype, "--json", str(report)], capture_output=True,
                             text=True)
        assert run.returncode == 0, run.stdout + run.stderr
        reports[dtype] = json.loads(report.read_text())
    routing = reports["f16"]["routing"]
    assert routing["near_ties"] > 0 and routing["near_ties"] == routing["flips"], routing
    first = routing["first"][0]
    assert set(first["ids_a"]) ^ set(first["ids_b"]) == {0, 1}, first  # the two experts traded places
    assert first["margin"] <= first["factor"] * first["noise"] and first["settled"], first
    assert "routing-near-tie" in {d["code"] for d in reports["f16"]["diagnosis"]}
    f32 = reports["f32"]["routing"]
    if name in ("qwen3-moe", "hunyuan-moe"):
        assert f32["flips"] == 0, f32
    else:  # sigmoid scores squeeze the logits' gap: f32's noise reaches some rows too, and says so
        assert f32["near_ties"] == f32["flips"], f32

    # Two dumps cannot go past the flip (B's later ops computed with its own choice): compare
    # names it a near tie all the same, and points to bisect.
    dumps = {}
    for engine, dtype in (("ref", "f64"), ("vulkan", "f16")):
        dumps[engine] = tmp_path / f"{engine}.h5"
        run = subprocess.run([TAPDIFF, "run", "--model", str(folder), "--tokens", tokens, "--chunk", "16",
                              "--engine", engine, "--dtype", dtype, "--dump", str(dumps[engine])],
                             capture_output=True, text=True)
        assert run.returncode == 0, run.stdout + run.stderr
    report = tmp_path / "compare.json"
    run = subprocess.run([TAPDIFF, "compare", str(dumps["ref"]), str(dumps["vulkan"]), "--json", str(report)],
                         capture_output=True, text=True)
    compared = json.loads(report.read_text())
    assert compared["routing"]["near_ties"] > 0, compared["routing"]
    assert not compared["routing"]["first"][0]["settled"]
    near = [d for d in compared["diagnosis"] if d["code"] == "routing-near-tie"]
    assert near and "tapdiff bisect continues with A's choice" in near[0]["text"], run.stdout
