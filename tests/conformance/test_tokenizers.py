"""tapdiff's token ids for text against llama.cpp's (npm's node-llama-cpp) and Hugging Face
tokenizers' (PyPI) for the same vocabulary: a byte-level BPE that `tokenizers` trains with GPT-2's
pre-tokenization, saved as its tokenizer.json and written into a GGUF (tokenizer.ggml.model
'gpt2', tokenizer.ggml.pre 'gpt-2'), over the tricky strings of tricky_strings.py."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import gguf
import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from gguf_models import write_tiny_llama
from test_llama_cpp import node_script
from tricky_strings import tricky_strings

ROOT = Path(__file__).resolve().parents[2]
TAPDIFF = os.environ.get("TAPDIFF_BINARY", str(ROOT / "build" / "tapdiff"))
STRINGS = tricky_strings()


def train_gpt2_bpe() -> Tokenizer:
    """Merges learnt over whole strings (no split while training), so that many of them span the
    boundaries GPT-2's split draws: a split drawn elsewhere then gives other ids. Encoding splits
    as GPT-2 does."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1500, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=["<|endoftext|>"], show_progress=False)
    tokenizer.train_from_iterator(STRINGS * 3, trainer)
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    return tokenizer


def write_gguf(tokenizer: Tokenizer, pre: str, path: Path) -> None:
    saved = json.loads(tokenizer.to_str())
    vocab = sorted(saved["model"]["vocab"].items(), key=lambda item: item[1])
    tokens = [t for t, _ in vocab]
    assert [i for _, i in vocab] == list(range(len(tokens)))
    merges = [m if isinstance(m, str) else " ".join(m) for m in saved["model"]["merges"]]
    special = {t["content"] for t in saved["added_tokens"]}

    def add_vocab(w: gguf.GGUFWriter) -> None:
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre(pre)
        w.add_token_list(tokens)
        w.add_token_types([gguf.TokenType.CONTROL if t in special else gguf.TokenType.NORMAL for t in tokens])
        w.add_token_merges(merges)
        w.add_bos_token_id(tokens.index("<|endoftext|>"))
        w.add_eos_token_id(tokens.index("<|endoftext|>"))
        w.add_add_bos_token(False)

    write_tiny_llama(path, 64, len(tokens), add_vocab)


def tapdiff_ids(model: Path, text: str) -> list[int]:
    run = subprocess.run([TAPDIFF, "tokenize", "--model", str(model), "--prompt", text, "--no-bos", "--json"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)["ids"]


def llama_cpp_ids(model: Path, texts: list[str]) -> list[list[int]]:
    run = subprocess.run(["node", str(node_script("llama_cpp_tokenize.mjs")), str(model)], input=json.dumps(texts),
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def gpt2_vocabulary(tmp_path_factory) -> tuple[Tokenizer, Path]:
    tokenizer = train_gpt2_bpe()
    model = tmp_path_factory.mktemp("gpt2-bpe") / "gpt2-bpe.gguf"
    write_gguf(tokenizer, "gpt-2", model)
    return tokenizer, model


def test_gpt2_pre_tokenizer_ids_equal_llama_cpp_and_hugging_face(gpt2_vocabulary):
    """Special tokens written in the text are read as text by all three (tapdiff does not yet
    recognise them; llama.cpp and tokenizers are told not to)."""
    tokenizer, model = gpt2_vocabulary
    tokenizer.encode_special_tokens = True
    assert len(STRINGS) >= 200
    theirs = llama_cpp_ids(model, STRINGS)
    mismatches = []
    for text, llama in zip(STRINGS, theirs):
        hf = tokenizer.encode(text, add_special_tokens=False).ids
        ours = tapdiff_ids(model, text)
        if not (ours == llama == hf):
            mismatches.append(f"{text!r}: tapdiff {ours}, llama.cpp {llama}, tokenizers {hf}")
    assert not mismatches, f"{len(mismatches)} of {len(STRINGS)} differ:\n" + "\n".join(mismatches[:20])


@pytest.mark.parametrize("pre", ["llama-bpe", "qwen2", "tekken", "default"])
def test_a_pre_tokenizer_tapdiff_does_not_implement_is_refused_for_text(gpt2_vocabulary, pre, tmp_path):
    tokenizer, _ = gpt2_vocabulary
    model = tmp_path / f"{pre}.gguf"
    write_gguf(tokenizer, pre, model)
    run = subprocess.run([TAPDIFF, "tokenize", "--model", str(model), "--prompt", "it's 1234"], capture_output=True,
                         text=True)
    assert run.returncode == 2, run.stdout + run.stderr
    assert f"the pre-tokenizer '{pre}' (tokenizer.ggml.pre) is not implemented" in run.stderr, run.stderr
    ids = subprocess.run([TAPDIFF, "tokenize", "--model", str(model), "--tokens", "5,6,7", "--json"],
                         capture_output=True, text=True)
    assert ids.returncode == 0, ids.stderr
    assert json.loads(ids.stdout)["ids"] == [5, 6, 7]
