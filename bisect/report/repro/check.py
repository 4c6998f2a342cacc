#!/usr/bin/env python3
"""An op of an engine that tapdiff found wrong on its own inputs, as a test for the engine's suite.

case.safetensors holds one forward pass of the op: its inputs as the engine had them (input.*; for
attention kv.k and kv.v, the K and V rows of every position it reads), the weights it reads
(weight.*), the rows' positions and tokens, the reference's output on those inputs in float64
(output.reference), the engine's (output.engine), and in its metadata the tolerance and how it was
calibrated. This script calls kernel() of kernel.py, where you call your engine's kernel, and holds
its output to the tolerance with tapdiff's metrics (bisect/compare/metrics.cpp).

    python3 check.py                     # your kernel, from kernel.py
    python3 check.py --replay engine     # the engine's recorded output: fails as tapdiff found
    python3 check.py --replay reference  # the reference's own output: passes

Exit 0: within the tolerance; 1: past it; 2: the case could not be run. Needs numpy only.
"""
from __future__ import annotations

import argparse
import json
import struct
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
TYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I32": "<i4", "I64": "<i8"}


class Case:
    """The arrays of case.safetensors by kind, and its metadata (op, layer, config, tolerance)."""

    def __init__(self, path: Path):
        data = path.read_bytes()
        (length,) = struct.unpack_from("<Q", data, 0)
        header = json.loads(data[8:8 + length])
        self.meta: dict[str, str] = header.pop("__metadata__", {})
        arrays = {}
        for name, info in header.items():
            begin, end = info["data_offsets"]
            raw = data[8 + length + begin:8 + length + end]
            arrays[name] = np.frombuffer(raw, dtype=TYPES[info["dtype"]]).reshape(info["shape"])
        self.arrays = arrays
        self.op, self.layer = self.meta["op"], int(self.meta["layer"])
        self.config = json.loads(self.meta["config"])
        self.positions, self.tokens = arrays["positions"], arrays["tokens"]
        self.inputs = {k[len("input."):]: v for k, v in arrays.items() if k.startswith("input.")}
        self.kv = {k[len("kv."):]: v for k, v in arrays.items() if k.startswith("kv.")}
        self.weights = {k[len("weight."):]: v for k, v in arrays.items() if k.startswith("weight.")}
        self.reference, self.engine = arrays["output.reference"], arrays["output.engine"]


def metrics(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """b against the reference a, [rows, cols], as tapdiff measures them."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    finite = np.isfinite(a) & np.isfinite(b)
    alike = (np.isnan(a) & np.isnan(b)) | (np.isinf(a) & (a == b))
    a_row = np.where(np.isfinite(a), a, 0.0)
    row_rms = np.sqrt((a_row * a_row).sum(axis=1, keepdims=True) / max(a.shape[1], 1))
    x, y = np.where(finite, a, 0.0), np.where(finite, b, 0.0)
    d = np.abs(x - y)
    floor = np.maximum(np.abs(x), row_rms)
    rel = np.divide(d, floor, out=np.zeros_like(d), where=finite & (floor > 0))
    err, sq_a, sq_b, dot = (d * d).sum(), (x * x).sum(), (y * y).sum(), (x * y).sum()
    norms = np.sqrt(sq_a) * np.sqrt(sq_b)
    return {
        "nonfinite": int(np.count_nonzero(~finite & ~alike)),
        "nonfinite_both": int(np.count_nonzero(~finite & alike)),
        "nmse": err / sq_a if sq_a > 0 else (np.inf if err > 0 else 0.0),
        "max_abs": float(d.max(initial=0.0)),
        "max_rel": float(rel.max(initial=0.0)),
        "cosine": dot / norms if norms > 0 else (1.0 if err == 0 else 0.0),
    }


def violations(m: dict[str, float], meta: dict[str, str]) -> list[str]:
    """The bounds m breaks, as tapdiff words them ("nmse 2.1e-03 > 1e-08")."""
    out = [f"{k} {m[k]}" for k in ("nonfinite", "nonfinite_both") if m[k] > 0]
    for metric, key, above in (("nmse", "bound_nmse", True), ("max_abs", "bound_max_abs", True),
                               ("max_rel", "bound_max_rel", True), ("cosine", "bound_min_cosine", False)):
        if key in meta:
            bound = float(meta[key])
            within = m[metric] <= bound if above else m[metric] >= bound
            if not within:  # a NaN metric is never within
                out.append(f"{metric} {m[metric]:.3g} {'>' if above else '<'} {bound:.3g}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replay", choices=("engine", "reference"),
                        help="check a recorded output instead of kernel.py's")
    parser.add_argument("--case", type=Path, default=HERE / "case.safetensors")
    args = parser.parse_args()
    case = Case(args.case)
    if args.replay:
        output, source = getattr(case, args.replay), f"the {args.replay}'s recorded output"
    else:
        sys.path.insert(0, str(HERE))
        sys.dont_write_bytecode = True  # no __pycache__ in the case's folder: tapdiff writes it again
        from kernel import kernel  # noqa: PLC0415 (the file beside this one, filled in by you)
        try:
            output, source = kernel(case), "kernel.py"
        except NotImplementedError as e:
            print(f"check.py: {e}", file=sys.stderr)
            return 2
    output = np.asarray(output)
    if output.shape != case.reference.shape:
        print(f"check.py: {source} has shape {list(output.shape)}: expected {list(case.reference.shape)} "
              f"(rows at positions {case.positions[0]}..{case.positions[-1]}, the op's width)", file=sys.stderr)
        return 2
    m = metrics(case.reference, output)
    bad = violations(m, case.meta)
    row_bad = next((r for r in range(output.shape[0])
                    if violations(metrics(case.reference[r:r + 1], output[r:r + 1]), case.meta)), None)
    print(f"{case.meta['layer']}/{case.op} of {case.meta['model']}: forward pass {case.meta['pass']}, "
          f"{output.shape[0]} rows at positions {case.positions[0]}..{case.positions[-1]}")
    print(f"tolerance: {case.meta['tolerance']} ({case.meta['tolerance_source']})")
    print(f"{source}: nmse {m['nmse']:.3g}, max_abs {m['max_abs']:.3g}, max_rel {m['max_rel']:.3g}, "
          f"cosine {m['cosine']:.9f}, nonfinite {m['nonfinite']}")
    print(f"tapdiff measured the engine's: nmse {float(case.meta['engine_nmse']):.3g}, "
          f"max_abs {float(case.meta['engine_max_abs']):.3g}")
    if not bad and row_bad is None:
        print("PASS: within the tolerance")
        return 0
    where = f"; first row past it alone: position {case.positions[row_bad]}" if row_bad is not None else ""
    print(f"FAIL: {'; '.join(bad) if bad else 'a row past the tolerance'}{where}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
