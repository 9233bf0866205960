"""Answer text shared by every arm: the canonical number format, parsing, and scorers
(exact match, ChartQA relaxed accuracy, ANLS, VQA-style short answers).

Scorers are pure functions ``score(prediction, target) -> float`` in [0, 1].

Two normalisations, for two purposes: :func:`normalize_text` (NFKC, lower case, inner
spaces collapsed, surrounding punctuation dropped) is what exact match, relaxed accuracy
and short answers compare; :func:`anls` keeps DocVQA's own (:func:`anls_normalize`: lower
case and whitespace only, punctuation kept) after NFKC, so on text NFKC leaves alone its
scores are the ones the ``anls`` package and published ANLS numbers give (``"Acme Corp."``
against ``"ACME corp"`` scores 0.9, one edit in ten characters).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Sequence

Scorer = Callable[[str, str], float]

_YES = {"yes", "true", "y"}
_NO = {"no", "false", "n"}
_NUMBER = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$")


def format_number(x: float) -> str:
    """Canonical text of a number: integers without a decimal point, magnitudes of 1 and more
    with at most 2 decimals, smaller ones with 4 significant digits, trailing zeros dropped
    (``80``, ``2.67``, ``1327.7``, ``-3.5``, ``0.6666``, ``0.001235``); below 1e-10, ``0``."""
    if not math.isfinite(x):
        raise ValueError(f"expected a finite number, got {x!r}")
    if float(x).is_integer() and abs(x) < 1e15:
        return str(int(x))
    magnitude = abs(x)
    decimals = 2 if magnitude >= 1 else max(2, 1 - int(math.floor(math.log10(magnitude))) + 2)
    text = f"{x:.{min(decimals, 10)}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def normalize_text(text: str) -> str:
    """Lower case, NFKC, trimmed of surrounding punctuation and inner runs of spaces."""
    text = unicodedata.normalize("NFKC", str(text)).strip().lower()
    text = re.sub(r"\s+", " ", text)
    return text.strip(" .,;:!?\"'`")


def parse_number(text: str) -> float | None:
    """A number written as in answers and tables: ``1,327.7``, ``80%``, ``$12``, ``-3.5``."""
    t = normalize_text(text).replace(",", "").replace("%", "").replace("$", "").replace("\u2212", "-").strip()
    if not _NUMBER.match(t):
        return None
    return float(t)


def _yes_no(text: str) -> str | None:
    t = normalize_text(text)
    if t in _YES:
        return "yes"
    if t in _NO:
        return "no"
    return None


def exact_match(prediction: str, target: str) -> float:
    return float(normalize_text(prediction) == normalize_text(target))


def relaxed_accuracy(prediction: str, target: str, tolerance: float = 0.05) -> float:
    """ChartQA's relaxed accuracy: numbers match within ``tolerance`` relative error
    (a zero target needs an exact zero), yes/no answers by polarity, other text after
    normalisation. A percent sign is read as part of the number's unit, not as /100."""
    target_number, predicted_number = parse_number(target), parse_number(prediction)
    if target_number is not None and predicted_number is not None:
        if target_number == 0:
            return float(predicted_number == 0)
        return float(abs(predicted_number - target_number) / abs(target_number) <= tolerance)
    target_yn = _yes_no(target)
    if target_yn is not None:
        return float(_yes_no(prediction) == target_yn)
    return exact_match(prediction, target)


def levenshtein(a: str, b: str) -> int:
    """The edit distance (insertions, deletions, substitutions, each 1)."""
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def anls_normalize(text: str) -> str:
    """ANLS's normalisation: NFKC, then DocVQA's (as the ``anls`` package does it): lower
    case, stripped, inner whitespace runs as one space. Unlike :func:`normalize_text` it
    keeps punctuation.

    The ST-VQA and DocVQA definition (and the ``anls`` package) compare the code points as
    given; the NFKC step is vicogym's own, so that a compatibility form a renderer or an OCR
    reply may use reads as the letters it stands for (the ligature ``"ﬁle"`` as ``"file"``,
    full-width ``"Ａ１"`` as ``"a1"``, a non-breaking space as a space). On text that NFKC
    leaves alone (ASCII, say) the scores are the package's."""
    return " ".join(unicodedata.normalize("NFKC", str(text)).strip().lower().split())


def normalized_levenshtein(a: str, b: str) -> float:
    """The edit distance over the longer length (0 for two empty strings). The length is
    taken of the upper-cased strings, as the ``anls`` package does (``'ß'`` counts two)."""
    length = max(len(a.upper()), len(b.upper()))
    return 0.0 if length == 0 else levenshtein(a, b) / length


def anls(prediction: str, golds: str | Sequence[str], threshold: float = 0.5) -> float:
    """ANLS (Biten et al., 2019; DocVQA's metric) of ``prediction`` against ``golds`` (one
    string or several): both sides put through :func:`anls_normalize` (NFKC, then lower
    case and whitespace runs as one space), ``NL`` their
    :func:`normalized_levenshtein`; per gold ``1 - NL`` when ``NL < threshold``, else 0;
    the best over the golds. Case and runs of whitespace do not count, punctuation does."""
    if isinstance(golds, str):
        golds = [golds]
    golds = list(golds)
    if not golds:
        raise ValueError("anls needs at least one gold answer")
    if not 0 < threshold <= 1:
        raise ValueError(f"expected the ANLS threshold in (0, 1], got {threshold!r}")
    said = anls_normalize(prediction)
    best = 0.0
    for gold in golds:
        want = anls_normalize(gold)
        length = max(len(said.upper()), len(want.upper()))
        if length and abs(len(said) - len(want)) / length >= threshold:
            continue  # the distance is at least the lengths' gap, so NL >= threshold: 0 without comparing
        nl = normalized_levenshtein(said, want)  # (a reply of 100,000 characters is not compared letter by letter)
        best = max(best, 1 - nl if nl < threshold else 0.0)
    return best


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_ONES = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
         "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen")
_TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")


def _words_of(n: int) -> str:
    """``n`` in [1, 999] in words, as :func:`number_from_words` reads them (hyphens as spaces)."""
    hundreds, rest = divmod(n, 100)
    tens, ones = divmod(rest, 10)
    tail = [] if rest == 0 else [_ONES[rest]] if rest < 20 else [_TENS[tens - 2], *([_ONES[ones]] if ones else [])]
    return " ".join([*([_ONES[hundreds], "hundred"] if hundreds else []), *tail])


_BELOW_THOUSAND = {_words_of(n): n for n in range(1, 1000)}


def number_from_words(text: str) -> int | None:
    """A whole number from zero to 999,999 written in English words (``"two"``, ``"twenty-one"``,
    ``"one hundred and five"``, ``"two thousand twenty"``), or ``None`` when any word of
    ``text`` is not part of one (``"two apples"``, ``"tent"``, ``"one two"``)."""
    words = normalize_text(text).replace("-", " ").split()
    # "one hundred and five", "one thousand and one": an "and" after a hundred or a thousand, before more
    words = [w for k, w in enumerate(words)
             if not (w == "and" and 0 < k < len(words) - 1 and words[k - 1] in ("hundred", "thousand"))]
    if words == ["zero"]:
        return 0
    if words.count("thousand") > 1:
        return None
    if "thousand" in words:
        k = words.index("thousand")
        high, low = _BELOW_THOUSAND.get(" ".join(words[:k])), _BELOW_THOUSAND.get(" ".join(words[k + 1:]), 0)
        return None if high is None or (words[k + 1:] and not low) else high * 1000 + low
    return _BELOW_THOUSAND.get(" ".join(words))


def _number_said(text: str) -> float | None:
    """The number ``text`` gives, in digits (:func:`parse_number`) or in words."""
    number = parse_number(text)
    if number is None:
        whole = number_from_words(text)
        number = None if whole is None else float(whole)
    return number


def short_answer(prediction: str, target: str) -> float:
    """VQA-style short answers: yes/no by polarity, numbers as numbers, in digits or words
    either side (``"2"``, ``"2.0"`` and ``"two"`` alike, no tolerance:
    :func:`number_from_words`), other text normalised and without articles (``"a spoon"``
    is ``"spoon"``)."""
    truth = _yes_no(target)
    if truth is not None:
        return float(_yes_no(prediction) == truth)
    target_number = _number_said(target)
    if target_number is not None:
        number = _number_said(prediction)
        return float(number is not None and number == target_number)

    def bare(text: str) -> str:
        return re.sub(r"\s+", " ", _ARTICLES.sub(" ", normalize_text(text))).strip()

    return float(bare(prediction) == bare(target))


SCORERS: dict[str, Scorer] = {"exact": exact_match, "relaxed": relaxed_accuracy, "anls": anls, "short": short_answer}


def get_scorer(name: str) -> Scorer:
    if name not in SCORERS:
        raise ValueError(f"expected a scorer in {sorted(SCORERS)}, got {name!r}")
    return SCORERS[name]
