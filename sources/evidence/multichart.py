"""The ``multichart`` task family (MMIU-like): two to four charts of one measure (the same
categories and series in other divisions, scenarios or survey waves), and one
multiple-choice question across them: which chart shows the largest value of a cell,
holds the single highest (or lowest) value of a series, has the series lower at one
category than at another, or has a given category as its highest. The options are the
charts, by their titles (A for the first unit, B for the second, ...); exactly one fits.

Every unit is sent at once (``start="all"``, the default): the question is about all the
charts, as MMIU shows all its images with the question, so a first view of one chart
alone would only cost the executor a step to ask for the others. What the family trains
is reading the same cell in several charts and comparing across images, not finding a
unit. A chart fitted into a 768 px view shows its data labels at 8-11 px (legible); the
evidence is each chart's data label(s) and the label of the category (and legend entry)
they belong to. ``start="first"`` sends the first chart alone (the others are viewed).

Charts are the chart arm's procedural ones drawn to be read from their data labels (see
:func:`vicogym.sources.evidence.slides.draw_structure`); the charts other than the first
are variants of it (:func:`vicogym.sources.evidence.slides.variant`), and for a question
about a direction or a highest category the values of two categories are exchanged in
the charts that would otherwise fit too, so exactly one chart does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vicogym.errors import GenerationError, InvalidEdit
from vicogym.programs.evidence.charts import CONTRACTS, MC_OPS, derive, distractors, option_truths, question, tables_of
from vicogym.sources.evidence.slides import (
    cell_targets,
    check_common,
    draw_structure,
    pick_qualifiers,
    provisional,
    series_targets,
    swap_rows,
    task_id,
    variant,
)
from vicogym.structures.chart import ChartStructure
from vicogym.structures.evidence import Task, Unit, letters
from vicogym.validation import pick

DEFAULTS: dict[str, Any] = {
    "min_charts": 2,
    "max_charts": 4,
    #: how far a view may enlarge a chart; it is rendered at CHART_DPI * max_scale
    "max_scale": 2.0,
    #: the question kinds drawn (see vicogym.programs.evidence.charts)
    "ops": list(MC_OPS),
    #: what is sent first: every chart (MMIU's way, the default) or the first alone
    "start": "all",
}
EXTRAS: tuple[str, ...] = ()

STARTS = ("all", "first")
CHART_DPI = 100
CHART_INCHES = (6.4, 4.8)
#: a chart title longer than this is the qualifier alone (the measure is in the question and axis)
MAX_TITLE_CHARS = 44


def check_settings(settings: Mapping[str, Any]) -> None:
    """``ValueError`` naming the setting to change when ``settings`` cannot draw a task."""
    check_common(settings, "charts", 2, 4, "options A-D", MC_OPS)
    if settings["start"] not in STARTS:
        raise ValueError(f"expected start in {STARTS}, got {settings['start']!r}")


def chart_titles(topic_title: str, qualifiers: Sequence[str]) -> list[str]:
    """The charts' titles: each qualifier with the measure ("Pilot group: Monthly visitors"),
    or the qualifiers alone when one such title would run long (the options read alike)."""
    titles = [f"{q}: {topic_title}" for q in qualifiers]
    return titles if max(len(t) for t in titles) <= MAX_TITLE_CHARS else list(qualifiers)


def chart_unit(structure: ChartStructure, max_scale: float) -> Unit:
    w, h = (round(v * CHART_DPI) for v in structure.spec.figure_size)
    return Unit("chart", w, h, {"chart": structure.to_dict(), "dpi": CHART_DPI}, structure.spec.title,
                float(max_scale))


def _one_fits(op: str, structures: list[ChartStructure], rng: np.random.Generator
              ) -> tuple[list[ChartStructure], dict[str, Any]]:
    """A program of ``op`` over ``structures`` and the structures made to give it exactly
    one fitting chart (by exchanging two categories' values where an op needs it)."""
    table = structures[0].table
    series = pick(rng, table.series)
    n = len(structures)
    if op in ("cell_max", "cell_min"):
        return structures, {"op": op, "row": pick(rng, table.rows), "series": series}
    if op in ("max_max", "min_min"):
        return structures, {"op": op, "series": series}
    winner = int(rng.integers(n))
    j = table.series.index(series)
    if op == "falls":
        a, b = (table.rows[int(k)] for k in sorted(rng.choice(len(table.rows), size=2, replace=False)))
        out = []
        for k, st in enumerate(structures):
            va, vb = st.table.cell(a, series), st.table.cell(b, series)
            if va is not None and vb is not None and (vb < va) != (k == winner):
                st = swap_rows(st, a, b)
            out.append(st)
        return out, {"op": op, "a": a, "b": b, "series": series}
    # argmax_is: the winner's own highest category; another chart with it highest gives it
    # the values of its lowest category instead
    column = structures[winner].table.column(series)
    present = [(v, r) for r, v in zip(table.rows, column) if v is not None]
    row = max(present)[1]
    out = []
    for k, st in enumerate(structures):
        values = [(v[j], r) for r, v in zip(st.table.rows, st.table.values) if v[j] is not None]
        if k != winner and max(values)[1] == row:
            st = swap_rows(st, row, min(values)[1])
        out.append(st)
    return out, {"op": op, "row": row, "series": series}


def _targets(program: Mapping[str, Any], structures: Sequence[ChartStructure]) -> list[dict[str, Any]]:
    op, series = program["op"], program["series"]
    out: list[dict[str, Any]] = []
    for k, st in enumerate(structures):
        if op in ("cell_max", "cell_min"):
            out += cell_targets(k, st, program["row"], series)
        elif op in ("max_max", "min_min"):
            out += series_targets(k, st, series)
        elif op == "falls":
            out += cell_targets(k, st, program["a"], series) + cell_targets(k, st, program["b"], series)[:2]
        else:
            out += series_targets(k, st, series, program["row"])
    return out


def draw(rng: np.random.Generator, settings: Mapping[str, Any] | None = None, max_tries: int = 32) -> Task:
    """A seeded multichart task (see the module notes)."""
    s = {**DEFAULTS, **dict(settings or {})}
    check_settings(s)
    for _ in range(max_tries):
        n = int(rng.integers(s["min_charts"], s["max_charts"] + 1))
        try:
            base, topic = draw_structure(rng, CHART_INCHES)
            structures = [base] + [variant(base, topic, rng) for _ in range(n - 1)]
            op = pick(rng, list(s["ops"]))
            structures, program = _one_fits(op, structures, rng)
            qualifiers = pick_qualifiers(structures, n, rng)
            titled = [st.with_spec(title=t) for st, t in zip(structures, chart_titles(base.spec.title, qualifiers))]
            units = tuple(chart_unit(st, s["max_scale"]) for st in titled)
            tables = tables_of(units)
            answer = derive(program, tables)
        except (InvalidEdit, GenerationError):
            continue
        targets = _targets(program, titled)
        options = tuple(u.title for u in units)
        meta = {"program": program, "evidence": targets, "distractors": distractors(program, tables),
                "measure": base.spec.title, "source": "procedural"}
        contract, scorer = CONTRACTS[op]
        text = f"The charts show {_lower_first(base.spec.title)}. " + question(program, options, tables)
        return Task(task_id("multichart", units, program), "multichart", text, answer, units,
                    provisional(targets, units), contract, scorer, options=options, start=s["start"], meta=meta)
    raise GenerationError(f"no multichart task with exactly one fitting chart in {max_tries} draws")


def _lower_first(title: str) -> str:
    """``title`` as the middle of a sentence ("Unit sales ..." -> "unit sales ...", "GDP" stays)."""
    return title[0].lower() + title[1:] if title[1:2].islower() else title


def answer_of(task: Task) -> str:
    """The option letter the stored tables give (what ``verify`` re-derives)."""
    return derive(task.meta["program"], tables_of(task.units))


def truths(task: Task) -> list[bool]:
    """Which options fit (exactly one for a well-made task)."""
    return option_truths(task.meta["program"], tables_of(task.units))


__all__ = ["DEFAULTS", "EXTRAS", "answer_of", "check_settings", "draw", "letters", "truths"]
