"""What the recorders (HfRecorder, MlxRecorder) share: the things they replace while recording,
put back by close(), and the run they make (a prompt prefilled in chunks, then greedy decode
steps)."""
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


class Recording:
    """A recorder's replacements and its dump writer (`self.writer`, set by the subclass): each
    swap() is undone by close(), last first; a with-block closes."""

    def __init__(self):
        self.wrapped = []  # (owner, attribute name or list index, original) while recording

    def swap(self, owner, name, replacement):
        """owner.name (owner[name] for an int name) replaced until close()."""
        if isinstance(name, int):
            self.wrapped.append((owner, name, owner[name]))
            owner[name] = replacement
        else:
            self.wrapped.append((owner, name, getattr(owner, name)))
            setattr(owner, name, replacement)

    def close(self):
        """Puts back what was replaced; the dump stays as far as it was written."""
        for owner, name, original in reversed(self.wrapped):
            if isinstance(name, int):
                owner[name] = original
            else:
                setattr(owner, name, original)
        self.wrapped = []
        self.writer.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
