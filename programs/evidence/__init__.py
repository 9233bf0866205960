"""The evidence arm's pure programs: answer contracts and scorers, and what derives a
task's answer from its structure, in the file named after its task family: ``forms.py``
(whose FUNSD pairing the ``funsd`` loader uses too) and ``clevr_sequence.py``. One file
serves two families: ``charts.py``, the program language over the units' chart tables
that ``slides`` and ``multichart`` share. ``clevr_detail`` asks the CLEVR arm's programs
(:mod:`vicogym.programs.clevr`) and has no file here."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any

from vicogym.answers import anls, exact_match, relaxed_accuracy, short_answer
from vicogym.structures.evidence import letters

#: a single letter standing alone (not part of a word or a number)
_TOKEN = re.compile(r"(?<![A-Za-z0-9])([A-Za-z])(?![A-Za-z0-9])")
#: a letter in brackets: "(B)", "[b]"
_BRACKETED = re.compile(r"(?<![A-Za-z0-9])[(\[]([A-Za-z])[)\]]")
#: a letter a word announces: "Option B", "the answer is (b)", "Answer: B", "the answer is option C"
_CUED = re.compile(r"\b(?:option|choice|letter|answer)s?(?:\s+(?:is|was|would\s+be))?\s*[:=\-]?\s*"
                   r"(?:(?:option|choice|letter)\s+)?[(\[]?([A-Za-z])(?![A-Za-z0-9])", re.IGNORECASE)
#: a reply that starts with a letter and a delimiter, or is one: "b", "b.", "b) 12", "b: 12", "b - 12"
_LEAD = re.compile(r"[(\[]?([A-Za-z])(?:[)\]]|[.:](?![A-Za-z0-9])|\s+[-\u2013\u2014]|$)")
#: words that follow a letter in a list of letters ("A or B"), not an article's noun ("A bar")
_LIST_WORDS = frozenset({"or", "and", "nor", "vs", "versus", "to"})


def _reads_as_word(text: str, end: int) -> bool:
    """Whether the single letter that ends at ``end`` is a word, not a letter: "a" and "I"
    followed by a word ("A bar chart", "I think"), or an initial of an abbreviation ("A.M.",
    "e.g.")."""
    after = text[end:end + 64]  # enough for the next word; a long reply is not copied per letter
    if re.match(r"\.[A-Za-z0-9]", after) or (end >= 3 and re.match(r"[A-Za-z0-9]\.", text[end - 3:end - 1])):
        return True
    word = re.match(r"[ \t]+([A-Za-z]+)", after)
    return text[end - 1].lower() in "ai" and word is not None and word[1].lower() not in _LIST_WORDS


def letters_named(prediction: str, n_options: int) -> set[str]:
    """The option letters (upper case) a reply names: a letter in brackets (``"(B)"``), a
    letter announced by ``option``, ``choice``, ``letter`` or ``answer`` (``"Option B"``,
    ``"The answer is b"``), a capital letter of one of the ``n_options`` standing alone
    (``"B"``, ``"B."``, ``"B. 12 apples"``, ``"A or B"`` names two), a reply that is or
    starts with a letter and a delimiter (``"b"``, ``"b) 12"``). Markdown emphasis and
    Unicode forms (NFKC) do not count. "A" and "I" followed by a word are words (``"A bar
    chart"``, ``"the answer is a bar"``), and so is a letter inside a word (``"Because"``)."""
    text = unicodedata.normalize("NFKC", str(prediction or ""))
    text = re.sub(r"[*_`]", "", text).strip().strip("\"'").strip()
    named = {m[1].upper() for m in _BRACKETED.finditer(text)}
    named |= {m[1].upper() for m in _CUED.finditer(text) if m[1].isupper() or not _reads_as_word(text, m.end(1))}
    in_range = set(letters(max(0, min(n_options, 26))))
    named |= {m[1] for m in _TOKEN.finditer(text) if m[1] in in_range and not _reads_as_word(text, m.end(1))}
    lead = _LEAD.match(text)
    if lead and not _reads_as_word(text, lead.end(1)):
        named.add(lead[1].upper())
    return named


def letter_of(prediction: str, n_options: int) -> str | None:
    """The one option letter a reply names (:func:`letters_named`), or ``None`` when it
    names none, two different ones, or one past the ``n_options`` options. The text of an
    option is not read here (a letter contract asks for the letter)."""
    named = letters_named(prediction, n_options)
    if len(named) != 1:
        return None
    letter = named.pop()
    return letter if ord(letter) - ord("A") < n_options else None


def score_answer(scorer: str, prediction: str, answer: str, golds: Sequence[str] = (), n_options: int = 0) -> float:
    """A task's score of ``prediction`` in [0, 1] by its ``scorer``: ``anls`` (DocVQA's
    ANLS, :func:`vicogym.answers.anls`, the best over the answer and ``golds``),
    ``relaxed`` (ChartQA's 5%), ``letter`` (the option letter), ``short`` (VQA short
    answers), ``exact``."""
    prediction = str(prediction or "")
    if scorer == "anls":
        return float(anls(prediction, [answer, *golds]))
    if scorer == "letter":
        return float(letter_of(prediction, n_options) == answer)
    one = {"relaxed": relaxed_accuracy, "short": short_answer, "exact": exact_match}.get(scorer)
    if one is None:
        raise ValueError(f"expected a scorer in anls, relaxed, letter, short, exact; got {scorer!r}")
    return max(float(one(prediction, gold)) for gold in [answer, *golds])


def score_task(task: Any, prediction: str) -> float:
    return score_answer(task.scorer, prediction, task.answer, task.golds, len(task.options))


CONTRACT_TEXT = {
    "text": "Answer with the text exactly as it is written in the image.",
    "number": "Answer with a number only.",
    "letter": "Answer with the option's letter only.",
    "count": "Answer with a whole number only.",
}
