"""Text helpers the constraint types share, and the verifiers and the editors read the
same way: words, sentences, paragraphs and lines as IFEval counts them; counted verdicts;
names, numbers and clauses for the visually grounded types; and the parameter schemas
the types reuse.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from vicogym.programs.instruct.contracts import RELATIONS, Verdict


def compare(actual: int, relation: str, n: int) -> bool:
    return actual >= n if relation == "at least" else actual <= n if relation == "at most" else actual == n


def counted(what: str, relation: str, n: int, actual: int, detail: str = "") -> Verdict:
    """The verdict on ``actual`` of ``what`` against ``relation n``."""
    return Verdict(compare(actual, relation, n), f"{relation} {n} {what}", f"{actual} {what}", detail)


def count_matches(pattern: str, text: str) -> int:
    """How many times ``pattern`` matches in ``text``, read line by line (``re.MULTILINE``)."""
    return len(re.findall(pattern, text, flags=re.MULTILINE))


#: a Markdown table's separator row: ``|---|:---:|``, the outer bars optional
TABLE_SEPARATOR = re.compile(r"\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?")


def first_table(text: str) -> tuple[str, list[str]] | None:
    """The first Markdown table in ``text``: its header row and its data rows (the lines
    starting with ``|`` after the separator row, stripped); ``None`` where there is none."""
    lines = [line.strip() for line in text.splitlines()]
    for i in range(1, len(lines)):
        if TABLE_SEPARATOR.fullmatch(lines[i]) and lines[i - 1].startswith("|"):
            rows = list(itertools.takewhile(lambda line: line.startswith("|"), lines[i + 1:]))
            return lines[i - 1], rows
    return None


def words(text: str) -> list[str]:
    """Words as IFEval counts them: runs of word characters."""
    return re.findall(r"\w+", text)


def sentences(text: str) -> list[str]:
    """Sentences: text ending at ., ! or ? followed by space or the end (abbreviations are not recognised)."""
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s.strip()]


def paragraphs(text: str) -> list[str]:
    """Paragraphs separated by blank lines."""
    return [p for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]


def strip_fence(text: str) -> str:
    text = text.strip()
    match = re.fullmatch(r"```[a-zA-Z]*\n?(.*?)\n?```", text, re.DOTALL)
    return match.group(1) if match else text


COUNT = {"type": "integer", "minimum": 0, "maximum": 100_000}
RELATION = {"type": "string", "enum": list(RELATIONS)}
TEXT = {"type": "string", "minLength": 1}
WORD_LIST = {"type": "array", "items": TEXT, "minLength": 1}


def lines(text: str) -> list[str]:
    """Non-empty lines (split at newline characters only)."""
    return [line for line in text.split("\n") if line.strip()]


NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
NUMBER_PATTERN = re.compile(
    r"(?<![\w.,])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?!\w)|\b(?:" + "|".join(NUMBER_WORDS) + r")\b", re.IGNORECASE
)
CLAUSE = re.compile(r";|,\s*(?:and|but|while|whereas)\b|\b(?:and|but|while|whereas)\b", re.IGNORECASE)


def name_pattern(name: str) -> re.Pattern[str]:
    """``name`` as whole words, any case, any spacing, singular or plural ("cube", "cubes")."""
    return re.compile(r"(?<!\w)" + r"\s+".join(re.escape(p) for p in name.split()) + r"(?:e?s)?(?!\w)", re.IGNORECASE)


def mentions(text: str, names: list[str] | tuple[str, ...]) -> list[tuple[int, int, str]]:
    """Non-overlapping ``(start, end, name)`` mentions, longest names first ("red cube" wins over "cube")."""
    found = sorted(((m.start(), m.end(), n) for n in set(names) for m in name_pattern(n).finditer(text)),
                   key=lambda t: (-(t[1] - t[0]), t[0]))
    taken = bytearray(len(text))  # the characters a kept mention covers: linear in the text, not quadratic
    kept: list[tuple[int, int, str]] = []
    for span in found:
        if not covered(taken, span[0], span[1]):
            taken[span[0]:span[1]] = b"\x01" * (span[1] - span[0])
            kept.append(span)
    return sorted(kept)


def covered(taken: bytearray, start: int, end: int) -> bool:
    """Whether any character in ``[start, end)`` is marked in ``taken``."""
    return taken.find(1, start, end) != -1


def coverage(text: str, spans: list[tuple[int, int, str]]) -> bytearray:
    """The characters of ``text`` that ``spans`` cover, marked 1."""
    taken = bytearray(len(text))
    for start, end, _ in spans:
        taken[start:end] = b"\x01" * (end - start)
    return taken


def has(text: str, name: str) -> bool:
    return name_pattern(name).search(text) is not None


def numbers(text: str) -> list[tuple[int, int, float]]:
    """``(start, end, value)`` of numbers written as digits (1,234.5) or words (zero .. twenty)."""
    out = []
    for m in NUMBER_PATTERN.finditer(text):
        token = m.group().lower()
        out.append((m.start(), m.end(),
                    float(NUMBER_WORDS[token]) if token in NUMBER_WORDS else float(token.replace(",", ""))))
    return out


def clauses(text: str, names: list[str] | tuple[str, ...]) -> list[str]:
    """``text``'s sentences cut at ';' and at and / but / while / whereas, never inside a name."""
    out = []
    for sentence in sentences(text):
        taken = coverage(sentence, mentions(sentence, names))
        cuts = [m for m in CLAUSE.finditer(sentence) if not covered(taken, m.start(), m.end())]
        start = 0
        for m in cuts:
            out.append(sentence[start:m.start()])
            start = m.end()
        out.append(sentence[start:])
    return [c for c in out if c.strip()]


def plural(noun: str) -> str:
    head, _, last = noun.rpartition(" ")
    if re.search(r"(s|x|z|ch|sh)$", last):
        last += "es"
    elif re.search(r"[^aeiou]y$", last):
        last = last[:-1] + "ies"
    else:
        last += "s"
    return f"{head} {last}".strip()


def number_text(value: float) -> str:
    """A number as a reader writes it: no trailing zeros, no exponent."""
    text = f"{value:.6f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


# OCR grounded and chart rows ----------------------------------------------------------------------
def collapse_spaces(text: Any) -> str:
    """``text`` with every run of whitespace made one space (and none at the ends)."""
    return " ".join(str(text).split())
