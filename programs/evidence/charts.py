"""Answer derivation of the evidence arm's chart families, ``slides`` (SlideVQA-like: a
question about one or two slides of a deck) and ``multichart`` (MMIU-like: a
multiple-choice question across two to four charts), from the tables the units store.

A task's ``meta["program"]`` is a JSON object over the units' tables (each unit's
``spec["chart"]`` is a :class:`~vicogym.structures.chart.ChartStructure` dict), run by
:func:`derive`. Every single-table step is a chart-arm program
(:func:`vicogym.programs.chart.execute`); what spans units is here:

- slides, one unit: ``{"op": "lookup"|"max"|"min"|"argmax"|"argmin", "unit": i,
  "series": s, "row": r}`` (``row`` for ``lookup`` only);
- slides, two units: ``{"op": "diff"|"greater", "a": cell, "b": cell}`` with ``cell =
  {"unit", "row", "series"}``: the absolute difference of the two values, or whether
  ``a``'s is the greater (``Yes``/``No``);
- multichart (every unit is one option, in order): ``{"op": "cell_max"|"cell_min", "row",
  "series"}`` (the chart with the largest/smallest value of the cell), ``{"op":
  "max_max"|"min_min", "series"}`` (the chart holding the single highest/lowest value of
  the series), ``{"op": "falls", "a", "b", "series"}`` (the chart where the series is
  lower at row ``b`` than at row ``a``), ``{"op": "argmax_is", "row", "series"}`` (the
  chart whose highest value of the series is that row's).

Values are compared as the chart prints them (its data labels: :func:`printed`), so two
values that print alike are a tie, and a tie, or no option or more than one that fits, is
``InvalidEdit("ambiguous")``: the question would have no unique answer.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from vicogym.answers import format_number
from vicogym.errors import InvalidEdit
from vicogym.programs.chart import answer_text, execute, program_rule
from vicogym.structures.chart import ChartStructure, Table
from vicogym.structures.evidence import Unit, letters

#: what a slides question may ask: about one slide, or about two
SLIDE_ONE_OPS = ("lookup", "max", "min", "argmax", "argmin")
SLIDE_TWO_OPS = ("diff", "greater")
SLIDE_OPS = SLIDE_ONE_OPS + SLIDE_TWO_OPS
#: what a multichart question may ask
MC_OPS = ("cell_max", "cell_min", "max_max", "min_min", "falls", "argmax_is")
#: the contract and scorer of each op's answer
CONTRACTS: Mapping[str, tuple[str, str]] = {
    "lookup": ("number", "relaxed"), "max": ("number", "relaxed"), "min": ("number", "relaxed"),
    "diff": ("number", "relaxed"), "argmax": ("text", "short"), "argmin": ("text", "short"),
    "greater": ("text", "short"), **{op: ("letter", "letter") for op in MC_OPS},
}


def printed(value: float) -> float:
    """A value as its data label prints it (the chart arm's number format)."""
    return float(format_number(value))


def tables_of(units: Sequence[Unit]) -> list[Table | None]:
    """Each unit's table (``None`` for a unit that draws no chart)."""
    return [None if unit.spec.get("chart") is None else ChartStructure.from_dict(unit.spec["chart"]).table
            for unit in units]


def _table(tables: Sequence[Table | None], unit: Any) -> Table:
    if not isinstance(unit, int) or isinstance(unit, bool) or not 0 <= unit < len(tables):
        raise ValueError(f"expected a unit index in [0, {len(tables)}), got {unit!r}")
    table = tables[unit]
    if table is None:
        raise ValueError(f"unit {unit} draws no chart")
    return table


def cell(tables: Sequence[Table | None], ref: Mapping[str, Any]) -> float:
    """The value of ``ref`` (``{"unit", "row", "series"}``)."""
    return float(execute(_table(tables, ref["unit"]), {"op": "lookup", "row": ref["row"], "series": ref["series"]}))


def _unique(values: Sequence[float], best: str) -> int:
    """The index of the one largest (``best="max"``) or smallest printed value, or
    ``InvalidEdit("ambiguous")`` on a tie."""
    shown = [printed(v) for v in values]
    target = max(shown) if best == "max" else min(shown)
    winners = [k for k, v in enumerate(shown) if v == target]
    if len(winners) != 1:
        raise InvalidEdit("ambiguous", f"{len(winners)} values print the same {best}imum {format_number(target)}")
    return winners[0]


def option_truths(program: Mapping[str, Any], tables: Sequence[Table | None]) -> list[bool]:
    """For a multichart program: whether each unit (option) fits the question.

    ``InvalidEdit("ambiguous")`` when a value it compares is missing or two compared
    values print alike."""
    op, n = program["op"], len(tables)
    if op not in MC_OPS:
        raise ValueError(f"expected a multichart op in {MC_OPS}, got {op!r}")
    if op in ("cell_max", "cell_min"):
        values = [cell(tables, {"unit": k, "row": program["row"], "series": program["series"]}) for k in range(n)]
        best = _unique(values, "max" if op == "cell_max" else "min")
        return [k == best for k in range(n)]
    if op in ("max_max", "min_min"):
        which = "max" if op == "max_max" else "min"
        extremes = [float(execute(_table(tables, k), {"op": which, "series": program["series"]})) for k in range(n)]
        best = _unique(extremes, which)
        # the winning chart's own extreme must be unique too, or "the single highest" is two values
        _unique([v for v in _table(tables, best).column(program["series"]) if v is not None], which)
        return [k == best for k in range(n)]
    if op == "falls":
        out = []
        for k in range(n):
            a = printed(cell(tables, {"unit": k, "row": program["a"], "series": program["series"]}))
            b = printed(cell(tables, {"unit": k, "row": program["b"], "series": program["series"]}))
            if a == b:
                raise InvalidEdit("ambiguous", f"chart {k} prints the same value for {program['a']!r} and "
                                  f"{program['b']!r}, neither a fall nor a rise")
            out.append(b < a)
        return out
    if op == "argmax_is":
        out = []
        for k in range(n):
            table = _table(tables, k)
            column = [float(v) if v is not None else math.nan for v in table.column(program["series"])]
            if any(math.isnan(v) for v in column):
                raise InvalidEdit("ambiguous", f"chart {k} misses a value of {program['series']!r}")
            out.append(table.rows[_unique(column, "max")] == program["row"])
        return out
    raise AssertionError(op)


def derive(program: Mapping[str, Any], tables: Sequence[Table | None]) -> str:
    """The answer text of ``program`` on the units' ``tables``: a number in the chart
    arm's format, a row label, ``Yes``/``No``, or an option letter."""
    op = program.get("op")
    if op in SLIDE_ONE_OPS:
        table = _table(tables, program["unit"])
        chart_program = {"op": op, "series": program["series"], **({"row": program["row"]} if op == "lookup" else {})}
        value = execute(table, chart_program)
        if op in ("argmax", "argmin"):
            column = [v for v in table.column(program["series"]) if v is not None]
            _unique(column, "max" if op == "argmax" else "min")  # a printed tie is one too
        return answer_text(value)
    if op in SLIDE_TWO_OPS:
        a, b = printed(cell(tables, program["a"])), printed(cell(tables, program["b"]))
        if a == b:
            raise InvalidEdit("ambiguous", f"the two values print the same ({format_number(a)})")
        if op == "diff":
            return format_number(abs(a - b))
        return "Yes" if a > b else "No"
    if op in MC_OPS:
        truths = option_truths(program, tables)
        if sum(truths) != 1:
            raise InvalidEdit("ambiguous", f"{sum(truths)} charts fit the question; exactly one must")
        return letters(len(truths))[truths.index(True)]
    raise ValueError(f"expected a program op in {SLIDE_OPS + MC_OPS}, got {op!r}")


def chart_rules(program: Mapping[str, Any], n_units: int) -> dict[int, list[dict[str, Any]]]:
    """What each unit's chart must let a reader read, as chart-arm label rules (for
    :func:`vicogym.checks.chart.check`): unit -> rules."""
    op = program["op"]
    rules: dict[int, list[dict[str, Any]]] = {}

    def add(unit: int, chart_program: Mapping[str, Any]) -> None:
        rules.setdefault(unit, []).append(program_rule(chart_program))

    if op in SLIDE_ONE_OPS:
        add(program["unit"], {"op": op, "series": program["series"],
                              **({"row": program["row"]} if op == "lookup" else {})})
    elif op in SLIDE_TWO_OPS:
        for ref in (program["a"], program["b"]):
            add(ref["unit"], {"op": "lookup", "row": ref["row"], "series": ref["series"]})
    elif op in ("cell_max", "cell_min"):
        for k in range(n_units):
            add(k, {"op": "lookup", "row": program["row"], "series": program["series"]})
    elif op in ("max_max", "min_min"):
        for k in range(n_units):
            add(k, {"op": "max" if op == "max_max" else "min", "series": program["series"]})
    elif op == "falls":
        for k in range(n_units):
            add(k, {"op": "greater", "a": program["a"], "b": program["b"], "series": program["series"]})
    elif op == "argmax_is":
        for k in range(n_units):
            add(k, {"op": "argmax", "series": program["series"]})
    else:
        raise ValueError(f"expected a program op in {SLIDE_OPS + MC_OPS}, got {op!r}")
    return rules


def used_units(program: Mapping[str, Any], n_units: int) -> list[int]:
    """The units whose charts the answer is read from."""
    return sorted(chart_rules(program, n_units))


# -- question text --------------------------------------------------------------------------
def _index_word(table: Table) -> str:
    return table.index_name.lower() or "category"


def _value_phrase(table: Table, series: str, row: str) -> str:
    return f"the {series} value for {row}"


def question(program: Mapping[str, Any], titles: Sequence[str], tables: Sequence[Table | None]) -> str:
    """The question ``program`` asks (slides name their slides by title; multichart
    questions are about the charts shown, whose titles are the options)."""
    op = program["op"]
    if op in SLIDE_ONE_OPS:
        table, title, series = _table(tables, program["unit"]), titles[program["unit"]], program["series"]
        lead = f"In the slide titled '{title}', "
        if op == "lookup":
            return lead + f"what is {_value_phrase(table, series, program['row'])}?"
        if op in ("max", "min"):
            return lead + f"what is the {'highest' if op == 'max' else 'lowest'} {series} value shown?"
        return lead + f"which {_index_word(table)} has the {'highest' if op == 'argmax' else 'lowest'} {series} value?"
    if op in SLIDE_TWO_OPS:
        a, b = program["a"], program["b"]
        ta, tb = _table(tables, a["unit"]), _table(tables, b["unit"])
        pa = f"{_value_phrase(ta, a['series'], a['row'])} in the slide titled '{titles[a['unit']]}'"
        pb = f"{_value_phrase(tb, b['series'], b['row'])} in the slide titled '{titles[b['unit']]}'"
        if op == "diff":
            # "absolute": the answer is the larger value less the smaller, whichever slide holds it
            # (a counterfactual keeps the question and may trade which one that is)
            return f"What is the absolute difference between {pa} and {pb}?"
        return f"Is {pa} greater than {pb}?"
    if op in MC_OPS:
        table = _table(tables, 0)
        series = program["series"]
        if op in ("cell_max", "cell_min"):
            word = "largest" if op == "cell_max" else "smallest"
            return f"Which chart shows the {word} {series} value for {program['row']}?"
        if op in ("max_max", "min_min"):
            word = "highest" if op == "max_max" else "lowest"
            return f"Which chart contains the single {word} {series} value of all the charts?"
        if op == "falls":
            return f"In which chart is the {series} value for {program['b']} lower than for {program['a']}?"
        return f"In which chart is {program['row']} the {_index_word(table)} with the highest {series} value?"
    raise ValueError(f"expected a program op in {SLIDE_OPS + MC_OPS}, got {op!r}")


# -- distractors -------------------------------------------------------------------------------
def distractors(program: Mapping[str, Any], tables: Sequence[Table | None], limit: int = 4) -> list[str]:
    """Plausible wrong answers (what a misreading gives): a neighbouring cell, another
    series, the runner-up, the other slide's value, the other options."""
    answer = derive(program, tables)
    op = program["op"]
    out: list[str] = []

    def add(text: str) -> None:
        if text != answer and text not in out:
            out.append(text)

    if op in MC_OPS:
        for letter in letters(len(tables)):
            add(letter)
        return out[:limit]
    if op == "greater":
        return ["No" if answer == "Yes" else "Yes"]
    if op in SLIDE_ONE_OPS:
        table = _table(tables, program["unit"])
        series = program["series"]
        if op == "lookup":
            i, j = table.rows.index(program["row"]), table.series.index(series)
            around = [(i - 1, j), (i + 1, j), (i, j - 1), (i, j + 1)]
            for r, s in around:
                if 0 <= r < len(table.rows) and 0 <= s < len(table.series) and table.values[r][s] is not None:
                    add(format_number(table.values[r][s]))
        else:
            column = [(v, row) for row, v in zip(table.rows, table.column(series)) if v is not None]
            ranked = sorted(column, key=lambda x: x[0], reverse=op in ("max", "argmax"))
            for v, row in ranked[1:]:
                add(row if op in ("argmax", "argmin") else format_number(v))
        return out[:limit]
    a, b = printed(cell(tables, program["a"])), printed(cell(tables, program["b"]))
    add(format_number(a + b))
    add(format_number(a))
    add(format_number(b))
    return out[:limit]
