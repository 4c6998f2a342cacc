"""Properties of the Python DumpWriter (python/tapdiff) over runs hypothesis draws: prefill chunks
and decode steps of any length, any subset of taps recorded per chunk (NaN and inf among the
values), chunks abandoned by an exception, a writer stopped before finish(), in each storage type;
and bad input of every kind the writer refuses.

Each drawn run is checked against what the test itself recorded: h5py reads back every row's
position, chunk, decode flag and token and every tap's values (the stored type's rounding of
what was given; NaN for a chunk that did not record the tap), rows_complete is the rows of the
chunks that ended, and `tapdiff validate` passes the dump (an unfinished one: `tapdiff inspect`
reads it as incomplete). A refused input raises ValueError naming what it was given, writes
nothing, and the run goes on to a dump that holds only the rest.

TAPDIFF_HYPOTHESIS_EXAMPLES (default 40) sets the examples of each property; the draws are
derandomized, so a run of CI sees the same ones."""
from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tapdiff import DumpWriter
from test_python_writer import MODEL, TAPDIFF, info  # noqa: F401

EXAMPLES = int(os.environ.get("TAPDIFF_HYPOTHESIS_EXAMPLES", "40"))
PROPERTY = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
STORAGE = {"f16": np.float16, "f32": np.float32, "f64": np.float64}
TAPS = [(-1, "embed"), (0, "attn_norm"), (0, "q_proj"), (1, "ffn_down"), (2, "logits")]
SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0]


@st.composite
def chunks(draw, vocab: int):
    """One forward pass: its tokens, decode or not, what it records, and whether it ends well."""
    decode = draw(st.booleans())
    rows = 1 if decode else draw(st.integers(1, 6))
    tokens = draw(st.lists(st.integers(0, vocab - 1), min_size=rows, max_size=rows))
    recorded = draw(st.lists(st.sampled_from(range(len(TAPS))), unique=True, max_size=len(TAPS)))
    seed = draw(st.integers(0, 2**32 - 1))
    specials = draw(st.integers(0, 3))
    abandoned = draw(st.integers(0, 9)) == 0
    return {"decode": decode, "tokens": tokens, "recorded": recorded, "seed": seed, "specials": specials,
            "abandoned": abandoned}


def tap_values(rng: np.random.Generator, rows: int, width: int, specials: int) -> np.ndarray:
    values = rng.normal(size=(rows, width)) * 10.0 ** rng.integers(-3, 4)
    for _ in range(specials):
        values[rng.integers(rows), rng.integers(width)] = SPECIALS[rng.integers(len(SPECIALS))]
    return values


class Abandon(Exception):
    pass


def widths(info: dict) -> dict:
    return {(t["layer"], t["op"]): int(t["width"]) for t in info["taps"]}


def check_read_back(path: Path, storage, kept: list[dict], finished: bool, info: dict):
    """What h5py reads is what the run recorded, chunk by chunk."""
    with h5py.File(path, "r") as f:
        n = sum(len(c["tokens"]) for c in kept)
        assert int(f.attrs["rows_complete"]) == n
        assert int(f.attrs["complete"]) == int(finished)
        rows = f["rows"]
        assert rows["token"][:n].tolist() == [t for c in kept for t in c["tokens"]]
        assert rows["decode"][:n].tolist() == [int(c["decode"]) for c in kept for _ in c["tokens"]]
        assert rows["chunk"][:n].tolist() == [i for i, c in enumerate(kept) for _ in c["tokens"]]
        assert rows["position"][:n].tolist() == list(range(n))
        if finished:
            assert f["prompt_tokens"][:].tolist() == [t for c in kept if not c["decode"] for t in c["tokens"]]
        for t, (layer, op) in enumerate(TAPS):
            if not any(t in c["values"] for c in kept):
                continue
            stored = f[f"taps/{layer}/{op}"][:n]
            assert stored.dtype == storage
            width = widths(info)[(layer, op)]
            expected = np.concatenate([c["values"][t].astype(storage) if t in c["values"]
                                       else np.full((len(c["tokens"]), width), np.nan, storage) for c in kept])
            np.testing.assert_array_equal(stored, expected)


@given(storage=st.sampled_from(sorted(STORAGE)), plan=st.data(), finish=st.booleans())
@PROPERTY
def test_a_drawn_run_reads_back_as_recorded_and_validates(info, storage, plan, finish):
    vocab = int(info["model_config"]["vocab"])
    run = plan.draw(st.lists(chunks(vocab), min_size=1, max_size=6))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.h5"
        kept = []
        with DumpWriter(path, MODEL, info=info, storage_dtype=storage) as dump:
            for c in run:
                rng = np.random.default_rng(c["seed"])
                c["values"] = {t: tap_values(rng, len(c["tokens"]), widths(info)[TAPS[t]], c["specials"])
                               for t in c["recorded"]}
                try:
                    with dump.chunk(c["tokens"], decode=c["decode"]) as chunk:
                        for t, values in c["values"].items():
                            chunk.record(TAPS[t][0], TAPS[t][1], values)
                        if c["abandoned"]:
                            raise Abandon()
                except Abandon:
                    continue
                kept.append(c)
            if finish:
                dump.finish(generated=[c["tokens"][0] for c in kept if c["decode"]])
        check_read_back(path, STORAGE[storage], kept, finish, info)
        if finish and kept:
            done = subprocess.run([TAPDIFF, "validate", str(path)], capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stdout + done.stderr
        elif not finish:
            done = subprocess.run([TAPDIFF, "inspect", str(path)], capture_output=True, text=True, timeout=60)
            assert done.returncode == 0 and "INCOMPLETE: the run stopped early" in done.stdout, \
                done.stdout + done.stderr


BAD = {  # kind: (what is drawn, the call it is given to, what the error says)
    "fractional token": (st.floats(0.01, 0.99).map(lambda f: [1, 2 + f]), "tokens", r"tokens: expected whole numbers"),
    "None token": (st.just([1, None]), "tokens", r"tokens: expected whole numbers"),
    "token past the vocabulary": (st.integers(512, 2**40).map(lambda t: [1, t]), "tokens", r"tokens: expected ids in"),
    "negative token": (st.integers(-2**40, -1).map(lambda t: [t, 1]), "tokens", r"tokens: expected ids in"),
    "huge float token": (st.floats(2.0**62, 1e300).map(lambda f: [f, 1.0]), "tokens",
                         r"tokens: expected whole numbers"),
    "fractional position": (st.floats(0.01, 0.99).map(lambda f: [0, 1 + f]), "positions", r"positions: expected whole"),
    "negative position": (st.integers(-2**31, -1).map(lambda p: [p, 0]), "positions", r"positions: expected 32-bit"),
    "decode not a flag": (st.sampled_from([2, -1, 7, "yes", 0.5, None]), "decode", r"decode: expected True or False"),
    "fractional layer": (st.floats(0.01, 0.99), "layer", r"layer: expected whole numbers"),
    "layer as text": (st.just("0"), "layer", r"layer: expected whole numbers"),
    "op not a name": (st.sampled_from([0, None, b"q_proj"]), "op", r"op: expected an op name"),
    "None values": (st.just(None), "values", r"0/q_proj: expected numbers"),
    "wrong shape": (st.integers(1, 200).filter(lambda w: w != 64), "width", r"0/q_proj: expected shape \[2, 64\]"),
    "beyond f16": (st.floats(65520.0, 1e300), "f16 value", r"0/q_proj: 1 finite value\(s\) beyond the storage type"),
    "generated past the vocabulary": (st.integers(512, 2**31), "generated", r"generated: expected ids in"),
}


@given(kind=st.sampled_from(sorted(BAD)), data=st.data())
@PROPERTY
def test_bad_input_is_refused_by_name_and_writes_nothing(info, kind, data):
    strategy, call, message = BAD[kind]
    bad = data.draw(strategy)
    good = np.random.default_rng(1).normal(size=(2, 64))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bad.h5"
        with DumpWriter(path, MODEL, info=info, storage_dtype="f16" if call == "f16 value" else "f32") as dump:
            with dump.chunk([3]) as chunk:
                chunk.record(0, "q_proj", good[:1])
            with pytest.raises(ValueError, match=message):
                if call == "generated":
                    dump.finish(generated=[1, bad])
                tokens, positions, decode, layer, op, values = [1, 2], None, False, 0, "q_proj", good
                if call == "tokens":
                    tokens = bad
                elif call == "positions":
                    positions = bad
                elif call == "decode":
                    tokens, decode = [1], bad
                elif call == "layer":
                    layer = bad
                elif call == "op":
                    op = bad
                elif call == "values":
                    values = bad
                elif call == "width":
                    values = np.zeros((2, bad))
                elif call == "f16 value":
                    values = good.copy()
                    values[1, 5] = bad
                with dump.chunk(tokens, positions=positions, decode=decode) as chunk:
                    chunk.record(layer, op, values[:len(tokens)] if call == "decode" else values)
            dump.finish(generated=[4])
        with h5py.File(path, "r") as f:
            assert int(f.attrs["rows_complete"]) == 1 and int(f.attrs["complete"]) == 1
            assert f["rows"]["token"][:].tolist() == [3]
            assert f["taps/0/q_proj"].shape == (1, 64)
        done = subprocess.run([TAPDIFF, "validate", str(path)], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
