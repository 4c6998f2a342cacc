"""The spread of clean engines around the noise floor of their precision, and the errors a
calibrated comparison detects (docs/tolerances.md).

    python bench/precision_spread.py build/tapdiff OUT_DIR [--vulkan]

On the tiny peaked Llama of tests/conformance/mlx_recorder.py (40 prompt tokens in chunks of 16, 4
generated), against tapdiff's f64 reference:
  spread: each clean engine's worst and median op NMSE as a multiple of its floor (the reference in
    its precision on the same passes, as `compare --model` measures it): MLX (mlx[cpu], mlx-lm) and
    PyTorch (transformers, CPU) in bf16 and f16, and with --vulkan tapdiff's Vulkan engine in f16;
  detection: MLX's clean run with one op's values multiplied by (1 + e z), z standard normal per
  element, for growing e: the op's NMSE, its bound, and whether `compare --model` names it.
Prints markdown tables.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

import torch
import transformers
from safetensors.torch import load_file, save_file

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "conformance"))
import mlx_recorder  # noqa: E402
from tapdiff import HfRecorder  # noqa: E402

PROMPT = [1] + [(i * 37) % 150 + 3 for i in range(39)]
CHUNK, GENERATE = 16, 4
TORCH_DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}


def tapdiff(binary: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=600)


K = 10  # every comparison here holds B to K x its floor, whatever its precision's default


def compare(binary: str, a: Path, b: Path, model: Path, report: Path) -> dict:
    run = tapdiff(binary, "compare", str(a), str(b), "--model", str(model), "--k", str(K), "--json", str(report))
    if run.returncode not in (0, 1):
        raise RuntimeError(run.stdout + run.stderr)
    return json.loads(report.read_text())


def ratios(report: dict) -> list[float]:
    """Each op's NMSE over its floor (its calibrated bound is K x max(floor, min floor))."""
    return [op["metrics"]["nmse"] / (op["tolerance"]["nmse"] / K) for op in report["ops"] if op["op"] != "moe_ids"]


def torch_dump(binary: str, model: Path, out: Path, dtype: str) -> Path:
    hf = transformers.AutoModelForCausalLM.from_pretrained(model, dtype=TORCH_DTYPES[dtype])
    with HfRecorder(hf, out, str(model), compute_dtype=dtype, tapdiff=binary, engine="transformers") as recorder:
        recorder.generate(PROMPT, chunk=CHUNK, generate=GENERATE)
    return out


def spread(binary: str, work: Path, model: Path, reference: Path, vulkan: bool) -> None:
    engines = []
    for dtype in ("bf16", "f16"):
        engines.append((f"MLX {mlx_recorder.mx.__version__} (CPU)", dtype,
                        run_mlx(model, work / f"mlx-{dtype}", dtype)))
        engines.append((f"PyTorch {torch.__version__} (CPU)", dtype, torch_dump(binary, model, work / f"torch-{dtype}.h5",
                                                                                 dtype)))
    if vulkan:
        path = work / "vulkan-f16.h5"
        run = tapdiff(binary, "run", "--model", str(model), "--engine", "vulkan", "--dtype", "f16", "--tokens",
                      ",".join(map(str, PROMPT)), "--chunk", str(CHUNK), "--generate", str(GENERATE), "--dump",
                      str(path))
        if run.returncode != 0:
            raise RuntimeError(run.stdout + run.stderr)
        engines.append(("tapdiff Vulkan", "f16", path))
    print(f"| engine | precision | verdict at k = {K} | worst op / floor | median op / floor |")
    print("|---|---|---|---|---|")
    for name, dtype, dump in engines:
        report = compare(binary, reference, dump, model, work / f"{dump.name}.json")
        r = ratios(report)
        print(f"| {name} | {dtype} | {report['verdict']} | {max(r):.2f} | {statistics.median(r):.2f} |")


def run_mlx(model: Path, out: Path, dtype: str) -> Path:
    if not out.exists():
        mlx_recorder.run(model, out, dtype, PROMPT, CHUNK, GENERATE)
    return out


def detection(binary: str, work: Path, model: Path, reference: Path, op: str) -> None:
    print(f"\n| precision | e | {op} nmse | its bound | {op} named |")
    print("|---|---|---|---|---|")
    for dtype in ("bf16", "f16"):
        clean = run_mlx(model, work / f"mlx-{dtype}", dtype)
        generator = torch.Generator().manual_seed(7)
        for e in (0.003, 0.01, 0.03, 0.1):
            planted = work / f"mlx-{dtype}-e{e}"
            planted.mkdir(exist_ok=True)
            for part in sorted(clean.iterdir()):
                arrays = load_file(part)
                value = arrays[op]
                noise = torch.randn(value.shape, generator=generator, dtype=torch.float32)
                arrays[op] = (value.float() * (1 + e * noise)).to(value.dtype)
                save_file(arrays, planted / part.name)
            report = compare(binary, reference, planted, model, work / f"{planted.name}.json")
            layer, name = op.split("/")
            row = next(o for o in report["ops"] if o["layer"] == int(layer) and o["op"] == name)
            culprit = report["culprit"]
            named = culprit is not None and f"{culprit['layer']}/{culprit['op']}" == op
            print(f"| {dtype} | {e:g} | {row['metrics']['nmse']:.2e} | {row['tolerance']['nmse']:.2e} | "
                  f"{'yes' if named else 'no'} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("tapdiff")
    parser.add_argument("out", type=Path)
    parser.add_argument("--vulkan", action="store_true", help="also tapdiff's Vulkan engine in f16")
    parser.add_argument("--op", default="1/ffn_down", help="the op the detection curve plants its error in")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    model = args.out / "model"
    if not model.exists():
        mlx_recorder.peaked_llama(model)
    reference = args.out / "ref.h5"
    run = tapdiff(args.tapdiff, "run", "--model", str(model), "--dtype", "f64", "--tokens",
                  ",".join(map(str, PROMPT)), "--chunk", str(CHUNK), "--generate", str(GENERATE), "--dump",
                  str(reference))
    if run.returncode != 0:
        raise RuntimeError(run.stdout + run.stderr)
    spread(args.tapdiff, args.out, model, reference, args.vulkan)
    detection(args.tapdiff, args.out, model, reference, args.op)


if __name__ == "__main__":
    main()
