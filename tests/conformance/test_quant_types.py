"""Every ggml block type tapdiff reads dequantizes bit for bit as the gguf package (llama.cpp's own
Python library) dequantizes it: a token-embedding table of random blocks (every bit pattern of
the quants, scales with random f16 or E8M0 values, subnormals included), read back through the embedding
op of the reference and of the Vulkan engine (f32: exact; f16: that value rounded to f16)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import gguf
import h5py
import numpy as np
import pytest

from gguf_models import VOCAB, add_vocabulary, write_tiny_llama

ROOT = Path(__file__).resolve().parents[2]
TAPDIFF = os.environ.get("TAPDIFF_BINARY", str(ROOT / "build" / "tapdiff"))
Q = gguf.GGMLQuantizationType
DIM = 256

# Byte offsets of each block's f16 fields (d, and m or dmin), as ggml lays the block out.
F16_FIELDS = {
    Q.Q8_0: [0], Q.Q4_0: [0], Q.Q4_1: [0, 2], Q.Q5_0: [0], Q.Q5_1: [0, 2], Q.IQ4_NL: [0],
    Q.Q2_K: [80, 82], Q.Q3_K: [108], Q.Q4_K: [0, 2], Q.Q5_K: [0, 2], Q.Q6_K: [208], Q.IQ4_XS: [0], Q.MXFP4: [],
}
# Byte offsets of each block's E8M0 scale (MXFP4's 2^(e - 128)): values within f16's range, subnormal
# scales (e < 2) included.
E8M0_FIELDS = {Q.MXFP4: [0]}


def random_blocks(qtype: Q, rows: int, rng: np.random.Generator) -> np.ndarray:
    """rows x DIM values of qtype as raw bytes: random quants, finite random f16 scales."""
    block_size, type_size = gguf.GGML_QUANT_SIZES[qtype]
    blocks = rng.integers(0, 256, size=(rows * DIM // block_size, type_size), dtype=np.uint8)
    for at in F16_FIELDS[qtype]:
        bits = rng.integers(0, 1 << 16, size=blocks.shape[0], dtype=np.uint32)
        exponent = rng.integers(0, 18, size=blocks.shape[0], dtype=np.uint32)  # 0: subnormal; below 2^3
        half = ((bits & 0x83FF) | (exponent << 10)).astype(np.uint16)
        blocks[:, at:at + 2] = half.view(np.uint8).reshape(-1, 2)
    for at in E8M0_FIELDS.get(qtype, []):
        blocks[:, at] = rng.integers(0, 141, size=blocks.shape[0], dtype=np.uint8)
    return blocks.reshape(rows, -1)


def embedded_table(model: Path, dump: Path, *engine: str) -> np.ndarray:
    run = subprocess.run([TAPDIFF, "run", "--model", str(model), "--tokens", ",".join(map(str, range(VOCAB))),
                          "--taps", "embed", "--dump", str(dump), *engine], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    with h5py.File(dump, "r") as f:
        return f["taps"]["-1"]["embed"][()]


@pytest.mark.parametrize("qtype", list(F16_FIELDS), ids=lambda q: q.name)
def test_dequantization_is_bit_for_bit_the_gguf_package_s(qtype, tmp_path):
    rng = np.random.default_rng(int(qtype))
    table = random_blocks(qtype, VOCAB, rng)
    expected = gguf.quants.dequantize(table, qtype).astype(np.float32)
    assert expected.shape == (VOCAB, DIM) and np.isfinite(expected).all()
    model = tmp_path / f"{qtype.name}.gguf"
    write_tiny_llama(model, DIM, VOCAB, add_vocabulary, table, qtype, seed=int(qtype))
    for engine in (["--engine", "ref", "--dtype", "f32"], ["--engine", "ref", "--dtype", "f64"],
                   ["--engine", "vulkan"]):
        got = embedded_table(model, tmp_path / "embed.h5", *engine)
        mismatched = np.flatnonzero(got.astype(np.float32).view(np.uint32) != expected.view(np.uint32))
        assert mismatched.size == 0, (f"{' '.join(engine)}: {mismatched.size} values differ, first at "
                                      f"{np.unravel_index(mismatched[0], got.shape)}: "
                                      f"{got.flat[mismatched[0]]!r} != {expected.flat[mismatched[0]]!r}")
    got = embedded_table(model, tmp_path / "embed.h5", "--engine", "vulkan", "--dtype", "f16")
    np.testing.assert_array_equal(got.astype(np.float16), expected.astype(np.float16))
