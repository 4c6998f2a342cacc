"""llama.cpp's own intermediate values, taken through its eval callback by examples/llama-cpp-taps
(built against npm's node-llama-cpp CPU build), against tapdiff:
- the `llama.cpp` name map reads every tensor that dump holds, prefill chunks and decode steps, a
  mixture of experts' router, chosen experts, weights and sum too, and those of every mixture's
  graph llama.cpp names alike (a shared expert's block output; a sigmoid router's scores);
- the llama.cpp emulation (`run --dtype llama.cpp`, the reference's and the Vulkan engine's)
  repeats llama.cpp's first products to f32 precision for every weight type, where the exact answer
  differs by llama.cpp's activation rounding;
- as the noise floor of `compare --model` (`--b-precision llama.cpp`) it takes llama.cpp's own
  rounding for what it is, which the f32 floor blames on the first product, and still names a
  planted bug;
- exact and llama.cpp-precision tokens (llama.cpp's own, the Vulkan engine's) part only at near ties;
- so for every dense family as llama.cpp's converter writes it (Gemma's GELU table and Q scaled
  before its rounding; through the map, Gemma's scaled embedding and Phi-3's fused products)."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import h5py
import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from gguf_models import FAMILY_CASES, GGUF_CASES, write_deepseek2, write_gemma4, write_gguf
from hf_models import DEEPSEEK_GGUF_CASES, GEMMA4_GGUF_CASES, make_model
from llama_cpp_harness import Harness, build_harness, negate_blocks
from llama_cpp_harness import llama_cpp_dump as run_llama_cpp
from test_llama_cpp import BLOCK_STORAGE, PROMPT

ROOT = Path(__file__).resolve().parents[2]
TAPDIFF = os.environ.get("TAPDIFF_BINARY", str(ROOT / "build" / "tapdiff"))
LAYERS = 4  # synth --shape small


@pytest.fixture(scope="module")
def llama_cpp_taps(tmp_path_factory) -> Harness:
    """The harness on llama.cpp's CPU backend, built once."""
    return build_harness(tmp_path_factory.mktemp("llama-cpp-taps"), "cpu")


@pytest.fixture(scope="module")
def llama_cpp_vulkan_taps(tmp_path_factory) -> Harness:
    """The harness on llama.cpp's Vulkan backend, every layer offloaded, built once."""
    return build_harness(tmp_path_factory.mktemp("llama-cpp-vulkan-taps"), "vulkan")


def synth(storage: str, path: Path) -> Path:
    run = subprocess.run([TAPDIFF, "synth", "--shape", "small", "--ffn", "768", "--dtype", storage, "-o", str(path)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return path


def llama_cpp_dump(harness: Harness, model: Path, out: Path, generate: int = 0) -> list[int]:
    """llama.cpp's run of PROMPT in chunks of 64, then `generate` greedy tokens: its tokens."""
    return run_llama_cpp(harness, model, out, PROMPT, generate)


def tapdiff_dump(model: Path, dump: Path, dtype: str, generate: int = 0, engine: str = "ref") -> list[int]:
    summary = dump.with_suffix(".json")
    run = subprocess.run([TAPDIFF, "run", "--model", str(model), "--tokens", ",".join(map(str, PROMPT)), "--generate",
                          str(generate), "--engine", engine, "--dtype", dtype, "--dump", str(dump), "--json",
                          str(summary)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return json.loads(summary.read_text())["generated"]


def compare(a: Path, b: Path, report: Path, *extra: str, name_map: str = "llama.cpp") -> tuple[dict, str]:
    """B's ops compared where both dumps tap them: llama.cpp's graph names a part of tapdiff's ops."""
    run = subprocess.run([TAPDIFF, "compare", str(a), str(b), "--map", name_map, "--json", str(report), "--common-ops",
                          *extra], capture_output=True, text=True)
    assert run.returncode in (0, 1), run.stderr
    return json.loads(report.read_text()), run.stdout + run.stderr


def op_nmse(report: dict) -> dict[str, float]:
    return {f"{o['layer']}/{o['op']}": o["metrics"]["nmse"] for o in report["ops"]}


def test_the_llama_cpp_map_reads_llama_cpps_own_dump(llama_cpp_taps, tmp_path):
    model = synth("f32", tmp_path / "f32.gguf")
    theirs = llama_cpp_dump(llama_cpp_taps, model, tmp_path / "llama.cpp", generate=4)
    generated = tapdiff_dump(model, tmp_path / "exact.h5", "f64", generate=4)
    assert theirs[len(PROMPT):] == generated
    report, output = compare(tmp_path / "exact.h5", tmp_path / "llama.cpp", tmp_path / "report.json")
    assert "does not know" not in output, output
    # Every op but q_proj and k_proj (llama.cpp names Q and K again after RoPE: the last is kept).
    assert sorted(report["not_compared"]["only_in_a"]) == sorted(
        f"{layer}/{op}" for layer in range(LAYERS) for op in ("q_proj", "k_proj"))
    assert report["not_compared"]["only_in_b"] == []
    nmse = op_nmse(report)
    assert len(nmse) == 1 + 13 * LAYERS + 2  # embed, 13 ops of each layer, final_norm and logits
    assert report["rows"]["compared"] == len(PROMPT) + 3  # the prefill chunks and three decode steps
    # F32 weights: llama.cpp rounds only its f16 KV cache and attention operands (NMSE up to 2e-6,
    # the last layer's attention; a tensor read under another name or layout is near 1).
    worst = max(nmse, key=nmse.get)
    assert nmse[worst] < 1e-5, (worst, nmse[worst])
    # A run on llama.cpp's own tokens, positions and chunking, read from its dump, is the same run.
    followed = tmp_path / "followed.h5"
    run = subprocess.run([TAPDIFF, "run", "--model", str(model), "--dtype", "f64", "--tokens-from",
                          str(tmp_path / "llama.cpp"), "--map", "llama.cpp", "--dump", str(followed)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    again, output = compare(followed, tmp_path / "llama.cpp", tmp_path / "followed.json")
    assert again["rows"]["compared"] == report["rows"]["compared"], output
    assert op_nmse(again) == pytest.approx(nmse, rel=1e-9, abs=1e-30), output


def exact_on_llama_cpps_rows(harness: Harness, model: Path, tmp_path: Path) -> tuple[dict, str]:
    """llama.cpp's run of PROMPT and 4 greedy tokens, the f64 reference run on its rows (`run
    --tokens-from`), and their comparison under the llama.cpp map."""
    llama_cpp_dump(harness, model, tmp_path / "llama.cpp", generate=4)
    run = subprocess.run([TAPDIFF, "run", "--model", str(model), "--dtype", "f64", "--tokens-from",
                          str(tmp_path / "llama.cpp"), "--map", "llama.cpp", "--dump", str(tmp_path / "exact.h5")],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    return compare(tmp_path / "exact.h5", tmp_path / "llama.cpp", tmp_path / "report.json")


def assert_match_but_near_ties(report: dict, output: str) -> None:
    """Every row compared: a match, or parted first at a router's choice, each of its other
    choices a near tie (llama.cpp's f16 KV cache moving a router across one), and said so."""
    assert report["rows"]["compared"] == len(PROMPT) + 3, output
    if report["verdict"] != "match":
        routing = report["routing"]
        assert routing["flips"] > 0 and routing["near_ties"] == routing["flips"], output
        assert report["first"]["op"] in ("moe_scores", "moe_ids"), output
        assert "routing-near-tie" in {d["code"] for d in report["diagnosis"]}, output


def test_the_llama_cpp_map_reads_a_mixture_of_experts(llama_cpp_taps, tmp_path):
    """A Qwen3-MoE (synth tiny-moe, F32): llama.cpp's router logits, its top-k (by score, read
    sorted with the weights alongside), the normalized weights and the experts' weighted sum compare
    with tapdiff's on llama.cpp's own rows: the same experts in every row, the values to f32
    rounding and llama.cpp's f16 KV cache."""
    model = tmp_path / "moe.gguf"
    run = subprocess.run([TAPDIFF, "synth", "--shape", "tiny-moe", "-o", str(model)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    report, output = exact_on_llama_cpps_rows(llama_cpp_taps, model, tmp_path)
    assert report["verdict"] == "match" and report["rows"]["compared"] == len(PROMPT) + 3, output
    nmse = op_nmse(report)
    for layer in (0, 1):
        assert nmse[f"{layer}/moe_ids"] == 0, output
        for op in ("moe_router", "moe_weights", "moe_out"):
            assert 0 < nmse[f"{layer}/{op}"] < 1e-6, (op, nmse[f"{layer}/{op}"])


MIXTURE_GRAPHS = ["olmoe", "granitemoe", "granitemoe-shared", "qwen2moe", "glm4moe", "dots1", "minimax-m2",
                  "ernie4_5-moe", "gpt-oss", "llama4"]


@pytest.mark.parametrize("name", MIXTURE_GRAPHS)
def test_the_llama_cpp_map_reads_each_mixtures_graph(llama_cpp_taps, name, tmp_path):
    """The other mixtures as llama.cpp's converter writes them: the map reads their router, a sigmoid
    router's scores, chosen experts, weights and sum, and where a shared expert sits beside them the
    block's output ("ffn_out", moe_sum; the shared expert's own parts, named as a dense FFN's, are
    left unread), and every row compares: a match, or where llama.cpp's f16 KV cache moves a router
    across a near tie (Qwen2-MoE's, MiniMax-M2's), parts first at that choice and says so."""
    case = next(c for c in GGUF_CASES if c.name == name)
    model = tmp_path / f"{name}.gguf"
    write_gguf(case, model)
    report, output = exact_on_llama_cpps_rows(llama_cpp_taps, model, tmp_path)
    assert_match_but_near_ties(report, output)
    compared = {o["op"] for o in report["ops"] if o["layer"] == 1}
    expected = {"moe_router", "moe_ids", "moe_weights", "moe_out"} | ({"moe_sum"} if case.shared_expert else set())
    assert expected <= compared, output
    if name == "llama4":  # its own names: q and k normed after RoPE, the shared expert's output, the
        # attention's output named again ffn_norm; layer 3, the last, without RoPE: Qcur its q
        assert {"q_norm", "k_norm", "o_proj", "moe_shared"} <= compared, output
        last = {o["op"] for o in report["ops"] if o["layer"] == 3}
        assert {"rope_q", "k_proj", "o_proj", "moe_shared", "moe_sum"} <= last, output


def test_the_llama_cpp_map_reads_latent_attention(llama_cpp_taps, tmp_path):
    """DeepSeek-V3 as llama.cpp's converter writes it (the absorbed form): its q_proj, latent, normed
    latent and turned shared key, the attention's output after the value up-projection and the
    mixture compare with the exact run on llama.cpp's rows; the ops its absorbed graph never holds
    (the expanded keys and values, q's RoPE part over whole heads, q_a's two values named as
    q_proj's) and those it leaves unnamed there (o_proj, the shared expert's output) are listed as
    not compared."""
    folder, model = tmp_path / "hf", tmp_path / "deepseek2.gguf"
    make_model(DEEPSEEK_GGUF_CASES["deepseek-v3"], folder, "5.x")
    write_deepseek2(folder, model)
    report, output = exact_on_llama_cpps_rows(llama_cpp_taps, model, tmp_path)
    assert report["verdict"] == "match" and report["rows"]["compared"] == len(PROMPT) + 3, output
    compared = {o["op"] for o in report["ops"] if o["layer"] == 1}
    assert {"q_proj", "kv_a_proj", "kv_a_norm", "rope_k", "attn", "moe_ids", "moe_sum"} <= compared, output
    unread = {t.split("/")[1] for t in report["not_compared"]["only_in_a"] if t.startswith("1/")}
    assert unread == {"q_a_proj", "q_a_norm", "k_proj", "v_proj", "rope_q", "o_proj", "moe_shared"}, unread


# What llama.cpp's Gemma 4 graph leaves unnamed (RoPE's outputs, the values' norm, the FFN's
# post-norms, the per-layer input's ops) or names other than tapdiff's op (its "attn_out" is the
# stream after the residual add, not o_proj; its mixture's weights come before the experts' scales).
GEMMA4_UNREAD = {
    "gemma4-e2b": {"rope_q", "rope_k", "v_norm", "o_proj", "ffn_post_norm", "ffn_residual", "ple_input", "ple_gate",
                   "ple_act", "ple_proj", "ple_norm"},
    "gemma4-moe": {"rope_q", "rope_k", "v_norm", "o_proj", "ffn_post_norm", "ffn_norm", "ffn_down", "dense_post_norm",
                   "ffn_sum", "moe_router_norm", "moe_norm", "moe_weights", "moe_post_norm", "k_proj"},
}


@pytest.mark.parametrize("name", sorted(GEMMA4_GGUF_CASES))
def test_the_llama_cpp_map_reads_gemma4(llama_cpp_taps, name, tmp_path):
    """Gemma 4 as llama.cpp's converter writes it: its graph's q, k and v products, q's and k's
    norms before RoPE, the attention's post-norm and the stream after its residual add, the layer's
    output (after the per-layer input where it has them) and the mixture's router, ids and output
    compare with the exact run on llama.cpp's rows, a match (or a router's near tie, said so); what
    it leaves unnamed, or names otherwise, is listed as not compared."""
    folder, model = tmp_path / "hf", tmp_path / f"{name}.gguf"
    make_model(GEMMA4_GGUF_CASES[name], folder, "5.x")
    write_gemma4(folder, model)
    report, output = exact_on_llama_cpps_rows(llama_cpp_taps, model, tmp_path)
    assert_match_but_near_ties(report, output)
    compared = {o["op"] for o in report["ops"] if o["layer"] == 0}
    assert {"q_proj", "q_norm", "k_norm", "v_proj", "attn", "attn_post_norm", "attn_residual"} <= compared, output
    assert ("moe_ids" in compared) == (name == "gemma4-moe"), output
    unread = {t.split("/")[1] for t in report["not_compared"]["only_in_a"]}
    assert unread == GEMMA4_UNREAD[name], unread
    assert report["not_compared"]["only_in_b"] == [], output


@pytest.mark.parametrize("storage", ["f16", "bf16"] + BLOCK_STORAGE)
def test_the_llama_cpp_emulation_repeats_llama_cpps_products(llama_cpp_taps, storage, tmp_path):
    """The reference's emulation and the Vulkan engine's in llama.cpp's precision."""
    model = synth(storage, tmp_path / f"{storage}.gguf")
    llama_cpp_dump(llama_cpp_taps, model, tmp_path / "llama.cpp")
    tapdiff_dump(model, tmp_path / "exact.h5", "f64")
    exact = op_nmse(compare(tmp_path / "exact.h5", tmp_path / "llama.cpp", tmp_path / "x.json")[0])
    for engine in ("ref", "vulkan"):
        tapdiff_dump(model, tmp_path / f"{engine}.h5", "llama.cpp", engine=engine)
        emulated = op_nmse(compare(tmp_path / f"{engine}.h5", tmp_path / "llama.cpp", tmp_path / f"{engine}.json")[0])
        print(f"{storage}, {engine}: 0/v_proj NMSE against llama.cpp: emulated {emulated['0/v_proj']:.1e}, exact "
              f"{exact['0/v_proj']:.1e}; 0/attn {emulated['0/attn']:.1e}, {exact['0/attn']:.1e}; logits "
              f"{emulated[f'{LAYERS}/logits']:.1e}, {exact[f'{LAYERS}/logits']:.1e}")
        # The first product after the embedding: both runs see the same input, llama.cpp rounds it.
        assert emulated["0/v_proj"] < 1e-12, engine
        assert exact["0/v_proj"] > 1e-8
        # Attention over the f16 cache, with f16 Q and probabilities.
        assert emulated["0/attn"] < 1e-8, engine
        assert exact["0/attn"] > 10 * emulated["0/attn"], engine


def scaled(dump: Path, name: str, factor: float) -> None:
    """Every pass file of a llama.cpp dump with the tensor `name` times factor: a planted bug."""
    for path in dump.glob("pass_*.safetensors"):
        arrays = load_file(str(path))
        arrays[name] = (arrays[name] * np.float32(factor)).astype(np.float32)
        save_file(arrays, str(path))


def test_llama_cpp_precision_is_the_floor_its_own_rounding_is_held_to(llama_cpp_taps, tmp_path):
    model = synth("q4_k", tmp_path / "q4_k.gguf")
    llama_cpp_dump(llama_cpp_taps, model, tmp_path / "llama.cpp")
    tapdiff_dump(model, tmp_path / "exact.h5", "f64")
    check = ["--model", str(model)]
    # Told f32, the floor takes llama.cpp's 8-bit activations for a bug in its first product.
    f32, _ = compare(tmp_path / "exact.h5", tmp_path / "llama.cpp", tmp_path / "f32.json", *check,
                     "--b-precision", "f32")
    assert f32["culprit"]["layer"] == 0 and f32["culprit"]["op"] == "v_proj", f32["culprit"]
    # Under llama.cpp's own precision (read from its names, or given) every op matches, and each
    # product's error is what the emulation's is on the same passes: the floor is llama.cpp's
    # noise, not a bound far above it.
    for given in ([], ["--b-precision", "llama.cpp"]):
        report, output = compare(tmp_path / "exact.h5", tmp_path / "llama.cpp", tmp_path / "llama.json", *check,
                                 *given)
        assert report["verdict"] == "match", output
        assert report["tolerances"]["dtype"] == "llama.cpp", output
        products = [o for o in report["ops"] if o["class"] == "gemm" and o["op"] not in ("q_proj", "k_proj")]
        assert len(products) == 5 * LAYERS + 1  # v, o, gate, up, down per layer and the logits
        for op in products:
            floor = op["tolerance"]["nmse"] / 10  # calibrated: llama.cpp's k = 10 times the floor
            assert 0.5 < op["metrics"]["nmse"] / floor < 2, (op["layer"], op["op"], op["metrics"]["nmse"], floor)
    # A bug past that noise is still named: llama.cpp's FFN output of layer 2 off by 30%.
    scaled(tmp_path / "llama.cpp", "ffn_out-2", 1.3)
    planted, _ = compare(tmp_path / "exact.h5", tmp_path / "llama.cpp", tmp_path / "planted.json", *check,
                         "--b-precision", "llama.cpp")
    assert (planted["culprit"]["layer"], planted["culprit"]["op"]) == (2, "ffn_down"), planted["culprit"]


def exact_logits(dump: Path, position: int) -> np.ndarray:
    with h5py.File(dump, "r") as f:
        (row,) = np.flatnonzero(f["rows"]["position"][:] == position)
        return f["taps"][str(LAYERS)]["logits"][row].astype(np.float64)


def llama_cpp_logits_at(dump: Path, position: int) -> np.ndarray:
    """The logits of llama.cpp's row at `position`, from the pass that computed it."""
    for path in sorted(dump.glob("pass_*.safetensors")):
        arrays = load_file(str(path))
        rows = np.flatnonzero(arrays["positions"] == position)
        if rows.size:
            return arrays["result_output"][rows[0]].astype(np.float64)
    raise AssertionError(f"no row at position {position} in {dump}")


@pytest.mark.parametrize("storage", ["f16", "bf16"] + BLOCK_STORAGE)
def test_exact_and_llama_cpp_tokens_part_only_at_near_ties(llama_cpp_taps, storage, tmp_path):
    """The exact answer against llama.cpp's own run, every op held to the llama.cpp emulation's
    error against it (`--floor`): every op within tolerance, and where the greedy tokens part, a
    near tie with A's margin (the rows fed different tokens after it unjudged). The Vulkan engine
    in llama.cpp's precision, against the same answer and floor, likewise."""
    model = synth(storage, tmp_path / f"{storage}.gguf")
    theirs = llama_cpp_dump(llama_cpp_taps, model, tmp_path / "llama.cpp", generate=16)
    ours = tapdiff_dump(model, tmp_path / "exact.h5", "f64", generate=16)
    tapdiff_dump(model, tmp_path / "floor.h5", "llama.cpp", generate=16)
    report, output = compare(tmp_path / "exact.h5", tmp_path / "llama.cpp", tmp_path / "report.json", "--floor",
                             str(tmp_path / "floor.h5"))
    tie = judged_at_most_a_near_tie(report, output, ours, theirs[len(PROMPT):])
    if tie is not None:
        # A near tie for llama.cpp's precision: A's two candidates closer than llama.cpp's own
        # deviation from A in that row's logits.
        deviation = np.abs(exact_logits(tmp_path / "exact.h5", tie["position"]) -
                           llama_cpp_logits_at(tmp_path / "llama.cpp", tie["position"])).max()
        assert 0 <= tie["margin"] <= deviation, (tie, deviation)
        print(f"{storage}: parts from llama.cpp at step {tie['step']}, a near tie: A's margin {tie['margin']:.2g}, "
              f"llama.cpp's deviation there {deviation:.2g}")
    # tapdiff's Vulkan engine in llama.cpp's precision, judged as llama.cpp is.
    vulkan = tapdiff_dump(model, tmp_path / "vulkan.h5", "llama.cpp", generate=16, engine="vulkan")
    report, output = compare(tmp_path / "exact.h5", tmp_path / "vulkan.h5", tmp_path / "vulkan.json", "--floor",
                             str(tmp_path / "floor.h5"), name_map="tapdiff")
    tie = judged_at_most_a_near_tie(report, output, ours, vulkan)
    print(f"{storage}: Vulkan in llama.cpp's precision: " +
          ("the exact tokens" if tie is None else f"parts at step {tie['step']}, a near tie (A's margin "
                                                  f"{tie['margin']:.2g})") +
          f"; its tokens {'equal' if vulkan == theirs[len(PROMPT):] else 'differ from'} llama.cpp's")


# The families' cases whose graphs in llama.cpp name their values as Llama's does (the llama.cpp
# map's NameMap::families).
LLAMA_NAMED = {"ernie4_5", "hunyuan-dense", "seed_oss"}
DENSE_CASES = [c for c in GGUF_CASES if not c.experts] + [c for c in FAMILY_CASES if c.arch in LLAMA_NAMED]


@pytest.mark.parametrize("storage", ["f32", "q8_0"])
@pytest.mark.parametrize("case", DENSE_CASES, ids=lambda c: c.name)
def test_every_dense_family_is_held_to_llama_cpp_by_its_emulation(llama_cpp_taps, case, storage, tmp_path):
    """Each family's GGUF as the gguf package writes it (F32, or Q8_0 matrices), llama.cpp's own run
    read through the llama.cpp map: the exact answer against it with the emulation as the floor,
    every op within it and the tokens parting only at near ties; the Vulkan engine in llama.cpp's
    precision likewise. With F32 matrices (no product rounds) the emulation's logits are at least
    twice nearer llama.cpp's than the exact ones: its f16 KV cache, q and probabilities, and
    Gemma's GELU table, are llama.cpp's."""
    model = tmp_path / "model.gguf"
    write_gguf(case, model, storage=storage)
    theirs = llama_cpp_dump(llama_cpp_taps, model, tmp_path / "llama.cpp", generate=16)
    ours = tapdiff_dump(model, tmp_path / "exact.h5", "f64", generate=16)
    tapdiff_dump(model, tmp_path / "floor.h5", "llama.cpp", generate=16)
    report, output = compare(tmp_path / "exact.h5", tmp_path / "llama.cpp", tmp_path / "report.json", "--floor",
                             str(tmp_path / "floor.h5"))
    compared = {f"{o['layer']}/{o['op']}" for o in report["ops"]}
    assert {"-1/embed", "0/v_proj", "0/attn", "0/ffn_gate", "0/ffn_up", "0/ffn_act", "0/ffn_residual",
            f"{case.layers}/logits"} <= compared, compared
    judged_at_most_a_near_tie(report, output, ours, theirs[len(PROMPT):])
    vulkan = tapdiff_dump(model, tmp_path / "vulkan.h5", "llama.cpp", generate=16, engine="vulkan")
    report, output = compare(tmp_path / "exact.h5", tmp_path / "vulkan.h5", tmp_path / "vulkan.json", "--floor",
                             str(tmp_path / "floor.h5"), name_map="tapdiff")
    judged_at_most_a_near_tie(report, output, ours, vulkan)
    if storage == "f32":
        exact = op_nmse(compare(tmp_path / "exact.h5", tmp_path / "llama.cpp", tmp_path / "e.json")[0])
        emulated = op_nmse(compare(tmp_path / "floor.h5", tmp_path / "llama.cpp", tmp_path / "l.json")[0])
        logits = f"{case.layers}/logits"
        print(f"{case.name}: logits NMSE against llama.cpp's {exact[logits]:.2e} exact, {emulated[logits]:.2e} "
              "emulated")
        assert emulated[logits] <= exact[logits] / 2


def judged_at_most_a_near_tie(report: dict, output: str, ours: list[int], theirs: list[int]) -> dict | None:
    """Every op within the floor, and where the generated tokens part (not at the last step: the
    last token is fed to no row), a near tie at that step: its `tie`. None where they do not part."""
    assert report["first"] is None, output
    step = next((s for s, (a, b) in enumerate(zip(ours, theirs)) if a != b), None)
    if step is None or step == len(ours) - 1:
        assert report["verdict"] == "match", output
        return None
    assert report["verdict"] == "incomplete", output
    (problem,) = report["problems"]
    assert problem["code"] == "near-tie", output
    tie = report["tokens"]["tie"]
    assert (tie["step"], tie["a"], tie["b"]) == (step, ours[step], theirs[step]), tie
    assert tie["position"] == len(PROMPT) - 1 + step
    return tie


PRECISION = {"cpu": "llama.cpp", "vulkan": "llama.cpp-vulkan"}


@pytest.mark.parametrize("storage", ["f32", "q8_0", "q4_k_m"])
@pytest.mark.parametrize("backend", ["cpu", "vulkan"])
def test_llama_cpps_backends_are_held_to_their_own_precision(llama_cpp_taps, llama_cpp_vulkan_taps, backend,
                                                             storage, tmp_path):
    """llama.cpp's CPU backend, and its Vulkan backend with every layer offloaded (lavapipe here:
    f16 arithmetic, no cooperative matrices, no integer dot products), which rounds otherwise: its
    products of 9 rows or more take f16 weights and activations and keep f16 sums (f32 for F32
    weights). Each clean run matches (or parts at a near tie) under its own precision, given or
    read from its dump, with no --floor: every product within a small factor of the emulation's
    error. The Vulkan run of F32 weights under the CPU backend's floor (exact products) gets a
    culprit in layer 0."""
    harness = llama_cpp_taps if backend == "cpu" else llama_cpp_vulkan_taps
    model = synth(storage, tmp_path / f"{storage}.gguf")
    theirs = llama_cpp_dump(harness, model, tmp_path / backend, generate=4)
    ours = tapdiff_dump(model, tmp_path / "exact.h5", "f64", generate=4)
    check = ["--model", str(model)]
    if backend == "vulkan" and storage == "f32":
        cpu, output = compare(tmp_path / "exact.h5", tmp_path / backend, tmp_path / "cpu.json", *check,
                              "--b-precision", "llama.cpp")
        assert cpu["culprit"] is not None and cpu["culprit"]["layer"] == 0, output
    # With F32 weights the Vulkan backend's sums are f32: nothing in its values tells the backends apart.
    inferred = [[]] if backend == "cpu" or storage != "f32" else []
    for given in [["--b-precision", PRECISION[backend]]] + inferred:
        report, output = compare(tmp_path / "exact.h5", tmp_path / backend, tmp_path / "report.json", *check, *given)
        assert report["tolerances"]["dtype"] == PRECISION[backend], output
        judged_at_most_a_near_tie(report, output, ours, theirs[len(PROMPT):])
        ratios = {f"{o['layer']}/{o['op']}": o["metrics"]["nmse"] / (o["tolerance"]["nmse"] / 10)
                  for o in report["ops"] if o["class"] == "gemm" and o["op"] not in ("q_proj", "k_proj")}
        worst = max(ratios, key=ratios.get)
        print(f"{backend} {storage} {given or 'inferred'}: products at {min(ratios.values()):.2f} to "
              f"{ratios[worst]:.2f} ({worst}) times the {PRECISION[backend]} floor")
        assert 0.1 < min(ratios.values()) and ratios[worst] < 5, ratios


# The smallest corruption docs/tolerances.md says k = 10 names in each backend's run.
DETECTED = {"cpu": 256, "vulkan": 1024}


@pytest.mark.parametrize("backend", ["cpu", "vulkan"])
def test_a_corrupted_matrix_is_named_down_to_the_published_detection_limit(llama_cpp_taps, llama_cpp_vulkan_taps,
                                                                         backend, tmp_path):
    """A Q8_0 model whose blk.2.ffn_down has one block in DETECTED[backend] negated, run by
    llama.cpp alone (a dequantization bug): `compare --model` of the clean model, in the backend's
    precision, names 2/ffn_down as the culprit."""
    harness = llama_cpp_taps if backend == "cpu" else llama_cpp_vulkan_taps
    model = synth("q8_0", tmp_path / "q8_0.gguf")
    corrupted = tmp_path / "corrupted.gguf"
    assert negate_blocks(model, corrupted, "blk.2.ffn_down.weight", 1 / DETECTED[backend]) > 0
    llama_cpp_dump(harness, corrupted, tmp_path / "llama.cpp", generate=4)
    tapdiff_dump(model, tmp_path / "exact.h5", "f64", generate=4)
    report, output = compare(tmp_path / "exact.h5", tmp_path / "llama.cpp", tmp_path / "report.json", "--model",
                             str(model), "--b-precision", PRECISION[backend])
    assert report["verdict"] == "diverged", output
    assert (report["culprit"]["layer"], report["culprit"]["op"]) == (2, "ffn_down"), output
