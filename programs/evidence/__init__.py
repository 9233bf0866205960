"""The evidence arm's pure programs: answer contracts and scorers, and what derives a
task's answer from its structure, in the file named after its task family: ``forms.py``
(whose FUNSD pairing the ``funsd`` loader uses too) and ``clevr_sequence.py``. One file
serves two families: ``charts.py``, the program language over the units' chart tables
that ``slides`` and ``multichart`` share. ``clevr_detail`` asks the CLEVR arm's programs
(:mod:`vicogym.programs.clevr`) and has no file here."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from vicogym.answers import anls, exact_match, relaxed_accuracy, short_answer

_LETTER = re.compile(r"^\(?([A-Za-z])\)?(?:[.:)\s]|$)")


def letter_of(prediction: str, n_options: int) -> str | None:
    """The option letter a prediction gives: ``"B"``, ``"(b)"``, ``"B. Paris"``, or the
    text of exactly one option is not read here (a letter contract asks for the letter)."""
    text = str(prediction or "").strip()
    match = _LETTER.match(text)
    if not match:
        return None
    letter = match.group(1).upper()
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
