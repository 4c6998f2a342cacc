"""PyTorch `.pt` dumps as safetensors folders tapdiff reads (docs/import.md).

    python -m tapdiff.torch_dumps SRC OUT

SRC is an SGLang dumper folder (its `sglang.srt.debug_utils.dumper`: one `.pt` per value, named
`step=S___rank=R___dump_index=N___name=NAME[___TAG=V...].pt`, each holding {"value": tensor,
"meta": {...}}), or a folder of `.pt` files each holding one forward pass as a dict of named
tensors, or one such file. OUT (a new folder) gets one safetensors file per forward pass that
holds values, `step_I.safetensors` in order, for `tapdiff compare ref.h5 OUT --map vllm` (SGLang)
or the map of the dicts' names.

Every file is read with `torch.load(weights_only=True)`: PyTorch's restricted unpickler, which
builds tensors and plain containers only and refuses any other object before anything in it runs.
tapdiff itself never unpickles.

SGLang's names are its modules' (the dumper's non-intrusive mode): `non_intrusive__X.output` is read
as X, `X.output.K` (a tuple's K-th tensor) as X.K and `X.inputs.0` as X:input, which is how the
vllm and hf maps name a module's values; `input_ids` and `positions` are the rows' provenance.
Values named otherwise keep their names (a TOML map can name them). One rank's run is read: a
folder holding several ranks' values, or a value whose meta names a parallel group of more than
one rank, is refused (a sharded run is not read yet).
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

_PREFIX = "non_intrusive__"
_BOOKKEEPING = ("seq_lens", "req_pool_indices", "rids")  # the batch's, not rows


def _load(path: Path):
    import torch

    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch's UnpicklingError, or a file that is not torch.save's
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(f"{path}: expected tensors saved by torch.save (read with weights_only=True), found "
                         f"what that refuses: {first}") from None


def _tags(path: Path) -> dict[str, str]:
    """The dumper's tags of a file name, step=3___rank=0___name=x.y (a name may hold '.' and '__');
    {} for a name not made of them."""
    tags = {}
    for part in path.name[:-len(".pt")].split("___"):
        key, sep, value = part.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key) or key in tags:
            return {}
        tags[key] = value
    return tags


def sglang_name(name: str) -> str:
    """A value's name under the import maps: SGLang's module paths as vllm's and hf's rules hold them."""
    if not name.startswith(_PREFIX):
        return name
    rest = name[len(_PREFIX):]
    module, sep, part = rest.rpartition(".output")
    if sep and (part == "" or re.fullmatch(r"\.\d+", part)):
        return module + part
    module, sep, part = rest.rpartition(".inputs.")
    if sep and part == "0":
        return module + ":input"
    return rest


def _tensor(value, where: str):
    import torch

    if not isinstance(value, torch.Tensor):
        raise ValueError(f"{where}: expected a tensor, found {type(value).__name__}")
    return value.detach().contiguous()


def _same(a, b) -> bool:
    """The same values bit for bit (NaN included)."""
    import torch

    return (a.dtype == b.dtype and a.shape == b.shape
            and torch.equal(a.reshape(-1).view(torch.uint8), b.reshape(-1).view(torch.uint8)))


def _sharding(meta) -> str:
    """The first parallel group of more than one rank the dumper's meta names ("tp_size = 2", from
    world_size or any <plugin>_parallel_info), or ""."""
    if not isinstance(meta, dict):
        return ""
    groups = {}
    for key, info in meta.items():
        if key.endswith("_parallel_info") and isinstance(info, dict):
            groups.update({k: v for k, v in info.items() if k.endswith("_size")})
    groups["world_size"] = meta.get("world_size")
    return next((f"{k} = {v}" for k, v in groups.items() if isinstance(v, int) and v > 1), "")


def _sglang_steps(files: list[Path]) -> dict[int, dict]:
    tags = {path: _tags(path) for path in files}
    for path, t in tags.items():
        if "name" not in t or not t.get("step", t.get("forward_pass_id", "")).isdigit():
            raise ValueError(f"{path}: expected an SGLang dumper file name (step=S___...___name=NAME.pt, S a "
                             f"number), found {path.name!r}")
    ranks = {t.get("rank", "0") for t in tags.values()}
    if len(ranks) > 1:
        raise ValueError(f"{files[0].parent}: expected one rank's values, found ranks {', '.join(sorted(ranks))} (a "
                         f"sharded run is not read yet: give one rank's files)")
    steps: dict[int, dict] = {}
    seen: dict[tuple[int, str], Path] = {}
    for path, t in tags.items():
        step, name = int(t.get("step", t.get("forward_pass_id"))), sglang_name(t["name"])
        content = _load(path)
        meta = content.get("meta") if isinstance(content, dict) else None
        if sharded := _sharding(meta):
            raise ValueError(f"{path}: expected a run on one rank, found {sharded} in its meta (a sharded run's "
                             f"values are slices or partial sums, which are not read yet)")
        value = content["value"] if isinstance(content, dict) and "value" in content else content
        if name in _BOOKKEEPING or value is None:
            continue
        tensor, held = _tensor(value, str(path)), steps.setdefault(step, {})
        if name in held and not _same(held[name], tensor):
            raise ValueError(f"{path}: a second value for {name!r} in step {step}, unlike the first "
                             f"({seen[(step, name)].name}): expected one per forward pass")
        seen.setdefault((step, name), path)
        held.setdefault(name, tensor)
    return steps


def _dict_steps(files: list[Path]) -> dict[int, dict]:
    steps = {}
    for i, path in enumerate(files):
        content = _load(path)
        if not isinstance(content, dict) or not content:
            raise ValueError(f"{path}: expected a dict of named tensors (one forward pass), found "
                             f"{type(content).__name__}")
        steps[i] = {str(k): _tensor(v, f"{path}: '{k}'") for k, v in content.items()}
    return steps


def _natural(path: Path):
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", path.name)]


def convert(src: Path, out: Path) -> list[Path]:
    """Writes OUT/step_I.safetensors for the I-th forward pass of SRC that holds values (SGLang's
    dumper counts its scheduler's idle steps too); returns the files written."""
    from safetensors.torch import save_file

    src, out = Path(src), Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"{out}: expected a new or empty folder for the converted dump, found one in use")
    files = sorted(src.glob("*.pt"), key=_natural) if src.is_dir() else [src]
    if not files:
        raise ValueError(f"{src}: expected .pt files, found none")
    sglang = all(_tags(f).get("name") is not None for f in files)
    steps = _sglang_steps(files) if sglang else _dict_steps(files)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for i, step in enumerate(sorted(steps)):
        path = out / f"step_{i}.safetensors"
        save_file(steps[step], str(path))
        written.append(path)
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tapdiff.torch_dumps",
                                     description="Convert PyTorch .pt dumps (SGLang's dumper, or dicts of tensors "
                                                 "per forward pass) into a folder of safetensors for tapdiff")
    parser.add_argument("src", type=Path, help="an SGLang dump folder, a folder of .pt files, or one .pt file")
    parser.add_argument("out", type=Path, help="a new folder for the safetensors files")
    args = parser.parse_args(argv)
    try:
        written = convert(args.src, args.out)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{len(written)} forward passes written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
