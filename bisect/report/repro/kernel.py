"""The kernel under test, called by check.py: fill in kernel() with a call of your engine's kernel.

case.op, case.layer          the op (its name in tapdiff dumps: docs/dump-format.md) and its layer
case.inputs                  {"LAYER/OP": array [rows, width]}: the op's inputs as the engine had them
case.kv                      {"k": K rows, "v": V rows} of every position attention reads (attn only)
case.weights                 {"wq": array, ...}: the weights the op reads, as tapdiff holds them, float32
case.positions, case.tokens  the rows' positions and token ids
case.config                  the model as tapdiff read it (norm epsilon, RoPE, heads, ...)
case.meta                    everything else in case.safetensors' metadata

Return the op's output, [rows, width], in any float dtype.
"""
from __future__ import annotations


def kernel(case):
    raise NotImplementedError(
        f"kernel.py: call your engine's {case.op} kernel here (layer {case.layer}) and return its output")
