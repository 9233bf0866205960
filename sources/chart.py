"""Seed samples of the chart arm: the procedural table generator, and :func:`make_source`,
which gives it or a ChartQA folder's source (:mod:`vicogym.sources.chartqa`).

Both give :class:`~vicogym.core.Seed` objects (structure, question, answer, label rule).

The procedural generator draws a topic from ``assets/chart_topics.json`` (realistic titles,
category names, magnitudes, units, precision, whether the values are parts of a whole) and
a templated question with a table program. Its tables carry their topic's vocabulary, so
rewritten tables still make sense, and each seed has its own ``source_id``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import replace
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from vicogym.core import Seed, canonical_json
from vicogym.errors import GenerationError, SourceError
from vicogym.programs.chart import generate_question, program_rule, said_by_titles
from vicogym.sources import _safe, source_path
from vicogym.sources.chartqa import ChartQASource
from vicogym.structures.chart import (
    PALETTES,
    ChartSpec,
    ChartStructure,
    Table,
    Vocabulary,
    chart_type_fits,
    reflect_into,
)
from vicogym.validation import pick


@lru_cache(maxsize=1)
def topics() -> dict[str, Any]:
    """The shipped topic table (parsed once)."""
    text = resources.files("vicogym.assets").joinpath("chart_topics.json").read_text(encoding="utf-8")
    return json.loads(text)


# -- procedural ---------------------------------------------------------------------
def _draw_values(rng: np.random.Generator, topic: Mapping[str, Any], n_rows: int, series: list[str],
                 periods: bool) -> np.ndarray:
    """A topic's values, rows by series. Rows that are periods (``periods``, a topic with a
    ``step``) are drawn as paths: each period's value is the last one's plus a change within
    the step; series that are periods (a topic with a ``series_step``: 2021, 2022, 2023)
    likewise along each row. Other rows are drawn on their own, their series around them."""
    low, high, decimals = float(topic["low"]), float(topic["high"]), int(topic["decimals"])
    n_series = len(series)
    # how far a row's series lie apart, as a share of the range: a country's female and male
    # life expectancies a few years, not forty
    spread = (high - low) * float(topic.get("spread", 0.25))
    if periods and "step" in topic:
        starts = _starts(rng, topic, series, spread)
        values = _paths(rng, starts, n_rows, topic["step"], low, high)
    else:
        base = rng.uniform(low, high, size=(n_rows, 1))
        drawn = base + rng.normal(0.0, spread, size=(n_rows, n_series))
        values = np.vectorize(lambda v: reflect_into(float(v), low, high))(drawn)
        if "series_step" in topic and n_series > 1:  # each row's later periods from its first
            values = _paths(rng, values[:, 0], n_series, topic["series_step"], low, high).T
    gap = topic.get("max_gap")
    if gap is not None and n_series > 1:  # pull a row's series together to within the topic's gap
        mean = values.mean(axis=1, keepdims=True)
        width = values.max(axis=1, keepdims=True) - values.min(axis=1, keepdims=True)
        values = mean + (values - mean) * np.minimum(1.0, 0.9 * float(gap) / np.maximum(width, 1e-12))
    return np.round(values, decimals)


def _starts(rng: np.random.Generator, topic: Mapping[str, Any], series: list[str], spread: float) -> np.ndarray:
    """First-period values of ``series``: one level and each series around it, the larger
    ones given to the series the topic puts above others (youth unemployment)."""
    low, high = float(topic["low"]), float(topic["high"])
    level = rng.uniform(low, high)
    starts = np.array([reflect_into(level + float(d), low, high) for d in rng.normal(0.0, spread, len(series))])
    height = {x: _height(x, topic.get("above", ())) for x in series}
    order = sorted(range(len(series)), key=lambda j: -height[series[j]])  # stable: declared order breaks ties
    out = np.empty_like(starts)
    out[order] = -np.sort(-starts)
    return out


def _height(name: str, above: Any, seen: frozenset[str] = frozenset()) -> int:
    """How many series ``name`` lies above, one under another (the longest chain)."""
    below = [b for a, b in above if a == name and b not in seen]
    return max((1 + _height(b, above, seen | {name}) for b in below), default=0)


def _paths(rng: np.random.Generator, starts: np.ndarray, n: int, step: Mapping[str, Any], low: float,
           high: float) -> np.ndarray:
    """``n`` periods of paths from ``starts`` (periods by paths): each period moves a path
    by its drift and a shock (shared by all paths, and its own), at most 0.9 of what the step
    allows (``max(relative * |value|, absolute)``), folded back into [low, high] (folding
    never makes a move larger)."""
    relative, absolute = float(step["relative"]), float(step["absolute"])
    drift = float(step.get("drift", 0.0))
    out = np.empty((n, len(starts)))
    out[0] = starts
    for i in range(1, n):
        shared = rng.normal(0.0, 0.35)
        for j, v in enumerate(out[i - 1]):
            room = max(relative * abs(v), absolute)
            move = drift * abs(v) + (shared + rng.normal(0.0, 0.3)) * room
            out[i, j] = reflect_into(v + float(np.clip(move, -0.9 * room, 0.9 * room)), low, high)
    return out


def _keep_above(values: np.ndarray, series: list[str], above: Any) -> np.ndarray:
    """Each row's values swapped between series until every series the topic puts above
    another is (a swap happens where two paths cross, so it moves neither far)."""
    pairs = [(series.index(a), series.index(b)) for a, b in above if a in series and b in series]
    for row in values:
        for _ in range(4 * len(pairs)):
            broken = [(a, b) for a, b in pairs if row[a] < row[b]]
            if not broken:
                break
            a, b = broken[0]
            row[a], row[b] = row[b], row[a]
    return values


def _series_step_problem(table: Table, step: Mapping[str, Any] | None) -> bool:
    """Whether a row's series that are periods move by more than ``step`` allows."""
    if step is None or len(table.series) < 2:
        return False
    check = replace(table, rows=table.series, series=table.rows, max_step=(float(step["relative"]),
                    float(step["absolute"])), values=tuple(zip(*table.values)))
    return check.step_problem() is not None


def _shares_of_100(values: np.ndarray, decimals: int) -> np.ndarray:
    """One column rescaled to percentages that add up to exactly 100 at ``decimals``."""
    shares = np.round(values / values.sum() * 100.0, decimals)
    shares[int(np.argmax(shares))] += round(100.0 - float(shares.sum()), decimals)
    return np.round(shares, decimals)


def topic_bounds(topic: Mapping[str, Any]) -> tuple[float, float]:
    """What a topic's values can be: the range it declares (``bounds``), or its drawing range
    widened by a quarter on each side, never below zero for a topic that has no negative
    values, never above 100 for its percentages."""
    if "bounds" in topic:  # a rate with a range of its own (a life expectancy lies within 45-90 years)
        return float(topic["bounds"][0]), float(topic["bounds"][1])
    if topic.get("part_of_whole") and topic["unit"] == "%":  # a share of a whole: anything up to all of it
        return 0.0, 100.0
    low, high = float(topic["low"]), float(topic["high"])
    span = high - low
    lo, hi = low - 0.25 * span, high + 0.25 * span
    if low >= 0:
        lo = max(lo, 0.0)
        if topic["unit"] == "%":
            hi = min(hi, 100.0)
    return lo, hi


def procedural_seed(rng: np.random.Generator, max_tries: int = 16, templates: tuple[str, ...] | None = None) -> Seed:
    """A random table, chart spec and program-backed question. Bounded by ``max_tries``."""
    data = topics()
    for _attempt in range(max_tries):
        topic = pick(rng, data["topics"])
        pool = data["categories"][topic["index"]]
        n_rows = int(rng.integers(3, min(9, len(pool)) + 1))
        multi = bool(rng.random() < 0.45)
        series = topic["multi"][: int(rng.integers(2, len(topic["multi"]) + 1))] if multi else topic["series"]
        ordered = topic["index"] in data["ordered"]  # years, months, quarters, age groups: in their order
        periods = topic["index"] in data["periods"]  # of those, the ones that are times
        if ordered:  # a run of neighbouring categories (2015 to 2020; 25-34 to 55-64), as charts show them
            first = int(rng.integers(len(pool) - n_rows + 1))
            rows = list(pool[first:first + n_rows])
        else:
            rows = [pool[i] for i in rng.choice(len(pool), size=n_rows, replace=False)]
        decimals = int(topic["decimals"])
        values = _draw_values(rng, topic, n_rows, list(series), periods)
        ranked = [series.index(x) for x in topic.get("ranked", ()) if x in series]
        if len(ranked) > 1:  # the topic's ranked series in their order in every row (female above male)
            values[:, ranked] = -np.sort(-values[:, ranked], axis=1)
        values = _keep_above(values, list(series), topic.get("above", ()))
        whole = bool(topic.get("part_of_whole", False))
        if whole and topic["unit"] == "%":
            if len(series) == 1:
                values[:, 0] = _shares_of_100(values[:, 0], decimals)
            else:  # each year's shares of the vendors drawn: some of a whole, never more than all of it
                total = float(rng.uniform(55.0, 95.0))
                for j in range(len(series)):  # the whole the vendors drawn hold moves little from year to year
                    values[:, j] = np.round(values[:, j] / values[:, j].sum() * total, decimals)
                    total = min(95.0, max(55.0, total * float(rng.uniform(0.95, 1.05))))
        table = Table(
            index_name=topic["index_name"],
            rows=tuple(rows),
            series=tuple(series),
            values=tuple(tuple(float(v) for v in row) for row in values),
            unit=topic["unit"],
            decimals=decimals,
            part_of_whole=whole,
            complete=whole and topic["unit"] == "%" and len(series) == 1,  # all the products' shares
            stackable=bool(topic.get("stackable", False)) and len(series) > 1,
            bounds=topic_bounds(topic),
            row_spread=topic.get("max_gap") if len(series) > 1 else None,
            ranked=tuple(x for x in topic.get("ranked", ()) if x in series),
            max_step=(float(topic["step"]["relative"]), float(topic["step"]["absolute"]))
            if periods and "step" in topic else None,
            above=tuple((a, b) for a, b in topic.get("above", ()) if a in series and b in series),
        )
        if (table.step_problem() or table.relation_problem() or table.rank_problem()
                or _series_step_problem(table, topic.get("series_step"))):
            continue  # rounding or shares rescaled past what the topic allows: draw again
        candidates = (
            ("bar", "hbar", "grouped_bar", "stacked_bar", "line", "pie")
            if periods
            else ("bar", "hbar", "grouped_bar", "stacked_bar", "pie")
        )
        chart_types = [c for c in candidates if chart_type_fits(table, c) is None]
        weights = np.array([{"bar": 3, "hbar": 2, "grouped_bar": 3, "stacked_bar": 1, "line": 2,
                             "pie": 1}[c] for c in chart_types], float)
        chart_type = chart_types[int(rng.choice(len(chart_types), p=weights / weights.sum()))]
        index_word = topic["index_name"].lower()
        spec = ChartSpec(
            chart_type=chart_type,
            title=topic["title"].format(index=index_word),
            x_label=topic["index_name"] if chart_type != "pie" else "",
            y_label=topic["y_label"] if chart_type != "pie" else "",
            palette=pick(rng, PALETTES),
            legend="outside",
            data_labels=bool(rng.random() < 0.35),
            gridlines=bool(rng.random() < 0.7),
            font_size=float(rng.choice([9.0, 10.0, 11.0])),
        )
        if len(series) == 1 and chart_type != "pie" and said_by_titles(spec, series[0]):
            spec = replace(spec, legend="none")  # the title says what the one series is: a legend would repeat it
        try:
            question, program, answer = generate_question(table, rng, templates=templates)
        except GenerationError:
            continue
        vocabulary = Vocabulary(rows=tuple(pool), series=tuple(topic["multi"]) if multi else (), ordered=ordered)
        structure = ChartStructure(table, spec, vocabulary)
        rule = program_rule(program)
        digest = hashlib.sha256(canonical_json([structure.to_dict(), rule]).encode()).hexdigest()[:12]
        return Seed(structure, question, answer, rule, "procedural", f"procedural-{digest}")
    raise GenerationError(f"no procedural chart seed with an unambiguous question in {max_tries} tries")


class ProceduralSource:
    """Seeds from the shipped procedural generator, drawing questions from ``templates``
    (all when ``None``) and giving up after ``max_tries`` tables."""

    def __init__(self, templates: tuple[str, ...] | None = None, max_tries: int = 16):
        self.templates = templates
        self.max_tries = max_tries

    def sample(self, rng: np.random.Generator) -> Seed:
        return procedural_seed(rng, self.max_tries, self.templates)

    def summary(self) -> dict[str, Any]:
        return {"procedural": True}


def make_source(source: str, templates: tuple[str, ...] | None = None, max_tries: int = 16,
                tier2: str = "drop") -> ProceduralSource | ChartQASource:
    """``"procedural"`` or a path to a ChartQA-format folder."""
    if source == "procedural":
        return ProceduralSource(templates, max_tries)
    expected = "'procedural' or a ChartQA folder (tables/ + qa.jsonl)"
    path, kind = source_path(source, expected)
    if kind == "folder":
        return ChartQASource(path, tier2)
    raise SourceError(f"expected source {expected}, got {_safe(source)}"
                      + (", which does not exist" if kind == "none" else ", which is no folder"))


__all__ = ["ProceduralSource", "make_source", "procedural_seed", "topics"]
