#!/usr/bin/env python3
"""Checks the include graph against the layer order: a file includes headers of its own room and
of rooms below it only, and every source file of a room folder is in a room. Prints every include
that runs up or sideways and every file in no room, and exits 1 if there is one.

    scripts/check-layers.py

Rooms, from the bottom (a room lists the rooms it may include):
  model                                 the network: ops, block, graph, config, weights, engine seam
  formats                               model files (GGUF, safetensors, config.json): model
  formats/families                      one file per family: formats, model
  text                                  vocabularies, tokenizers, Unicode: formats, model
  reference, gpu, dumps                 the engines and the dump format: formats, model
  bisect/compare                        metrics, tolerances, the comparison of two runs: model, formats, dumps
  bisect/drive                          engines in lockstep, the bisection: bisect/compare and below
  bisect/judge                          the diagnoses: bisect/drive and below
  bisect/report                         the renderings: bisect/judge and below
  bisect/cli                            the tapdiff binary: everything but bench, tests, examples
  bench, tests, examples                everything
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BELOW = {
    "model": set(),
    "formats": {"model"},
    "formats/families": {"formats", "model"},
    "text": {"formats", "model"},
    "reference": {"formats", "model"},
    "gpu": {"formats", "model"},
    "dumps": {"formats", "model"},
    "bisect/compare": {"model", "formats", "dumps"},
    "bisect/drive": {"bisect/compare", "model", "formats", "dumps"},
    "bisect/judge": {"bisect/drive", "bisect/compare", "model", "formats", "dumps"},
    "bisect/report": {"bisect/judge", "bisect/drive", "bisect/compare", "model", "formats", "dumps"},
    "bisect/cli": {"bisect/report", "bisect/judge", "bisect/drive", "bisect/compare", "model", "formats", "text",
                   "reference", "gpu", "dumps"},
}
EVERYTHING = {"bench", "tests", "examples"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def room_of(path: str) -> str | None:
    """The room of a path relative to the root: its longest room prefix."""
    best = None
    for room in list(BELOW) + sorted(EVERYTHING):
        if path.startswith(room + "/") and (best is None or len(room) > len(best)):
            best = room
    return best


def main() -> int:
    bad = []
    for source in sorted(ROOT.rglob("*")):
        if source.suffix not in (".cpp", ".h", ".c", ".def") or not source.is_file():
            continue
        relative = source.relative_to(ROOT).as_posix()
        if relative.startswith("build") or "/build" in relative:
            continue
        room = room_of(relative)
        if room is None and relative.split("/")[0] in {r.split("/")[0] for r in BELOW}:
            bad.append(f"{relative}: in no room (its folder is not one of {sorted(BELOW)})")
            continue
        if room is None or room in EVERYTHING:
            continue
        allowed = BELOW[room] | {room}
        for included in INCLUDE.findall(source.read_text(errors="replace")):
            target = room_of(included)
            if target is None:
                continue  # a generated header or one of the same folder, by its own name
            if target not in allowed:
                bad.append(f"{relative}: includes {included} (room {target}); {room} may include {sorted(allowed)}")
    for line in bad:
        print(line)
    if bad:
        print(f"check-layers: {len(bad)} problems (an include running up or sideways, a file in no room)", file=sys.stderr)
        return 1
    print("layers: every include runs down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
