"""llama.cpp's own runs, every intermediate value taken through examples/llama-cpp-taps, on
node-llama-cpp's prebuilt backends (scripts/node-peers.sh): its CPU backend, and its Vulkan backend
with every layer offloaded (on Mesa's lavapipe where no GPU is present). Shared by the conformance
suite and bench/llama_cpp_detection.py; and models with a fraction of one matrix's blocks negated,
a dequantization bug run by llama.cpp only."""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np

ROOT = Path(__file__).resolve().parents[2]

# llama.cpp's CPU builds whose products the emulation does not model: sapphirerapids multiplies F16
# weights by f32 activations (and runs its AMX kernels for block weights), where every other build
# rounds the activations to the weight's dot-product type (docs/llama-cpp.md).
UNMODELLED_BUILDS = ("sapphirerapids",)
BUILDS = {"cpu": "linux-x64", "vulkan": "linux-x64-vulkan"}


@dataclass
class Harness:
    binary: Path
    backends: Path  # the folder of ggml backends it loads
    backend: str    # cpu or vulkan

    def env(self) -> dict:
        # ggml lists a Vulkan device of CPU type (lavapipe) only when told to.
        return {**os.environ, "GGML_VK_VISIBLE_DEVICES": "0"} if self.backend == "vulkan" else dict(os.environ)

    def args(self) -> list[str]:
        return ["--backends", str(self.backends)] + (["--gpu-layers", "999"] if self.backend == "vulkan" else [])


def build_harness(folder: Path, backend: str) -> Harness:
    """The harness built against node-llama-cpp's libraries of `backend`, and a folder of the
    backends it loads: every CPU build but those the emulation does not model, and for vulkan
    ggml's Vulkan backend."""
    binary = folder / f"llama_cpp_taps_{backend}"
    subprocess.run([str(ROOT / "examples" / "llama-cpp-taps" / "build.sh"), str(binary), backend], check=True,
                   capture_output=True, text=True)
    peers = Path(subprocess.run([str(ROOT / "scripts" / "node-peers.sh")], capture_output=True, text=True,
                                check=True).stdout.strip())
    bins = peers / "node_modules" / "@node-llama-cpp" / BUILDS[backend] / "bins" / BUILDS[backend]
    backends = folder / f"backends_{backend}"
    backends.mkdir()
    libraries = list(bins.glob("libggml-cpu-*.so")) + list(bins.glob("libggml-vulkan.so"))
    for library in libraries:
        if library.stem.removeprefix("libggml-cpu-") not in UNMODELLED_BUILDS:
            (backends / library.name).symlink_to(library)
    return Harness(binary, backends, backend)


def llama_cpp_dump(harness: Harness, model: Path, out: Path, prompt: list[int], generate: int = 0,
                   chunk: int = 64) -> list[int]:
    """llama.cpp's run of `prompt` in chunks of `chunk`, then `generate` greedy tokens: its tokens."""
    out.mkdir()
    run = subprocess.run([str(harness.binary), str(model), str(out), ",".join(map(str, prompt)), "--chunk",
                          str(chunk), "--generate", str(generate), *harness.args()], capture_output=True, text=True,
                         timeout=300, env=harness.env())
    assert run.returncode == 0, run.stderr
    if harness.backend == "vulkan":
        assert "assigned to device Vulkan0" in run.stderr, run.stderr[-2000:]
    return [int(t) for t in run.stdout.strip().splitlines()[-1].split(",")]


def negate_blocks(model: Path, out: Path, tensor: str, fraction: float) -> int:
    """A copy of `model` whose tensor `tensor` (Q8_0) has every round(1 / fraction)-th block's
    values negated (its f16 scale's sign flipped): how many blocks."""
    data = bytearray(model.read_bytes())
    reader = gguf.GGUFReader(model)
    (info,) = [t for t in reader.tensors if t.name == tensor]
    assert info.tensor_type == gguf.GGMLQuantizationType.Q8_0, info.tensor_type
    block_bytes = 34  # an f16 scale and 32 int8 values
    blocks = int(info.n_bytes) // block_bytes
    step = max(1, round(1 / fraction))
    chosen = range(step // 2, blocks, step)
    for b in chosen:
        data[int(info.data_offset) + b * block_bytes + 1] ^= 0x80  # the sign bit of the little-endian f16
    out.write_bytes(bytes(data))
    return len(chosen)


def blocks_of(model: Path, tensor: str) -> int:
    (info,) = [t for t in gguf.GGUFReader(model).tensors if t.name == tensor]
    return int(info.n_bytes) // 34


def f16_values(x: np.ndarray) -> bool:
    return bool(np.all(x.astype(np.float16).astype(np.float32) == x))
