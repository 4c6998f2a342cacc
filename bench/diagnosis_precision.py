"""How often each diagnosis code points at the real bug (docs/diagnoses.md).

Over the fault catalogue's matrix (the rows of docs/faults.md: each fault planted in the Vulkan
engine, bisected) and the outside engine's bugs (tests/conformance/numpy_llama.py: its dump
compared with `tapdiff compare --model`), every diagnosis that fired is counted right when the
suspect it names fits the planted bug (SUSPECT_FITS below), wrong otherwise. Codes that state a
fact without naming a suspect (grows-with-position, inherits-error, accumulated, some-sequences)
are counted, not judged.

    python bench/diagnosis_precision.py --tapdiff build/tapdiff > table.md
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "conformance"))

ROPE_POSITIONS = {"rope-off-by-one", "rope-chunk-reset", "decode-position", "rope-chunk-restart"}
ATTENTION_WEIGHTS = {"attn-scale", "attn-scale-int", "softmax-no-max", "mask-kv-offset", "attn-scale (numpy)"}
# The bugs whose cause each code's suspect names (bisect/judge/diagnosis.cpp, bisect/judge/lookalike.cpp).
SUSPECT_FITS = {
    "chunk-start": {"rope-chunk-reset", "mask-kv-offset", "kv-stale-chunk", "rope-chunk-restart"},
    "rope-frequency": ROPE_POSITIONS,  # "the positions given to RoPE (an offset, a chunk restarting at 0)"
    "pair-pattern": {"rope-pairing", "qk-permuted"},
    "decode-only": {"decode-position"},
    "near-dtype-limit": {"softmax-no-max", "gemm-f16-accum", "f16-down"},
    "nonfinite": {"softmax-no-max"},
    "attention-uniform": {"attn-scale-int"},  # "a zero scale, scores lost before the softmax"
    "neighbour": {"hidden-off-by-one"},
    "permuted": {"qk-permuted"},
}
# position-zero-exact names the RoPE rotation on a RoPE op and the attention weights on attn.
POSITION_ZERO = {"rope": ROPE_POSITIONS | {"rope-base", "rope-pairing"}, "attn": ATTENTION_WEIGHTS}
# Codes that say where the error is, not why: counted, not judged.
FACTUAL = {"grows-with-position", "inherits-error", "accumulated", "some-sequences", "some-heads", "unchecked",
           "early-eos"}
OUTSIDE_BUGS = ["attn-scale", "norm-eps", "rope-chunk-restart", "f16-down", "hidden-off-by-one", "qk-permuted"]


def matrix_rows(faults_md: Path):
    """(bug, culprit op, codes) per run of the fault matrix in docs/faults.md."""
    for line in faults_md.read_text().splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) < 13 or not (cells[1].startswith("stories260K") or cells[1].startswith("synth:")):
            continue
        bug, culprit, codes, result = cells[2].split("@")[0], cells[7], cells[8], cells[11]
        if result == "below noise floor":
            continue
        yield bug, culprit.split("/")[-1], [] if codes == "-" else codes.split()


def outside_rows(tapdiff: str):
    """(bug, culprit op, codes) per bug of the numpy engine, compared with --model."""
    import numpy as np  # the conformance environment's
    from numpy_llama import NumpyLlama
    from tapdiff import DumpWriter, model_info

    model = "synth:tiny"
    info = model_info(model, tapdiff)
    prompt = [1] + [int(t) for t in np.random.default_rng(5).integers(3, 512, size=47)]
    with tempfile.TemporaryDirectory() as tmp:
        ref = Path(tmp) / "ref.h5"
        subprocess.run([tapdiff, "run", "--model", model, "--dtype", "f64", "--tokens", ",".join(map(str, prompt)),
                        "--chunk", "16", "--generate", "4", "--dump", str(ref)], check=True, capture_output=True)
        for bug in OUTSIDE_BUGS:
            b, report = Path(tmp) / f"{bug}.h5", Path(tmp) / f"{bug}.json"
            engine = NumpyLlama(info["model_path"], info["model_config"], [bug])
            with DumpWriter(b, model, engine="numpy", compute_dtype="f64", storage_dtype="f64", info=info) as dump:
                import warnings
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    dump.finish(generated=engine.run(dump, prompt, 16, 4))
            subprocess.run([tapdiff, "compare", str(ref), str(b), "--model", model, "--json", str(report)],
                           capture_output=True)
            r = json.loads(report.read_text())
            culprit = r.get("culprit") or {}
            yield bug, culprit.get("op", "?"), [d["code"] for d in r.get("diagnosis", [])]


def judged(code: str, bug: str, op: str) -> bool | None:
    if code in FACTUAL:
        return None
    if code == "position-zero-exact":
        return bug in POSITION_ZERO.get("rope" if op.startswith("rope") else "attn" if op == "attn" else "", set())
    return bug in SUSPECT_FITS.get(code, set())


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--tapdiff", default=str(ROOT / "build" / "tapdiff"))
    a = p.parse_args()
    rows = [("catalogue", *r) for r in matrix_rows(ROOT / "docs" / "faults.md")]
    rows += [("outside", *r) for r in outside_rows(a.tapdiff)]
    fired: dict[str, Counter] = defaultdict(Counter)  # code -> bug -> count
    right, wrong = Counter(), Counter()
    runs = Counter(bug for _, bug, _, _ in rows)
    for _, bug, op, codes in rows:
        for code in codes:
            fired[code][bug] += 1
            verdict = judged(code, bug, op)
            if verdict is True:
                right[code] += 1
            elif verdict is False:
                wrong[code] += 1
    bugs = sorted(runs)
    codes = sorted(fired)
    print("| bug (runs) | " + " | ".join(codes) + " |")
    print("|---|" + "---|" * len(codes))
    for bug in bugs:
        print(f"| {bug} ({runs[bug]}) | " + " | ".join(str(fired[c][bug] or "") for c in codes) + " |")
    print("| **precision** | " + " | ".join(
        "fact" if c in FACTUAL else f"{right[c]}/{right[c] + wrong[c]}" for c in codes) + " |")


if __name__ == "__main__":
    main()
