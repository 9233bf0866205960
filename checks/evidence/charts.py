"""Answerability checks of the ``slides`` and ``multichart`` tasks: could a careful reader
answer from the rendered units, and is the answer the one the tables give?

:func:`check` (the family check :func:`vicogym.checks.evidence.check_task` runs) says why
a task is not answerable, or ``None``; :func:`require` raises the first problem as an
``InvalidEdit`` (a code of the chart arm or the core). Both take the task after the
renderer's ``prepare`` and, for the checks of the drawn charts, each unit's chart facts
(the :class:`~vicogym.renderers.chart.ChartFacts` of its full-detail render: pass
``RegionRenderer.facts`` of :mod:`vicogym.renderers.evidence.charts`, which a check may
not import):

- the stored answer is what :func:`vicogym.programs.evidence.charts.derive` gives on the
  stored tables, the question is the program's, the family's contract and start hold;
- unit titles are unique (by :func:`vicogym.structures.chart.label_key`: case, spacing
  and punctuation do not count): sheets, questions and options name units by them;
- a multiple-choice task has one option per chart, options that differ, and exactly one
  that fits;
- every evidence target has its box, inside its unit, and a zoom onto the box at the
  unit's ``max_scale`` (fitted into ``view_size``) shows its text at the legible size;
- with ``facts``: every chart the answer is read from passes the chart arm's checks
  (:func:`vicogym.checks.chart.check`, with ChartQA's 5% relaxed tolerance) for each value
  it is read for: no text runs into other text or past the edge or under the legend, the
  legend names the series, colours stand apart, the values are readable (from data
  labels), compared values do not print alike.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from vicogym.checks.chart import check as chart_check
from vicogym.checks.evidence import first_problem
from vicogym.errors import InvalidEdit
from vicogym.programs.evidence.charts import (
    CONTRACTS,
    MC_OPS,
    SLIDE_OPS,
    chart_rules,
    derive,
    option_truths,
    question,
    tables_of,
)
from vicogym.structures.chart import ChartStructure, label_key
from vicogym.structures.evidence import Task, Unit, contains, letters

#: each family's unit kind, ops and starts
FAMILIES: Mapping[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "slides": ("slide", SLIDE_OPS, ("sheet",)),
    "multichart": ("chart", MC_OPS, ("all", "first")),
}
VIEW_SIZE = 768

Facts = Callable[[Unit], Any] | Mapping[int, Any]


def check(task: Task, facts: Facts | None = None, view_size: int = VIEW_SIZE, tolerance: float = 0.05
          ) -> str | None:
    """Why ``task`` cannot be answered from its rendered units (the first problem, as
    ``[code] message``), or ``None`` (see the module notes; without ``facts`` the drawn
    charts are not checked)."""
    return first_problem(require, task, facts, view_size, tolerance)


def require(task: Task, facts: Facts | None = None, view_size: int = VIEW_SIZE, tolerance: float = 0.05) -> None:
    """Raise ``InvalidEdit`` for the first reason ``task`` cannot be answered from its
    rendered units. ``facts`` gives a unit's chart facts: a callable of the unit, or a
    mapping by unit index; ``None`` leaves the drawn charts unchecked."""
    if task.family not in FAMILIES:
        raise ValueError(f"expected a slides or multichart task, got family {task.family!r}")
    kind, ops, starts = FAMILIES[task.family]
    program = task.meta.get("program")
    if not isinstance(program, Mapping) or program.get("op") not in ops:
        raise InvalidEdit("bad_value", f"a {task.family} task's meta must hold its program with op in {ops}, got "
                          f"{program!r}")
    if any(u.kind != kind for u in task.units):
        raise InvalidEdit("bad_value", f"every unit of a {task.family} task is a {kind!r} unit")
    if task.start not in starts:
        raise InvalidEdit("bad_value", f"a {task.family} task starts with one of {starts}, not {task.start!r}")
    check_titles(task)
    tables = tables_of(task.units)
    answer = derive(program, tables)  # InvalidEdit("ambiguous") on a tie
    if answer != task.answer:
        raise InvalidEdit("bad_value", f"the stored answer {task.answer!r} is not what the tables give ({answer!r})")
    if (task.contract, task.scorer) != CONTRACTS[program["op"]]:
        raise InvalidEdit("bad_value", f"a {program['op']} question is answered as {CONTRACTS[program['op']]}, not "
                          f"{(task.contract, task.scorer)}")
    titles = [u.title for u in task.units]
    asked = question(program, titles, tables)
    if not task.question.endswith(asked):
        raise InvalidEdit("bad_value", f"the question is not the program's: expected it to ask {asked!r}")
    if program["op"] in MC_OPS:
        check_options(task, program)
    if answer in task.meta.get("distractors", ()):
        raise InvalidEdit("bad_value", f"the distractors hold the answer {answer!r}")
    check_evidence(task, view_size)
    if facts is None:
        return
    for unit, rules in chart_rules(program, len(task.units)).items():
        structure = ChartStructure.from_dict(task.units[unit].spec["chart"])
        shown = facts(task.units[unit]) if callable(facts) else facts[unit]
        for rule in rules:
            try:
                chart_check(structure, rule, shown, tolerance)
            except InvalidEdit as exc:
                raise InvalidEdit(exc.code, f"unit {unit}: {exc.message}", op=exc.op, field=exc.field) from None


def check_titles(task: Task) -> None:
    """Unit titles are there and unique by label key (sheets, questions and options name
    units by them)."""
    keys = [label_key(u.title) for u in task.units]
    if not all(keys):
        raise InvalidEdit("bad_value", "every unit of a chart task needs a title (sheets and options name it)")
    seen: dict[str, int] = {}
    for k, key in enumerate(keys):
        if key in seen:
            raise InvalidEdit("duplicate_label", f"units {seen[key]} and {k} share the title "
                              f"{task.units[k].title!r}; a question could not say which one it means")
        seen[key] = k


def check_options(task: Task, program: Mapping[str, Any]) -> None:
    """One option per chart, in unit order, all different, exactly one fitting."""
    if task.contract != "letter" or len(task.options) != len(task.units):
        raise InvalidEdit("bad_value", f"a multichart question offers one option per chart ({len(task.units)}), got "
                          f"{len(task.options)}")
    if list(task.options) != [u.title for u in task.units]:
        raise InvalidEdit("bad_value", "the options must be the charts' titles in unit order")
    if len({label_key(o) for o in task.options}) != len(task.options):
        raise InvalidEdit("duplicate_label", "two options read the same")
    truths = option_truths(program, tables_of(task.units))
    if sum(truths) != 1:
        raise InvalidEdit("ambiguous", f"{sum(truths)} options fit the question; exactly one must")
    if task.answer != letters(len(truths))[truths.index(True)]:
        raise InvalidEdit("bad_value", f"the answer {task.answer!r} is not the fitting option")


def zoom_px(size: float, box: tuple[float, float, float, float], max_scale: float, view_size: int) -> float:
    """How many view pixels ``size`` spans in a zoom onto ``box`` fitted into
    ``view_size`` at no more than ``max_scale``."""
    w, h = box[2] - box[0], box[3] - box[1]
    return size * min(view_size / w, view_size / h, max_scale)


def check_evidence(task: Task, view_size: int = VIEW_SIZE) -> None:
    """Each target has its evidence, inside its unit, legible in a zoom onto it."""
    targets = task.meta.get("evidence") or []
    if len(targets) != len(task.evidence) or not targets:
        raise InvalidEdit("bad_value", f"the task names {len(targets)} evidence targets but holds "
                          f"{len(task.evidence)} evidence items; run the renderer's prepare")
    used = set(chart_rules(task.meta["program"], len(task.units)))
    for t, e in zip(targets, task.evidence):
        unit = task.units[e.unit]
        if e.unit != t["unit"] or e.what != t["what"]:
            raise InvalidEdit("bad_value", f"evidence {e.what!r} of unit {e.unit} does not follow its target "
                              f"{t['what']!r} of unit {t['unit']}")
        if not contains(unit.frame, e.box):
            raise InvalidEdit("clipped", f"the box of {e.what!r} lies outside unit {e.unit}")
        shown = zoom_px(e.size, e.box, unit.max_scale, view_size)
        if shown < e.legible:
            raise InvalidEdit("unreadable", f"zoomed onto as far as unit {e.unit} allows, {e.what!r} is "
                              f"{shown:.1f} px high, under the {e.legible:g} px of legible text")
    missing = used - {e.unit for e in task.evidence}
    if missing:
        raise InvalidEdit("bad_value", f"the answer is read from units {sorted(missing)}, which no evidence names")
