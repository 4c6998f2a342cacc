"""A Hugging Face folder's text as transformers 5.x tokenizes it: AutoTokenizer picks a class from
tokenizer_config.json's tokenizer_class and config.json's model_type, and a model family's own class
(LlamaTokenizer, GemmaTokenizer, Qwen2Tokenizer) keeps tokenizer.json's vocabulary, merges,
post-processor and added tokens but builds its own normalizer and pre-tokenizer. tapdiff's ids equal AutoTokenizer's for the
classes it follows, over the tricky strings; any other class is refused for text, naming it."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_tokenizers import STRINGS, hf_folder, ids_of, tokenize_texts, train_bpe, train_sentencepiece_bpe

# Text that NFC changes (decomposed accents, jamo, a singleton), for the classes that normalize.
DECOMPOSED = ["cafe\u0301 Ame\u0301lie", "\u1100\u1161\u11a8 \u1112\u1161\u11ab", "A\u030a \u212b",
              "o\u0308\u0304 x\u0323\u0307"]
TEXTS = [t for t in STRINGS if t] + DECOMPOSED
SPECIALS = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}
# TinyLlama-1.1B-Chat's tokenizer_config.json (Llama 2's layout of tokenizer.json beside it).
TINYLLAMA = {
    "add_bos_token": True, "add_eos_token": False, "bos_token": "<s>", "clean_up_tokenization_spaces": False,
    "eos_token": "</s>", "legacy": False, "model_max_length": 2048, "pad_token": "</s>", "padding_side": "right",
    "sp_model_kwargs": {}, "tokenizer_class": "LlamaTokenizer", "unk_token": "<unk>",
    "use_default_system_prompt": False,
    "added_tokens_decoder": {str(i): {"content": c, "lstrip": False, "normalized": False, "rstrip": False,
                                      "single_word": False, "special": True}
                             for i, c in enumerate(["<unk>", "<s>", "</s>"])},
}

# name: (tokenizer.json, tokenizer_config.json or None, the class transformers picks, whether its
# pipeline is not the file's)
CASES = {
    "tinyllama": ("legacy", TINYLLAMA, "LlamaTokenizer", True),
    "llama-legacy": ("legacy", {**SPECIALS, "tokenizer_class": "LlamaTokenizerFast", "legacy": True},
                     "LlamaTokenizer", True),
    "llama-no-prefix": ("legacy", {**SPECIALS, "tokenizer_class": "LlamaTokenizer", "add_prefix_space": False},
                        "LlamaTokenizer", True),
    "llama-bos-eos-keys": ("metaspace-first", {**SPECIALS, "tokenizer_class": "LlamaTokenizer",
                                               "add_bos_token": False, "add_eos_token": True}, "LlamaTokenizer", False),
    "gemma-class": ("legacy", {**SPECIALS, "tokenizer_class": "GemmaTokenizer", "pad_token": "</s>",
                               "mask_token": None}, "GemmaTokenizer", True),
    "fast-bos-eos-keys": ("legacy", {**SPECIALS, "tokenizer_class": "PreTrainedTokenizerFast",
                                     "add_bos_token": False, "add_eos_token": True}, "TokenizersBackend", False),
    "fast-named-special": ("legacy", {**SPECIALS, "tokenizer_class": "PreTrainedTokenizerFast",
                                      "additional_special_tokens": ["NAMED"]}, "TokenizersBackend", True),
    "no-tokenizer-config": ("legacy", None, "TokenizersBackend", False),
    "llama-class-byte-level": ("llama3", {"tokenizer_class": "LlamaTokenizerFast", "bos_token": "<|endoftext|>",
                                          "eos_token": "<|endoftext|>"}, "TokenizersBackend", False),
    "qwen2-class": ("qwen2", {"tokenizer_class": "Qwen2Tokenizer", "eos_token": "<|endoftext|>"}, "Qwen2Tokenizer",
                    True),
    # Special tokens' text in a prompt is text (tokenizers' encode_special_tokens).
    "split-special-tokens": ("legacy", {**SPECIALS, "tokenizer_class": "PreTrainedTokenizerFast",
                                        "split_special_tokens": True}, "TokenizersBackend", True),
}


def folder_with(tmp_path: Path, layout: str, tokenizer_config: dict | None):
    """A tiny Llama folder with a tokenizer.json of `layout` (a SentencePiece variant of
    test_tokenizers or a byte-level family) and the tokenizer_config.json given. NAMED in it stands
    for a normal piece of the vocabulary that occurs in the texts."""
    if layout in ("legacy", "metaspace-first"):
        tokenizer, bos, eos = train_sentencepiece_bpe(layout), "<s>", "</s>"
    else:
        tokenizer, bos, eos = train_bpe(layout), "<|endoftext|>", "<|endoftext|>"
    folder = hf_folder(tokenizer, tmp_path / "model", bos=bos, eos=eos)
    if tokenizer_config is not None:
        named = next(p for p in sorted(tokenizer.get_vocab()) if len(p) >= 3 and p.isalpha()
                     and sum(p in t for t in TEXTS) >= 3)
        (folder / "tokenizer_config.json").write_text(json.dumps(tokenizer_config).replace("NAMED", named))
    return tokenizer, folder


@pytest.mark.parametrize("case", list(CASES))
def test_ids_equal_transformers_auto_tokenizer(case, tmp_path):
    """tapdiff's ids for the tricky strings equal transformers.AutoTokenizer's for the folder (the
    BOS and EOS of the post-processor included; add_bos_token / add_eos_token change nothing in
    transformers 5.x). Where the class's pipeline is not the file's, some strings' ids are not the
    file's own (so the case tests what the class builds)."""
    import transformers
    layout, tokenizer_config, expected_class, rebuilt = CASES[case]
    tokenizer, folder = folder_with(tmp_path, layout, tokenizer_config)
    theirs = transformers.AutoTokenizer.from_pretrained(folder)
    assert type(theirs).__name__ == expected_class
    expected = [theirs(t)["input_ids"] for t in TEXTS]
    ours = ids_of(tokenize_texts(folder, TEXTS, tmp_path))
    differ = [f"{t!r}: ours {o}, transformers {e}" for t, o, e in zip(TEXTS, ours, expected) if o != e]
    assert not differ, f"{case}: {len(differ)} of {len(TEXTS)} differ:\n" + "\n".join(differ[:20])
    files_own = [tokenizer.encode(t).ids for t in TEXTS]
    assert (files_own != expected) == rebuilt


REFUSED = {
    "gpt2-class": ({**SPECIALS, "tokenizer_class": "GPT2Tokenizer"},
                   "transformers 5.x tokenizes this folder with GPT2Tokenizer (tokenizer_config.json tokenizer_class "
                   "'GPT2Tokenizer'), which builds its own pipeline over tokenizer.json: not implemented"),
    "gemma-default-pad": ({**SPECIALS, "tokenizer_class": "GemmaTokenizer"},
                          "GemmaTokenizer takes the special token \"<pad>\" (GemmaTokenizer's default pad_token) as a "
                          "token past tokenizer.json's vocabulary, with an id of its own: not implemented"),
    "auto-map": ({**SPECIALS, "tokenizer_class": "LlamaTokenizer", "auto_map": {"AutoTokenizer": ["x.Tok", None]}},
                 "tokenizer_config.json auto_map (a tokenizer class in the model's own code) is not followed"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_class_tapdiff_does_not_follow_is_refused_for_text(case, tmp_path):
    """Text is refused (exit 2) naming the class and what chose it, or the token the class would
    add."""
    tokenizer_config, message = REFUSED[case]
    tokenizer, folder = folder_with(tmp_path, "legacy", tokenizer_config)
    run = tokenize_texts(folder, ["hello world"], tmp_path)
    assert run.returncode == 2, run.stdout
    assert "tokenizer.json: " + message in run.stderr, run.stderr
    import transformers
    if case == "gemma-default-pad":  # transformers gives <pad> and <mask> ids past the vocabulary
        assert len(transformers.AutoTokenizer.from_pretrained(folder)) == tokenizer.get_vocab_size() + 2
    if case == "gpt2-class":
        assert type(transformers.AutoTokenizer.from_pretrained(folder)).__name__ == "GPT2Tokenizer"
