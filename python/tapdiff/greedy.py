"""The run the recorders make: a prompt prefilled in chunks, then greedy decode steps."""
from __future__ import annotations

import numpy as np


def greedy(step, prompt, chunk=0, generate=0) -> list[int]:
    """Prefills `prompt` in chunks of `chunk` tokens (0: whole), then generates `generate` tokens
    greedily; step(tokens, decode) makes one forward pass and returns its logits [rows, vocab].
    Returns the generated tokens (the last is chosen, not fed)."""
    prompt = [int(t) for t in prompt]
    size = chunk or len(prompt)
    for first in range(0, len(prompt), size):
        logits = step(prompt[first:first + size], False)
    generated = []
    for n in range(generate):
        generated.append(int(np.argmax(logits[-1])))
        if n + 1 < generate:
            logits = step([generated[-1]], True)
    return generated
