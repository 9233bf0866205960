"""Answerability checks of the chart arm: can a careful reader answer the question from
the rendered image alone? And, read from the same facts, the visual difficulty features a
stand-in actor's accuracy follows (:func:`difficulty_features`, :func:`difficulty`).

Pure functions of the structure, the label rule and the renderer's facts (text boxes,
mark boxes, drawn colours, the value axis); each problem is an ``InvalidEdit`` with a
stated code. Every accepted sample, seeds included, passes them.

The thresholds, and why:

- :data:`MIN_DELTA_E` (12, CIEDE2000): legend entries and pie slices must differ by about
  five just-noticeable differences (2.3 each) to be matched at a glance;
- :data:`READ_PX` (2 px) and :data:`TICK_DIVISIONS` (5): without data labels a reader
  places a bar end or a point within 2 px, and between two ticks to a fifth of a step,
  whichever is coarser; that is the resolution of one value read off the axis;
- :data:`MIN_FILL_CONTRAST` (10) and :data:`MIN_LINE_CONTRAST` (20): bars and slices,
  and thinner lines, must stand out from the white background by that much;
- :data:`MIN_GAP_PX` (8 px): compared values, and a value and a threshold, must be at
  least this far apart when unlabelled, as bars compared across the plot are (with data
  labels, their printed values must differ);
- :data:`MIN_PLOT_SHARE` (35%): the plot keeps at least this share of the image's width
  and height, whatever room the labels and the legend take;
- :data:`MIN_PIE_SHARE_GAP` (2% of the circle, 7.2 degrees): the same for pie slices;
- :data:`TEXT_OVERLAP_PX` (1 px): text boxes may touch, not overlap by more;
- a numeric answer is readable when the error that reading propagates into it stays
  within the scorer's tolerance (5% for ChartQA's relaxed accuracy); pies show no scale,
  so their values are readable only from data labels; a question with no program (Tier
  2), or one that names a value to find, needs data labels;
- every series the question names is named in the legend (a chart of one series whose
  title or axis titles name it needs none), and data labels do not lie on other marks.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from vicogym.answers import format_number
from vicogym.errors import InvalidEdit, register_error_codes
from vicogym.programs.chart import OPS, Op, execute, mentions, need_choices, rule_question, said_by_titles
from vicogym.structures.chart import ChartStructure, Table, label_key

MIN_DELTA_E = 12.0
MIN_FILL_CONTRAST = 10.0
MIN_LINE_CONTRAST = 20.0
READ_PX = 2.0
TICK_DIVISIONS = 5.0
MIN_GAP_PX = 8.0
MIN_PIE_SHARE_GAP = 0.02
MIN_PLOT_SHARE = 0.35
TEXT_OVERLAP_PX = 1.0
EDGE_SLACK_PX = 0.5
WHITE = (255, 255, 255)


def check(structure: ChartStructure, rule: Mapping[str, Any], facts: Any, tolerance: float = 0.05) -> None:
    """Raise ``InvalidEdit`` for the first reason a reader could not answer from the image.

    ``facts`` is the renderer's :class:`~vicogym.renderers.chart.ChartFacts`;
    ``tolerance`` the relative tolerance of the answer scorer (0 for exact match)."""
    check_legend_cover(structure, facts)
    check_text(facts)
    check_room(facts)
    check_marks_under_labels(structure, facts)
    check_legend(structure, rule, facts)
    check_colours(facts, structure.spec.chart_type)
    check_values(structure, rule, facts, tolerance)


def check_room(facts: Any) -> None:
    width, height = facts.facts["image_size"]
    x0, y0, x1, y1 = facts.facts["plot_box"]
    if (x1 - x0) < MIN_PLOT_SHARE * width or (y1 - y0) < MIN_PLOT_SHARE * height:
        raise InvalidEdit("cramped", f"labels and legend leave the plot {x1 - x0:.0f} x {y1 - y0:.0f} px of the "
                          f"{width} x {height} image; shorten labels, put the legend on top, or lower font_size",
                          field="legend")


def check_marks_under_labels(structure: ChartStructure, facts: Any) -> None:
    """A data label must not lie on another mark (a neighbouring bar), where it reads as
    that mark's value or cannot be read at all."""
    if structure.spec.chart_type == "pie":
        return  # a slice's label sits inside the slice; wedge boxes overlap by nature
    labels = [lab for lab in facts.labels if lab["kind"] == "data_label"]
    marks = [m for m in facts.marks if m["box"] is not None]
    if not labels or not marks:
        return
    hit = _overlaps(np.array([lab["box"] for lab in labels], dtype=float),
                    np.array([m["box"] for m in marks], dtype=float))
    for i, j in np.argwhere(hit):
        label, mark = labels[i], marks[j]
        if (label["row"], label["series"]) != (mark["row"], mark["series"]):
            raise InvalidEdit("overlap", f"the data label {label['text']!r} of {label['row']!r} lies on the mark of "
                              f"{mark['row']!r} in {mark['series']!r}; turn data_labels off, widen figure_size or "
                              f"use chart_type 'hbar'", field="data_labels")


# -- text ---------------------------------------------------------------------------------
def check_text(facts: Any) -> None:
    for text, missing in facts.facts.get("missing_glyphs", {}).items():
        raise InvalidEdit("glyph", f"{text!r} has characters the chart font cannot draw ({missing!r}); write the "
                          f"label with Latin, Greek or Cyrillic letters")
    width, height = facts.facts["image_size"]
    labels = facts.labels
    for label in labels:
        x0, y0, x1, y1 = label["box"]
        # a text whose box reaches the last row or column of pixels is drawn into the border: cut off
        if x0 < 1 - EDGE_SLACK_PX or y0 < 1 - EDGE_SLACK_PX or x1 > width - 1 + EDGE_SLACK_PX or \
                y1 > height - 1 + EDGE_SLACK_PX:
            raise InvalidEdit("clipped", f"the {_kind(label)} {label['text']!r} runs past the image edge; shorten it, "
                              f"lower font_size or widen figure_size", field="font_size")
    if len(labels) > 1:
        boxes = np.array([label["box"] for label in labels], dtype=float)
        overlap = _overlaps(boxes, boxes)
        np.fill_diagonal(overlap, False)
        for i, j in np.argwhere(np.triu(overlap)):
            a, b = labels[i], labels[j]
            if a.get("rotation") and a.get("rotation") == b.get("rotation") and not _turned_overlap(a, b):
                continue  # the boxes of two turned labels meet, their glyphs do not
            raise InvalidEdit("overlap", f"the {_kind(a)} {a['text']!r} runs into the {_kind(b)} {b['text']!r}; "
                              f"{_overlap_hint(a, b)}", field=_overlap_field(a, b))
    legend = facts.facts.get("legend_box")
    if legend is not None:
        others = [lab for lab in labels if lab["kind"] != "legend"]
        if others:
            hit = _overlaps(np.array([lab["box"] for lab in others], dtype=float), np.array([legend], dtype=float))
            if hit.any():
                label = others[int(np.argmax(hit[:, 0]))]
                raise InvalidEdit("overlap", f"the legend covers the {_kind(label)} {label['text']!r}; use set_style "
                                  f"legend 'outside', 'top' or 'none'", field="legend")


def _overlaps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pairwise: box ``a[i]`` overlaps box ``b[j]`` by more than the slack in both directions."""
    dx = np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0])
    dy = np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1])
    return (dx > TEXT_OVERLAP_PX) & (dy > TEXT_OVERLAP_PX)


def _turned_overlap(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two labels turned by the same angle overlap: their boxes share a centre with
    the turned text, so compare them in the text's own frame."""
    angle = np.radians(a["rotation"])
    u, n = np.array([np.cos(angle), -np.sin(angle)]), np.array([np.sin(angle), np.cos(angle)])  # image y points down
    centre = lambda box: np.array([(box[0] + box[2]) / 2.0, (box[1] + box[3]) / 2.0])
    d = centre(b["box"]) - centre(a["box"])
    along = abs(float(d @ u)) - (a["size"][0] + b["size"][0]) / 2.0
    across = abs(float(d @ n)) - (a["size"][1] + b["size"][1]) / 2.0
    return along < -TEXT_OVERLAP_PX and across < -TEXT_OVERLAP_PX


_KIND_NAMES = {"category": "category label", "value_tick": "axis number", "data_label": "data label",
               "legend": "legend entry", "title": "title", "axis_title": "axis title"}


def _kind(label: Mapping[str, Any]) -> str:
    return _KIND_NAMES.get(label["kind"], label["kind"])


def _overlap_hint(a: Mapping[str, Any], b: Mapping[str, Any]) -> str:
    kinds = {a["kind"], b["kind"]}
    if kinds == {"data_label"}:
        return "turn data_labels off, or lower font_size, or use fewer rows"
    if "category" in kinds:
        return "use chart_type 'hbar', fewer rows, a wider figure_size or a smaller font_size"
    return "lower font_size or widen figure_size"


def _overlap_field(a: Mapping[str, Any], b: Mapping[str, Any]) -> str:
    return "data_labels" if {a["kind"], b["kind"]} == {"data_label"} else "font_size"


# -- legend and colours -------------------------------------------------------------------
def named_series(rule: Mapping[str, Any], table: Table) -> list[str]:
    """The series a question names (or whose names it asks for)."""
    if rule["kind"] == "cell":
        return [rule["series"]] if rule.get("series_named", True) else []
    if rule["kind"] != "program":
        return []
    program = rule["program"]
    op = OPS[program["op"]]
    if op.reads == "row":
        return list(table.series)
    return [program[k] for k in op.series]


def check_legend(structure: ChartStructure, rule: Mapping[str, Any], facts: Any) -> None:
    t, spec = structure.table, structure.spec
    pie = spec.chart_type == "pie"
    shown = {entry["text"] for entry in facts.facts.get("legend_entries") or []}
    if (pie or len(t.series) > 1) and not shown:
        what = "slices" if pie else f"{len(t.series)} series"
        raise InvalidEdit("unlabelled", f"the chart draws {what} with no legend to tell them apart; set_style legend "
                          f"'outside' or 'top'", field="legend")
    if not pie:  # one series the titles name needs no legend: there is nothing to tell it apart from
        missing = [s for s in named_series(rule, t)
                   if s not in shown and not (len(t.series) == 1 and said_by_titles(spec, s))]
        if missing:
            raise InvalidEdit("unlabelled", f"the question names the series {missing[0]!r}, which the chart does not "
                              f"name; set_style legend 'outside' or 'top'", field="legend")


def delta_e(colors: Sequence[Sequence[int]]) -> np.ndarray:
    """Pairwise CIEDE2000 differences of RGB 0-255 colours (an n x n matrix)."""
    return np.array(_delta_e(tuple(tuple(int(v) for v in c) for c in colors)))


@lru_cache(maxsize=256)
def _delta_e(colors: tuple[tuple[int, ...], ...]) -> tuple[tuple[float, ...], ...]:
    from skimage.color import deltaE_ciede2000, rgb2lab

    lab = rgb2lab(np.asarray(colors, dtype=float)[None, :, :] / 255.0)[0]
    return tuple(map(tuple, deltaE_ciede2000(lab[:, None, :], lab[None, :, :]).tolist()))


def check_colours(facts: Any, chart_type: str = "bar") -> None:
    entries = facts.facts.get("legend_entries") or []
    if not entries:
        return
    against_white = delta_e([WHITE] + [entry["color"] for entry in entries])[0, 1:]
    least = MIN_LINE_CONTRAST if chart_type == "line" else MIN_FILL_CONTRAST
    faint = int(np.argmin(against_white))
    if against_white[faint] < least:
        raise InvalidEdit("indistinct", f"{entries[faint]['text']!r} is drawn in a colour only "
                          f"{against_white[faint]:.1f} from the white background (CIEDE2000, at least {least:g} "
                          f"needed); choose another palette", field="palette")
    if len(entries) < 2:
        return
    distance = delta_e([entry["color"] for entry in entries])
    np.fill_diagonal(distance, np.inf)
    i, j = np.unravel_index(int(np.argmin(distance)), distance.shape)
    if distance[i, j] < MIN_DELTA_E:
        raise InvalidEdit("indistinct", f"legend entries {entries[i]['text']!r} and {entries[j]['text']!r} are drawn "
                          f"in colours only {distance[i, j]:.1f} apart (CIEDE2000, at least {MIN_DELTA_E:g} needed); "
                          f"choose a palette with more distinct colours (tab10 has 10, Paired 12) or draw fewer "
                          f"series", field="palette")


# -- values -------------------------------------------------------------------------------
def axis_resolution(facts: Any, chart_type: str) -> float:
    """The value one unlabelled reading can be off by, in data units (see the module notes)."""
    lo, hi = facts.value_limits
    per_px = 1.0 / _px_per_unit(facts, "bar" if chart_type == "stacked_bar" else chart_type)
    ticks = sorted({label["value"] for label in facts.labels if label["kind"] == "value_tick" and "value" in label})
    step = min((b - a for a, b in zip(ticks, ticks[1:])), default=hi - lo)
    return max(READ_PX * per_px, step / TICK_DIVISIONS)


def _cells(rule: Mapping[str, Any], table: Table) -> tuple[Op, list[tuple[str, str]]]:
    """The rule's op (a cell's is a lookup) and the (row, series) cells its answer is read
    from."""
    if rule["kind"] == "cell":
        return OPS["lookup"], [(rule["row"], rule["series"])]
    program = rule["program"]
    op = OPS[program["op"]]
    return op, op.cells(program, table)


def check_values(structure: ChartStructure, rule: Mapping[str, Any], facts: Any, tolerance: float) -> None:
    chart_type = structure.spec.chart_type
    _check_values(structure, rule, tolerance, lambda: _px_per_unit(facts, chart_type),
                  lambda: axis_resolution(facts, chart_type))


def screen(structure: ChartStructure, rule: Mapping[str, Any], limits: tuple[float, float], length_px: float,
           tick_space: int, tolerance: float = 0.05) -> None:
    """:func:`check_values` before a render, on the most favourable value axis any render
    of ``structure`` could draw: it raises only where the render's check raises too (a
    question that needs printed values on a chart without data labels, a pie read without
    them, printed values that tie, and values or gaps too fine for even that axis). The
    most favourable axis: the plot takes ``length_px`` (the figure's whole extent along the
    value axis) for the value ``limits`` the renderer draws, and the tick step is no finer
    than a ninth of the limits (matplotlib's tick locator divides the axis into at most 9
    steps, and with ``tick_space`` >= 4 -- the steps a plot of the least room
    :func:`check_room` accepts has space for -- its first step already gives two ticks, so
    it takes no finer one). A plot laid out shorter, or with coarser ticks, reads no
    better, and one with less room is rejected as cramped."""
    chart_type = structure.spec.chart_type
    span = max(limits[1] - limits[0], 1e-12)
    finest = READ_PX * span / length_px
    if tick_space >= 4:
        finest = max(finest, span / 9.0 / TICK_DIVISIONS)
    _check_values(structure, rule, tolerance, lambda: length_px / span / (2.0 if chart_type == "stacked_bar" else 1.0),
                  lambda: finest)


def _check_values(structure: ChartStructure, rule: Mapping[str, Any], tolerance: float,
                  px_per_unit: Callable[[], float], resolution: Callable[[], float]) -> None:
    """The value checks, given the value axis' pixels per data unit and the resolution of
    one reading (see :func:`axis_resolution`), each asked for only where needed."""
    t, spec = structure.table, structure.spec
    labelled = spec.data_labels
    if rule["kind"] == "invariant":
        if not labelled:
            raise InvalidEdit("unreadable", "this answer has no program, so the values it may need must be printed: "
                              "keep data_labels true", field="data_labels")
        return
    op, cells = _cells(rule, t)
    values = [t.cell(r, s) for r, s in cells]
    if any(v is None for v in values) or op.seen == "count":
        return  # missing values make the program ambiguous before any check runs
    pie = spec.chart_type == "pie"
    if op.seen == "find":
        if not labelled:
            raise InvalidEdit("unreadable", "the question names a value to find, which a reader finds by its printed "
                              "label: set data_labels true", field="data_labels")
        return
    if op.seen == "order":
        _check_order(op, cells, values, t, px_per_unit, labelled, pie)
    elif op.seen == "threshold":
        _check_threshold(float(rule["program"][op.number]), cells, values, px_per_unit, labelled, pie)
    elif op.seen in ("value", "ratio"):
        if labelled:
            return
        if pie:
            raise InvalidEdit("unreadable", "a pie shows no scale, so a value can be read only from data labels; "
                              "set data_labels true", field="data_labels")
        delta = resolution() * (2.0 if spec.chart_type == "stacked_bar" else 1.0)
        _check_reading(op, values, delta, tolerance, rule)


def _check_reading(op: Op, values: list[float], delta: float, tolerance: float, rule: Mapping[str, Any]) -> None:
    if op.seen == "ratio":
        a, b = values
        relative = delta / max(abs(a), 1e-12) + delta / max(abs(b), 1e-12)
        if relative > tolerance:
            raise InvalidEdit("unreadable", f"read off the axis (about +-{format_number(delta)} each), the ratio is "
                              f"uncertain by {relative:.0%}, more than the {tolerance:.0%} the scorer allows; set "
                              f"data_labels true", field="data_labels")
        return
    readings = len(values) if op.readings is None else op.readings
    answer = op.combine(values)
    error = readings * delta
    if answer == 0 and op.one_value:
        return  # a bar or point on the zero line is read exactly
    if error > tolerance * abs(answer):
        raise InvalidEdit("unreadable", f"the answer {format_number(answer)} needs values read to "
                          f"+-{format_number(tolerance * abs(answer))}, but without data labels this chart shows "
                          f"them to about +-{format_number(delta)} each ({readings} reading"
                          f"{'s' if readings > 1 else ''}); set data_labels true", field="data_labels")


def _px_per_unit(facts: Any, chart_type: str) -> float:
    """Pixels per data unit along the value axis; halved for stacked bars, whose segments
    are lengths to compare rather than positions on the axis."""
    lo, hi = facts.value_limits
    x0, y0, x1, y1 = facts.facts["plot_box"]
    length = (x1 - x0) if chart_type == "hbar" else (y1 - y0)
    return length / max(hi - lo, 1e-12) / (2.0 if chart_type == "stacked_bar" else 1.0)


def _check_order(op: Op, cells: list[tuple[str, str]], values: list[float], t: Table,
                 px_per_unit: Callable[[], float], labelled: bool, pie: bool) -> None:
    need_choices([f"{row}/{series}" for row, series in cells])
    ordered = sorted(range(len(values)), key=lambda k: values[k], reverse=op.extreme != "min")
    a, b = ordered[0], ordered[1]
    va, vb = values[a], values[b]
    names = (
        f"{cells[a][0]!r} and {cells[b][0]!r}" if cells[a][0] != cells[b][0] else f"{cells[a][1]!r} and {cells[b][1]!r}"
    )
    if labelled:
        if format_number(va) == format_number(vb):
            raise InvalidEdit(
                "near_tie",
                f"{names} print the same value ({format_number(va)}), so the chart cannot show which is larger",
                field="value",
            )
        return
    if pie:
        gap = abs(va - vb) / max(t.total(), 1e-12)
        if gap < MIN_PIE_SHARE_GAP:
            raise InvalidEdit("near_tie", f"the slices of {names} differ by {gap:.1%} of the pie, less than the "
                              f"{MIN_PIE_SHARE_GAP:.0%} a reader can tell apart; set data_labels true",
                              field="data_labels")
        return
    gap_px = abs(va - vb) * px_per_unit()
    if gap_px < MIN_GAP_PX:
        raise InvalidEdit("near_tie", f"{names} are drawn {gap_px:.1f} px apart, less than the {MIN_GAP_PX:g} px a "
                          f"reader can tell apart; set data_labels true or make the values differ more",
                          field="data_labels")


def _check_threshold(threshold: float, cells: list[tuple[str, str]], values: list[float],
                     px_per_unit: Callable[[], float], labelled: bool, pie: bool) -> None:
    shown_threshold = format_number(threshold)
    for (row, _series), v in zip(cells, values):
        if labelled:
            printed = float(format_number(v))
            if printed == threshold or (printed > threshold) != (v > threshold):
                raise InvalidEdit("near_tie",
                                  f"{row!r} prints {format_number(v)}, which does not show on which side of "
                                  f"{shown_threshold} it lies", field="value")
            continue
        if pie:
            raise InvalidEdit("unreadable", "a pie shows no scale: counting values above a threshold needs data "
                              "labels; set data_labels true", field="data_labels")
        gap_px = abs(v - threshold) * px_per_unit()
        if gap_px < MIN_GAP_PX:
            raise InvalidEdit("near_tie", f"{row!r} ({format_number(v)}) is drawn {gap_px:.1f} px from the threshold "
                              f"{shown_threshold}, less than {MIN_GAP_PX:g} px; set data_labels true or move the value",
                              field="data_labels")


# -- the legend over the marks ------------------------------------------------------------------
def occluded_marks(render: Any, chart_type: str) -> list[str]:
    """Marks the legend covers, any part of them by more than :data:`TEXT_OVERLAP_PX` each
    way, as they are drawn: a bar (its box), a line's point (its box) or a segment between
    two points, a slice (its outline); each named as the message names it."""
    legend = render.facts.get("legend_box")
    if legend is None:
        return []
    from matplotlib.path import Path
    from matplotlib.transforms import Affine2D, Bbox

    lx0, ly0, lx1, ly1 = legend
    inner = Bbox.from_extents(lx0 + TEXT_OVERLAP_PX, ly0 + TEXT_OVERLAP_PX, lx1 - TEXT_OVERLAP_PX,
                              ly1 - TEXT_OVERLAP_PX)
    drawn = [m for m in render.marks if m["box"] is not None]
    hidden = []
    if chart_type == "pie":
        for m in (m for m in drawn if "degrees" in m):  # image y points down: the angles turn the other way
            outline = Path.wedge(*m["degrees"]).transformed(Affine2D().scale(m["radius"], -m["radius"])
                                                             .translate(*m["centre"]))
            if inner.width > 0 and inner.height > 0 and outline.intersects_bbox(inner, filled=True):
                hidden.append(f"the slice {m['row']!r}")
        drawn = [m for m in drawn if "degrees" not in m]  # a slice drawn elsewhere: its box
    if drawn:
        hit = _overlaps(np.array([m["box"] for m in drawn], dtype=float), np.array([legend], dtype=float))[:, 0]
        kind = {"line": "point", "pie": "slice"}.get(chart_type, "bar")
        hidden += [f"the {kind} of {m['row']!r} in {m['series']!r}" for m, h in zip(drawn, hit) if h]
    if chart_type == "line" and inner.width > 0 and inner.height > 0:
        for (a, b) in _segments(render.marks):
            ends = [((m["box"][0] + m["box"][2]) / 2.0, (m["box"][1] + m["box"][3]) / 2.0) for m in (a, b)]
            if Path(ends).intersects_bbox(inner, filled=False):
                hidden.append(f"the line of {a['series']!r} from {a['row']!r} to {b['row']!r}")
    return hidden


def _segments(marks: Sequence[Mapping[str, Any]]) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """A line chart's drawn segments: each series' points of neighbouring rows, both drawn
    (a missing value breaks the line). ``marks`` run row by row, series within a row."""
    series = list(dict.fromkeys(m["series"] for m in marks))
    by_series = [marks[j::len(series)] for j in range(len(series))] if series else []
    return [(a, b) for points in by_series for a, b in zip(points[:-1], points[1:])
            if a["box"] is not None and b["box"] is not None]


def check_legend_cover(structure: ChartStructure, facts: Any) -> None:
    """``occluded`` when the legend covers a mark (see :func:`occluded_marks`)."""
    hidden = occluded_marks(facts, structure.spec.chart_type)
    if hidden:
        raise InvalidEdit("occluded", f"the legend covers {hidden[0]} ({len(hidden)} marks in all); use set_style "
                          f"legend 'outside', 'top' or 'none'", field="legend")


# -- what the stand-in actor reads: visual difficulty --------------------------------------------
#: difficulty added by a question with no program (Tier 2): any reasoning at all; a
#: program's op adds its own cost (:attr:`vicogym.programs.chart.Op.cost`), a cell's that
#: of a lookup
INVARIANT_COST = 0.6


def reasoning_cost(op: str) -> float:
    """The difficulty the reasoning of a question adds, by its feature ``op``: a program's
    op, ``cell`` or ``invariant``."""
    if op == "invariant":
        return INVARIANT_COST
    name = "lookup" if op == "cell" else op
    if name not in OPS:
        raise ValueError(f"expected a question op in {sorted(OPS)}, 'cell' or 'invariant', got {op!r}")
    return OPS[name].cost


def _target_cells(rule: Mapping[str, Any], table: Table) -> list[tuple[str, str]]:
    """The cells a question names one by one (none for a question about a whole row or
    column)."""
    if rule["kind"] == "invariant":
        return []
    op, cells = _cells(rule, table)
    return cells if op.reads == "cells" else []


def _compared_values(structure: ChartStructure, rule: Mapping[str, Any]) -> list[float]:
    """The values whose order a question with an extreme (of one end) turns on."""
    t = structure.table
    if rule["kind"] != "program" or OPS[rule["program"]["op"]].extreme not in ("max", "min"):
        return []
    _, cells = _cells(rule, t)
    return [t.cell(r, s) for r, s in cells if t.cell(r, s) is not None]


def difficulty_features(structure: ChartStructure, render: Any, rule: Mapping[str, Any]) -> dict[str, Any]:
    """Visual difficulty features of a rendered chart question.

    - ``n_marks``: drawn bars, points or wedges; ``n_series``: series in the table;
    - ``gap``: for comparison questions, the relative gap between the two closest
      competing values (small gaps are hard to see), else ``None``;
    - ``target_px``: for questions about named cells, the smallest pixel extent (bar
      length, wedge size) of those marks, else ``None``;
    - ``label_density``: share of the image covered by text boxes;
    - ``data_labels``: whether values are printed on the marks;
    - ``op``: the question's operation, ``cell`` or ``invariant`` (its reasoning cost is
      :func:`reasoning_cost`);
    - ``text_cap_px``: the smallest cap height (image pixels) of the printed texts the
      answer depends on (:func:`needed_texts`), else ``None``; :func:`difficulty` leaves it
      out: a stand-in actor reads it on the legibility curve fitted to Tesseract
      (:mod:`vicogym.legibility`).
    """
    visible = [m for m in render.marks if m["box"] is not None]
    values = sorted(_compared_values(structure, rule), reverse=True)
    gap = None
    if len(values) >= 2:
        a, b = (values[-1], values[-2]) if OPS[rule["program"]["op"]].extreme == "min" else (values[0], values[1])
        scale = max(abs(a), abs(b), 1e-12)
        gap = abs(a - b) / scale
    targets = set(_target_cells(rule, structure.table))
    extents = []
    for m in visible:
        if (m["row"], m["series"]) in targets:
            x0, y0, x1, y1 = m["box"]
            extents.append(x1 - x0 if structure.spec.chart_type == "hbar" else y1 - y0)
    h, w = render.image.shape[:2]
    text_area = sum((b["box"][2] - b["box"][0]) * (b["box"][3] - b["box"][1]) for b in render.labels)
    op = rule["program"]["op"] if rule["kind"] == "program" else rule["kind"]
    return {
        "n_marks": len(visible),
        "n_series": len(structure.table.series),
        "gap": gap,
        "target_px": min(extents) if extents else None,
        "label_density": text_area / float(h * w),
        "data_labels": bool(structure.spec.data_labels),
        "op": op,
        "text_cap_px": min((cap_px(lab, render) for lab in needed_texts(structure, rule, render)), default=None),
    }


#: the cap height of DejaVu Sans (matplotlib's default font, in which the renderer prints)
#: per pixel of font size: 1493 of its 2048 units, as :mod:`vicogym.legibility` measures it
CAP_RATIO = 0.729


def cap_px(label: Mapping[str, Any], facts: Any) -> float:
    """The cap height, in image pixels, of a printed text of the renderer's facts."""
    return round(float(label["size_pt"]) / 72.0 * float(facts.facts["dpi"]) * CAP_RATIO, 3)


def difficulty(features: Mapping[str, Any]) -> float:
    """One number from :func:`difficulty_features` (0 is trivial; the default simulated
    actor is right half of the time at 2.0)."""
    d = 0.06 * features["n_marks"] + 0.35 * (features["n_series"] - 1) + reasoning_cost(features["op"])
    if features["gap"] is not None:
        d += 1.4 * (1.0 - min(features["gap"] / 0.25, 1.0))
    if features["target_px"] is not None:
        d += 0.8 * (1.0 - min(features["target_px"] / 60.0, 1.0))
    d += 3.0 * features["label_density"]
    if features["data_labels"]:
        d -= 0.8
    return max(d, 0.0)


# -- printed text, read by a real reader ----------------------------------------------------
#: edit error codes of the reader check (registered with the chart arm's)
ERROR_CODES = {
    "unread_text": "a printed text the answer depends on (a category or tick label, a legend entry, a data label, "
                   "the title the question names) that Tesseract does not read correctly from the image",
}
register_error_codes("chart", ERROR_CODES)

#: pixels of the image kept around a text's box when it is cut out to be read: the box is
#: matplotlib's layout box, which holds the glyphs; a wider margin takes in neighbouring
#: marks (a bar's edge, a gridline) that Tesseract reads as "|" or "("
READ_MARGIN_PX = 1

#: what a careful reader does not tell apart, mapped to one form: dashes and the minus
#: sign (matplotlib may print U+2212; Tesseract returns any of them), typographic and
#: straight quotes (one glyph at these sizes)
_SAME_GLYPHS = {**dict.fromkeys(map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"), "-"),
                **dict.fromkeys(map(ord, "\u2018\u2019\u201a\u201b\u2032`\u00b4"), "'"),
                **dict.fromkeys(map(ord, "\u201c\u201d\u201e\u2033"), '"')}
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")

#: what to change when a text of a kind is not read
_UNREAD_HINTS = {
    "data_label": "raise font_size (data labels are drawn at 0.8 of it), or choose a lighter palette where the label "
                  "sits on a dark mark",
    "value_tick": "raise font_size, or set data_labels true so the value is printed rather than read off the axis",
}


def printed_form(text: str) -> str:
    """``text`` as compared with what the reader read: Unicode compatibility forms folded
    (NFKC: a ligature is its letters), dashes and quotes as above, and no whitespace (labels
    that differ only by spacing cannot both be in a table, see ``label_key``, and Tesseract
    drops the narrow space of "Q1 '22"), and no thousands separators (a "1,000" read as
    "1000" is the same number; a comma read for a decimal point is not, and stays wrong)."""
    plain = unicodedata.normalize("NFKC", str(text)).translate(_SAME_GLYPHS)
    return _THOUSANDS.sub("", "".join(plain.split()))


def needed_texts(structure: ChartStructure, rule: Mapping[str, Any], facts: Any) -> list[dict[str, Any]]:
    """The printed texts (labels of ``facts.labels``) the answer depends on, each once, the
    smallest type first:

    - the category labels of the rows the question names, and of the row that is the answer
      (a pie's rows are its legend entries);
    - the legend entries of the series the question names, when there are several to tell
      apart, and of the series that is the answer;
    - where the answer is a value read from the chart: the data labels of the cells it reads
      when data labels are drawn, otherwise the two value-axis tick labels nearest each
      position read (a value is placed between two ticks; a stacked segment has two ends;
      a threshold is placed on the axis); where it is an order with data labels, the two
      competing cells' labels (the ones that settle a close call, as :func:`check_values`
      has it); without data labels an order is seen in the marks;
    - a question with no program (Tier 2): the rows and series it refers to and every data
      label (any value may be the one it needs);
    - the title, when the question names it (not merely a row or series label that the
      title repeats).
    """
    t, spec = structure.table, structure.spec
    pie = spec.chart_type == "pie"
    wanted: list[tuple[str, Any]] = []
    rows, series, cells, positions = _question_reads(structure, rule)
    row_kind = "legend" if pie else "category"
    wanted += [(row_kind, r) for r in rows]
    if len(t.series) > 1 and not pie:
        wanted += [("legend", s) for s in series]
    if spec.data_labels:
        wanted += [("data_label", cell) for cell in cells]
    elif positions:
        ticks = [lab for lab in facts.labels if lab["kind"] == "value_tick" and "value" in lab]
        for p in positions:
            wanted += [("value_tick", lab["value"]) for lab in sorted(ticks, key=lambda x: abs(x["value"] - p))[:2]]
    question = rule_question(rule, t)
    named = {label_key(x) for x in (*rows, *series)}
    if spec.title and question is not None and mentions(question, spec.title) and label_key(spec.title) not in named:
        wanted.append(("title", spec.title))  # named as the title, not as a label it repeats
    keys = set(wanted)
    out = []
    for lab in facts.labels:
        kind = lab["kind"]
        key = ((kind, (lab.get("row"), lab.get("series"))) if kind == "data_label" else
               (kind, lab.get("value")) if kind == "value_tick" else (kind, lab["text"]))
        if key in keys:
            keys.discard(key)  # each text once
            out.append(lab)
    # the smallest type first (data labels are drawn at 0.8 of font_size, legend entries at
    # 0.85, tick labels at 0.9): a text that is not read is most likely there, and a sample
    # refused early costs fewer readings
    return sorted(out, key=lambda lab: _READ_FIRST.get(lab["kind"], len(_READ_FIRST)))


_READ_FIRST = {"data_label": 0, "legend": 1, "value_tick": 2, "category": 3, "title": 4}


def _question_reads(structure: ChartStructure, rule: Mapping[str, Any]
                    ) -> tuple[list[str], list[str], list[tuple[str, str]], list[float]]:
    """What the answer is read from: row labels, series labels, cells whose printed values
    it needs (when printed) and value-axis positions it needs (when not)."""
    t = structure.table
    if rule["kind"] == "cell":
        row, series = rule["row"], rule["series"]
        return [row], [series] if rule.get("series_named", True) else [], [(row, series)], _positions(
            structure, [(row, series)])
    if rule["kind"] == "invariant":
        refers = set(rule.get("refers") or ())
        cells = [(r, s) for r in t.rows for s in t.series if t.cell(r, s) is not None]
        return [r for r in t.rows if r in refers], [s for s in t.series if s in refers], cells, []
    program = rule["program"]
    op = OPS[program["op"]]
    rows = [program[k] for k in op.rows]
    series = [program[k] for k in op.series]
    if op.answer in ("row", "series"):
        try:
            answer = str(execute(t, program))
        except InvalidEdit:
            answer = None
        if answer is not None:
            (series if op.answer == "series" else rows).append(answer)
    _, read = _cells(rule, t)
    read = [(r, s) for r, s in read if t.cell(r, s) is not None]
    if op.seen == "count":
        return rows, series, [], []
    if op.extreme is not None:
        # an extreme is found by the marks, and its printed value (or its place on the axis)
        # read; printed values settle a close call with the runner-up
        values = [t.cell(r, s) for r, s in read]
        ranked = sorted(range(len(read)), key=lambda k: values[k], reverse=True)
        ends = {"min": ranked[-2:], "both": ranked[:2] + ranked[-2:]}.get(op.extreme, ranked[:2])
        chosen = [read[k] for k in sorted(set(ends))]
        if op.seen == "order":
            return rows, series, chosen, []
        extremes = [read[ranked[0]]] * (op.extreme != "min") + [read[ranked[-1]]] * (op.extreme != "max")
        return rows, series, chosen, _positions(structure, extremes)
    if op.seen == "threshold":
        return rows, series, read, [float(program[op.number])]
    if op.seen == "find":
        return rows, series, read, []
    return rows, series, read, _positions(structure, read)


def _positions(structure: ChartStructure, cells: list[tuple[str, str]]) -> list[float]:
    """Where on the value axis a reader reads each cell: its value, or both ends of a
    stacked segment."""
    t = structure.table
    if structure.spec.chart_type != "stacked_bar":
        return [float(t.cell(r, s)) for r, s in cells]
    out = []
    for r, s in cells:
        row = t.values[t.rows.index(r)]
        j = t.series.index(s)
        base = float(sum(v for v in row[:j] if v is not None))
        out += [base, base + float(row[j])]
    return out


def text_pixels(image: np.ndarray, label: Mapping[str, Any], margin: int = READ_MARGIN_PX,
                marks: Sequence[Sequence[float]] = ()) -> np.ndarray:
    """The pixels a reader reads one printed text from, as gray ink on white: the image cut
    at the text's box plus ``margin``, each pixel's luminance distance from the cut's
    background (the most common luminance on its edge), so that text on a coloured mark
    (a pie's wedge, a stacked segment) reads as it does on white paper: framed in white, as
    the reader frames every image, the coloured cut would draw a box whose edges Tesseract
    reads as brackets. On white the result is the plain gray image. Pixels of ``marks``
    (boxes of what is not this text: a taller neighbouring bar the text touches, an axis
    line, the text below) are blanked, as a reader looks past a bar's edge beside a label
    rather than reading it as "|"; marks and texts that run into the glyphs are refused
    before this (``overlap``). A turned text (a
    category label with ``rotation``) is turned back level about its centre and cut to its
    own size (``label["size"]``): its box also holds its neighbours' ends."""
    angle = label.get("rotation")
    x0, y0, x1, y1 = label["box"]
    if not angle:
        return _ink_on_white(image, (x0 - margin, y0 - margin, x1 + margin, y1 + margin), marks)
    from PIL import Image

    cx, cy = (x0 + x1) / 2.0, (y0 + y1) / 2.0
    w, h = label["size"]
    half = float(np.hypot(w, h)) / 2.0 + margin + 2.0
    left, top = max(0, int(np.floor(cx - half))), max(0, int(np.floor(cy - half)))
    around = _ink_on_white(image, (cx - half, cy - half, cx + half, cy + half), marks)
    level = np.asarray(Image.fromarray(around).rotate(-float(angle), resample=Image.BICUBIC,
                                                      center=(cx - left, cy - top), fillcolor=255))
    return level[_span(cy - top - h / 2.0 - margin, cy - top + h / 2.0 + margin, level.shape[0]),
                 _span(cx - left - w / 2.0 - margin, cx - left + w / 2.0 + margin, level.shape[1])]


def _span(start: float, end: float, size: int) -> slice:
    """The whole pixels ``[start, end]`` touches, within ``size`` (at least one)."""
    first = min(max(0, int(np.floor(start))), size - 1)
    return slice(first, max(min(size, int(np.ceil(end))), first + 1))


def _ink_on_white(image: np.ndarray, box: Sequence[float], marks: Sequence[Sequence[float]]) -> np.ndarray:
    """The image's pixels that ``box`` touches as ink on white (see :func:`text_pixels`),
    those of ``marks`` blank."""
    rows, cols = _span(box[1], box[3], image.shape[0]), _span(box[0], box[2], image.shape[1])
    pixels = image[rows, cols]
    if pixels.ndim == 3:
        rgb = pixels[..., :3].astype(np.int32)
        # ITU-R 601 luma, as PIL's (and so the reader's) conversion to gray computes it
        luma = (rgb[..., 0] * 19595 + rgb[..., 1] * 38470 + rgb[..., 2] * 7471 + 0x8000) >> 16
    else:
        luma = pixels.astype(np.int32)
    edge = np.concatenate([luma[0], luma[-1], luma[:, 0], luma[:, -1]])
    background = int(np.bincount(edge, minlength=256).argmax())
    ink = (255 - np.abs(luma - background)).astype(np.uint8)
    for mx0, my0, mx1, my1 in marks:
        mark_rows = _span(my0 - rows.start, my1 - rows.start, ink.shape[0])
        mark_cols = _span(mx0 - cols.start, mx1 - cols.start, ink.shape[1])
        if my1 > rows.start and my0 < rows.stop and mx1 > cols.start and mx0 < cols.stop:
            ink[mark_rows, mark_cols] = 255
    return np.ascontiguousarray(ink)


def _not_this_text(facts: Any, label: Mapping[str, Any], spec: Any) -> list[list[float]]:
    """Boxes of what ``label``'s pixels may touch besides its own glyphs: the other texts
    (whose boxes may touch its own by a pixel, see :func:`check_text`), and but for pies
    the marks other than its own and the plot's frame (the axis lines, 1 px either side of
    the plot box's edges; a wedge's box is no wedge, and a pie's labels sit inside them).
    Gridlines stay (blanking those beside a text was tried: Tesseract then misread more
    texts, not fewer), and so do the boxes of turned labels, which hold their neighbours'
    ends."""
    boxes = [other["box"] for other in facts.labels
             if other is not label and not other.get("rotation") and not label.get("rotation")]
    if spec.chart_type != "pie":
        own = (label.get("row"), label.get("series")) if label["kind"] == "data_label" else None
        boxes += [m["box"] for m in facts.marks if m["box"] is not None and (m["row"], m["series"]) != own]
        px0, py0, px1, py1 = facts.facts["plot_box"]
        boxes += [[px0 - 1, py0, px0 + 1, py1], [px1 - 1, py0, px1 + 1, py1], [px0, py0 - 1, px1, py0 + 1],
                  [px0, py1 - 1, px1, py1 + 1]]
    x0, y0, x1, y1 = label["box"]
    reach = READ_MARGIN_PX + 1
    return [b for b in boxes if b[0] < x1 + reach and b[2] > x0 - reach and b[1] < y1 + reach and b[3] > y0 - reach]


def check_reading(structure: ChartStructure, rule: Mapping[str, Any], facts: Any,
                  read: Callable[[np.ndarray], str]) -> None:
    """``unread_text`` for the first text of :func:`needed_texts` that ``read`` (the reader:
    pixels in, the text it reads out; Tesseract in the arm) does not read as drawn, compared
    in :func:`printed_form`."""
    for label in needed_texts(structure, rule, facts):
        seen = read(text_pixels(facts.image, label, marks=_not_this_text(facts, label, structure.spec)))
        if printed_form(seen) != printed_form(label["text"]):
            box = ", ".join(f"{v:g}" for v in label["box"])
            raise InvalidEdit("unread_text", f"Tesseract reads the {_kind(label)} {label['text']!r} at [{box}] as "
                              f"{seen!r}, and the answer depends on it; "
                              f"{_UNREAD_HINTS.get(label['kind'], 'raise font_size')}", field="font_size")
