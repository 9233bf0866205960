"""Label logic of the chart arm: table programs, question templates, label rules.

A *program* is a JSON object ``{"op": name, ...arguments}`` over a :class:`Table`,
executed by the handlers of one table of op records (:data:`OPS`) that share one signature.
Arguments name rows and series by label, so programs are entity-anchored: reordering
rows never changes an answer. A program whose answer is not unique (a tie for the
maximum, a missing value, a division by zero) raises ``InvalidEdit("ambiguous")``.

A *label rule* says how a sample's answer follows from its table:

- ``{"kind": "cell", "row": r, "series": s}`` (Tier 1): the answer is the one cell.
- ``{"kind": "invariant", "table": {...}, "answer": a}`` (Tier 2): no program is known,
  so the answer ``a`` holds only while every value of the stored source table does.
- ``{"kind": "program", "program": {...}}``: the answer is the program's result.
"""

from __future__ import annotations

import math
import re
import statistics
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any

import numpy as np

from vicogym.answers import format_number
from vicogym.errors import GenerationError, InvalidEdit, register_error_codes
from vicogym.structures.chart import Table, label_key
from vicogym.validation import pick

#: edit error codes the chart arm adds to the core's
ERROR_CODES = {
    "duplicate_label": "a row or series label that the table already has (case, spacing, punctuation and "
                       "footnote marks do not count)",
    "anchor": "the edit removes or renames a row or series that the answer is anchored to",
    "invariance": "the label rule requires values that the edit would change",
    "chart_type": "the chart type does not fit the table (series count, negative or missing values, not parts "
                  "of a whole)",
    "size": "the table would become too small or too large to chart",
    "occluded": "the rendered image hides data the question may need (a legend over the marks)",
    "vocabulary": "a new row or series label that is not in the table's vocabulary",
    "reference": "the edit changes what the question refers to (a colour, a mark type, a position, the legend)",
    "clipped": "text the reader needs is cut off by the image edge",
    "overlap": "text runs into other text or under the legend",
    "glyph": "text with characters the chart font cannot draw",
    "unlabelled": "several series or slices with no legend to tell them apart",
    "indistinct": "two legend entries or slices drawn in colours too close to tell apart",
    "unreadable": "the answer needs more precision than the chart shows (data labels, scale)",
    "near_tie": "compared values, or a value and a threshold, too close to tell apart in the image",
    "order": "the edit breaks the order the rows follow (years, months, age groups)",
    "step": "a series would move between neighbouring periods by more than its table allows (max_step)",
    "relation": "a series would fall below one it lies above in every row (youth unemployment above men's)",
    "cramped": "labels leave the plot too little room to read the marks",
}
register_error_codes("chart", ERROR_CODES)

Answer = float | str
Handler = Callable[[Table, Mapping[str, Any]], Answer]


# -- argument access ----------------------------------------------------------------
def _row(table: Table, args: Mapping[str, Any], key: str = "row") -> int:
    label = args[key]
    if label not in table.rows:
        raise InvalidEdit("not_found", f"row {label!r} is not in the table", field=key)
    return table.rows.index(label)


def _series(table: Table, args: Mapping[str, Any], key: str = "series") -> int:
    label = args[key]
    if label not in table.series:
        raise InvalidEdit("not_found", f"series {label!r} is not in the table", field=key)
    return table.series.index(label)


def _cell(table: Table, i: int, j: int) -> float:
    v = table.values[i][j]
    if v is None:
        raise InvalidEdit("ambiguous", f"the value of {table.rows[i]!r} in {table.series[j]!r} is missing")
    return v


def _column(table: Table, args: Mapping[str, Any]) -> list[float]:
    j = _series(table, args)
    return [_cell(table, i, j) for i in range(len(table.rows))]


def need_choices(labels: Sequence[str]) -> None:
    """``InvalidEdit`` (``size``) unless a "which of them" question has two or more labels
    to choose from: with one, its wording asks a question the chart cannot pose."""
    if len(labels) < 2:
        raise InvalidEdit("size", f"the question asks which label has the extreme value, but only {list(labels)} is "
                          "left to choose from; keep two or more")


def _unique_extreme(labels: tuple[str, ...], values: list[float], pick: Callable) -> str:
    need_choices(labels)
    best = pick(values)
    winners = [label for label, v in zip(labels, values) if v == best]
    if len(winners) != 1:
        raise InvalidEdit("ambiguous", f"{len(winners)} labels tie at {format_number(best)}: {winners}")
    return winners[0]


def _yes_no(a: float, b: float, greater: bool) -> str:
    if a == b:
        raise InvalidEdit("ambiguous", f"the compared values are equal ({format_number(a)})")
    return "Yes" if (a > b) == greater else "No"


def _ratio(a: float, b: float) -> float:
    if b == 0:
        raise InvalidEdit("ambiguous", "the ratio divides by zero")
    return a / b


def _aggregate(fn: Callable[[list[float]], float]) -> Handler:
    return lambda t, a: fn(_column(t, a))


def _extreme_label(pick: Callable) -> Handler:
    return lambda t, a: _unique_extreme(t.rows, _column(t, a), pick)


def _pair(combine: Callable[[float, float], Answer]) -> Handler:
    def handler(t: Table, a: Mapping[str, Any]) -> Answer:
        j = _series(t, a)
        return combine(_cell(t, _row(t, a, "a"), j), _cell(t, _row(t, a, "b"), j))

    return handler


def _row_with_value(t: Table, a: Mapping[str, Any]) -> str:
    """The row whose value in the series is ``value`` (as the chart prints it)."""
    j, target = _series(t, a), format_number(float(a["value"]))
    winners = [label for label, row in zip(t.rows, t.values) if row[j] is not None and format_number(row[j]) == target]
    if len(winners) != 1:
        raise InvalidEdit("ambiguous", f"{len(winners)} rows have the value {target} in {t.series[j]!r}")
    return winners[0]


def _row_values(t: Table, a: Mapping[str, Any]) -> list[float]:
    i = _row(t, a)
    return [_cell(t, i, j) for j in range(len(t.series))]


def _threshold(table: Table, series: str, rng: np.random.Generator) -> float:
    """A threshold between two neighbouring values of ``series``, as the chart prints it."""
    values = sorted(v for v in table.column(series) if v is not None)
    if len(values) < 2:
        return values[0] if values else 0.0
    k = int(rng.integers(0, len(values) - 1))
    midpoint = (values[k] + values[k + 1]) / 2.0
    return float(format_number(midpoint))


def _drawn_value(table: Table, series: str, rng: np.random.Generator) -> float:
    """One of the values of ``series``, as the chart prints it."""
    present = [v for v in table.column(series) if v is not None]
    if not present:
        raise InvalidEdit("ambiguous", f"series {series!r} has no values")
    return float(format_number(pick(rng, present)))


def _spread(values: Sequence[float]) -> float:
    return max(values) - min(values)


def _total(values: Sequence[float]) -> float:
    return float(sum(values))


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values))


def _median(values: Sequence[float]) -> float:
    return float(np.median(values))


#: what the answer of an op is: a number, a row or series label, or Yes/No
ANSWERS = ("number", "row", "series", "yes_no")
#: how a reader takes an op's answer from the image (what :mod:`vicogym.checks.chart` checks):
#: ``value``: values read off the chart and combined (their reading errors add up);
#: ``ratio``: the quotient of two values read (their relative errors add up);
#: ``order``: which of the values read is larger; ``threshold``: on which side of the
#: question's number each value lies; ``find``: the row whose printed value the question
#: names; ``count``: the marks counted, no value read
SEEN = ("value", "ratio", "order", "threshold", "find", "count")
#: the end of the values read that an answer turns on
EXTREMES = ("max", "min", "both")


@dataclass(frozen=True)
class Op:
    """One question op, everything each layer needs of it: how it is computed
    (``handler``), which program arguments name rows and series (its anchors; a template
    draws that many distinct labels), the argument holding a number the question states
    and how a template draws it, and how a reader answers it from the image: which cells
    it reads (:attr:`reads`), what it answers, how it is seen (:data:`SEEN`), how many
    readings add into a value answer and how that value follows from them, which end of
    the values read it turns on, and the difficulty its reasoning adds (``cost``, see
    :func:`vicogym.checks.chart.difficulty`). A new question type is one record here plus
    its handler."""

    name: str
    handler: Handler
    _: KW_ONLY
    seen: str
    cost: float
    rows: tuple[str, ...] = ()
    series: tuple[str, ...] = ("series",)
    #: the argument holding a number the question states (a threshold, a value to find)
    #: and how a template draws it: ``(table, series, rng) -> number``
    number: str | None = None
    draw_number: Callable[[Table, str, np.random.Generator], float] | None = None
    answer: str = "number"
    #: for ``seen="value"``: readings whose errors add into the answer (``None``: one per
    #: cell read), the answer as a reader works it out from the values read, and whether
    #: it is one drawn value (read exactly where it lies on the zero line)
    readings: int | None = None
    combine: Callable[[Sequence[float]], float] | None = None
    one_value: bool = False
    #: ``max``: the answer turns on the largest of the values read (of two compared, the
    #: larger), ``min`` on the smallest, ``both`` on the largest and the smallest (a range);
    #: ``None``: on no order of them
    extreme: str | None = None

    def __post_init__(self) -> None:
        problems = [f"{field} {value!r} not in {allowed}" for field, value, allowed in
                    (("seen", self.seen, SEEN), ("answer", self.answer, ANSWERS),
                     ("extreme", self.extreme, (*EXTREMES, None))) if value not in allowed]
        if (self.number is None) != (self.draw_number is None):
            problems.append("number and draw_number go together")
        if (self.seen == "value") != (self.combine is not None):
            problems.append("a value op (and only one) says how its answer follows from the values read (combine)")
        if self.seen == "order" and self.extreme is None:
            problems.append("an order op says which end of the values it turns on (extreme)")
        if (self.seen == "threshold" or self.seen == "find") != (self.number is not None):
            problems.append("a threshold or find op (and only one) has a number argument")
        if len(self.rows) > 2 or len(set(self.rows + self.series + (self.number,))) != len(
                self.rows + self.series + (self.number,)):
            problems.append("argument names must be distinct, with at most two rows (a and b in templates)")
        if problems:
            raise ValueError(f"op {self.name!r}: " + "; ".join(problems))

    @property
    def arguments(self) -> frozenset[str]:
        """Every argument a program of this op must have."""
        return frozenset((*self.rows, *self.series, *((self.number,) if self.number else ())))

    @property
    def reads(self) -> str:
        """Which cells the answer is read from: ``cells`` (each named row in each named
        series), ``column`` (every row of the named series), ``row`` (every series of the
        named row) or ``none`` (no value: a count of rows)."""
        if self.rows and self.series:
            return "cells"
        return "row" if self.rows else "column" if self.series else "none"

    @property
    def min_series(self) -> int:
        """The series a table needs for the question: one per series argument, and two for
        a question across a row's series."""
        return max(1, len(self.series), 2 if self.reads == "row" else 1)

    def cells(self, program: Mapping[str, Any], table: Table) -> list[tuple[str, str]]:
        """The (row, series) cells a program of this op reads (see :attr:`reads`)."""
        if self.reads == "row":
            return [(program[self.rows[0]], s) for s in table.series]
        if self.reads == "column":
            return [(r, program[self.series[0]]) for r in table.rows]
        return [(program[r], program[s]) for r in self.rows for s in self.series]

    def program(self, rows: Sequence[str] = (), series: Sequence[str] = (), number: float | None = None
                ) -> dict[str, Any]:
        """A program of this op naming ``rows`` and ``series`` (in argument order) and stating
        ``number``."""
        if len(rows) != len(self.rows) or len(series) != len(self.series) or (number is None) != (
                self.number is None):
            raise ValueError(f"expected op {self.name!r} to name rows {self.rows}, series {self.series}"
                             f"{f' and a {self.number}' if self.number else ''}, got {list(rows)}, {list(series)}, "
                             f"{number!r}")
        program: dict[str, Any] = {"op": self.name, **dict(zip(self.rows, rows)), **dict(zip(self.series, series))}
        if self.number is not None:
            program[self.number] = number
        return program


def _table_of_ops(*ops: Op) -> dict[str, Op]:
    return {op.name: op for op in ops}


#: every question op, by name
OPS: dict[str, Op] = _table_of_ops(
    Op("lookup", lambda t, a: _cell(t, _row(t, a), _series(t, a)), rows=("row",), seen="value", readings=1,
       combine=lambda v: v[0], one_value=True, cost=0.0),
    Op("max", _aggregate(max), seen="value", readings=1, combine=max, one_value=True, extreme="max", cost=0.3),
    Op("min", _aggregate(min), seen="value", readings=1, combine=min, one_value=True, extreme="min", cost=0.3),
    Op("argmax", _extreme_label(max), answer="row", seen="order", extreme="max", cost=0.2),
    Op("argmin", _extreme_label(min), answer="row", seen="order", extreme="min", cost=0.2),
    # math.fsum is exact, so a sum does not depend on the order of the rows
    Op("sum", _aggregate(lambda v: math.fsum(v)), seen="value", combine=_total, cost=1.0),
    Op("mean", _aggregate(lambda v: math.fsum(v) / len(v)), seen="value", readings=1, combine=_mean, cost=1.2),
    Op("median", _aggregate(lambda v: float(statistics.median(v))), seen="value", readings=1, combine=_median,
       cost=1.0),
    Op("range", _aggregate(lambda v: max(v) - min(v)), seen="value", readings=2, combine=_spread, extreme="both",
       cost=0.8),
    Op("absdiff", _pair(lambda x, y: abs(x - y)), rows=("a", "b"), seen="value", readings=2, combine=_spread,
       cost=0.8),
    Op("ratio", _pair(_ratio), rows=("a", "b"), seen="ratio", cost=1.0),
    Op("greater", _pair(lambda x, y: _yes_no(x, y, True)), rows=("a", "b"), answer="yes_no", seen="order",
       extreme="max", cost=0.2),
    Op("less", _pair(lambda x, y: _yes_no(x, y, False)), rows=("a", "b"), answer="yes_no", seen="order",
       extreme="max", cost=0.2),
    Op("count_above", lambda t, a: float(sum(v > a["threshold"] for v in _column(t, a))), number="threshold",
       draw_number=_threshold, seen="threshold", cost=0.6),
    Op("count_rows", lambda t, a: float(len(t.rows)), series=(), seen="count", cost=0.1),
    Op("row_with_value", lambda t, a: _row_with_value(t, a), number="value", draw_number=_drawn_value,
       answer="row", seen="find", cost=0.5),
    Op("pair_sum", _pair(lambda x, y: x + y), rows=("a", "b"), seen="value", readings=2, combine=_total, cost=0.8),
    Op("pair_mean", _pair(lambda x, y: (x + y) / 2.0), rows=("a", "b"), seen="value", readings=1, combine=_mean,
       cost=1.0),
    Op("row_argmax", lambda t, a: _unique_extreme(t.series, _row_values(t, a), max), rows=("row",), series=(),
       answer="series", seen="order", extreme="max", cost=0.3),
    Op("row_sum", lambda t, a: math.fsum(_row_values(t, a)), rows=("row",), series=(), seen="value",
       combine=_total, cost=0.9),
    Op("series_greater", lambda t, a: _yes_no(_cell(t, _row(t, a), _series(t, a, "s1")),
                                              _cell(t, _row(t, a), _series(t, a, "s2")), True),
       rows=("row",), series=("s1", "s2"), answer="yes_no", seen="order", extreme="max", cost=0.3),
)


def make_program(op: str, rows: Sequence[str] = (), series: Sequence[str] = (), number: float | None = None
                 ) -> dict[str, Any]:
    """A program of the op named ``op`` (see :meth:`Op.program`)."""
    if op not in OPS:
        raise ValueError(f"expected an op in {sorted(OPS)}, got {op!r}")
    return OPS[op].program(rows, series, number)


def validate_program(program: Mapping[str, Any]) -> None:
    if not isinstance(program, Mapping) or program.get("op") not in OPS:
        raise ValueError(f"expected a program with op in {sorted(OPS)}, got {program!r}")
    needed = OPS[program["op"]].arguments
    missing = needed - set(program)
    if missing:
        raise ValueError(f"expected program {program['op']!r} to have {sorted(needed)}, missing {sorted(missing)}")


def execute(table: Table, program: Mapping[str, Any]) -> Answer:
    """Run ``program`` on ``table``: a number or a label, or ``InvalidEdit('ambiguous')``."""
    validate_program(program)
    return OPS[program["op"]].handler(table, program)


def answer_text(value: Answer) -> str:
    return value if isinstance(value, str) else format_number(value)


# -- label rules --------------------------------------------------------------------
def _sourced(rule: dict[str, Any], question: str | None, refers: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """A rule for a question that came from data (not a template) keeps the question and what
    it refers to, so edits can protect both and stored rows can be checked against them."""
    if question is not None:
        rule["question"] = question
        rule["refers"] = sorted(refers)
    return rule


def cell_rule(row: str, series: str, series_named: bool = True, question: str | None = None,
              refers: tuple[str, ...] | list[str] = (), presupposes: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Tier 1. ``series_named=False`` when the question names only the row: the chart must
    then keep a single series, or the question would not say which one it means.
    ``presupposes``: what the question's wording asserts of the cell, which every edit must
    keep (see :func:`presupposition`): ``{"presupposes": "max"}`` for "the highest number of
    journeys, in 2007/08", ``{"past": ["above", 35.0]}`` for "the year it exceeded 35"."""
    rule = {"kind": "cell", "row": row, "series": series, "series_named": series_named}
    for key, value in dict(presupposes or {}).items():
        if key == "presupposes" and value in EXTREME_WORDS:
            rule[key] = value
        elif key == "past" and isinstance(value, (list, tuple)) and len(value) == 2 and value[0] in THRESHOLD_PHRASES:
            rule[key] = [value[0], float(value[1])]
        else:
            raise ValueError(f"expected presupposes with 'presupposes' in {sorted(EXTREME_WORDS)} or 'past' as "
                             f"[side in {sorted(THRESHOLD_PHRASES)}, number], got {key!r}: {value!r}")
    return _sourced(rule, question, refers)


#: words with which a question asserts that what it asks about is the extreme of its series
EXTREME_WORDS = {"max": frozenset({"highest", "largest", "maximum", "peak", "biggest", "greatest", "most", "top",
                                   "record"}),
                 "min": frozenset({"lowest", "smallest", "minimum", "least", "fewest", "bottom"})}
#: phrases with which a question places what it asks about past a number ("when sales exceeded 5 million")
THRESHOLD_PHRASES = {
    "above": ("above", "over", "more than", "greater than", "higher than", "larger than", "bigger than", "exceed",
              "exceeds", "exceeded", "exceeding", "beyond", "at least"),
    "below": ("below", "under", "less than", "lower than", "smaller than", "fewer than", "at most"),
}
#: words with which a question sets what it asks about against other labels ("the only year
#: with a loss", "higher than in 2010"): an assertion about other cells no cell rule keeps
RELATIVE_WORDS = frozenset({"only", "sole", "alone", "unlike", "than", "compared", "exceed", "exceeds", "exceeded",
                            "exceeding", "surpassed", "overtook", "beat", "ahead", "behind", "unique"})
_NUMBER_AFTER = r"\s+(?:the\s+)?(?:level\s+of\s+|mark\s+of\s+)?[$€£]?(-?\d[\d,]*(?:\.\d+)?)"


def presupposition(question: str, table: Table, row: str, series: str) -> dict[str, Any] | None:
    """What a cell question's words assert of its cell, as rule fields every edit must keep
    (``{}`` when nothing), or ``None`` when they assert what no cell rule can keep: an extreme
    the cell is not (or not alone), a threshold it is not past, or a comparison with other
    labels ("the only year", "higher than in 2010"). A ``None`` question is no cell's.

    The table's own labels are read first and set aside: "Only abroad" or "Over 65 years"
    as a row name asserts nothing."""
    plain = unicodedata.normalize("NFKC", question).casefold()
    for label in sorted((*table.rows, *table.series, table.index_name), key=len, reverse=True):
        if label.strip():
            plain = re.sub(re.escape(label.casefold()), " ", plain)
    words = set(label_key(plain).split())
    value = table.cell(row, series)
    facts: dict[str, Any] = {}
    said = [k for k, vocabulary in EXTREME_WORDS.items() if words & vocabulary]
    if said:
        if len(said) != 1 or not is_unique_extreme(table, row, series, said[0]):
            return None
        facts["presupposes"] = said[0]
    past = []
    for side, phrases in THRESHOLD_PHRASES.items():
        for phrase in phrases:
            pattern = re.compile(rf"\b{re.escape(phrase)}{_NUMBER_AFTER}")
            past += [(side, float(m.group(1).replace(",", ""))) for m in pattern.finditer(plain)]
            plain = pattern.sub(" ", plain)
    if set(label_key(plain).split()) & RELATIVE_WORDS:
        return None  # "the only year", "more than in 2010": set against cells the rule does not keep
    if past:
        if len(set(past)) != 1 or value is None:
            return None
        side, threshold = past[0]
        if not (value > threshold if side == "above" else value < threshold):
            return None
        facts["past"] = [side, threshold]
    return facts


def is_unique_extreme(table: Table, row: str, series: str, extreme: str) -> bool:
    """Whether the cell is the one largest (``max``) or smallest (``min``) value of its series."""
    column = [v for v in table.column(series) if v is not None]
    value = table.cell(row, series)
    best = max(column) if extreme == "max" else min(column)
    return value == best and column.count(best) == 1


def single_series_required(rule: Mapping[str, Any]) -> bool:
    return rule["kind"] == "cell" and not rule.get("series_named", True)


def mentions(text: str, label: str) -> bool:
    """Whether ``text`` names ``label`` as whole words (by :func:`label_key`)."""
    needle = label_key(label)
    return bool(needle) and f" {needle} " in f" {label_key(text)} "


def said_by_titles(spec: Any, series: str) -> bool:
    """Whether the chart's title or axis titles say what its one series is: every word of
    its name is in them (``"Average price"`` in ``"Average house price"``)."""
    words = set(label_key(" ".join((spec.title, spec.x_label, spec.y_label))).split())
    needed = set(label_key(series).split())
    return bool(needed) and needed <= words


def rule_question(rule: Mapping[str, Any], table: Table) -> str | None:
    """The question a rule answers: stored for questions from data, rebuilt for templates."""
    if "question" in rule:
        return str(rule["question"])
    if rule["kind"] == "program" and rule["program"].get("template") in TEMPLATE_BY_ID:
        return question_text(TEMPLATE_BY_ID[rule["program"]["template"]], rule["program"], table.index_name)
    return None


def question_matches(question: str, rule: Mapping[str, Any], table: Table) -> str | None:
    """Why ``question`` is not the one ``rule`` was made for, or ``None``: a program's
    template must give the question back, a question from data must be the stored one, and
    a cell's row (and series, when named) must stay named in it."""
    if rule["kind"] not in ("cell", "program", "invariant"):
        return f"unknown rule kind {rule['kind']!r}"
    if rule["kind"] == "program" and "template" in rule["program"]:
        template = TEMPLATE_BY_ID.get(rule["program"]["template"])
        if template is None:
            return f"unknown template {rule['program']['template']!r}"
        expected = question_text(template, rule["program"], table.index_name)
        return None if expected == question else f"the program asks {expected!r}"
    if rule["kind"] != "cell" and "question" not in rule:
        return "a question from data must be stored in its rule"
    if "question" in rule and rule["question"] != question:
        return f"the rule was made for {rule['question']!r}"
    if rule["kind"] == "cell":
        if not mentions(question, rule["row"]):
            return f"the question does not name the row {rule['row']!r}"
        if rule.get("series_named", True) and len(table.series) > 1 and not mentions(question, rule["series"]):
            return f"the question does not name the series {rule['series']!r}"
    if single_series_required(rule) and len(table.series) != 1:
        return f"the question names no series but the chart has {len(table.series)}"
    return None


def program_rule(program: Mapping[str, Any], question: str | None = None,
                 refers: tuple[str, ...] | list[str] = ()) -> dict[str, Any]:
    validate_program(program)
    return _sourced({"kind": "program", "program": dict(program)}, question, refers)


def invariant_rule(table: Table, answer: str, question: str | None = None,
                   refers: tuple[str, ...] | list[str] = ()) -> dict[str, Any]:
    return _sourced({"kind": "invariant", "table": table.to_dict(), "answer": answer}, question, refers)


# -- what a question refers to ----------------------------------------------------------
_REFERENCE_WORDS = {
    "colour": ("red", "blue", "green", "yellow", "orange", "purple", "violet", "pink", "brown", "grey", "gray",
               "black", "white", "cyan", "magenta", "olive", "navy", "teal", "maroon", "beige", "turquoise",
               "golden", "color", "colors", "colour", "colours", "colored", "coloured", "shade", "darker",
               "lighter", "dark", "light"),
    "mark": ("bar", "bars", "line", "lines", "pie", "slice", "slices", "segment", "segments", "wedge", "column",
             "columns", "dot", "dots", "point", "points", "curve", "area", "donut", "sector"),
    "position": ("first", "last", "left", "leftmost", "right", "rightmost", "top", "bottom", "second", "third",
                 "middle", "above", "below", "upper", "lower", "leading"),
    "legend": ("legend", "legends", "key"),
}


def question_references(question: str) -> list[str]:
    """What in the drawing a question points at besides labels and values: colours, mark
    types, positions, the legend (sorted kinds)."""
    words = set(label_key(question).split())
    return sorted(kind for kind, vocabulary in _REFERENCE_WORDS.items() if words & set(vocabulary))


#: style fields whose change alters what a reference kind points at
REFERENCE_STYLE_FIELDS = {
    "colour": ("palette", "chart_type"),
    "mark": ("chart_type",),
    "position": ("chart_type",),
    "legend": ("legend",),
}


def anchors(rule: Mapping[str, Any]) -> tuple[frozenset[str], frozenset[str]]:
    """Rows and series the answer is tied to: they may be neither removed nor renamed."""
    kind = rule["kind"]
    if kind == "cell":
        return frozenset([rule["row"]]), frozenset([rule["series"]])
    if kind == "invariant":
        return frozenset(rule["table"]["rows"]), frozenset(rule["table"]["series"])
    program = rule["program"]
    op = OPS[program["op"]]
    return frozenset(program[k] for k in op.rows), frozenset(program[k] for k in op.series)


def values_fixed(rule: Mapping[str, Any]) -> bool:
    """Whether the rule forbids every value change (Tier 2)."""
    return rule["kind"] == "invariant"


def relabel(table: Table, rule: Mapping[str, Any]) -> str:
    """The answer that ``rule`` gives on ``table``, or ``InvalidEdit`` when it gives none."""
    kind = rule["kind"]
    if kind == "cell":
        answer = answer_text(execute(table, {"op": "lookup", "row": rule["row"], "series": rule["series"]}))
        extreme = rule.get("presupposes")
        if extreme is not None and not is_unique_extreme(table, rule["row"], rule["series"], extreme):
            word = "highest" if extreme == "max" else "lowest"
            raise InvalidEdit("invariance", f"the question's words call {rule['row']!r} the {word} of "
                              f"{rule['series']!r}; keep it the only {word} value")
        if "past" in rule:
            side, threshold = rule["past"]
            value = table.cell(rule["row"], rule["series"])
            if value is None or not (value > threshold if side == "above" else value < threshold):
                raise InvalidEdit("invariance", f"the question's words put {rule['row']!r} {side} "
                                  f"{format_number(threshold)} in {rule['series']!r}; keep its value {side} it")
        return answer
    if kind == "program":
        return answer_text(execute(table, rule["program"]))
    if kind == "invariant":
        source = Table.from_dict(rule["table"])
        if (source.rows, source.series, source.values) != (table.rows, table.series, table.values):
            raise InvalidEdit("invariance",
                              "this answer has no program; every row, series and value must stay as in the source")
        return str(rule["answer"])
    raise ValueError(f"expected a label rule kind in ('cell', 'invariant', 'program'), got {kind!r}")


# -- question templates -------------------------------------------------------------
@dataclass(frozen=True)
class Template:
    """A question pattern with its op: ``{a}`` and ``{b}`` stand for the rows the op names,
    the op's series and number arguments for themselves, ``{index}`` for the rows' kind."""

    id: str
    text: str
    op: str


TEMPLATES: tuple[Template, ...] = (
    Template("lookup", "What is the value of {series} for {a}?", "lookup"),
    Template("lookup_how_much", "How much is the {series} value of {a}?", "lookup"),
    Template("max", "What is the highest value of {series}?", "max"),
    Template("min", "What is the lowest value of {series}?", "min"),
    Template("argmax", "Which {index} has the highest {series} value?", "argmax"),
    Template("argmin", "Which {index} has the lowest {series} value?", "argmin"),
    Template("sum", "What is the total {series} across all {index} values shown?", "sum"),
    Template("mean", "What is the average {series} across the {index} values shown?", "mean"),
    Template("median", "What is the median {series} value?", "median"),
    Template("range", "What is the difference between the highest and the lowest {series} value?", "range"),
    Template("absdiff", "What is the absolute difference in {series} between {a} and {b}?", "absdiff"),
    Template("ratio", "What is the ratio of the {series} value of {a} to that of {b}?", "ratio"),
    Template("greater", "Is the {series} value of {a} greater than that of {b}?", "greater"),
    Template("less", "Is the {series} value of {a} less than that of {b}?", "less"),
    Template("count_above", "For how many {index} values is the {series} value above {threshold}?", "count_above"),
    Template("count_rows", "How many {index} values does the chart show?", "count_rows"),
    Template("row_with_value", "Which {index} has a {series} value of {value}?", "row_with_value"),
    Template("pair_sum", "What is the sum of the {series} values of {a} and {b}?", "pair_sum"),
    Template("pair_mean", "What is the average {series} value of {a} and {b}?", "pair_mean"),
    Template("row_argmax", "For {a}, which series has the largest value?", "row_argmax"),
    Template("row_sum", "What is the sum of all series for {a}?", "row_sum"),
    Template("series_greater", "For {a}, is the {s1} value greater than the {s2} value?", "series_greater"),
)
TEMPLATE_BY_ID = {t.id: t for t in TEMPLATES}


def question_text(template: Template, program: Mapping[str, Any], index_name: str) -> str:
    """The question ``template`` asks for ``program`` (also used to verify stored rows)."""
    op = OPS[template.op]
    fills: dict[str, Any] = {"index": index_name.lower() or "category"}
    fills.update(zip(("a", "b"), (program[k] for k in op.rows)))
    fills.update((k, program[k]) for k in op.series)
    if op.number is not None:
        fills[op.number] = format_number(program[op.number])
    return template.text.format(**fills)


def instantiate(template: Template, table: Table, rng: np.random.Generator) -> tuple[str, dict[str, Any]]:
    """Draw labels for ``template`` on ``table``: the question text and its program."""
    op = OPS[template.op]
    if len(table.series) < op.min_series or len(table.rows) < max(len(op.rows), 1):
        raise InvalidEdit("size", f"template {template.id!r} does not fit a table of this shape")
    rows = [table.rows[i] for i in rng.choice(len(table.rows), size=len(op.rows), replace=False)]
    series = [table.series[j] for j in rng.choice(len(table.series), size=len(op.series), replace=False)]
    number = None if op.draw_number is None else op.draw_number(table, series[0], rng)
    program = op.program(rows, series, number)
    return question_text(template, program, table.index_name), program


def generate_question(
    table: Table, rng: np.random.Generator, templates: tuple[str, ...] | None = None, max_tries: int = 32
) -> tuple[str, dict[str, Any], str]:
    """A random template question with an unambiguous answer: (question, program, answer).
    The program carries its template's id under ``"template"`` (ignored when executing)."""
    pool = [TEMPLATE_BY_ID[t] for t in templates] if templates else list(TEMPLATES)
    last: Exception | None = None
    for _ in range(max_tries):
        template = pick(rng, pool)
        try:
            question, program = instantiate(template, table, rng)
            answer = answer_text(execute(table, program))
            return question, {**program, "template": template.id}, answer
        except InvalidEdit as exc:
            last = exc
    raise GenerationError(f"no unambiguous question in {max_tries} tries (last: {last})")
