"""The checks `--repro DIR` writes, run as an engine's own suite would run them: check.py with the
Python of this environment and check.c built by the system's C compiler, each replaying the
engine's recorded output (it must fail, with the numbers tapdiff measured) and the reference's (it
must pass); with kernel.py and kernel.c as written (nothing filled in) each says it cannot run."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest


def python_check(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "check.py", *args], cwd=folder, capture_output=True, text=True, timeout=300)


def c_check(folder: Path, *args: str) -> subprocess.CompletedProcess:
    if not (folder / "check").exists():
        built = subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-O2", "-o", "check", "check.c",
                                "kernel.c", "-lm"], cwd=folder, capture_output=True, text=True, timeout=120)
        assert built.returncode == 0, built.stdout + built.stderr
    return subprocess.run(["./check", *args], cwd=folder, capture_output=True, text=True, timeout=300)


def number(pattern: str, text: str) -> float:
    found = re.search(pattern, text)
    assert found, f"{pattern!r} not in:\n{text}"
    return float(found.group(1))


def assert_replays(folder: Path) -> float:
    """Both checks fail on the engine's output as tapdiff measured it and pass on the reference's;
    returns the engine's NMSE on the case's rows."""
    nmse = None
    for check in (python_check, c_check):
        engine = check(folder, "--replay", "engine")
        out = engine.stdout + engine.stderr
        assert engine.returncode == 1 and "FAIL: " in engine.stdout, out
        measured = number(r"the engine's recorded output: nmse (\S+),", engine.stdout)
        assert measured == pytest.approx(number(r"tapdiff measured the engine's: nmse (\S+),", engine.stdout),
                                         rel=5e-3), out
        nmse = measured
        reference = check(folder, "--replay", "reference")
        assert reference.returncode == 0 and "PASS: within the tolerance" in reference.stdout, \
            reference.stdout + reference.stderr
        unfilled = check(folder)
        assert unfilled.returncode == 2 and "here" in unfilled.stderr, unfilled.stdout + unfilled.stderr
    return nmse
