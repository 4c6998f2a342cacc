"""What a calibrated comparison detects in llama.cpp's own runs (docs/tolerances.md).

    python bench/llama_cpp_detection.py build/tapdiff OUT_DIR

A Q8_0 synth model (`synth --shape small --ffn 768`, 200 prompt tokens in chunks of 64, 4
generated) run by llama.cpp (node-llama-cpp's CPU backend, and its Vulkan backend with every layer
offloaded) through examples/llama-cpp-taps: clean, and with every n-th block of `blk.2.ffn_down`
negated (a dequantization bug llama.cpp alone runs). Each run against tapdiff's f64 reference of
the clean model, `compare --model` in the backend's precision (llama.cpp, llama.cpp-vulkan): the
clean run's worst op and 2/ffn_down as multiples of their floors, and for each corruption 2/ffn_down's
NMSE, its multiple of the floor, and whether it is named as the culprit. Prints markdown tables.
Run it in the environment of scripts/python-env.sh.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "conformance"))
from llama_cpp_harness import blocks_of, build_harness, llama_cpp_dump, negate_blocks  # noqa: E402
from test_llama_cpp import PROMPT  # noqa: E402

TENSOR, OP = "blk.2.ffn_down.weight", "2/ffn_down"
EVERY = [4096, 1024, 256, 64, 16]  # every n-th block negated
PRECISION = {"cpu": "llama.cpp", "vulkan": "llama.cpp-vulkan"}
GENERATE = 4


def tapdiff(binary: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=900)


def judged(binary: str, exact: Path, dump: Path, model: Path, backend: str, report: Path) -> dict:
    run = tapdiff(binary, "compare", str(exact), str(dump), "--map", "llama.cpp", "--common-ops", "--model", str(model),
                  "--b-precision", PRECISION[backend], "--json", str(report))
    assert run.returncode in (0, 1), run.stderr
    return json.loads(report.read_text())


def op_of(report: dict, name: str) -> dict:
    return next(o for o in report["ops"] if f"{o['layer']}/{o['op']}" == name)


def times_floor(op: dict) -> float:
    return op["metrics"]["nmse"] / (op["tolerance"]["nmse"] / 10)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("tapdiff")
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    model = args.out / "q8_0.gguf"
    run = tapdiff(args.tapdiff, "synth", "--shape", "small", "--ffn", "768", "--dtype", "q8_0", "-o", str(model))
    assert run.returncode == 0, run.stderr
    exact = args.out / "exact.h5"
    run = tapdiff(args.tapdiff, "run", "--model", str(model), "--tokens", ",".join(map(str, PROMPT)), "--chunk", "64",
                  "--generate", str(GENERATE), "--dtype", "f64", "--dump", str(exact))
    assert run.returncode == 0, run.stderr
    blocks = blocks_of(model, TENSOR)
    clean_rows, rows = [], []
    for backend in ("cpu", "vulkan"):
        folder = args.out / backend
        folder.mkdir(exist_ok=True)
        harness = build_harness(folder, backend)
        llama_cpp_dump(harness, model, folder / "clean", PROMPT, GENERATE)
        clean = judged(args.tapdiff, exact, folder / "clean", model, backend, folder / "clean.json")
        worst = max(clean["ops"], key=times_floor)
        clean_rows.append(f"| {backend} | {PRECISION[backend]} | {clean['verdict']} | "
                          f"{times_floor(worst):.2f} ({worst['layer']}/{worst['op']}) | "
                          f"{times_floor(op_of(clean, OP)):.2f} |")
        for every in EVERY:
            corrupted = folder / f"every{every}.gguf"
            negated = negate_blocks(model, corrupted, TENSOR, 1 / every)
            llama_cpp_dump(harness, corrupted, folder / f"every{every}", PROMPT, GENERATE)
            report = judged(args.tapdiff, exact, folder / f"every{every}", model, backend,
                            folder / f"every{every}.json")
            op = op_of(report, OP)
            culprit = report["culprit"]
            named = culprit is not None and f"{culprit['layer']}/{culprit['op']}" == OP
            rows.append(f"| {backend} | {negated} of {blocks} (1 in {every}) | {op['metrics']['nmse']:.2g} | "
                        f"{times_floor(op):.1f} | {'yes' if named else 'no'} |")
    print("| backend | precision | clean verdict | worst op / floor | 2/ffn_down / floor |")
    print("|---|---|---|---|---|")
    print("\n".join(clean_rows))
    print()
    print("| backend | blocks negated | 2/ffn_down nmse | / floor | named as the culprit |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
