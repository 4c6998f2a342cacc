"""tapdiff's token ids for text against llama.cpp's (npm's node-llama-cpp) and Hugging Face
tokenizers' (PyPI) for the same vocabulary, for the pre-tokenizers of the common model families: a
byte-level BPE that `tokenizers` trains, saved as its tokenizer.json (the family's split as
Hugging Face writes it: GPT-2's ByteLevel, the Split patterns of Llama 3, Qwen2, Tekken, GPT-4o
and DeepSeek, SmolLM's Digits, Falcon's Punctuation) and written into a GGUF (tokenizer.ggml.model
'gpt2', the family's tokenizer.ggml.pre), over the tricky strings of tricky_strings.py; and a
SentencePiece-style vocabulary against llama.cpp, and as tokenizer.json (Llama 2's normalizer, or
a Metaspace pre-tokenizer) against tokenizers."""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from pathlib import Path

import gguf
import pytest
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

from gguf_models import write_tiny_llama
from test_llama_cpp import node_script
from tricky_strings import SPECIAL, tricky_strings

ROOT = Path(__file__).resolve().parents[2]
TAPDIFF = os.environ.get("TAPDIFF_BINARY", str(ROOT / "build" / "tapdiff"))
STRINGS = tricky_strings()

# The families' split patterns as their tokenizer.json files write them.
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                  r"\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = LLAMA3_PATTERN.replace(r"\p{N}{1,3}", r"\p{N}")
UPPER, LOWER = r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]", r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"
CONTRACTION = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)"
TEKKEN_PATTERN = (rf"[^\r\n\p{{L}}\p{{N}}]?{UPPER}*{LOWER}+|[^\r\n\p{{L}}\p{{N}}]?{UPPER}+{LOWER}*|\p{{N}}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")
GPT4O_PATTERN = (rf"[^\r\n\p{{L}}\p{{N}}]?{UPPER}*{LOWER}+{CONTRACTION}?|"
                 rf"[^\r\n\p{{L}}\p{{N}}]?{UPPER}+{LOWER}*{CONTRACTION}?|\p{{N}}{{1,3}}|"
                 r" ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")
DEEPSEEK_V3_PATTERNS = [r"\p{N}{1,3}", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
                        r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+|"
                        r" ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"]
# DeepSeek LLM's as llama.cpp writes them, non-ASCII characters as \x{..} escapes.
# DeepSeek LLM's as llama.cpp writes them, non-ASCII characters as \x{..} escapes.
DEEPSEEK_LLM_PATTERNS = ["[\r\n]", (
    r"\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293}"
    r"\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-"
    r"\x{38A}\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-"
    r"\x{556}\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-"
    r"\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-"
    r"\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D}"
    r"\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-"
    r"\x{1FCC}\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-"
    r"\x{1FFC}\x{2102}\x{2107}\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}"
    r"\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}"
    r"\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4}\x{2CEB}-\x{2CEE}\x{2CF2}"
    r"\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787}\x{A78B}-"
    r"\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-"
    r"\x{FF5A}\x{10400}-\x{1044F}\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}"
    r"\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+"),
                         r"\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+", r"\s+$",
                         r"[\x{4E00}-\x{9FA5}\x{800}-\x{4E00}\x{AC00}-\x{D7FF}]+", r"\p{N}+"]

# llama.cpp's own fallback, "default" (a GGUF that names it), as Hugging Face Splits.
DEFAULT_PATTERNS = [r"[\p{P}\$\+<=>\^~\|]+", r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)",
                    r"\p{N}+", r"[0-9][0-9][0-9]"]


def split_then_bytes(*patterns: str) -> pre_tokenizers.PreTokenizer:
    return pre_tokenizers.Sequence([*(pre_tokenizers.Split(Regex(p), behavior="isolated") for p in patterns),
                                    pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])


def gpt2_bytes() -> pre_tokenizers.PreTokenizer:
    return pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)


@dataclasses.dataclass(frozen=True)
class Family:
    pre: str                 # tokenizer.ggml.pre
    split: object            # () -> Hugging Face's pre-tokenizer
    ignore_merges: bool = False
    as_llama_cpp: bool = True  # llama.cpp runs Hugging Face's split (not a rewrite that differs)


FAMILIES = {
    "gpt2": Family("gpt-2", gpt2_bytes),
    "llama3": Family("llama-bpe", lambda: split_then_bytes(LLAMA3_PATTERN), True),
    "qwen2": Family("qwen2", lambda: split_then_bytes(QWEN2_PATTERN)),
    # llama.cpp reads \p{Lu} as "a letter not a-z" and \p{Ll} as "a letter not A-Z": the ids part
    # on cased letters outside ASCII.
    "tekken": Family("tekken", lambda: split_then_bytes(TEKKEN_PATTERN), True, as_llama_cpp=False),
    "gpt-4o": Family("gpt-4o", lambda: split_then_bytes(GPT4O_PATTERN), as_llama_cpp=False),
    # llama.cpp reads non-ASCII white space as U+000B in patterns without \p{..}: the ids part where
    # the U+0800-U+4E00 class meets U+2009 or U+3000.
    "deepseek-llm": Family("deepseek-llm", lambda: split_then_bytes(*DEEPSEEK_LLM_PATTERNS), as_llama_cpp=False),
    "deepseek-v3": Family("deepseek-v3", lambda: split_then_bytes(*DEEPSEEK_V3_PATTERNS)),
    "smollm": Family("smollm", lambda: pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                                 gpt2_bytes()])),
    "default": Family("default", lambda: split_then_bytes(*DEFAULT_PATTERNS)),
    # Hugging Face's Digits comes after ByteLevel and so reads byte stand-ins ("\u00b2" is one, of
    # the first byte of "\u00b2"); llama.cpp's \p{N}+ reads the text.
    "falcon": Family("falcon", lambda: pre_tokenizers.Sequence([
        pre_tokenizers.Punctuation("contiguous"), gpt2_bytes(), pre_tokenizers.Digits(individual_digits=False),
        pre_tokenizers.Split(Regex("[0-9][0-9][0-9]"), behavior="isolated")]), as_llama_cpp=False),
}
ADDS_BOS = {"llama3", "tekken"}  # the families whose GGUF llama.cpp starts with BOS when it does not say


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
    split = FAMILIES[family].split()
    if FAMILIES[family].ignore_merges:  # ignore_merges: whole words as tokens that no merge sequence builds
        vocab = saved["model"]["vocab"]
        words = {w for text in STRINGS for w, _ in split.pre_tokenize_str(text) if len(w) > 3 and w not in vocab}
        for word in sorted(words)[:60]:
            vocab[word] = len(vocab)
    saved["model"]["ignore_merges"] = FAMILIES[family].ignore_merges
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


def tokenize_texts(model: Path, texts: list[str], tmp_path: Path, *flags: str) -> subprocess.CompletedProcess:
    """tapdiff tokenize --texts: one JSON line of ids per text."""
    corpus = tmp_path / "texts.json"
    corpus.write_text(json.dumps(texts))
    return subprocess.run([TAPDIFF, "tokenize", "--model", str(model), "--texts", str(corpus), *flags],
                          capture_output=True, text=True)


def ids_of(run: subprocess.CompletedProcess) -> list[list[int]]:
    assert run.returncode == 0, run.stderr
    return [json.loads(line)["ids"] for line in run.stdout.splitlines()]


def tapdiff_ids(model: Path, texts: list[str], special: bool, tmp_path: Path) -> list[list[int]]:
    return ids_of(tokenize_texts(model, texts, tmp_path, "--no-bos", *([] if special else ["--special-as-text"])))


def tokenizers_mismatches(tokenizer: Tokenizer, ours: list[list[int]], texts: list[str] = STRINGS) -> list[str]:
    """The strings whose ids (with the post-processor's specials) tokenizers gives otherwise."""
    return [f"{text!r}: tapdiff {mine}, tokenizers {theirs}" for text, mine in zip(texts, ours, strict=True)
            if mine != (theirs := tokenizer.encode(text).ids)]


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
    write_gguf(tokenizer, FAMILIES[family].pre, model)
    return family, tokenizer, model


@pytest.mark.parametrize("special", [True, False], ids=["special-tokens", "special-as-text"])
def test_ids_equal_llama_cpp_and_hugging_face(vocabulary, special, tmp_path):
    """The text of a special token is that token (tapdiff's default, llama.cpp's parse_special,
    tokenizers' default) or text (--special-as-text; llama.cpp and tokenizers told so). A GGUF
    tokenizes as llama.cpp does; where llama.cpp runs the family's own split, that is also as
    tokenizers does."""
    family, tokenizer, model = vocabulary
    tokenizer.encode_special_tokens = not special
    assert len(STRINGS) >= 200
    theirs = llama_cpp_ids(model, STRINGS, special)
    ours = tapdiff_ids(model, STRINGS, special, tmp_path)
    mismatches = []
    for text, mine, llama in zip(STRINGS, ours, theirs, strict=True):
        hf = tokenizer.encode(text, add_special_tokens=False).ids
        if mine != llama or (FAMILIES[family].as_llama_cpp and mine != hf):
            mismatches.append(f"{text!r}: tapdiff {mine}, llama.cpp {llama}, tokenizers {hf}")
    assert not mismatches, f"{family}: {len(mismatches)} of {len(STRINGS)} differ:\n" + "\n".join(mismatches[:20])


@pytest.mark.parametrize("pre", ["superbpe", "kimi-k2", "no-such-split"])
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
                  for text, llama, ours in zip(STRINGS, llama_cpp_ids(model, STRINGS, special),
                                               tapdiff_ids(model, STRINGS, special, tmp_path), strict=True)
                  if ours != llama]
    assert not mismatches, f"{len(mismatches)} of {len(STRINGS)} differ:\n" + "\n".join(mismatches[:20])


@pytest.mark.parametrize("family", list(FAMILIES))
def test_bos_as_llama_cpp_adds_it_when_the_file_does_not_say(family, tmp_path):
    """Without tokenizer.ggml.add_bos_token, llama.cpp starts a Llama 3 or Tekken family prompt with
    BOS and the others' without; with the key, as it says."""
    tokenizer = train_bpe(family)
    bos = tokenizer.token_to_id("<|endoftext|>")
    for add_bos in (None, True, False):
        model = tmp_path / f"{family}-{add_bos}.gguf"
        write_gguf(tokenizer, FAMILIES[family].pre, model, add_bos)
        theirs = llama_cpp_tokenize(model, ["hi"], True)
        assert theirs["add_bos"] == (add_bos if add_bos is not None else family in ADDS_BOS)
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
        write_gguf(tokenizer, FAMILIES["llama3"].pre, model, False, add_eos)
        theirs = llama_cpp_tokenize(model, ["hi there"], True)
        assert theirs["add_eos"] == add_eos
        for flags, special in (([], True), (["--no-bos"], False)):
            run = subprocess.run([TAPDIFF, "tokenize", "--model", str(model), "--prompt", "hi there", "--json", *flags],
                                 capture_output=True, text=True)
            assert run.returncode == 0, run.stderr
            assert json.loads(run.stdout)["ids"] == theirs["ids"][0] + [eos] * (add_eos and special), flags


def hf_folder(tokenizer: Tokenizer, folder: Path, bos: str = "<|endoftext|>", eos: str = "<|endoftext|>") -> Path:
    """A tiny Llama saved by transformers with the vocabulary's size, and the tokenizer.json beside it."""
    import torch
    import transformers
    config = transformers.LlamaConfig(hidden_size=32, intermediate_size=48, num_hidden_layers=1,
                                      num_attention_heads=2, num_key_value_heads=1,
                                      vocab_size=tokenizer.get_vocab_size(), tie_word_embeddings=True,
                                      bos_token_id=tokenizer.token_to_id(bos), eos_token_id=tokenizer.token_to_id(eos))
    torch.manual_seed(0)
    transformers.LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save(str(folder / "tokenizer.json"))
    return folder


@pytest.mark.parametrize("family", list(FAMILIES))
def test_tokenizer_json_ids_equal_hugging_face(family, tmp_path):
    """A Hugging Face folder's tokenizer.json (the family's split as tokenizers runs it: Tekken's and
    GPT-4o's \\p{Lu}/\\p{Ll}, DeepSeek's classes on the text as it is) gives tokenizers' ids,
    with the BOS its TemplateProcessing adds (Llama 3's); Falcon's Digits after ByteLevel reads byte
    stand-ins, which tapdiff does not implement: refused, naming it."""
    from tokenizers import processors
    tokenizer = train_bpe(family)
    bos = tokenizer.token_to_id("<|endoftext|>")
    if family == "llama3":
        tokenizer.post_processor = processors.TemplateProcessing(single="<|endoftext|> $A",
                                                                 special_tokens=[("<|endoftext|>", bos)])
    folder = hf_folder(tokenizer, tmp_path / family)
    run = tokenize_texts(folder, STRINGS, tmp_path)
    if family == "falcon":
        assert run.returncode == 2, run.stdout
        assert "tokenizer.json: a pre-tokenizer (Digits) after ByteLevel is not implemented" in run.stderr, run.stderr
        return
    ours = ids_of(run)
    mismatches = tokenizers_mismatches(tokenizer, ours)
    assert not mismatches, f"{family}: {len(mismatches)} of {len(STRINGS)} differ:\n" + "\n".join(mismatches[:20])
    assert ours[0][0] == bos if family == "llama3" else ours[0][0] != bos


@pytest.mark.parametrize("lstrip,rstrip", [(True, False), (False, True), (True, True)])
def test_added_tokens_that_take_white_space_equal_hugging_face(lstrip, rstrip, tmp_path):
    """An added token with lstrip / rstrip (Phi-3's <|end|> and kin) takes the white space beside it
    into its match: the ids equal tokenizers' on the tricky strings (special tokens' text in them)."""
    saved = json.loads(train_bpe("llama3").to_str())
    for added in saved["added_tokens"]:
        added.update(lstrip=lstrip, rstrip=rstrip)
    tokenizer = Tokenizer.from_str(json.dumps(saved))
    folder = hf_folder(tokenizer, tmp_path / "strip")
    ours = ids_of(tokenize_texts(folder, STRINGS, tmp_path))
    mismatches = tokenizers_mismatches(tokenizer, ours)
    assert not mismatches, f"{len(mismatches)} of {len(STRINGS)} differ:\n" + "\n".join(mismatches[:20])
    plain = train_bpe("llama3")
    assert any(mine != plain.encode(text).ids for text, mine in zip(STRINGS, ours))  # the options matter


# Texts that put a word character, or none, beside a token X: ASCII, accented letters, a combining
# mark, digits of other scripts, connector punctuation, the joiners, circled letters (Other_Alphabetic
# symbols), fractions, superscripts, emoji and ideographic space (no word characters).
WORD_EDGES = ["X", "Xs", "baX", "X_cat", "X2", "2X", "\u00e9X", "X\u00e9", "X\u0301", "\u24b6X", "X\u24d0",
              "\u0663X", "\u00bdX", "X\u00b2", "X\U0001F600", "\u203fX", "X\u200dx", "x\u200cX", "XX", "X X",
              "(X) [X] X.", "\u4e2dX\u6587", "X\u3000X", "\u0915\u093fX", "X\u0966"]


@pytest.mark.parametrize("lstrip,rstrip", [(False, False), (True, True)])
def test_single_word_added_tokens_equal_hugging_face(lstrip, rstrip, tmp_path):
    """An added token with single_word (the special tokens and 'zq' here) is a token only where no
    word character (Rust regex's Unicode \\w) stands beside it, elsewhere text; the ids equal
    tokenizers' on the tricky strings and on texts that put every kind of character beside it."""
    saved = json.loads(train_bpe("llama3").to_str())
    for added in saved["added_tokens"]:
        added.update(lstrip=lstrip, rstrip=rstrip, single_word=True)
    tokenizer = Tokenizer.from_str(json.dumps(saved))
    tokenizer.add_tokens([AddedToken("zq", single_word=True, lstrip=lstrip, rstrip=rstrip, normalized=False)])
    folder = hf_folder(tokenizer, tmp_path / "single-word")
    edges = [text.replace("X", token) for token in ("zq", "<|endoftext|>") for text in WORD_EDGES]
    texts = STRINGS + edges
    ours = ids_of(tokenize_texts(folder, texts, tmp_path))
    mismatches = tokenizers_mismatches(tokenizer, ours, texts)
    assert not mismatches, f"{len(mismatches)} of {len(texts)} differ:\n" + "\n".join(mismatches[:20])
    token = tokenizer.token_to_id("<|endoftext|>")
    alone = [token in mine for mine in ours[len(STRINGS) + len(WORD_EDGES):]]
    assert any(alone) and not all(alone), alone  # a token in some texts, text in others


# Texts where a normalized added token's text appears only once normalized (a ligature, full-width
# letters), and where matching it before the raw added tokens would cut "<|endoftext|>" apart.
NORMALIZED_EDGES = ["fix the \ufb01x", "\uff46\uff49\uff58", "at<|endoftext|>", "t<|endoftext|>", "t< x", "ok \uff4f\uff4b",
                    "book \uff4f\uff4bay", "\ufb01x<|endoftext|>\ufb01x"]


def test_normalized_added_tokens_equal_hugging_face(tmp_path):
    """Added tokens with normalized true beside an NFKC normalizer: tokenizers cuts the raw text at
    the other added tokens first, normalizes each fragment, then cuts it at these tokens' own text
    normalized ("\ufb01x" matches "fix"). tapdiff's ids equal tokenizers' on the tricky strings
    and on texts where the order of the two cuts or the normalization of the pattern shows."""
    tokenizer = Tokenizer.from_str(train_bpe("llama3").to_str())
    tokenizer.normalizer = normalizers.NFKC()
    tokenizer.add_tokens([AddedToken("\ufb01x", normalized=True), AddedToken("t<", normalized=True),
                          AddedToken("\uff4f\uff4b", normalized=True, single_word=True)])
    folder = hf_folder(tokenizer, tmp_path / "normalized")
    texts = STRINGS + NORMALIZED_EDGES
    ours = ids_of(tokenize_texts(folder, texts, tmp_path))
    mismatches = tokenizers_mismatches(tokenizer, ours, texts)
    assert not mismatches, f"{len(mismatches)} of {len(texts)} differ:\n" + "\n".join(mismatches[:20])
    fix = tokenizer.token_to_id("\ufb01x")
    assert fix in ours[len(STRINGS)]  # "fix" written plainly is the token


def run_text_prompt(folder: Path, prompt: str, generate: int, tmp_path: Path) -> dict:
    """tapdiff run --model FOLDER --prompt TEXT: its JSON summary."""
    summary = tmp_path / "run.json"
    run = subprocess.run([TAPDIFF, "run", "--model", str(folder), "--prompt", prompt, "--generate", str(generate),
                          "--json", str(summary)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return json.loads(summary.read_text())


def test_run_takes_a_text_prompt_in_a_hugging_face_folder(tmp_path):
    """tapdiff run --model HF_FOLDER --prompt TEXT, no --vocab: the prompt's ids are tokenizers' and
    the generated tokens decode through the same vocabulary."""
    tokenizer = train_bpe("qwen2")
    folder = hf_folder(tokenizer, tmp_path / "qwen2")
    prompt = "The quick brown fox's 3 dogs don't jump!"
    result = run_text_prompt(folder, prompt, 4, tmp_path)
    assert result["prompt"] == tokenizer.encode(prompt).ids, result
    assert result["text"] == tokenizer.decode(result["generated"]), result


# SentencePiece-style tokenizer.json files as transformers' converters write them: Llama 2's (and
# TinyLlama's) normalizer, or a Metaspace pre-tokenizer (legacy=False files), with or without split.
SPM_VARIANTS = {
    "legacy": lambda: (normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")]),
                       None),
    "metaspace-first": lambda: (None, pre_tokenizers.Metaspace(prepend_scheme="first", split=False)),
    "metaspace-always": lambda: (None, pre_tokenizers.Metaspace(prepend_scheme="always", split=False)),
    "metaspace-split": lambda: (None, pre_tokenizers.Metaspace(prepend_scheme="first", split=True)),
}


def train_sentencepiece_bpe(variant: str) -> Tokenizer:
    """As Llama 2's vocabulary is laid out: <unk>, <s>, </s>, the 256 byte tokens, then pieces with
    "\u2581" for a space. The merges are learnt over whole strings (spaces inside pieces: "\u2581\u2581",
    "o\u2581w"), so that a split drawn elsewhere gives other ids, from a small alphabet, so that rare
    characters fall back to bytes."""
    trained = Tokenizer(models.BPE(unk_token="<unk>"))
    trained.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="always", split=False)
    trainer = trainers.BpeTrainer(vocab_size=1200, special_tokens=["<unk>", "<s>", "</s>"], limit_alphabet=120,
                                  show_progress=False)
    trained.train_from_iterator([t for t in STRINGS if t not in SPECIAL] * 3, trainer)
    saved = json.loads(trained.to_str())["model"]
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    vocab.update({f"<0x{b:02X}>": 3 + b for b in range(256)})
    for piece, _ in sorted(saved["vocab"].items(), key=lambda item: item[1]):
        vocab.setdefault(piece, len(vocab))
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in saved["merges"]]
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    normalizer, pre = SPM_VARIANTS[variant]()
    if normalizer is not None:
        tokenizer.normalizer = normalizer
    if pre is not None:
        tokenizer.pre_tokenizer = pre
    return with_llama_2_specials(tokenizer)


def with_llama_2_specials(tokenizer: Tokenizer) -> Tokenizer:
    """<unk>, <s> and </s> as special tokens (ids 0, 1, 2), <s> before the text, "\u2581" decoded as a
    space, byte tokens joined, the first space stripped: as Llama 2's tokenizer.json has them."""
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in ("<unk>", "<s>", "</s>")])
    tokenizer.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    tokenizer.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                           decoders.Strip(" ", 1, 0)])
    return tokenizer


@pytest.mark.parametrize("variant", list(SPM_VARIANTS))
def test_sentencepiece_tokenizer_json_ids_equal_hugging_face(variant, tmp_path):
    """A SentencePiece-style tokenizer.json gives tokenizers' ids, with the <s> its post-processor
    adds: the space prefix as its normalizer or Metaspace says (before every fragment, or the first
    only, and not before a space), merges by rank within the whole fragment or each word, bytes for
    characters outside the vocabulary."""
    tokenizer = train_sentencepiece_bpe(variant)
    folder = hf_folder(tokenizer, tmp_path / variant, bos="<s>", eos="</s>")
    ours = ids_of(tokenize_texts(folder, STRINGS, tmp_path))
    mismatches = tokenizers_mismatches(tokenizer, ours)
    assert not mismatches, f"{variant}: {len(mismatches)} of {len(STRINGS)} differ:\n" + "\n".join(mismatches[:20])
    assert any(3 <= i < 259 for ids in ours for i in ids)  # some characters fell back to bytes


def test_run_takes_a_text_prompt_in_a_sentencepiece_hugging_face_folder(tmp_path):
    """As TinyLlama's folder: the prompt's ids are tokenizers', and the generated ids decode as its
    decoder decodes them after the prompt (spaces from "\u2581", bytes joined; only the text's
    first space is stripped, so a continuation keeps its own). A random model's byte tokens may
    not form UTF-8: tokenizers then writes U+FFFD for every byte of the run of byte tokens (valid
    characters in it too), tapdiff for each malformed sequence, so such a text only has to hold
    U+FFFD as well."""
    tokenizer = train_sentencepiece_bpe("legacy")
    folder = hf_folder(tokenizer, tmp_path / "legacy", bos="<s>", eos="</s>")
    prompt = "The quick \U0001f600 brown fox's 3 dogs don't jump! \u00e9t\u00e9 ok"
    result = run_text_prompt(folder, prompt, 8, tmp_path)
    assert result["prompt"] == tokenizer.encode(prompt).ids, result
    before = tokenizer.decode(result["prompt"])
    theirs = tokenizer.decode(result["prompt"] + result["generated"])
    assert theirs.startswith(before)
    if "\ufffd" in theirs[len(before):]:
        assert "\ufffd" in result["text"], result
    else:
        assert result["text"] == theirs[len(before):], result
