"""Questions of the ChartQA source: each record screened and classified.

- questions that point at colours are dropped (charts are redrawn from their tables, so
  the original colours are gone); questions that name a mark type get that chart type,
  or are dropped when the table cannot be drawn so;
- Tier 1 ``cell``: the label is exactly one cell, named in the question;
- ``program``: a common question form (value, highest/lowest, difference, sum, average,
  ratio, median, count above, comparisons) parsed into a table program
  (:data:`vicogym.programs.chart.OPS`) that reproduces the label on the record's own table
  (promoted: value edits allowed);
- when the parsed program contradicts the label, the record is dropped (``tier2="drop"``,
  the default) or kept as ``invariant`` (``tier2="keep"``);
- otherwise Tier 2 ``invariant``: the label holds only while every value stays fixed;
  with ``tier2="drop"`` the screens below drop what a reader could not answer from the
  redrawn chart (an answer no program derives, a tied extreme, a reference the chart does
  not draw ...).
"""

from __future__ import annotations

import math
import re
import statistics
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from vicogym.answers import format_number, parse_number
from vicogym.errors import InvalidEdit
from vicogym.programs.chart import (
    OPS,
    THRESHOLD_PHRASES,
    cell_rule,
    execute,
    invariant_rule,
    make_program,
    presupposition,
    program_rule,
    question_references,
)
from vicogym.sources.chartqa_tables import TOTAL_LABEL, UNNAMED, YEAR, chartqa_vocabulary, time_key
from vicogym.structures.chart import Table, chart_type_fits
from vicogym.structures.chart import label_key as _label_key


def label_key(label: str) -> str:
    """:func:`vicogym.structures.chart.label_key`, remembered for short texts: classifying a
    record compares its question with every label of its table many times over."""
    return _short_key(label) if len(label) <= 512 else _label_key(label)


_short_key = lru_cache(maxsize=1 << 14)(_label_key)


@lru_cache(maxsize=64)
def _keys(labels: tuple[str, ...]) -> tuple[str, ...]:
    """The keys of a table's row or series labels (worked out once per table)."""
    return tuple(label_key(x) for x in labels)


def mentions(text: str, label: str) -> bool:
    """Whether ``text`` names ``label`` as whole words (:func:`vicogym.programs.chart.mentions`,
    on remembered keys)."""
    needle = label_key(label)
    return bool(needle) and f" {needle} " in f" {label_key(text)} "


MARK_CHART_TYPES = {"line": ("line",), "bar": ("bar", "grouped_bar", "hbar"), "pie": ("pie",)}
_MARK_WORDS = {"line": {"line", "lines", "curve", "dot", "dots", "point", "points"},
               "bar": {"bar", "bars", "column", "columns"},
               "pie": {"pie", "slice", "slices", "wedge", "donut"}}  # "segment" and "sector" name business units too


def referenced_marks(question: str) -> set[str]:
    words = set(label_key(question).split())
    return {mark for mark, vocabulary in _MARK_WORDS.items() if words & vocabulary}


# -- ChartQA questions into programs ------------------------------------------------------
_FORMS = {
    "max": {"highest", "largest", "maximum", "max", "peak", "biggest", "greatest"},
    "min": {"lowest", "smallest", "minimum", "min", "least", "fewest"},
    "difference": {"difference", "gap"},
    "average": {"average", "mean"},
    "sum": {"sum", "total", "combined", "together"},
    "ratio": {"ratio"},
    "median": {"median"},
}
_ORDINALS = {"second", "third", "fourth", "2nd", "3rd", "4th", "top", "bottom", "first", "last"}
#: words that turn a named label into its opposite ("non-male", "other than")
_NEGATION = {"non", "not", "except", "excluding", "other", "without", "besides"}
#: questions about changes between rows, which no table program computes
_CHANGE = {"increase", "decrease", "increased", "decreased", "change", "changed", "growth", "grew", "rise", "rose",
           "fall", "fell", "drop", "dropped", "trend", "jump"}
_YES_NO = {"is", "are", "was", "were", "does", "do", "did"}
_GREATER = ("more than", "greater than", "higher than", "larger than", "bigger than")
_LESS = ("less than", "lower than", "smaller than", "fewer than")
_ABOVE = ("above", "more than", "greater than", "higher than", "over", "exceed", "exceeds")
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
#: words that point at one row by its place in time ("the most recent period", "the latest year")
_TIME = {"recent", "latest", "current", "newest", "earliest", "oldest", "previous", "upcoming", "today", "now",
         "currently", "lately", "ago", "forecast", "projected", "expected", "will"}
#: words a question is built of that name no row, series or operation
_FUNCTION_WORDS = {
    "what", "which", "who", "when", "where", "how", "much", "many", "is", "are", "was", "were", "be", "been", "did",
    "does", "do", "has", "have", "had", "the", "a", "an", "of", "in", "on", "at", "for", "to", "by", "from", "with",
    "and", "or", "as", "its", "their", "this", "that", "these", "those", "there", "it", "value", "values", "number",
    "amount", "figure", "level", "according", "chart", "graph", "shown", "given", "per", "all", "among", "across",
    "between", "over", "during", "record", "recorded", "registered", "reached", "reach", "data", "category",
    "categories", "s"}


def _names_what_the_program_ignores(question: str, table: Table, series: str, used_rows: list[str]) -> bool:
    """Whether a question whose program reads a whole column also names something that
    program does not read: a time ("the most recent period"), or a word that picks out one
    row or series it does not use. Promoted to "max of the column"
    such a question would answer another row once an edit moves the maximum."""
    words = label_key(question).split()
    if set(words) & _TIME:
        return True
    explained = set(label_key(series).split()) | set(label_key(table.index_name).split()) | _FUNCTION_WORDS
    for r in used_rows:
        explained |= set(label_key(r).split())
    for vocabulary in _FORMS.values():
        explained |= vocabulary
    content = {w for w in words if w not in explained and len(w) > 2 and not _NUMBER.fullmatch(w)}
    # a word of exactly one other label picks that label out ("Finns" of "Finns Party (...)");
    # a word many labels share is their kind ("Province" of every province), which picks none
    owners = Counter(w for label in (*table.rows, *table.series) if label not in used_rows and label != series
                     for w in set(label_key(label).split()) if len(w) > 2)
    return any(owners[w] == 1 for w in content)


def _mentioned(question: str, labels: tuple[str, ...]) -> list[str]:
    """Labels the question names, in the order it names them."""
    text = f" {label_key(question)} "
    found = [(text.find(f" {key} "), x) for x, key in zip(labels, _keys(labels)) if key and f" {key} " in text]
    return [x for _, x in sorted(found)]


@dataclass(frozen=True)
class _Wording:
    """What :func:`parse_question` reads of a question: its words (by label key, padded
    with spaces), the rows it names, the one series its program reads, the words left when
    the labels' own are set aside, the forms those words ask for (:data:`_FORMS`), and
    whether the label is a row or a number."""

    question: str
    text: str
    rows: list[str]
    series: str
    words: set[str]
    forms: set[str]
    label_is_row: bool
    numeric: bool


def _wording(question: str, table: Table, label: str) -> _Wording | None:
    """The question read for :func:`parse_question`, or ``None`` when it names no one series
    (and the table has several) or asks for an ordinal, a change or a negation."""
    text = " " + " ".join(label_key(question).split()) + " "
    rows = _mentioned(question, table.rows)
    named_series = _mentioned(question, table.series)
    if len(table.series) == 1:
        series = table.series[0]
    elif len(named_series) == 1:
        series = named_series[0]
    else:
        return None
    rows = [r for r in rows if label_key(r) != label_key(series)]
    naming = set(label_key(series).split()) | set(label_key(table.index_name).split())
    for r in rows:
        naming |= set(label_key(r).split())
    words = set(text.split()) - naming
    if " the most " in text and not any(f" the most {w} " in text for w in _TIME):
        words.add("highest")
    if words & (_ORDINALS | _CHANGE | _NEGATION):
        return None
    forms = {form for form, vocabulary in _FORMS.items() if words & vocabulary}
    label_is_row = any(label_key(label) == label_key(r) for r in table.rows)
    numeric = parse_number(label) is not None and not label_is_row
    return _Wording(question, text, rows, series, words, forms, label_is_row, numeric)


def parse_question(question: str, table: Table, label: str) -> dict[str, Any] | None:
    """A table program for a common ChartQA question form, or ``None``.

    Conservative: every row and series the form needs must be named (or the table must
    have one series), one form only, no ordinals ("second highest"), and words that are
    part of the measure's own name ("Average annual wages") do not count as forms. The
    label decides between a label answer (argmax) and a value answer (max)."""
    q = _wording(question, table, label)
    if q is None:
        return None
    first = q.text.split()[0] if q.text.split() else ""
    if first in _YES_NO:
        return _comparison(q)
    if q.forms == {"max", "min", "difference"} and not q.rows and q.numeric:
        return make_program("range", series=[q.series])
    if q.text.startswith(" how many "):
        return _how_many(q)
    if not q.forms and len(q.rows) == 1 and q.numeric:
        return make_program("lookup", q.rows, [q.series])
    found = _row_with_value(q, table)
    if found is not None:
        return found
    if len(q.forms) != 1:
        return None
    return _one_form(q, table)


def _comparison(q: _Wording) -> dict[str, Any] | None:
    """A yes/no question: is the value of one named row greater (less) than another's?"""
    if len(q.rows) != 2 or q.forms:
        return None
    if any(f" {p} " in q.text for p in _GREATER):
        return make_program("greater", q.rows, [q.series])
    if any(f" {p} " in q.text for p in _LESS):
        return make_program("less", q.rows, [q.series])
    return None


def _how_many(q: _Wording) -> dict[str, Any] | None:
    """A "how many" question: values above a number, or how many times one value is another."""
    if q.forms:
        return None
    numbers = _NUMBER.findall(q.question)
    if len(numbers) == 1 and any(f" {p} " in q.text for p in _ABOVE) and not q.rows and q.numeric:
        return make_program("count_above", series=[q.series], number=float(numbers[0].replace(",", "")))
    if (" how many times " in q.text or " how many more times " in q.text) and len(q.rows) == 2 and q.numeric:
        return make_program("ratio", q.rows, [q.series])
    return None


def _row_with_value(q: _Wording, table: Table) -> dict[str, Any] | None:
    """"Which year had 35?": the row that holds the one number the question gives (a number
    that is no row label and no year: a year in a question dates it, it is no value)."""
    numbers = [n for n in _NUMBER.findall(q.question)
               if not any(label_key(n) == label_key(r) for r in table.rows) and not YEAR.match(n)]
    if (not q.forms and not q.rows and q.label_is_row and len(numbers) == 1
            and q.words & {"which", "what", "when", "where"}):
        return make_program("row_with_value", series=[q.series], number=float(numbers[0].replace(",", "")))
    return None


def _one_form(q: _Wording, table: Table) -> dict[str, Any] | None:
    """A question of one form: an extreme of the series (its label or its value), its mean or
    median, or the difference, mean, sum or ratio of two named rows."""
    form = next(iter(q.forms))
    if not q.rows and _names_what_the_program_ignores(q.question, table, q.series, q.rows):
        return None  # a whole-column program would not answer what the words ask
    if form in ("max", "min") and not q.rows:
        if q.label_is_row:
            return make_program("argmax" if form == "max" else "argmin", series=[q.series])
        return make_program(form, series=[q.series]) if q.numeric else None
    if not q.numeric:
        return None
    pair = {"difference": "absdiff", "average": "pair_mean", "sum": "pair_sum", "ratio": "ratio"}
    if form in pair and len(q.rows) == 2:
        return make_program(pair[form], q.rows, [q.series])
    if form in ("average", "median") and not q.rows:
        return make_program("mean" if form == "average" else "median", series=[q.series])
    return None


def _asks_one_cell(question: str, table: Table) -> bool:
    """Whether a question can be a single cell's (Tier 1): it names exactly one row and no
    operation that combines values (difference, ratio, median, ranks, changes, negation).
    Words of the table's own labels ("Average ticket price") are not operations."""
    if len(_mentioned(question, table.rows)) != 1:
        return False
    naming = {w for label in table.series + (table.index_name,) for w in label_key(label).split()}
    words = set(label_key(question).split()) - naming
    combining = _FORMS["difference"] | _FORMS["ratio"] | _FORMS["median"] | {"times"}
    return not words & (combining | _ORDINALS | _CHANGE | _NEGATION)


def _has_value(table: Table, program: Mapping[str, Any]) -> bool:
    """Whether the series a program of a ``find`` op searches prints the value it names."""
    op = OPS[program["op"]]
    target = format_number(float(program[op.number]))
    return any(v is not None and format_number(v) == target for v in table.column(program[op.series[0]]))


def answers_agree(computed: float | str, label: str) -> bool:
    """Whether a program's raw result is the record's label, at the label's own precision."""
    target = parse_number(label)
    if isinstance(computed, str) or target is None:
        return label_key(str(computed)) == label_key(label)
    places = len(label.strip().split(".")[1]) if "." in label.strip() else 0
    return abs(float(computed) - target) <= 0.5 * 10.0 ** -places + 1e-9 * abs(target)


@lru_cache(maxsize=32)
def garbled(table: Table) -> bool:
    """A table that lost its shape on extraction: a series whose header is blank (it would
    be drawn as "Unnamed: 4" in the legend), a multi-series row of zeros only (a
    placeholder), or three or more rows that repeat the row before them."""
    if any(UNNAMED.fullmatch(s) for s in table.series) or broken_total(table):
        return True
    if len(table.series) < 2:
        return False
    if any(row and all(v == 0.0 for v in row) for row in table.values):
        return True
    repeats = sum(a == b for a, b in zip(table.values, table.values[1:]))
    return repeats >= 3


def broken_total(table: Table) -> bool:
    """Whether a row or series named as a total ("NET", "Total") sums the others on most of
    its lines but not on all (a NET of 38 beside 42 and 42, the others exact): extraction
    broke a line, and a reader sees a total that is none."""
    for label in (*table.rows, *table.series):
        if not TOTAL_LABEL.match(label_key(label)):
            continue
        lines = [(total, parts) for _, total, parts in table.total_lines(label)
                 if total is not None and None not in parts and len(parts) > 1]
        slack = max(table.total_slack(max((len(parts) for _, parts in lines), default=1)), 1.0)
        adding = sum(abs(total - math.fsum(parts)) <= slack for total, parts in lines)  # type: ignore[arg-type]
        if len(lines) >= 3 and 2 * adding >= len(lines) and adding < len(lines):
            return True
    return False


#: what a question's words ask a number to be (:func:`asked_quantities`): a ``level`` is a
#: drawn value (or a series' extreme, which is one)
QUANTITIES = ("level", "difference", "sum", "mean", "ratio", "median")
def asked_quantities(table: Table, question: str) -> set[str]:
    """What kind of number a question's words ask for (:data:`QUANTITIES`): "how much did it
    rise", "the gap", "how much more" ask a difference; "sum", "combined" a sum, which "total"
    may also name as a level ("total revenue"); "average", "mean" a mean, also a level
    ("average price"); "ratio", "times" a ratio; "median" a median. A question that asks none
    of these asks a level. Words that belong to the table's own labels ("Growth rate in %",
    "Average ticket price") ask nothing: the drawn value is that quantity."""
    naming = {w for x in (*table.rows, *table.series, table.index_name) for w in label_key(x).split()}
    text = f" {label_key(question)} "
    words = set(text.split()) - naming
    asked = set()
    if words & _DIFFERENCE_WORDS or (_HOW_MUCH_MORE.search(text) and not {"more", "less", "fewer"} & naming):
        asked.add("difference")
    if words & (_FORMS["sum"] | {"add", "added", "altogether"}):
        asked |= {"sum", "level"}
    if words & _FORMS["average"]:
        asked |= {"mean", "level"}
    if "ratio" in words or (_TIMES.search(text) and "times" not in naming):
        asked.add("ratio")
    if words & _FORMS["median"]:
        asked.add("median")
    return asked or {"level"}


def derivable(table: Table, label: str, question: str) -> bool:
    """Whether a numeric answer follows from the drawn table as the quantity the question's
    words ask for (:func:`asked_quantities`), at the label's own precision: a drawn value for
    a level; two cells' difference (or change in percent), a column's range or two columns'
    like aggregates' gap for a difference; a column's, a row's, two or three cells' sum for a
    sum; and so on (:func:`_derived_values`); a count of rows for "how many". An answer no such
    program reaches is one the chart cannot show a reader: a "rise" stored as 70 where the
    chart prints a level of 71 and a rise of 1, a count of 24 where the label reads 21."""
    target = parse_number(label)
    if target is None or label_key(label) in {*_keys(table.rows), *_keys(table.series)}:
        return True  # not a number, or a drawn label (a year that names a row)
    asked = asked_quantities(table, question)
    if (" how many " in f" {label_key(question)} " and asked == {"level"} and target == int(target)
            and 0 <= target <= len(table.rows)):
        return True  # a count of rows meeting some condition: at most every row
    places = len(label.strip().split(".")[1]) if "." in label.strip() else 0
    tolerance = 0.5 * 10.0 ** -places + 1e-9 * abs(target)  # answers_agree's, at once for every candidate
    derived = _derived_values(table)
    with np.errstate(all="ignore"):
        return any(bool(np.any(np.abs(derived[kind] - target) <= tolerance)) for kind in asked)


@lru_cache(maxsize=32)
def _derived_values(table: Table) -> dict[str, np.ndarray]:
    """Every value :func:`derivable` accepts on ``table``, by the quantity it is (worked out
    once per table: a source's records share their tables)."""
    columns = [[v for v in table.column(s) if v is not None] for s in table.series]
    rows = [[v for v in row if v is not None] for row in table.values]
    found: dict[str, list[Any]] = {kind: [] for kind in QUANTITIES}
    found["level"].append(np.array([v for values in columns for v in values], dtype=float))
    aggregates: dict[str, list[float]] = {"max": [], "min": [], "sum": [], "mean": []}
    for values in columns:
        if values:
            ranked = sorted(values)
            found["median"].append(np.array([float(statistics.median(values))]))
            middle = (float(statistics.median(values)), _fsum(values) / len(values))
            found["difference"].append(np.abs(np.subtract.outer([max(values), min(values)], middle)).ravel())
            found["difference"].append(np.array([max(values) - min(values)]))
            found["sum"].append(np.array([_fsum(ranked[-k:]) for k in (2, 3)] + [_fsum(ranked[:k]) for k in (2, 3)]))
            for name, value in (("max", max(values)), ("min", min(values)), ("sum", _fsum(values)),
                                ("mean", _fsum(values) / len(values))):
                aggregates[name].append(value)
    for values in rows:
        if values:
            found["median"].append(np.array([float(statistics.median(values))]))
            aggregates["sum"].append(_fsum(values))
            aggregates["mean"].append(_fsum(values) / len(values))
    for name, values in aggregates.items():  # a column's extreme is a level; totals and means are their own
        found["level" if name in ("max", "min") else name].append(np.array(values, dtype=float))
    for group in [*columns, *rows, *aggregates.values()]:  # pairs within a column, a row, or like aggregates
        if len(group) < 2:
            continue
        values = np.array(group, dtype=float)
        first, second = np.triu_indices(len(values), k=1)  # every pair once, as a, b in the group's order
        a, b = values[first], values[second]
        with np.errstate(all="ignore"):
            found["difference"] += [np.abs(a - b), (np.abs(b - a) / np.abs(a))[a != 0] * 100.0,
                                    (np.abs(a - b) / np.abs(b))[b != 0] * 100.0]
            found["sum"] += [np.array([_fsum(group)]), a + b]
            found["mean"].append((a + b) / 2.0)
            found["ratio"] += [(a / b)[b != 0], (b / a)[a != 0]]
    result = {kind: np.concatenate(parts) if parts else np.zeros(0) for kind, parts in found.items()}
    for values in result.values():
        values.setflags(write=False)
    return result


def _fsum(values: Sequence[float]) -> float:
    """``math.fsum``, or the plain sum (infinite) where the exact one passes the largest float."""
    try:
        return math.fsum(values)
    except OverflowError:
        return float(sum(values))


def extremes_combined(table: Table, label: str, question: str) -> bool | None:
    """For "the sum (difference, average) of the maximum and minimum ...": whether the label
    is what some reading of the words gives (the extremes of one series, or of one row, the
    one the question names or any; or the maximum of one named series or row and the minimum
    of another), or ``None`` for other questions. No table program computes it, and the
    loose "derivable by some program" test would accept any pair's sum."""
    words = set(label_key(question).split())
    combine = [form for form in ("sum", "difference", "average") if words & _FORMS[form]]
    if not (words & _FORMS["max"] and words & _FORMS["min"]) or len(combine) != 1 or parse_number(label) is None:
        return None
    op = {"sum": lambda a, b: a + b, "difference": lambda a, b: a - b, "average": lambda a, b: (a + b) / 2}[combine[0]]
    groups = {x: [v for v in table.column(x) if v is not None] for x in table.series}
    groups.update({r: [v for v in row if v is not None] for r, row in zip(table.rows, table.values)})
    groups = {k: v for k, v in groups.items() if v}
    named = _mentioned(question, tuple(groups))
    readings = [op(max(v), min(v)) for k, v in groups.items() if not named or k in named]
    readings += [op(max(groups[a]), min(groups[b])) for a in named for b in named if a != b]
    return any(answers_agree(r, label) for r in readings)


def _named_loosely(question: str, labels: Sequence[str]) -> list[int]:
    """The labels a question names in full or by a word only that label has ("neonatal" for
    "Neonatal (first 28 days of life)"), by index."""
    words = set(label_key(question).split())
    owners = Counter(w for x in labels for w in set(label_key(x).split()))
    return [i for i, x in enumerate(labels) if mentions(question, x)
            or any(len(w) > 3 and owners[w] == 1 and w in words for w in label_key(x).split())]


def extreme_tie(table: Table, label: str, question: str) -> bool:
    """Whether a question that asks for the label with an extreme ("when is the gap
    largest?") and is answered by a row or series label has that label only among tied
    ones under every way the table gives an extreme that the question's words allow: the
    gap between the two labels it names, the one column it names, or else any column, gap
    between two columns or row total (for a series label, the same with the table turned).
    A tie makes the answer a guess (1990 and 1995 share the largest gap)."""
    words = set(label_key(question).split())
    wants = [k for k, vocabulary in (("max", _FORMS["max"]), ("min", _FORMS["min"])) if words & vocabulary]
    rows, series = [label_key(r) for r in table.rows], [label_key(x) for x in table.series]
    if len(wants) != 1 or label_key(label) not in rows + series:
        return False
    pick = max if wants[0] == "max" else min
    grid, across = [list(r) for r in table.values], table.series
    if label_key(label) not in rows:  # the answer is a series (years across the top): read the table turned
        grid, rows, across = [list(c) for c in zip(*grid)], series, table.rows
    columns = [list(c) for c in zip(*grid)]
    named = _named_loosely(question, across)
    if len(named) == 2:  # "the gap between Child and Neonatal": that gap alone
        a, b = (columns[i] for i in named)
        measures = [[None if x is None or y is None else abs(x - y) for x, y in zip(a, b)]]
    elif len(named) == 1:
        measures = [columns[named[0]]]
    else:
        measures = columns + [[None if a is None or b is None else abs(a - b) for a, b in zip(x, y)]
                              for i, x in enumerate(columns) for y in columns[i + 1:]]
        measures.append([None if any(v is None for v in row) else math.fsum(row) for row in grid])
    target, tied = rows.index(label_key(label)), False
    for values in measures:
        present = [v for v in values if v is not None]
        if not present or values[target] is None:
            continue
        best = pick(present)
        if round(values[target], 9) == round(best, 9):
            if sum(round(v, 9) == round(best, 9) for v in present) == 1:
                return False  # some reading makes it the one extreme
            tied = True
    return tied


_THROUGHOUT = ("consistently", "always", "every year", "all years", "throughout", "each year", "in all years")


def threshold_fit(table: Table, label: str, question: str) -> str | None:
    """Why a label answer to "which X was consistently above 1.5?" is no answer, or
    ``None``: with the question's one threshold and "consistently" (always, every year ...),
    the labels whose every value lies past it must be exactly the answer; "fits" for
    several labels, "misses" when the answer is not among them."""
    text = f" {label_key(question)} "
    if not any(f" {w} " in text for w in _THROUGHOUT):
        return None
    numbers = [n for n in _NUMBER.findall(question) if not YEAR.match(n)]
    above, below = any(f" {p} " in text for p in _ABOVE), any(f" {p} " in text for p in _LESS + ("below", "under"))
    if len(numbers) != 1 or above == below:
        return None
    threshold = float(numbers[0].replace(",", ""))
    rows, series = [label_key(r) for r in table.rows], [label_key(x) for x in table.series]
    key = label_key(label)
    if key in rows:
        groups = {r: [v for v in row if v is not None] for r, row in zip(rows, table.values)}
    elif key in series:
        groups = {x: [v for v in table.column(s) if v is not None] for x, s in zip(series, table.series)}
    else:
        return None
    fitting = [g for g, vs in groups.items() if vs and all((v > threshold) if above else (v < threshold) for v in vs)]
    if key not in fitting:
        return "misses"
    return "fits" if len(fitting) > 1 else None


_RISE = {"increase", "increased", "increasing", "grow", "grew", "growing", "growth", "rise", "rose", "rising",
         "risen", "climb", "climbed", "climbing", "up", "improve", "improved", "improving"}
_FALL = {"decrease", "decreased", "decreasing", "decline", "declined", "declining", "fall", "fell", "falling",
         "fallen", "drop", "dropped", "dropping", "shrink", "shrank", "shrinking", "down"}
#: words that ask when a trend set in ("since what year", "began to grow", "increased steadily")
_ONSET = {"since", "begin", "began", "begun", "start", "started", "starting", "steadily", "consistently",
          "continuously", "continually", "constantly", "onwards", "onward"}


#: words that ask for a difference (a rise, a fall, a gap), not a level
_DIFFERENCE_WORDS = _FORMS["difference"] | (_RISE | _FALL) - {"up", "down"} | {
    "change", "changed", "changes", "differ", "differs", "differed", "jump", "jumped", "deduct", "subtract",
    "minus"}
#: "how much more", "by how much percentage is A less than B": a difference
_HOW_MUCH_MORE = re.compile(r" how (?:much|many) (?:\w+ ){0,8}?(?:more|less|fewer|higher|lower|larger|smaller|bigger) ")
#: "how many times", "3 times as", "times higher": a ratio ("The Times Company" is none)
_TIMES = re.compile(r" (?:how many|\d+(?:\.\d+)?) (?:more )?times | times (?:as|more|less|higher|lower|larger|greater|"
                    r"bigger|smaller) ")


def onset_problem(table: Table, label: str, question: str) -> str | None:
    """Why a row label cannot answer "since what year has it been rising?" or "when did it
    begin to grow?", or ``None``. The only reading that picks one row is "since": the row
    the trend that runs to the end starts from. "Began to grow", "increased steadily" fit
    that row and the one after it (the growth from 2012 shows in 2013), so they are
    ambiguous, and rows that name no time, a series left unnamed among several, or a
    trend that does not run to the end leave the answer unknown."""
    words = set(label_key(question).split())
    rises, falls = bool(words & _RISE), bool(words & _FALL)
    keys = {label_key(r): i for i, r in enumerate(table.rows)}
    if not words & _ONSET or rises == falls or label_key(label) not in keys:
        return None
    if "since" not in words:
        return "two rows fit: the one the trend starts from and the first it shows in"
    times = [time_key(r) for r in table.rows]
    named = [x for x in table.series if mentions(question, x)]
    series = table.series[0] if len(table.series) == 1 else (named[0] if len(named) == 1 else None)
    if None in times or series is None:
        return "the rows name no time, or the question no series" if series is not None or None in times else \
            "the question names none of the series"
    order = sorted(range(len(table.rows)), key=lambda i: times[i])
    values = [table.values[i][table.series.index(series)] for i in order]
    if None in values or len(values) < 2:
        return "a value is missing"
    start = len(values) - 1
    while start > 0 and ((values[start] > values[start - 1]) if rises else (values[start] < values[start - 1])):
        start -= 1
    if start == len(values) - 1:
        return "the trend the question names does not run to the last row"
    return None if order[start] == keys[label_key(label)] else \
        f"the trend runs from {table.rows[order[start]]!r}, not {label!r}"


#: words that give a value a scale or currency a percentage cannot have
_NOT_PERCENT = {"million", "millions", "billion", "billions", "thousand", "thousands", "trillion", "trillions",
                "dollars", "dollar", "euros", "euro", "pounds", "yen", "usd", "eur", "gbp", "tons", "tonnes"}
_PERCENT_WORDS = {"percent", "percentage", "percentages", "%", "share", "shares", "rate", "rates", "proportion"}


def unit_conflict(table: Table, question: str) -> bool:
    """Whether the table prints its values as percentages while the question gives them a
    scale or currency ("the number of Christians ... in millions" over cells extracted as
    "856.36%"): the chart would show a reader a unit the question contradicts."""
    if table.unit != "%":
        return False
    words = set(label_key(question).split()) | ({"%"} if "%" in question else set())
    return bool(words & _NOT_PERCENT) and not words & _PERCENT_WORDS


_COUNT_MEASURE = re.compile(r"^(?:number|amount|count)\b|\bin (?:thousands|millions|billions)\b")
_RATE_MEASURE = re.compile(r"\b(?:rate|rates|share|shares|percent|percentage|proportion|ratio)\b|%")


def measure_conflict(table: Table, question: str) -> bool:
    """Whether the question asks for a rate or share ("the unemployment rate in May 2021")
    where the chart draws only counts ("Number in millions") and no percentages: the
    answer would be a value the question does not name."""
    if table.unit == "%" or not _RATE_MEASURE.search(label_key(question)):
        return False
    names = [label_key(x) for x in table.series]
    return all(_COUNT_MEASURE.search(x) and not _RATE_MEASURE.search(x) for x in names)


#: what a comparison may be made against without a figure of its own: the drawn values' own mean
_OWN_AGGREGATES = {"average", "mean", "median", "rest", "others", "other", "each", "all"}


def undrawn_reference(table: Table, question: str) -> str | None:
    """The reference a question compares against that the chart does not draw ("which
    countries are above the OECD average?"), or ``None``. A comparison ("above", "more than",
    "exceeds" ...) must be followed by a number, a drawn label, or the drawn values' own
    average; "over" and "under" count only before a number ("over the years" compares
    nothing)."""
    plain = unicodedata.normalize("NFKC", question).casefold()
    labels = [x for x in (*_keys(table.rows), *_keys(table.series), label_key(table.index_name)) if x]
    phrases = [p for side in THRESHOLD_PHRASES.values() for p in side if p not in ("over", "under")]
    # "80 years and above", "or more": a range's open end, not a comparison
    pattern = rf"(?<!\band )(?<!\bor )\b(?:{'|'.join(re.escape(p) for p in phrases)})\b(.{{0,60}})"
    for match in re.finditer(pattern, plain):
        after = label_key(match.group(1))
        head = after.split()[:5]
        if not head or _NUMBER.match(match.group(1).strip().lstrip("$€£")) or head[0][0].isdigit():
            continue
        if any(f" {x} " in f" {after} " for x in labels):
            continue
        words = [w for w in head if w not in ("the", "a", "an", "that", "those", "of", "in", "its", "their")]
        if words and words[0] in _OWN_AGGREGATES:
            continue
        return " ".join(head)
    return None


@dataclass(frozen=True)
class Classified:
    """How a ChartQA record is used: ``status`` is cell, program, invariant or dropped."""

    status: str
    rule: dict[str, Any] | None = None
    reason: str = ""
    mark: str | None = None


def classify_record(table: Table, query: str, label: str, tier2: str = "drop") -> Classified:
    """Screen and classify one record (see the module notes)."""
    refers = question_references(query)
    marks = referenced_marks(query)
    mark = next(iter(marks)) if len(marks) == 1 else None
    unfit = _unfit(table, query, label, refers, marks)
    if unfit is not None:
        return Classified("dropped", reason=unfit)
    cell = _cell_of(table, query, label, refers)
    if cell is not None:
        return Classified("cell", cell, mark=mark)
    program, computed = _program_of(table, query, label)
    if program is not None and computed is not None and answers_agree(computed, label):
        return Classified("program", program_rule(program, query, refers), mark=mark)
    if tier2 == "drop":
        reason = "contradicts_table" if computed is not None else _doubt(table, query, label)
        if reason is not None:
            return Classified("dropped", reason=reason)
    return Classified("invariant", invariant_rule(table, label, query, refers), mark=mark)


def _unfit(table: Table, query: str, label: str, refers: list[str], marks: set[str]) -> str | None:
    """Why a record is dropped whatever its answer (a colour or a mark the redrawn chart
    cannot show, a garbled table, a unit the question contradicts), or ``None``."""
    if "colour" in refers:
        return "colour_reference"
    mark = next(iter(marks)) if len(marks) == 1 else None
    if len(marks) > 1 or (mark is not None and not any(chart_type_fits(table, c) is None
                                                        for c in MARK_CHART_TYPES[mark])):
        return "mark_reference"
    if garbled(table):
        return "garbled_table"
    if unit_conflict(table, query) or measure_conflict(table, query):
        return "unit_conflict"
    if mark == "line" and not chartqa_vocabulary(table).ordered:
        return "mark_reference"  # a line over categories with no order
    if mark == "line" and label_key(label) in {label_key(r) for r in table.rows} - {label_key(x) for x in table.series}:
        # "which line ...?" answered by a row: the original chart drew rows as lines, the
        # table holds them across the axis; redrawn from the table, the answer is no line
        return "mark_reference"
    return None


def _cell_of(table: Table, query: str, label: str, refers: list[str]) -> dict[str, Any] | None:
    """A Tier 1 cell rule when the label is the value of exactly one cell, whose row (and
    series, where there are several) the question names and whose words assert nothing of
    it that a cell rule cannot keep; else ``None``."""
    target = parse_number(label)
    if target is None or not _asks_one_cell(query, table):
        return None
    matches = [(r, s) for r, row in zip(table.rows, table.values) for s, v in zip(table.series, row)
               if v is not None and format_number(v) == format_number(target)]
    if len(matches) != 1:
        return None
    row, series = matches[0]
    series_named = mentions(query, series)
    facts = presupposition(query, table, row, series)
    if mentions(query, row) and (len(table.series) == 1 or series_named) and facts is not None:
        return cell_rule(row, series, series_named, query, refers, facts)
    return None


def _program_of(table: Table, query: str, label: str) -> tuple[dict[str, Any] | None, float | str | None]:
    """The program :func:`parse_question` reads in the question and what it computes on the
    table: ``None`` where it does not apply (a missing value or a tie), ``""`` for a value
    to find that no row has (the table contradicts the question)."""
    program = parse_question(query, table, label)
    if program is None:
        return None, None
    try:
        return program, execute(table, program)
    except InvalidEdit:  # a missing value or a tie: the form does not apply to this table
        if OPS[program["op"]].seen == "find" and not _has_value(table, program):
            return program, ""  # no row has the value the question names: the table contradicts it
        return program, None


def _doubt(table: Table, query: str, label: str) -> str | None:
    """Why a record with no program is dropped rather than kept as Tier 2 (``tier2="drop"``),
    or ``None``."""
    if garbled_question(query):
        return "garbled_question"  # "51 55 What is the missed data?"
    if extremes_combined(table, label, query) is False or difference_claim(table, label, query) is False:
        return "contradicts_table"  # "the sum of the maximum and minimum": 24, not 31.3
    if given_value_not_drawn(table, label, query):
        return "value_not_drawn"  # "the category whose value is 82 and 15", where no 15 is drawn
    if split_extreme(table, label, query):
        return "ambiguous_extreme"  # "in general, which country had the higher value": each in some years
    if not derivable(table, label, query):
        return "answer_not_derivable"
    if extreme_tie(table, label, query):
        return "tied_extreme"
    if undrawn_reference(table, query) is not None:
        return "reference_not_drawn"  # "above the OECD average": a figure not drawn
    if onset_problem(table, label, query) is not None:
        return "ambiguous_onset"  # "when did it begin to grow?": two rows fit
    if threshold_fit(table, label, query) is not None:
        return "ambiguous_threshold"  # several labels fit, or the answer does not
    return None


#: a question that starts with loose numbers before its first word ("51 55 What is ...?"):
#: values of the original chart's labels that extraction pasted in front
_LEADING_NUMBERS = re.compile(r"^\s*(?:-?\d[\d,.]*%?\s+)+(?:what|which|who|when|where|how|is|are|was|were|find)\b",
                              re.IGNORECASE)


def garbled_question(question: str) -> bool:
    """Whether a question lost its shape on extraction: numbers stand before its first word."""
    return bool(_LEADING_NUMBERS.match(question))


_SAME = {"same", "equal", "identical", "similar"}


def difference_claim(table: Table, label: str, question: str) -> bool | None:
    """For a yes/no question about whether values differ ("is there any difference between
    the male and female values?", "are the values the same?"): whether the label says what the
    drawn values show, compared as printed, line by line, between the two series (or rows)
    the question names, or the table's two series; ``None`` for other questions."""
    words = set(label_key(question).split())
    answer = label_key(label)
    if answer not in ("yes", "no") or not words & (_FORMS["difference"] | {"differ", "different", "differs"} | _SAME):
        return None
    if label_key(question).split()[:1] not in (["is"], ["are"], ["was"], ["were"], ["do"], ["does"], ["did"]):
        return None
    series, rows = _mentioned(question, table.series), _mentioned(question, table.rows)
    if len(series) == 2:
        pairs = [(table.cell(r, series[0]), table.cell(r, series[1])) for r in table.rows]
    elif len(rows) == 2:
        pairs = [(table.cell(rows[0], x), table.cell(rows[1], x)) for x in table.series]
    elif len(table.series) == 2 and not rows:
        pairs = [(a, b) for a, b in table.values]
    else:
        return None
    shown = [(format_number(a), format_number(b)) for a, b in pairs if a is not None and b is not None]
    if not shown:
        return None
    differ = any(a != b for a, b in shown) if not words & _SAME else not all(a == b for a, b in shown)
    claims_difference = (answer == "yes") != bool(words & _SAME)
    return claims_difference == differ


_COMPARE = {"max": _FORMS["max"] | {"higher", "larger", "greater", "bigger", "most", "more", "leading", "top"},
            "min": _FORMS["min"] | {"lower", "smaller", "less", "fewer", "shortest"}}


def split_extreme(table: Table, label: str, question: str) -> bool:
    """Whether a question asks which label is highest (lowest, higher ...) without naming the
    line to read it in ("in general, which country had the higher value?" over several years;
    "which country has the highest share?" over several answers) and the drawn values make
    the answer the extreme in some lines but not in others: each reader could pick another."""
    words = set(label_key(question).split())
    wants = [k for k, vocabulary in _COMPARE.items() if words & vocabulary]
    rows, series = _keys(table.rows), _keys(table.series)
    key = label_key(label)
    if len(wants) != 1 or key not in (*rows, *series) or any(
            f" {p} " in f" {label_key(question)} " for p in (*_GREATER, *_LESS)) and not words & {"or"}:
        return False
    grid = [list(r) for r in table.values]
    labels, across = list(table.rows), list(table.series)
    if key not in rows:  # the answer is a series: compare series within each row
        grid, labels, across = [list(c) for c in zip(*grid)], list(table.series), list(table.rows)
    if len(across) < 2:
        return False
    named = _named_loosely(question, across)
    lines = named if named else list(range(len(across)))
    if len(lines) < 2:
        return False
    candidates = _named_loosely(question, labels) or list(range(len(labels)))
    target = [label_key(x) for x in labels].index(key)
    if target not in candidates:
        candidates.append(target)
    pick = max if wants[0] == "max" else min
    for j in lines:
        present = {i: grid[i][j] for i in candidates if grid[i][j] is not None}
        if target not in present or len(present) < 2:
            continue
        best = pick(present.values())
        if present[target] != best or sum(v == best for v in present.values()) > 1:
            return True
    return False


def given_value_not_drawn(table: Table, label: str, question: str) -> bool:
    """Whether a question answered by a label gives values that label should have ("which
    category has a value of 82 and 15?") and one of them is not drawn for it: numbers that
    are no year, no label and no threshold ("above 50") must be values of the answer's row
    (or series), at the precision the question writes them."""
    key = label_key(label)
    rows, series = _keys(table.rows), _keys(table.series)
    if key not in (*rows, *series):
        return False
    text = f" {label_key(question)} "
    if asked_quantities(table, question) != {"level"} or any(
            f" {p} " in text for p in (*THRESHOLD_PHRASES["above"], *THRESHOLD_PHRASES["below"], *_ABOVE, *_LESS)):
        return False  # a number the question derives ("a difference of 9%") or compares with ("above 50")
    labels = {*rows, *series, *(w for x in (*table.rows, *table.series) for w in label_key(x).split())}
    numbers = [n for n in _NUMBER.findall(question) if not YEAR.match(n) and label_key(n) not in labels]
    if not numbers or " second " in text or " third " in text:
        return False
    line = (table.values[rows.index(key)] if key in rows else table.column(table.series[series.index(key)]))
    drawn = [v for v in line if v is not None]
    for n in numbers:
        value = float(n.replace(",", ""))
        places = len(n.split(".")[1]) if "." in n else 0
        if not any(abs(v - value) <= 0.5 * 10.0 ** -places + 1e-9 for v in drawn):
            return True
    return False

