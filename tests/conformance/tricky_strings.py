"""Strings that tokenizers get wrong: digits and long numbers, contractions in both cases,
accents, scripts and emoji, whitespace runs and newlines, code, special tokens' text; each alone
and in mixtures."""
from __future__ import annotations

import itertools

PARTS = [
    # digits and numbers
    "0", "7", "42", "123", "1234", "12345678901234567890", "3.14159", "1,000,000", "-273.15", "0x1F", "1e-9",
    "v2.0.1", "2026-11-26", "10:45pm", "50%", "$1.99", "\u0663\u0664\u0665", "\u2460\u2461", "\u00bd", "\uff11\uff12",
    # contractions
    "it's", "IT'S", "don't", "DON'T", "we're", "WE'RE", "you've", "I'm", "I'M", "they'll", "THEY'LL", "he'd",
    "'s", "rock'n'roll", "O'Neil", "can't'nt",
    # letters, accents, scripts
    "hello", "Hello", "HELLO", "caf\u00e9", "na\u00efve", "Stra\u00dfe", "\u00c5ngstr\u00f6m", "e\u0301",
    "\u65e5\u672c\u8a9e", "\u4e2d\u6587\u5b57", "\ud55c\uad6d\uc5b4", "\u0440\u0443\u0441\u0441\u043a\u0438\u0439",
    "\u0627\u0644\u0639\u0631\u0628\u064a\u0629", "\u05e2\u05d1\u05e8\u05d9\u05ea", "\u0939\u093f\u0928\u094d\u0926\u0940",
    "\u0e44\u0e17\u0e22", "\u03b1\u03b2\u03b3", "\ufb01", "\u2126",
    # emoji and symbols
    "\U0001f600", "\U0001f44d\U0001f3fd", "\U0001f468\u200d\U0001f469\u200d\U0001f467", "\u2764\ufe0f", "\u2014",
    "\u2026", "\u00a9", "\u20ac", "\u2192", "\u221e", "\u00b0C",
    # whitespace
    " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n ", "\t\t", "\u00a0", "\u3000", "\u2009",
    # code and punctuation
    "def f(x):\n    return x**2", "for (int i = 0; i < n; ++i) {}", "if x != y:", "a->b", "::", "<|endoftext|>",
    "#include <stdio.h>", "x = [1, 2, 3]", "{\"key\": \"value\"}", "!!!", "???", "...", "--", "__init__", "@user",
    "https://example.com/a?b=c", "C:\\path\\to", "`code`",
    # letters, digits, marks and punctuation of other scripts run together (their classes decide the split)
    "abc\u0663\u0664def", "x\u2014y", "\u00e9\u2026\u00e9", "\u65e5\u672c2026\u5e74", "\u00bd\u00bcx",
    "word\u3002word", "\u00abquote\u00bb", "heart\u2764\ufe0fheart", "\u0915\u093f\u0924\u093e\u092c",
    "na\u0308ive", "\u2160\u2161\u2162", "x\u00b2+y\u00b2", "\u00bfqu\u00e9?", "\u00a1hola!",
    # cased letters outside ASCII next to each other (Tekken's and GPT-4o's upper/lower split)
    "\u00c9COLE \u00e9cole", "\u00c9t\u00c9", "\u0391\u03b2\u0393\u03b4", "\u01c5ungla", "\u0130stanbul",
    # letters that Unicode's case folding makes ASCII (long s, Kelvin sign) after an apostrophe
    "it'\u017f", "we'\u212all",
]


# Special tokens' text inside prompts: GPT-2's <|endoftext|>, SentencePiece's <s>, </s>, <unk>,
# glued to words, spaced, repeated, cut short.
SPECIAL = ["<|endoftext|>hello", "a<|endoftext|>b", "<|endoftext|><|endoftext|>", " <|endoftext|> x", "<|endof",
           "<s>hello</s>", "x<s>", "<s> <s>", "say <unk> twice <unk>", "</s>\n<s>", "<<s>>", "<s", "s>"]


def tricky_strings() -> list[str]:
    """Each part alone, then pairs joined by a space, nothing, and a newline: over 200 strings."""
    strings = list(PARTS)
    pairs = itertools.islice(itertools.combinations(PARTS, 2), 0, None, 37)
    for i, (a, b) in enumerate(pairs):
        strings.append([f"{a} {b}", f"{a}{b}", f"{a}\n{b}", f"  {a}  {b}  "][i % 4])
    strings += ["The quick brown fox's 3 dogs don't jump 1234567 times!\n\n  Really?",
                "   leading and trailing   ", "\n\nstarts with newlines", "tabs\tand\tspaces \t mixed",
                "MiXeD CaSe WoRdS'S", "123abc456def", "emoji\U0001f600in\U0001f600words"]
    return strings + SPECIAL
