"""A tapdiff dump writer (docs/dump-format.md) that checks what it is given as it writes."""
import datetime
import json
import shutil
import subprocess
import sys
import warnings

import h5py
import numpy as np

SCHEMA_VERSION = 1
TOOL_VERSION = "tapdiff-python 0.1.0"
_STORAGE = {"f16": np.float16, "f32": np.float32, "f64": np.float64}
_MAX_CHUNK_ROWS = 64


def model_info(model, tapdiff="tapdiff"):
    """The JSON of `tapdiff model-info --model MODEL`: model_config, model_sha256, model_path and
    every tap ({layer, op, width}) in graph order."""
    binary = shutil.which(tapdiff) or tapdiff
    done = subprocess.run([binary, "model-info", "--model", str(model)], capture_output=True, text=True)
    if done.returncode != 0:
        raise ValueError(f"tapdiff model-info --model {model}: {done.stderr.strip() or done.stdout.strip()}")
    return json.loads(done.stdout)


def _integers(values, what):
    """values as int64, refusing what is not a whole number (1.7, None, text): an id or position
    is never rounded here."""
    array = np.asarray(values).reshape(-1)
    too_large = array.dtype.kind == "u" and array > np.iinfo(np.int64).max
    if np.any(too_large):
        raise ValueError(f"{what}: expected whole numbers of 63 bits, found {array[too_large][:4].tolist()}")
    if np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.bool_):
        return array.astype(np.int64)
    if (np.issubdtype(array.dtype, np.floating) and np.all(np.isfinite(array)) and np.all(array == np.floor(array))
            and np.all(np.abs(array) < 2.0**62)):
        return array.astype(np.int64)
    raise ValueError(f"{what}: expected whole numbers, found {array[:4].tolist()} ({array.dtype})")


def _whole(value, what):
    """One whole number as int, refusing 1.7, None, text and arrays: a layer is never rounded here."""
    array = _integers(value, what)
    if np.ndim(value) != 0 or array.size != 1:
        raise ValueError(f"{what}: expected one whole number, found {value!r}")
    return int(array[0])


class Chunk:
    """One forward pass being recorded: record() each op output, [rows, width]."""

    def __init__(self, writer, rows):
        self._writer = writer
        self.rows = rows
        self._recorded = set()

    def record(self, layer, op, values):
        if not isinstance(op, str):
            raise ValueError(f"op: expected an op name (str), found {op!r}")
        self._writer._record(self, _whole(layer, "layer"), op, values)

    def __enter__(self):
        return self

    def __exit__(self, kind, value, traceback):
        if kind is None:
            self._writer._end_chunk(self)
        else:
            self._writer._abandon_chunk()
        return False


class DumpWriter:
    """Writes a dump of one sequence's run, chunk by chunk, for `tapdiff compare` and `inspect`.

    model: the model the engine ran (GGUF file, Hugging Face folder, synth:SHAPE); its
    model_config, sha256 and tap widths come from `tapdiff model-info` (or pass info=, that JSON).
    Every record() is checked against them: the op and layer must exist, the shape must be
    [chunk rows, width], the values finite or not (NaN and inf are kept: they are findings).
    A chunk's rows become durable when it ends (rows_complete), so a crash leaves a readable dump.
    """

    def __init__(self, path, model, *, engine="python", device="", compute_dtype="f32", storage_dtype="f32",
                 kernels=None, tapdiff="tapdiff", info=None, command_line=None):
        if storage_dtype not in _STORAGE:
            raise ValueError(f"storage_dtype: expected one of {sorted(_STORAGE)}, found {storage_dtype!r}")
        self.info = info if info is not None else model_info(model, tapdiff)
        self._widths = {(t["layer"], t["op"]): int(t["width"]) for t in self.info["taps"]}
        self._storage = _STORAGE[storage_dtype]
        self._rows = 0
        self._chunks = 0
        self._next_position = 0
        self._first_chunk_rows = 0
        self._prompt = []
        self._open_chunk = None
        # The HDF5 1.10 format, as tapdiff writes: its chunk indexes never move an entry as they grow,
        # so the rows below rows_complete survive a writer killed at any moment (docs/dump-format.md).
        self._file = h5py.File(path, "w", libver=("v110", "v110"))
        f = self._file
        f.attrs["schema_version"] = SCHEMA_VERSION
        f.attrs["complete"] = 0
        f.attrs["rows_complete"] = 0
        f.flush()
        f.attrs["model_config"] = json.dumps(self.info["model_config"])
        f.attrs["model_sha256"] = self.info.get("model_sha256", "")
        f.attrs["model_path"] = self.info.get("model_path", str(model))
        f.attrs["tool_version"] = TOOL_VERSION
        f.attrs["engine"] = engine
        f.attrs["device"] = device
        f.attrs["compute_dtype"] = compute_dtype
        f.attrs["storage_dtype"] = storage_dtype
        f.attrs["kernels"] = json.dumps(kernels or {})
        f.attrs["command_line"] = command_line if command_line is not None else " ".join(sys.argv)
        f.attrs["created"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        rows = f.create_group("rows")
        for name, dtype in (("position", np.int32), ("chunk", np.int32), ("decode", np.uint8), ("token", np.int32)):
            rows.create_dataset(name, shape=(0,), maxshape=(None,), chunks=(1024,), dtype=dtype)
        f.create_group("taps")
        f.flush()

    # --- chunks -----------------------------------------------------------------------------

    def chunk(self, tokens, *, positions=None, decode=False):
        """Starts a forward pass over `tokens` (a prefill chunk, or one decode step's token).
        positions: the positions the engine used, one per token; default: continuing the
        sequence. Positions that do not continue it are written as given (they are what the
        engine did) with a warning: `tapdiff compare` reports them as a positions anomaly."""
        self._require_open("chunk()")
        if self._open_chunk is not None:
            raise RuntimeError("a chunk is still being recorded: end it (leave its with-block) first")
        tokens = self._token_ids(tokens, "tokens")
        if tokens.size == 0:
            raise ValueError("a chunk needs at least one token")
        if not (isinstance(decode, (bool, np.bool_)) or (isinstance(decode, (int, np.integer)) and decode in (0, 1))):
            raise ValueError(f"decode: expected True or False (a decode step or a prefill chunk), found {decode!r}")
        if decode and tokens.size != 1:
            raise ValueError(f"a decode step feeds one token, found {tokens.size}")
        expected = np.arange(self._next_position, self._next_position + tokens.size)
        positions = expected if positions is None else _integers(positions, "positions")
        if positions.size != tokens.size:
            raise ValueError(f"positions: expected {tokens.size} (one per token), found {positions.size}")
        if np.any((positions < 0) | (positions > np.iinfo(np.int32).max)):
            raise ValueError(f"positions: expected 32-bit positions >= 0, found {positions[:4].tolist()}...")
        if not np.array_equal(positions, expected):
            warnings.warn(f"chunk {self._chunks}: positions {positions[:4].tolist()}... do not continue the "
                          f"sequence at {self._next_position}: written as given")
        chunk = Chunk(self, int(tokens.size))
        chunk.tokens, chunk.positions, chunk.decode = tokens, positions, bool(decode)
        self._open_chunk = chunk
        return chunk

    def _token_ids(self, values, what):
        ids = _integers(values, what)
        vocab = int(self.info["model_config"]["vocab"])
        if np.any((ids < 0) | (ids >= vocab)):
            raise ValueError(f"{what}: expected ids in [0, {vocab}) (the model's vocabulary), found "
                             f"{ids[(ids < 0) | (ids >= vocab)][:4].tolist()}")
        return ids

    def _tap(self, layer, op, width):
        name = f"taps/{layer}/{op}"
        if name in self._file:
            return self._file[name]
        rows = max(1, min(_MAX_CHUNK_ROWS, 65536 // (width * np.dtype(self._storage).itemsize)))
        data = self._file.create_dataset(name, shape=(self._rows, width), maxshape=(None, width),
                                         chunks=(rows, width), dtype=self._storage, fillvalue=np.nan)
        data.attrs["layer"] = layer
        data.attrs["op"] = op
        return data

    def _record(self, chunk, layer, op, values):
        if chunk is not self._open_chunk:
            raise RuntimeError("record() on a chunk that has ended")
        width = self._widths.get((layer, op))
        if width is None:
            ops = sorted({o for (_, o) in self._widths})
            raise ValueError(f"{layer}/{op}: not an op of this model at that layer (ops: {', '.join(ops)}; "
                             f"layers -1 for embed, n_layers for final_norm and logits)")
        values = np.asarray(values)
        if not (np.issubdtype(values.dtype, np.floating) or np.issubdtype(values.dtype, np.integer)):
            raise ValueError(f"{layer}/{op}: expected numbers, found an array of {values.dtype} (None or objects "
                             f"would be written as NaN)")
        if values.ndim == 3 and values.shape[0] == 1:
            values = values[0]
        if values.shape != (chunk.rows, width):
            raise ValueError(f"{layer}/{op}: expected shape [{chunk.rows}, {width}] (the chunk's rows, the op's "
                             f"width), found {list(values.shape)}")
        if (layer, op) in chunk._recorded:
            raise ValueError(f"{layer}/{op} recorded twice in one chunk")
        if op == "moe_ids" and values.shape[1] > 1 and not np.all(np.diff(values, axis=1) > 0):
            row = int(np.argmax(np.any(np.diff(values, axis=1) <= 0, axis=1)))
            raise ValueError(f"{layer}/{op}: expected each row's expert ids ascending (and their moe_weights in that "
                             f"order: tapdiff compares the choice as a set), found {values[row].tolist()} in row {row}")
        if op == "moe_ids":
            experts = int(self.info["model_config"]["experts"]["count"])
            named = (values == np.floor(values)) & (values >= 0) & (values < experts)
            if not np.all(named):
                warnings.warn(f"{layer}/{op}: {int(np.sum(~named))} value(s) name no expert of [0, {experts}) "
                              f"(the first {values[~named][:4].tolist()}): written as given, a finding for compare")
        largest = np.finfo(self._storage).max
        wider = np.dtype(values.dtype).itemsize > np.dtype(self._storage).itemsize
        if np.issubdtype(values.dtype, np.floating) and wider:
            beyond = np.isfinite(values) & (np.abs(values) > largest)
            if np.any(beyond):
                raise ValueError(f"{layer}/{op}: {int(np.sum(beyond))} finite value(s) beyond the storage type's range "
                                 f"(largest {float(largest):g}; the first {values[beyond][:4].tolist()}) would be "
                                 f"stored as inf: store in a wider type")
        elif np.issubdtype(values.dtype, np.integer) and np.any(np.abs(values.astype(np.float64)) > largest):
            raise ValueError(f"{layer}/{op}: integers beyond the storage type's range (largest {float(largest):g}) "
                             f"would be stored as inf: store in a wider type")
        chunk._recorded.add((layer, op))
        data = self._tap(layer, op, width)
        data.resize(self._rows + chunk.rows, axis=0)
        data[self._rows:self._rows + chunk.rows] = values.astype(self._storage)

    def _end_chunk(self, chunk):
        f = self._file
        n, first = chunk.rows, self._rows
        for name, values in (("position", chunk.positions), ("chunk", np.full(n, self._chunks)),
                             ("decode", np.full(n, int(chunk.decode))), ("token", chunk.tokens)):
            d = f["rows"][name]
            d.resize(first + n, axis=0)
            d[first:] = values
        for layer in f["taps"]:
            for op in f["taps"][layer]:
                if (int(layer), op) not in chunk._recorded:  # NaN, whatever an abandoned chunk left there
                    d = f["taps"][layer][op]
                    d.resize(first + n, axis=0)
                    d[first:] = np.nan
        if not chunk.decode:
            self._prompt.extend(int(t) for t in chunk.tokens)
        if self._chunks == 0:
            self._first_chunk_rows = n
        f.flush()
        self._rows += n
        self._chunks += 1
        self._next_position = int(chunk.positions[-1]) + 1
        f.attrs["rows_complete"] = self._rows
        f.flush()
        self._open_chunk = None

    def _abandon_chunk(self):
        """Drops what the chunk recorded: its rows past rows_complete are never read, and the next
        chunk writes over them."""
        for layer in self._file["taps"]:
            for op in self._file["taps"][layer]:
                self._file["taps"][layer][op].resize(self._rows, axis=0)
        self._open_chunk = None

    # --- the end ------------------------------------------------------------------------------

    def finish(self, generated=(), **summary):
        """Writes the summary ({"generated": [...], ...}) and marks the dump complete."""
        self._require_open("finish()")
        if self._open_chunk is not None:
            raise RuntimeError("finish() while a chunk is being recorded")
        generated = self._token_ids(list(generated), "generated")
        f = self._file
        f.create_dataset("prompt_tokens", data=np.asarray(self._prompt, dtype=np.int32))
        f.attrs["chunk_size"] = self._first_chunk_rows
        f.attrs["summary"] = json.dumps({"generated": [int(t) for t in generated], **summary})
        f.attrs["complete"] = 1
        f.close()
        self._file = None

    def _require_open(self, what):
        if self._file is None:
            raise RuntimeError(f"{what} after the dump was finished or closed")

    def close(self):
        """Closes without finishing: the dump stays incomplete (complete = 0), readable up to
        rows_complete."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self):
        return self

    def __exit__(self, kind, value, traceback):
        self.close()
        return False
