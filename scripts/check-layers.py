#!/usr/bin/env python3
"""Checks the include graph against the layer order: a file includes headers of its own room and
of rooms below it only. Prints every include that runs up or sideways, and exits 1 if there is one.

    scripts/check-layers.py

Rooms, from the bottom (a room lists the rooms it may include):
  model                                 the network: ops, block, graph, config, weights, engine seam
  formats                               model files (GGUF, safetensors, config.json): model
  formats/families                      one file per family: formats, model
  text                                  vocabularies, tokenizers, Unicode: formats, model
  reference, gpu, dumps                 the engines and the dump format: formats, model
  bisect                                compare, judge, drive, report: model, formats, reference, gpu, dumps
  bisect/cli                            the tapdiff binary: bisect and below, text
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
    "bisect": {"model", "formats", "reference", "gpu", "dumps"},
    "bisect/cli": {"bisect", "model", "formats", "text", "reference", "gpu", "dumps"},
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
        print(f"check-layers: {len(bad)} includes run up or sideways", file=sys.stderr)
        return 1
    print("layers: every include runs down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
