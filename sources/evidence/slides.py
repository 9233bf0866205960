"""The ``slides`` task family (SlideVQA-like): a deck of 6-20 slides, each a title, a few
bullet lines and a chart of the chart arm, and one question about one slide's chart or
about two slides' charts together.

The executor starts with a thumbnail sheet of the deck (``start="sheet"``): at thumbnail
size no title or number can be read (the sheet labels carry the titles, cut to the
thumbnail's width), so it must find the slide a question names and open it. A whole
slide fitted into a 768 px view shows the chart's data labels at about 4.4-6 px, around
the 4.6 px at which Tesseract reads chart text half of the time (``LEGIBLE_TEXT_PX``,
measured), so often legibly already; a zoom onto the chart shows them at 8-11 px (at most
``max_scale`` = 2 times the unit's pixels, 14-18 px).

Charts come from the chart arm's procedural generator (:func:`vicogym.sources.chart.procedural_seed`)
and are drawn with data labels, in chart types and sizes chosen so that the labels do not
run into each other (:func:`draw_structure`; :mod:`vicogym.checks.evidence.charts` checks
every task against the rendered charts). Two-slide questions pair slides of one topic
(the same categories in two divisions, scenarios or survey waves: :func:`variant`), so a
difference or comparison of their values means something. Slide titles are unique; a
topic on several slides names each slide's qualifier.

The answer follows from the stored tables by :func:`vicogym.programs.evidence.charts.derive`
(``meta["program"]``); the evidence boxes (the data label, the category label, the legend
entry) are known only once the chart is rendered, so the task names them as targets
(``meta["evidence"]``) with the chart's area as a provisional box, and the renderer's
``prepare`` puts in the label boxes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from vicogym.core import canonical_json
from vicogym.errors import GenerationError, InvalidEdit
from vicogym.programs.evidence.charts import (
    CONTRACTS,
    SLIDE_ONE_OPS,
    SLIDE_OPS,
    SLIDE_TWO_OPS,
    derive,
    distractors,
    question,
    tables_of,
)
from vicogym.sources.chart import procedural_seed, topics
from vicogym.structures.chart import ChartStructure, Table, chart_type_fits, label_key, reflect_into
from vicogym.structures.evidence import LEGIBLE_TEXT_PX, Evidence, Task, Unit
from vicogym.validation import is_int, is_number, pick

DEFAULTS: dict[str, Any] = {
    "min_slides": 6,
    "max_slides": 20,
    #: how far a view may enlarge a slide; its chart is rendered at CHART_DPI * max_scale
    "max_scale": 2.0,
    #: the question kinds drawn (see vicogym.programs.evidence.charts)
    "ops": list(SLIDE_OPS),
    #: the share of questions about two slides (when ops allow both kinds)
    "two_slide_share": 0.4,
    #: the scale of the sheet's thumbnails, the task's start (a 38 x 22 px slide under its
    #: title): small enough that the start hides every printed value and label of the
    #: charts; a drawn task whose start does not hide its answer is drawn again
    #: (``EvidenceEnv.hidden_report``)
    "start_scale": 0.03,
}
EXTRAS: tuple[str, ...] = ()
#: the family promises a start that hides the answer (see ``forms.HIDES``)
HIDES = True

#: a slide's frame in unit pixels (16:9)
SLIDE_SIZE = (1280, 720)
#: chart pixels per inch in unit pixels; a slide's chart is CHART_INCHES at this
CHART_DPI = 100
CHART_INCHES = (6.4, 4.2)
#: where the chart sits: its top-left corner in the slide
CHART_AT = (600, 200)
#: the most a chart is rendered at (the chart renderer's own limit)
MAX_RENDER_DPI = 300
#: DejaVu Sans (the charts' font): cap height per em
CAP_PER_EM = 0.729
#: palettes whose colours stand apart from white and from each other (the chart checks' limits)
PALETTES = ("tab10", "Dark2", "Set2")
#: at most this many marks (and so data labels) in a chart of each type, so labels do not collide
MAX_MARKS = {"bar": 6, "hbar": 12, "grouped_bar": 8, "line": 9, "pie": 8}
#: a pie's every slice at least this share of the whole (a thinner one's label runs into its neighbour's)
MIN_PIE_SHARE = 0.05
#: what tells apart slides (and charts) of one topic
QUALIFIERS = ("Northern division", "Southern division", "Eastern division", "Western division", "Central division",
              "Coastal division", "Pilot group", "Control group", "Baseline scenario", "Growth scenario",
              "Survey wave 1", "Survey wave 2", "Survey wave 3", "Head office", "Partner network", "Audit sample")
DECKS = ("Quarterly business review", "Annual statistics briefing", "Board update", "Market overview",
         "Regional performance review", "Policy briefing", "Investor day", "Operations review")
SOURCES = ("National statistics office", "Company filings", "Industry survey", "Annual report", "Market tracker",
           "Internal database", "Ministry of economy", "Trade association")
NOTES = ("Figures are provisional", "Prepared for the steering committee", "Method described in the appendix",
         "Seasonal effects not removed", "Comparable with last year's edition", "Reviewed by the analytics team")


def check_settings(settings: Mapping[str, Any]) -> None:
    """``ValueError`` naming the setting to change when ``settings`` cannot draw a deck."""
    check_common(settings, "slides", 2, 20, "a thumbnail sheet holds 20", SLIDE_OPS)
    share = settings["two_slide_share"]
    if not is_number(share) or not 0.0 <= share <= 1.0:
        raise ValueError(f"expected two_slide_share as a number in [0, 1], got {share!r}")
    if not is_number(settings["start_scale"], 0.005, 2.0):
        raise ValueError(f"expected start_scale as a number in [0.005, 2], got {settings['start_scale']!r}")


def check_common(settings: Mapping[str, Any], units: str, low: int, high: int, why: str, ops: Sequence[str]
                 ) -> None:
    """The settings both chart families share: ``min_<units>``/``max_<units>`` in [low,
    high], ``max_scale`` and ``ops``."""
    lo, hi = settings[f"min_{units}"], settings[f"max_{units}"]
    if not is_int(lo, low, high) or not is_int(hi, low, high) or lo > hi:
        raise ValueError(f"expected min_{units} <= max_{units}, whole numbers in [{low}, {high}] ({why}), got "
                         f"{lo!r} and {hi!r}")
    check_scale(settings["max_scale"])
    check_ops(settings["ops"], ops)


def check_scale(max_scale: Any) -> None:
    if not is_number(max_scale) or not max_scale >= 1.0 or CHART_DPI * max_scale > MAX_RENDER_DPI \
            or abs(CHART_DPI * max_scale - round(CHART_DPI * max_scale)) > 1e-9:
        raise ValueError(f"expected max_scale as a number in [1, {MAX_RENDER_DPI / CHART_DPI:g}] that makes "
                         f"{CHART_DPI} * max_scale a whole dpi, got {max_scale!r}")


def check_ops(ops: Any, known: Sequence[str]) -> None:
    if not isinstance(ops, (list, tuple)) or not ops or any(op not in known for op in ops):
        raise ValueError(f"expected ops as a non-empty list of {list(known)}, got {ops!r}")


# -- charts -----------------------------------------------------------------------------------
def topic_of(structure: ChartStructure) -> Mapping[str, Any]:
    """The topic of the chart arm's generator a procedural chart was drawn from (by its title)."""
    for topic in topics()["topics"]:
        if topic["title"].format(index=topic["index_name"].lower()) == structure.spec.title:
            return topic
    raise ValueError(f"no chart topic has the title {structure.spec.title!r}")


def fit_chart_type(table: Table, ordered: bool, preferred: str, rng: np.random.Generator) -> str | None:
    """A chart type that draws ``table`` with data labels that neither collide nor hide
    under other marks, the generator's own choice when it is one; ``None`` when none does.

    Negative values put a bar's label below it, into the category labels, so tables with
    them are drawn as lines (over ordered categories only); stacked bars are never drawn
    (a thin segment cannot hold its label); a line draws one series (two lines' labels
    meet where the lines do); a pie has no slice under :data:`MIN_PIE_SHARE`."""
    marks = len(table.rows) * len(table.series)
    negative = table.has_negative()
    fits = []
    for kind in ("bar", "hbar", "grouped_bar", "line", "pie"):
        if chart_type_fits(table, kind) is not None or marks > MAX_MARKS[kind]:
            continue
        if kind == "line" and (not ordered or len(table.series) != 1 or len(table.rows) < 3):
            continue
        if kind != "line" and negative:
            continue
        if kind == "pie" and min(v for v in table.all_values() if v is not None) < MIN_PIE_SHARE * table.total():
            continue
        fits.append(kind)
    if not fits:
        return None
    return preferred if preferred in fits else pick(rng, fits)


def draw_structure(rng: np.random.Generator, figure_size: tuple[float, float], max_tries: int = 64
                   ) -> tuple[ChartStructure, Mapping[str, Any]]:
    """A chart of the chart arm's generator, fitted to be read from its data labels: a
    chart type whose labels fit (:func:`fit_chart_type`), a distinct palette, the legend
    outside, ``figure_size`` inches; and its topic."""
    for _ in range(max_tries):
        structure = procedural_seed(rng).structure
        table, spec = structure.table, structure.spec
        kind = fit_chart_type(table, structure.vocabulary.ordered, spec.chart_type, rng)
        if kind is None:
            continue
        topic = topic_of(structure)
        pie = kind == "pie"
        spec = replace(spec, chart_type=kind, data_labels=True, legend="outside",
                       palette="tab10" if pie else pick(rng, PALETTES), figure_size=tuple(figure_size),
                       x_label="" if pie else topic["index_name"], y_label="" if pie else topic["y_label"])
        return ChartStructure(table, spec, structure.vocabulary), topic
    raise GenerationError(f"no chart whose data labels fit in {max_tries} draws")


def variant(structure: ChartStructure, topic: Mapping[str, Any], rng: np.random.Generator, max_tries: int = 32
            ) -> ChartStructure:
    """The same topic, categories and series with other values (another division,
    scenario or wave of one measure), kept to what the topic allows: its range and
    precision, its ranked series in order, a row's series within the topic's gap, shares
    of a whole adding up as before; drawn in a chart type that fits."""
    table = structure.table
    if table.complete_rows or table.totals or table.has_missing():
        raise GenerationError("a variant keeps no row totals, total rows or missing values; draw another chart")
    low, high, decimals = float(topic["low"]), float(topic["high"]), table.decimals
    spread = float(topic.get("spread", 0.25)) * (high - low)
    base = np.array([[np.nan if v is None else v for v in row] for row in table.values], dtype=float)
    for _ in range(max_tries):
        drawn = base + rng.normal(0.0, spread, size=base.shape)
        values = np.vectorize(lambda v: reflect_into(float(v), low, high))(drawn)
        if table.row_spread is not None and len(table.series) > 1:
            mean = values.mean(axis=1, keepdims=True)
            width = values.max(axis=1, keepdims=True) - values.min(axis=1, keepdims=True)
            values = mean + (values - mean) * np.minimum(1.0, 0.9 * table.row_spread / np.maximum(width, 1e-12))
        ranked = [table.series.index(x) for x in table.ranked if x in table.series]
        if len(ranked) > 1:
            values[:, ranked] = -np.sort(-values[:, ranked], axis=1)
        if table.part_of_whole and table.unit == "%":
            for j in range(len(table.series)):
                total = 100.0 if table.complete else float(rng.uniform(55.0, 95.0))
                values[:, j] = _shares(values[:, j], total, decimals)
        values = np.round(values, decimals)
        if np.array_equal(values, base):
            continue
        new = replace(table, values=tuple(tuple(float(v) for v in row) for row in values))
        if new.rank_problem() or new.total_problem() or not all(new.in_bounds(v) for v in new.all_values()):
            continue
        kind = fit_chart_type(new, structure.vocabulary.ordered, structure.spec.chart_type, rng)
        if kind is None:
            continue
        spec = structure.spec
        if kind != spec.chart_type:
            pie = kind == "pie"
            spec = replace(spec, chart_type=kind, palette="tab10" if pie else spec.palette,
                           x_label="" if pie else topic["index_name"], y_label="" if pie else topic["y_label"])
        return ChartStructure(new, spec, structure.vocabulary)
    raise GenerationError(f"no variant of {structure.spec.title!r} within its topic in {max_tries} draws")


def _shares(column: np.ndarray, total: float, decimals: int) -> np.ndarray:
    """``column`` rescaled to add up to ``total`` at ``decimals`` (the rounding is put on
    its largest part)."""
    shares = np.round(column / column.sum() * total, decimals)
    shares[int(np.argmax(shares))] += round(total - float(shares.sum()), decimals)
    return np.round(shares, decimals)


def swap_rows(structure: ChartStructure, a: str, b: str) -> ChartStructure:
    """``structure`` with the values of rows ``a`` and ``b`` exchanged (every series):
    what holds within a row (ranked series, a row's gap) and a column's total stay."""
    table = structure.table
    i, j = table.rows.index(a), table.rows.index(b)
    values = list(table.values)
    values[i], values[j] = values[j], values[i]
    return structure.with_table(replace(table, values=tuple(values)))


def cap_px(font_pt: float, dpi: float = CHART_DPI) -> float:
    """The cap height in unit pixels of chart text of ``font_pt`` points."""
    return CAP_PER_EM * font_pt * dpi / 72.0


#: each chart text's size relative to the spec's font size (as the chart renderer draws them)
TEXT_SHARE = {"data_label": 0.8, "data_labels": 0.8, "category": 0.9, "legend": 0.85}


def target(unit: int, kind: str, structure: ChartStructure, row: str | None = None, series: str | None = None
           ) -> dict[str, Any]:
    """An evidence target: what the renderer's ``prepare`` finds in the rendered chart
    (``kind``: ``data_label`` of a cell, ``data_labels`` of a series, ``category`` label of
    a row (a pie's legend entry), ``legend`` entry of a series)."""
    what = {"data_label": f"data label of {row} / {series}", "data_labels": f"data labels of {series}",
            "category": f"label of {row}", "legend": f"legend entry of {series}"}[kind]
    if kind == "category" and structure.spec.chart_type == "pie":
        what = f"legend entry of {row}"
    return {"unit": unit, "kind": kind, "row": row, "series": series, "what": what,
            "size": round(cap_px(structure.spec.font_size * TEXT_SHARE[kind]), 4)}


def cell_targets(unit: int, structure: ChartStructure, row: str, series: str) -> list[dict[str, Any]]:
    """What must be seen to read one cell: its data label, its row's label and, when the
    chart draws several series, the series' legend entry."""
    out = [target(unit, "data_label", structure, row, series), target(unit, "category", structure, row)]
    if len(structure.table.series) > 1:
        out.append(target(unit, "legend", structure, series=series))
    return out


def series_targets(unit: int, structure: ChartStructure, series: str, row: str | None = None) -> list[dict[str, Any]]:
    """What must be seen to compare a series' values: all its data labels, the legend
    entry when there are several series, and a row's label when the answer names it."""
    out = [target(unit, "data_labels", structure, series=series)]
    if len(structure.table.series) > 1:
        out.append(target(unit, "legend", structure, series=series))
    if row is not None:
        out.append(target(unit, "category", structure, row))
    return out


def provisional(targets: Sequence[Mapping[str, Any]], units: Sequence[Unit]) -> tuple[Evidence, ...]:
    """Evidence with the chart's area as its box, until ``prepare`` puts in the label boxes."""
    out = []
    for t in targets:
        unit = units[t["unit"]]
        box = unit.spec.get("chart_box") or [0, 0, unit.width, unit.height]
        out.append(Evidence(t["unit"], tuple(float(v) for v in box), t["size"], LEGIBLE_TEXT_PX, t["what"]))
    return tuple(out)


def task_id(family: str, units: Sequence[Unit], program: Mapping[str, Any]) -> str:
    digest = hashlib.sha256(canonical_json([[u.to_dict() for u in units], dict(program)]).encode()).hexdigest()
    return f"{family}-{digest[:12]}"


def qualifiers_for(structures: Sequence[ChartStructure]) -> tuple[str, ...]:
    """The qualifiers that name none of the charts' labels' words ("Coastal division"
    beside a "Coastal region" row would read as that row)."""
    words = {w for st in structures for label in (*st.table.rows, *st.table.series) for w in label_key(label).split()}
    return tuple(q for q in QUALIFIERS if not set(label_key(q).split()) & words)


def pick_qualifiers(structures: Sequence[ChartStructure], n: int, rng: np.random.Generator) -> list[str]:
    """``n`` distinct qualifiers fit for ``structures`` (:func:`qualifiers_for`)."""
    pool = qualifiers_for(structures)
    if len(pool) < n:
        raise GenerationError(f"only {len(pool)} qualifiers name no label of these charts, {n} needed")
    return [pool[int(k)] for k in rng.choice(len(pool), size=n, replace=False)]


def qualified_titles(bases: Sequence[str], structures: Sequence[ChartStructure], rng: np.random.Generator
                     ) -> list[str]:
    """Unique titles: a base that occurs once stays as it is; one that recurs gets a
    distinct qualifier on each of its occurrences."""
    keys = [label_key(b) for b in bases]
    out = list(bases)
    for key in dict.fromkeys(keys):
        where = [k for k, other in enumerate(keys) if other == key]
        if len(where) > 1:
            for k, q in zip(where, pick_qualifiers([structures[k] for k in where], len(where), rng)):
                out[k] = f"{bases[k]}: {q}"
    return out


# -- the deck -----------------------------------------------------------------------------------
def _plural(word: str) -> str:
    if word.endswith("y") and word[-2:-1] not in tuple("aeiou"):
        return word[:-1] + "ies"
    return word + "s"


def bullets(structure: ChartStructure, topic: Mapping[str, Any], rng: np.random.Generator) -> list[str]:
    """Two to four bullet lines about a slide's chart that state none of its values (so
    the chart, not the text, answers)."""
    table = structure.table
    index = table.index_name.lower() or "category"
    lines = [f"Source: {pick(rng, SOURCES)}",
             f"{len(table.rows)} {_plural(index)} compared",
             f"Values: {topic['y_label']}",
             pick(rng, NOTES)]
    if len(table.series) > 1:
        lines.append(f"Series: {', '.join(table.series)}")
    chosen = sorted(rng.choice(len(lines), size=int(rng.integers(2, 5)), replace=False))
    return [lines[int(k)] for k in chosen]


def slide_unit(structure: ChartStructure, title: str, lines: Sequence[str], page: int, pages: int, deck: str,
               max_scale: float) -> Unit:
    w, h = (round(v * CHART_DPI) for v in CHART_INCHES)
    box = [CHART_AT[0], CHART_AT[1], CHART_AT[0] + w, CHART_AT[1] + h]
    spec = {"chart": structure.to_dict(), "dpi": CHART_DPI, "chart_box": box, "title": title, "bullets": list(lines),
            "footer": deck, "page": page, "pages": pages}
    return Unit("slide", SLIDE_SIZE[0], SLIDE_SIZE[1], spec, title, float(max_scale))


def draw_deck(rng: np.random.Generator, n: int) -> tuple[list[ChartStructure], list[Mapping[str, Any]], list[int]]:
    """``n`` charts: one topic at least twice (a pair two-slide questions can ask about),
    others new or further variants; and each chart's group (charts of one topic)."""
    base, topic = draw_structure(rng, CHART_INCHES)
    structures, topics_, groups = [base, variant(base, topic, rng)], [topic, topic], [0, 0]
    firsts = [(base, topic)]
    while len(structures) < n:
        if rng.random() < 0.25:
            g = int(rng.integers(len(firsts)))
            if groups.count(g) < 3:
                structures.append(variant(firsts[g][0], firsts[g][1], rng))
                topics_.append(firsts[g][1])
                groups.append(g)
                continue
        structure, topic = draw_structure(rng, CHART_INCHES)
        firsts.append((structure, topic))
        structures.append(structure)
        topics_.append(topic)
        groups.append(len(firsts) - 1)
    order = [int(k) for k in rng.permutation(n)]
    return [structures[k] for k in order], [topics_[k] for k in order], [groups[k] for k in order]


def _program(rng: np.random.Generator, op: str, structures: Sequence[ChartStructure], groups: Sequence[int]
             ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A program of ``op`` over the deck and its evidence targets."""
    if op in SLIDE_ONE_OPS:
        k = int(rng.integers(len(structures)))
        table = structures[k].table
        series = pick(rng, table.series)
        if op == "lookup":
            row = pick(rng, table.rows)
            return {"op": op, "unit": k, "row": row, "series": series}, cell_targets(k, structures[k], row, series)
        program = {"op": op, "unit": k, "series": series}
        if op in ("argmax", "argmin"):
            answer = derive(program, [s.table for s in structures])
            return program, series_targets(k, structures[k], series, answer)
        return program, series_targets(k, structures[k], series)
    pairs = [(a, b) for a in range(len(groups)) for b in range(len(groups)) if a != b and groups[a] == groups[b]]
    a, b = pairs[int(rng.integers(len(pairs)))]
    ta, tb = structures[a].table, structures[b].table
    row_a, series_a = pick(rng, ta.rows), pick(rng, ta.series)
    if rng.random() < 0.6 and row_a in tb.rows and series_a in tb.series:  # the same cell on both slides
        row_b, series_b = row_a, series_a
    else:
        row_b, series_b = pick(rng, tb.rows), pick(rng, tb.series)
    program = {"op": op, "a": {"unit": a, "row": row_a, "series": series_a},
               "b": {"unit": b, "row": row_b, "series": series_b}}
    return program, cell_targets(a, structures[a], row_a, series_a) + cell_targets(b, structures[b], row_b, series_b)


def draw(rng: np.random.Generator, settings: Mapping[str, Any] | None = None, max_tries: int = 32) -> Task:
    """A seeded slides task (see the module notes)."""
    s = {**DEFAULTS, **dict(settings or {})}
    check_settings(s)
    one = [op for op in s["ops"] if op in SLIDE_ONE_OPS]
    two = [op for op in s["ops"] if op in SLIDE_TWO_OPS]
    for _ in range(max_tries):
        n = int(rng.integers(s["min_slides"], s["max_slides"] + 1))
        try:
            structures, topics_, groups = draw_deck(rng, n)
            titles = qualified_titles([st.spec.title for st in structures], structures, rng)
            deck = pick(rng, DECKS)
            slides = [slide_unit(st.with_spec(title=""), title, bullets(st, topic, rng), k + 1, n, deck, s["max_scale"])
                      for k, (st, topic, title) in enumerate(zip(structures, topics_, titles))]
            tables = [st.table for st in structures]
            op = pick(rng, two if two and (not one or rng.random() < s["two_slide_share"]) else one)
            program, targets = _program(rng, op, structures, groups)
            answer = derive(program, tables)
        except (InvalidEdit, GenerationError):
            continue
        contract, scorer = CONTRACTS[op]
        meta = {"program": program, "evidence": targets, "distractors": distractors(program, tables),
                "deck": deck, "source": "procedural"}
        return Task(task_id("slides", slides, program), "slides", question(program, titles, tables), answer,
                    tuple(slides), provisional(targets, slides), contract, scorer, start="sheet", meta=meta,
                    start_scale=float(s["start_scale"]))
    raise GenerationError(f"no slides task with a unique answer in {max_tries} decks")


def answer_of(task: Task) -> str:
    """The answer the stored tables give (what ``verify`` re-derives)."""
    return derive(task.meta["program"], tables_of(task.units))


# -- counterfactuals ------------------------------------------------------------------------------
def counterfactuals(task: Task, rng: np.random.Generator, n: int = 8) -> list[Task]:
    """Up to ``n`` tasks that differ from ``task`` only in what the charts its question
    reads print, each with an answer that scores 0 against ``task``'s: two category labels
    traded (every mark stays where it is, the asked row now holds another row's values),
    two legend entries traded, or every value of the chart ten times larger or smaller
    (the marks keep their places on an axis that scales with them; only the numbers
    printed change). What the hidden check draws the start of (see
    :mod:`vicogym.sources.evidence.forms`'s)."""
    from vicogym.programs.evidence import score_task

    program = task.meta["program"]
    read = sorted({program["unit"]} if "unit" in program else {program["a"]["unit"], program["b"]["unit"]})
    candidates: list[tuple[int, ChartStructure, str, int]] = []
    for k in read:
        structure = ChartStructure.from_dict(task.units[k].spec["chart"])
        candidates += [(k, *changed) for changed in _relabelled(structure)]
    out: list[Task] = []
    # texts as long as the ones they replace first: the chart's layout (the room its labels
    # take) stays as it was, so only the glyphs change
    order = sorted(rng.permutation(len(candidates)), key=lambda k: candidates[int(k)][3])
    for k in order:
        unit_index, structure, what, _ = candidates[int(k)]
        units = list(task.units)
        unit = units[unit_index]
        units[unit_index] = Unit(unit.kind, unit.width, unit.height, {**unit.spec, "chart": structure.to_dict()},
                                 unit.title, unit.max_scale)
        try:
            answer = derive(program, tables_of(units))
        except (InvalidEdit, ValueError):
            continue
        if score_task(task, answer) > 0 or any(t.answer == answer for t in out):
            continue
        out.append(replace(task, answer=answer, units=tuple(units), golds=(),
                           meta={**task.meta, "counterfactual": f"slide {unit_index + 1}: {what}"}))
        if len(out) == n:
            break
    return out


def _relabelled(structure: ChartStructure) -> list[tuple[ChartStructure, str, int]]:
    """``structure`` with two rows' labels traded, two series' labels traded, or its
    values ten times larger or smaller; what was done, and by how many characters the
    printed texts' lengths differ (those the table allows)."""
    table = structure.table
    out = []
    for names, field in ((table.rows, "rows"), (table.series, "series")):
        for i in range(len(names)):
            for j in range(i + 1, len(names)):
                swapped = list(names)
                swapped[i], swapped[j] = swapped[j], swapped[i]
                try:
                    new = replace(table, **{field: tuple(swapped)})
                except (TypeError, ValueError):
                    continue
                out.append((structure.with_table(new), f"{names[i]!r} and {names[j]!r} traded",
                            abs(len(names[i]) - len(names[j]))))
    for factor in (10.0, 0.1):
        decimals = max(0, table.decimals - 1) if factor > 1 else table.decimals + 1
        values = tuple(tuple(None if v is None else round(v * factor, decimals) for v in row) for row in table.values)
        try:
            new = replace(table, values=values, decimals=decimals, bounds=None)
        except (TypeError, ValueError):
            continue
        out.append((structure.with_table(new), f"every value x{factor:g}", len(table.rows) * len(table.series)))
    return out
