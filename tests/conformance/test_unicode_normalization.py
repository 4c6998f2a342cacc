"""tapdiff's NFC, NFD, NFKC and NFKD against Hugging Face tokenizers' normalizers (PyPI), through
a tokenizer.json whose ids are the bytes of the normalized text: the 256 byte-level tokens (and
one merge that no text meets), the normalizer under test. The texts hold every code point that
Unicode 14 (Python's) decomposes or gives a combining class (tokenizers applies Unicode 9.0's
data, and so does tapdiff: those added since stay as they are), Hangul syllables and jamo, and
random runs of base letters and combining marks in every order, so that decomposition, canonical
ordering and composition (blocking included) all show in the ids."""
from __future__ import annotations

import random
import unicodedata

import pytest
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers

from test_tokenizers import hf_folder, ids_of, tokenize_texts


def assigned(cp: int) -> bool:
    return not 0xD800 <= cp <= 0xDFFF and unicodedata.category(chr(cp)) != "Cn"


def texts() -> list[str]:
    special = [cp for cp in range(0x110000) if assigned(cp) and (
        unicodedata.combining(chr(cp)) or unicodedata.normalize("NFKD", chr(cp)) != chr(cp))]
    out = ["".join(chr(cp) for cp in special[i:i + 40]) for i in range(0, len(special), 40)]
    rng = random.Random(15)
    marks = [cp for cp in special if unicodedata.combining(chr(cp))]
    bases = [ord(c) for c in "aeiouAEIOUnNcCsSzZ"] + [0x1100, 0x1161, 0x11A8, 0xAC00, 0x0B47, 0x0B3E, 0x0391, 0x03B9]
    for _ in range(300):
        out.append("".join(chr(rng.choice(bases)) + "".join(chr(rng.choice(marks)) for _ in range(rng.randrange(4)))
                           for _ in range(rng.randrange(1, 12))))
    hangul = [0x1100 + rng.randrange(19) for _ in range(400)] + [0x1161 + rng.randrange(21) for _ in range(400)] + \
        [0x11A7 + rng.randrange(28) for _ in range(400)]
    rng.shuffle(hangul)
    out += ["".join(chr(c) for c in hangul[i:i + 30]) for i in range(0, len(hangul), 30)]
    return out


TEXTS = texts()


def bytes_tokenizer(form: str) -> Tokenizer:
    vocab = {c: i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    vocab["\u0100\u0101"] = len(vocab)  # one merge (of bytes 0 and 1, in no text): tapdiff wants merges
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=[("\u0100", "\u0101")]))
    tokenizer.normalizer = getattr(normalizers, form)()
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer


@pytest.mark.parametrize("form", ["NFC", "NFD", "NFKC", "NFKD"])
def test_normalized_bytes_equal_tokenizers(form, tmp_path):
    tokenizer = bytes_tokenizer(form)
    folder = hf_folder(tokenizer, tmp_path / form, bos="a", eos="a")
    ours = ids_of(tokenize_texts(folder, TEXTS, tmp_path, "--no-bos"))
    differ = [f"{t!r}: ours {o}, tokenizers {e}" for t, o in zip(TEXTS, ours, strict=True)
              if o != (e := tokenizer.encode(t).ids)]
    assert not differ, f"{form}: {len(differ)} of {len(TEXTS)} differ:\n" + "\n".join(differ[:10])
    changed = sum(tokenizer.normalizer.normalize_str(t) != t for t in TEXTS)
    assert changed > len(TEXTS) // 4  # the texts exercise the form
