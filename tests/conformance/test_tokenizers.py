"""tapdiff's token ids for text against llama.cpp's (npm's node-llama-cpp) and Hugging Face
tokenizers' (PyPI) for the same vocabulary, for each pre-tokenizer family tapdiff implements: a
byte-level BPE that `tokenizers` trains, saved as its tokenizer.json (the family's split as
Hugging Face writes it: GPT-2's ByteLevel, or Llama 3's and Qwen2's Split regex, Llama 3 with
ignore_merges) and written into a GGUF (tokenizer.ggml.model 'gpt2', the family's
tokenizer.ggml.pre), over the tricky strings of tricky_strings.py; and a SentencePiece-style
vocabulary against llama.cpp."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import gguf
import pytest
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

from gguf_models import write_tiny_llama
from test_llama_cpp import node_script
from tricky_strings import SPECIAL, tricky_strings

ROOT = Path(__file__).resolve().parents[2]
TAPDIFF = os.environ.get("TAPDIFF_BINARY", str(ROOT / "build" / "tapdiff"))
STRINGS = tricky_strings()


LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                  r"\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = LLAMA3_PATTERN.replace(r"\p{N}{1,3}", r"\p{N}")


def split_then_bytes(pattern: str) -> pre_tokenizers.PreTokenizer:
    return pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(pattern), behavior="isolated"),
                                    pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])


# family: (tokenizer.ggml.pre, Hugging Face's pre-tokenizer, ignore_merges)
FAMILIES = {
    "gpt2": ("gpt-2", lambda: pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True), False),
    "llama3": ("llama-bpe", lambda: split_then_bytes(LLAMA3_PATTERN), True),
    "qwen2": ("qwen2", lambda: split_then_bytes(QWEN2_PATTERN), False),
}


def train_bpe(family: str) -> Tokenizer:
    """Merges learnt over whole strings (no split while training), so that many of them span the
    boundaries the family's split draws: a split drawn elsewhere then gives other ids. Encoding
    splits as the family does. With ignore_merges, 60 whole words join the vocabulary without
    merges, so that only a tokenizer that ignores the merges for them gives their ids."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1500, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=["<|endoftext|>"], show_progress=False)
    # Not on the special tokens' strings: llama.cpp makes a normal token spelt "</s>" a control
    # one (its end-of-generation guess), tokenizers does not; real vocabularies type it control.
    tokenizer.train_from_iterator([t for t in STRINGS if t not in SPECIAL] * 3, trainer)
    saved = json.loads(tokenizer.to_str())
    split = FAMILIES[family][1]()
    if FAMILIES[family][2]:  # ignore_merges: whole words as tokens that no merge sequence builds
        vocab = saved["model"]["vocab"]
        words = {w for text in STRINGS for w, _ in split.pre_tokenize_str(text) if len(w) > 3 and w not in vocab}
        for word in sorted(words)[:60]:
            vocab[word] = len(vocab)
    saved["model"]["ignore_merges"] = FAMILIES[family][2]
    tokenizer = Tokenizer.from_str(json.dumps(saved))
    tokenizer.pre_tokenizer = split
    return tokenizer


def write_gguf(tokenizer: Tokenizer, pre: str, path: Path, add_bos: bool | None = False,
               add_eos: bool | None = None) -> None:
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
        if add_bos is not None:
            w.add_add_bos_token(add_bos)
        if add_eos is not None:
            w.add_add_eos_token(add_eos)

    write_tiny_llama(path, 64, len(tokens), add_vocab)


def tapdiff_ids(model: Path, text: str, special: bool) -> list[int]:
    run = subprocess.run([TAPDIFF, "tokenize", "--model", str(model), "--prompt", text, "--no-bos", "--json",
                          *([] if special else ["--special-as-text"])], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)["ids"]


def llama_cpp_tokenize(model: Path, texts: list[str], special: bool) -> dict:
    """{"ids": [[...] per text], "add_bos", "add_eos": whether llama.cpp starts a prompt with BOS, ends it with EOS}"""
    run = subprocess.run(["node", str(node_script("llama_cpp_tokenize.mjs")), str(model),
                          "special" if special else "text"], input=json.dumps(texts), capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


def llama_cpp_ids(model: Path, texts: list[str], special: bool) -> list[list[int]]:
    return llama_cpp_tokenize(model, texts, special)["ids"]


@pytest.fixture(scope="module", params=list(FAMILIES))
def vocabulary(request, tmp_path_factory) -> tuple[str, Tokenizer, Path]:
    family = request.param
    tokenizer = train_bpe(family)
    model = tmp_path_factory.mktemp(family) / f"{family}.gguf"
    write_gguf(tokenizer, FAMILIES[family][0], model)
    return family, tokenizer, model


@pytest.mark.parametrize("special", [True, False], ids=["special-tokens", "special-as-text"])
def test_ids_equal_llama_cpp_and_hugging_face(vocabulary, special):
    """The text of a special token is that token (tapdiff's default, llama.cpp's parse_special,
    tokenizers' default) or text (--special-as-text; llama.cpp and tokenizers told so)."""
    family, tokenizer, model = vocabulary
    tokenizer.encode_special_tokens = not special
    assert len(STRINGS) >= 200
    theirs = llama_cpp_ids(model, STRINGS, special)
    mismatches = []
    for text, llama in zip(STRINGS, theirs):
        hf = tokenizer.encode(text, add_special_tokens=False).ids
        ours = tapdiff_ids(model, text, special)
        if not (ours == llama == hf):
            mismatches.append(f"{text!r}: tapdiff {ours}, llama.cpp {llama}, tokenizers {hf}")
    assert not mismatches, f"{family}: {len(mismatches)} of {len(STRINGS)} differ:\n" + "\n".join(mismatches[:20])


@pytest.mark.parametrize("pre", ["tekken", "deepseek-v3", "default"])
def test_a_pre_tokenizer_tapdiff_does_not_implement_is_refused_for_text(pre, tmp_path):
    model = tmp_path / f"{pre}.gguf"
    write_gguf(train_bpe("gpt2"), pre, model)
    run = subprocess.run([TAPDIFF, "tokenize", "--model", str(model), "--prompt", "it's 1234"], capture_output=True,
                         text=True)
    assert run.returncode == 2, run.stdout + run.stderr
    assert f"the pre-tokenizer '{pre}' (tokenizer.ggml.pre) is not implemented" in run.stderr, run.stderr
    ids = subprocess.run([TAPDIFF, "tokenize", "--model", str(model), "--tokens", "5,6,7", "--json"],
                         capture_output=True, text=True)
    assert ids.returncode == 0, ids.stderr
    assert json.loads(ids.stdout)["ids"] == [5, 6, 7]


@pytest.mark.parametrize("special", [True, False], ids=["special-tokens", "special-as-text"])
def test_sentencepiece_ids_equal_llama_cpp(tmp_path, special):
    """A SentencePiece-style vocabulary (tokenizer.ggml.model 'llama': scored pieces, byte
    fallback, the space prefix, again after each special token), as synth writes it."""
    model = tmp_path / "spm.gguf"
    synth = subprocess.run([TAPDIFF, "synth", "--shape", "small", "-o", str(model)], capture_output=True, text=True)
    assert synth.returncode == 0, synth.stderr
    mismatches = [f"{text!r}: tapdiff {ours}, llama.cpp {llama}"
                  for text, llama in zip(STRINGS, llama_cpp_ids(model, STRINGS, special))
                  if (ours := tapdiff_ids(model, text, special)) != llama]
    assert not mismatches, f"{len(mismatches)} of {len(STRINGS)} differ:\n" + "\n".join(mismatches[:20])


@pytest.mark.parametrize("family", list(FAMILIES))
def test_bos_as_llama_cpp_adds_it_when_the_file_does_not_say(family, tmp_path):
    """Without tokenizer.ggml.add_bos_token, llama.cpp starts a Llama 3 family prompt with BOS and
    a GPT-2 or Qwen2 one without; with the key, as it says."""
    tokenizer = train_bpe(family)
    bos = tokenizer.token_to_id("<|endoftext|>")
    for add_bos in (None, True, False):
        model = tmp_path / f"{family}-{add_bos}.gguf"
        write_gguf(tokenizer, FAMILIES[family][0], model, add_bos)
        theirs = llama_cpp_tokenize(model, ["hi"], True)
        assert theirs["add_bos"] == (add_bos if add_bos is not None else family == "llama3")
        run = subprocess.run([TAPDIFF, "tokenize", "--model", str(model), "--prompt", "hi", "--json"],
                             capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        assert json.loads(run.stdout)["ids"] == [bos] * theirs["add_bos"] + theirs["ids"][0], add_bos


def test_eos_as_llama_cpp_appends_it(tmp_path):
    """tokenizer.ggml.add_eos_token: llama.cpp ends a prompt with EOS (an embedding model's habit);
    tapdiff's prompt too, and neither with --no-bos (llama.cpp's add_special false)."""
    tokenizer = train_bpe("llama3")
    eos = tokenizer.token_to_id("<|endoftext|>")
    for add_eos in (True, False):
        model = tmp_path / f"eos-{add_eos}.gguf"
        write_gguf(tokenizer, FAMILIES["llama3"][0], model, False, add_eos)
        theirs = llama_cpp_tokenize(model, ["hi there"], True)
        assert theirs["add_eos"] == add_eos
        for flags, special in (([], True), (["--no-bos"], False)):
            run = subprocess.run([TAPDIFF, "tokenize", "--model", str(model), "--prompt", "hi there", "--json", *flags],
                                 capture_output=True, text=True)
            assert run.returncode == 0, run.stderr
            assert json.loads(run.stdout)["ids"] == theirs["ids"][0] + [eos] * (add_eos and special), flags
