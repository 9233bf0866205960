"""Editing helpers the constraint types' edits share: sentences appended and dropped,
names removed, lists written out, parameters drawn, and text rebuilt from a response's
own plain words (ASCII letters, lowercased), so that it keeps the response's content where
it can without carrying stray symbols (asterisks, digits, brackets) that other rules
count."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from vicogym.editors.instruct.edits import holds
from vicogym.programs.instruct import RELATIONS
from vicogym.programs.instruct.text import name_pattern, sentences, words
from vicogym.validation import pick


def append(response: str, sentence: str) -> str:
    """``sentence`` after ``response``, the response closed with a full stop if it was open."""
    text = response.rstrip()
    if text and text[-1] not in ".!?":
        text += "."
    return f"{text} {sentence}".strip()


def drop_sentences(response: str, bad: Callable[[str], bool]) -> str:
    return " ".join(s for s in sentences(response) if not bad(s))


def listed(items: Any) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def without(response: str, name: str, instead: str) -> str:
    return name_pattern(name).sub(instead, response)


# Rebuilt text is made of the response's plain words (ASCII letters, lowercased), so that it
# keeps the response's content where it can without carrying stray symbols (asterisks,
# digits, brackets) that other rules count.
#: the words keyword, first/last word and paragraph-word types ask for: words any description can
#: use truthfully ("river" forced on a motorcycle, "meadow" on an astronaut, make it false)
VOCAB = ("overall", "clearly", "indeed", "visible", "detail", "together", "throughout", "notably", "again", "here")


FILLER = ("this", "is", "what", "the", "picture", "shows", "in", "plain", "words", "here")


def draw_int(rng: np.random.Generator, low: int, high: int) -> int:
    return int(rng.integers(low, high + 1))


def draw_relation(rng: np.random.Generator) -> str:
    return pick(rng, RELATIONS)


def plain_words(response: str) -> list[str]:
    return [w.lower() for w in words(response) if w.isascii() and w.isalpha()]


def material(response: str, k: int = 1) -> list[str]:
    """At least ``k`` plain words: the response's, topped up with filler."""
    found = plain_words(response) or list(FILLER)
    while len(found) < k:
        found += FILLER
    return found


def chunks(response: str, k: int) -> list[str]:
    """The response's plain words in ``k`` non-empty runs, each joined with spaces."""
    found = material(response, k)
    q, r = divmod(len(found), k)
    bounds = [i * q + min(i, r) for i in range(k + 1)]
    return [" ".join(found[bounds[i]:bounds[i + 1]]) for i in range(k)]


def as_sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + "."


def remove_all(pattern: str, text: str, flags: int = re.IGNORECASE) -> str:
    """``text`` without matches of ``pattern``, repeated until none is left (a removal can join
    the text around it into a new match)."""
    while re.search(pattern, text, flags=flags):
        text = re.sub(pattern, "", text, flags=flags)
    return text


def drop_words(text: str, drop: Callable[[str], bool]) -> str:
    """``text`` without the \\w+ words ``drop`` selects; the characters between words stay, so
    no two words merge."""
    return re.sub(r"\w+", lambda m: "" if drop(m.group()) else m.group(), text)


def first_passing(id: str, params: Mapping[str, Any], candidates: list[str], passed: bool) -> str:
    """The first candidate response whose verdict is ``passed``."""
    for text in candidates:
        if holds(id, text, params) == passed:
            return text
    raise ValueError(f"expected a candidate that {'passes' if passed else 'fails'} {id}, got none")


def other_word(word: str, options: tuple[str, ...] = ("Well", "Indeed", "Also")) -> str:
    return next(o for o in options if o.lower() != word.lower())


def insert_middle(text: str, addition: str) -> str:
    """``addition`` inserted at the whitespace nearest the middle of ``text`` (appended when
    it has none), so the opening and the ending, which other rules may fix, stay as they are."""
    spaces = [m.start() for m in re.finditer(r"\s", text)]
    if not spaces:
        return (text + " " + addition) if text else addition
    at = min(spaces, key=lambda i: abs(i - len(text) // 2))
    return text[:at] + " " + addition + text[at:]
