"""Seed samples of the chart arm: a procedural table generator and a ChartQA loader.

Both give :class:`~vicogym.core.Seed` objects (structure, question, answer, label rule).

The procedural generator draws a topic from ``assets/chart_topics.json`` (realistic titles,
category names, magnitudes, units, precision, whether the values are parts of a whole) and
a templated question with a table program. Its tables carry their topic's vocabulary, so
rewritten tables still make sense, and each seed has its own ``source_id``.

The ChartQA loader reads a folder of ``tables/*.csv`` plus ``qa.jsonl`` records (``imgname``,
``query``, ``label``), validated when the folder is opened (a problem is reported with its
file, line and fix). Each record is screened and classified:

- questions that point at colours are dropped (charts are redrawn from their tables, so
  the original colours are gone); questions that name a mark type get that chart type,
  or are dropped when the table cannot be drawn so;
- Tier 1 ``cell``: the label is exactly one cell, named in the question;
- ``program``: a common question form (value, highest/lowest, difference, sum, average,
  ratio, median, count above, comparisons) parsed into a table program that reproduces
  the label on the record's own table (promoted: value edits allowed);
- when the parsed program contradicts the label, the record is dropped (``tier2="drop"``,
  the default) or kept as ``invariant`` (``tier2="keep"``);
- otherwise Tier 2 ``invariant``: the label holds only while every value stays fixed.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import statistics
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from vicogym.answers import format_number, parse_number
from vicogym.core import Seed, canonical_json
from vicogym.errors import GenerationError, InvalidEdit, SourceError
from vicogym.programs.chart import (
    THRESHOLD_PHRASES,
    cell_rule,
    execute,
    generate_question,
    invariant_rule,
    presupposition,
    program_rule,
    question_references,
    relabel,
)
from vicogym.sources import (
    LIMITS,
    _safe,
    contained,
    decode_text,
    inside,
    json_lines,
    one_line,
    place,
    read_bytes,
    read_text,
    source_path,
)
from vicogym.structures.chart import (
    MAX_DECIMALS,
    MAX_LABEL_CHARS,
    MAX_ROWS,
    MAX_SERIES,
    MAX_TITLE_CHARS,
    PALETTES,
    PERCENT_TOTAL_SLACK,
    ChartSpec,
    ChartStructure,
    Table,
    Vocabulary,
    chart_type_fits,
    decimals_of,
    reflect_into,
)
from vicogym.structures.chart import label_key as _label_key
from vicogym.validation import pick

TIER2_POLICIES = ("drop", "keep")


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

#: the most lines a ChartQA CSV may have, blank ones and lines of multi-line cells included
MAX_CSV_LINES = 1024
#: the largest magnitude a ChartQA cell may have (beyond it a float no longer holds every whole number)
MAX_CELL_VALUE = 1e15
#: the longest question and label a ChartQA record may have (the environment's longest
#: question setting; ChartQA's are under 200 and 50 characters)
MAX_QUERY_CHARS, MAX_ANSWER_CHARS = 65_536, 1024
_YEAR = re.compile(r"^(19|20)\d\d$")


@lru_cache(maxsize=1)
def topics() -> dict[str, Any]:
    """The shipped topic table (parsed once)."""
    text = resources.files("vicogym.assets").joinpath("chart_topics.json").read_text(encoding="utf-8")
    return json.loads(text)


# -- procedural ---------------------------------------------------------------------
def _draw_values(rng: np.random.Generator, topic: Mapping[str, Any], n_rows: int, n_series: int) -> np.ndarray:
    low, high, decimals = float(topic["low"]), float(topic["high"]), int(topic["decimals"])
    base = rng.uniform(low, high, size=(n_rows, 1))
    # how far a row's series lie apart, as a share of the range: a country's female and male
    # life expectancies a few years, not forty
    spread = (high - low) * float(topic.get("spread", 0.25))
    drawn = base + rng.normal(0.0, spread, size=(n_rows, n_series))
    values = np.vectorize(lambda v: reflect_into(float(v), low, high))(drawn)
    gap = topic.get("max_gap")
    if gap is not None and n_series > 1:  # pull a row's series together to within the topic's gap
        mean = values.mean(axis=1, keepdims=True)
        width = values.max(axis=1, keepdims=True) - values.min(axis=1, keepdims=True)
        values = mean + (values - mean) * np.minimum(1.0, 0.9 * float(gap) / np.maximum(width, 1e-12))
    return np.round(values, decimals)


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
        picked = rng.choice(len(pool), size=n_rows, replace=False)
        ordered = topic["index"] in ("year", "month", "quarter")
        rows = [pool[i] for i in (sorted(picked) if ordered else picked)]
        decimals = int(topic["decimals"])
        values = _draw_values(rng, topic, n_rows, len(series))
        ranked = [series.index(x) for x in topic.get("ranked", ()) if x in series]
        if len(ranked) > 1:  # the topic's ranked series in their order in every row (female above male)
            values[:, ranked] = -np.sort(-values[:, ranked], axis=1)
        whole = bool(topic.get("part_of_whole", False))
        if whole and topic["unit"] == "%":
            if len(series) == 1:
                values[:, 0] = _shares_of_100(values[:, 0], decimals)
            else:  # each year's shares of the vendors drawn: some of a whole, never more than all of it
                for j in range(len(series)):
                    total = float(rng.uniform(55.0, 95.0))
                    values[:, j] = np.round(values[:, j] / values[:, j].sum() * total, decimals)
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
        )
        candidates = (
            ("bar", "hbar", "grouped_bar", "stacked_bar", "line", "pie")
            if ordered
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


# -- ChartQA --------------------------------------------------------------------------
_MISSING = {"", "-", "nan", "none", "null", "n/a", "na", "--"}


def parse_cell(text: str) -> float | None:
    """A ChartQA cell: ``1,327.7%``, ``0.26M``, ``-3``, or missing (``nan``, ``-``, empty)."""
    t = text.strip()
    if t.lower() in _MISSING:
        return None
    if t.endswith(("M", "m")) and parse_number(t[:-1]) is not None:
        t = t[:-1]
    value = parse_number(t)
    if value is None or not math.isfinite(value):
        raise ValueError(f"expected a number or a missing-value mark in a ChartQA cell, got {text!r}")
    return value


def _clean_label(text: str, limit: int = MAX_LABEL_CHARS) -> str:
    label = " ".join("".join(c if c.isprintable() else " " for c in str(text)).split())  # no NUL, no line break
    return (label[: limit - 1] + "\u2026") if len(label) > limit else (label or "(blank)")


def _unique(labels: list[str]) -> tuple[str, ...]:
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        if label in seen:
            seen[label] += 1
            label = f"{label} ({seen[label]})"
        seen.setdefault(label, 1)
        out.append(label)
    return tuple(out)


def _scan_table(path: Path) -> str:
    """The text of a ChartQA CSV after its size, encoding and shape are checked while it is
    read row by row, before it is parsed: no more series columns than :data:`MAX_SERIES`, no
    more data rows than :data:`MAX_ROWS` (no chart draws more), and every row with the
    header's number of fields (pandas would silently turn one field too many on every row
    into an index column)."""
    import csv
    import io

    where = place(path)
    text = decode_text(read_bytes(path, LIMITS["csv"], "CSV table"), where, "CSV")
    if "\x00" in text:  # the csv module keeps it, pandas drops what follows it on the line
        raise SourceError(f"{where}:{text.count(chr(10), 0, text.index(chr(0))) + 1}: a NUL byte; remove it (a CSV "
                          f"table is text)")
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        if header is None:
            raise SourceError(f"{where}: the file is empty; expected a header row (category, series ...) and data rows")
        if len(header) - 1 > MAX_SERIES:
            raise SourceError(f"{where}:1: {len(header) - 1} series columns, more than the {MAX_SERIES} a chart draws "
                              f"(MAX_SERIES); keep at most {MAX_SERIES} columns beside the category column")
        rows = 0
        for row in reader:
            if any(cell.strip() for cell in row) and len(row) != len(header):
                raise SourceError(f"{where}:{reader.line_num}: expected {len(header)} fields as in the header, got "
                                  f"{len(row)}; quote fields that contain commas")
            rows += any(row)
            if rows > MAX_ROWS:
                raise SourceError(f"{where}:{reader.line_num}: more than the {MAX_ROWS} data rows a chart draws "
                                  f"(MAX_ROWS); keep at most {MAX_ROWS} rows under the header")
            if reader.line_num > MAX_CSV_LINES:
                raise SourceError(f"{where}:{reader.line_num}: more than {MAX_CSV_LINES} lines, most of them blank; "
                                  f"remove the blank lines")
    except csv.Error as exc:
        raise SourceError(f"{where}:{reader.line_num + 1}: not a readable CSV file ({exc}); save it as "
                          f"comma-separated text with quoted fields") from None
    return text


def mixed_scale(cells: Sequence[str]) -> bool:
    """Whether a column mixes scales: some values carry an ``M`` (millions) suffix and others
    none, so one axis would draw 0.26 (million) beside 300 (of another unit)."""
    given = [c.strip() for c in cells if c.strip() and c.strip().lower() not in _MISSING]
    suffixed = [c for c in given if c.endswith(("M", "m")) and parse_number(c[:-1]) is not None]
    return 0 < len(suffixed) < len(given)


def load_chartqa_table(path: str | Path, problems: list[str] | None = None) -> Table:
    """Read one ChartQA CSV: quoting, thousands separators, %, M suffixes, missing cells.
    Raises :class:`SourceError` naming the file, the line and what to change; what makes
    the table unfit to draw though it parses (a column that mixes scales) is appended to
    ``problems``."""
    import io

    import pandas as pd

    path = Path(path)
    where = place(path)
    text = _scan_table(path)  # a chart shows a few dozen cells; ChartQA's are < 10 KiB
    try:
        frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, skip_blank_lines=False)
    except pd.errors.EmptyDataError:
        raise SourceError(
            f"{where}: the file is empty; expected a header row (category, series ...) and data rows"
        ) from None
    except pd.errors.ParserError as exc:
        reason = one_line(str(exc).replace("Error tokenizing data. C error: ", "").strip())
        raise SourceError(f"{where}: {reason}; quote fields that contain commas so that every row has as many fields "
                          f"as the header") from None
    if frame.shape[1] < 2:
        raise SourceError(
            f"{where}:1: expected a category column and at least one series column, got "
            f"{_safe([str(c) for c in frame.columns])}"
        )
    frame = frame[~(frame == "").all(axis=1)]
    if frame.empty:
        raise SourceError(f"{where}: no data rows; expected at least one row under the header")
    if frame.shape[1] - 1 > MAX_SERIES or frame.shape[0] > MAX_ROWS:  # the scan's count, as pandas splits the rows
        raise SourceError(f"{where}: {frame.shape[0]} rows of {frame.shape[1] - 1} series, more than a chart draws "
                          f"({MAX_ROWS} rows, {MAX_SERIES} series); make the table smaller")
    raw = [str(c) for c in frame.columns]
    values = []
    for line, row in zip(frame.index, frame.iloc[:, 1:].itertuples(index=False)):
        parsed = []
        for column, text in zip(raw[1:], row):
            try:
                value = parse_cell(text)
            except ValueError:
                raise SourceError(f"{where}:{line + 2}: column {_safe(column)} holds {_safe(text)}; expected a number "
                                  f"(1,327.7 / 80% / 0.26M) or a missing-value mark (empty, -, nan)") from None
            if value is not None and abs(value) > MAX_CELL_VALUE:
                raise SourceError(f"{where}:{line + 2}: column {_safe(column)} holds {_safe(text)}, beyond the "
                                  f"{MAX_CELL_VALUE:g} a chart's axis prints exactly; give the column in a larger unit "
                                  f"(millions, billions)")
            parsed.append(value)
        values.append(tuple(parsed))
    if problems is not None:
        problems += [f"column {c!r} mixes values with and without an M suffix" for c in raw[1:]
                     if mixed_scale([str(v) for v in frame[c]])]
    cells = frame.iloc[:, 1:].to_numpy().ravel()
    # a unit counts only when every value carries it (a stray "%" in a column of counts does not)
    units = {_unit(c) for c in cells if c.strip() and c.strip().lower() not in _MISSING}
    unit = units.pop() if len(units) == 1 else ""
    present = [v for row in values for v in row if v is not None]
    # every column (or every row) a complete breakdown: shares that add up to 100, with or
    # without a "%" on the cells (survey answers are often extracted bare)
    columns = [[row[j] for row in values] for j in range(len(raw) - 1)]
    shares = (unit in ("%", "") and bool(present) and len(present) == len(values) * len(columns)
              and min(present) >= 0 and max(present) <= 100)
    whole = shares and len(values) >= 2 and all(abs(math.fsum(c) - 100.0) <= PERCENT_TOTAL_SLACK for c in columns)
    whole_rows = shares and len(columns) >= 2 and all(abs(math.fsum(r) - 100.0) <= PERCENT_TOTAL_SLACK
                                                      for r in values)
    rows = _unique([_clean_label(r) for r in frame.iloc[:, 0]])
    if _years_descending(rows):  # listed newest first, drawn (as charts draw time) oldest first
        rows, values = rows[::-1], values[::-1]
    series_names = _unique([_clean_label(c) for c in raw[1:]])
    decimals = min(MAX_DECIMALS, max((decimals_of(v) for v in present), default=0))
    return Table(
        index_name="" if UNNAMED.fullmatch(raw[0]) else _clean_label(raw[0]),  # a blank header names no axis
        rows=rows,
        series=series_names,
        values=tuple(values),
        unit=unit,
        decimals=decimals,
        part_of_whole=whole,
        complete=whole,
        complete_rows=whole_rows,
        bounds=observed_bounds(present, unit),
        totals=_totals(rows, series_names, values, unit, decimals),
    )


#: labels of a row or series that sums the others ("Total", "NET", "World Total")
_TOTAL_LABEL = re.compile(r"^(?:total|net|sum|all|overall|world total)(?: \w+)?$")


def _totals(rows: tuple[str, ...], series: tuple[str, ...], values: list, unit: str, decimals: int) -> tuple[str, ...]:
    """The rows and series named as totals whose every complete line holds the sum of the
    others (within their rounding), so edits keep it so; one line that does not (a "NET"
    of 38 beside parts of 42 and 42) makes the label no total."""
    probe = Table("", rows, series, tuple(tuple(r) for r in values), unit, decimals)
    found = []
    for label in (*rows, *series):
        if not _TOTAL_LABEL.match(label_key(label)) or (label in series and len(series) < 3) or (
                label in rows and len(rows) < 3):
            continue
        if replace(probe, totals=(label,)).total_problem() is None:
            found.append(label)
    return tuple(found)


def _unit(cell: str) -> str:
    text = cell.strip()
    if "%" in text:
        return "%"
    return "M" if text[-1:] in "Mm" and parse_number(text[:-1]) is not None else ""


_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_TIME_LABEL = re.compile(
    r"^(?:(?P<quarter>q[1-4])\s*|(?P<month>[a-z]{3})[a-z]*\.?\s*)?"
    r"(?:(?P<year>(?:19|20)\d\d)(?:/(?P<season>\d\d))?|[\u2019\u00b4'`](?P<short>\d\d))$")


def time_key(label: str) -> float | None:
    """Where a row label falls in time, for labels that name one ("2017", "2017*", "Jan '17",
    "Q3 2021", "2016/17"), else ``None``: the year, plus the month's or quarter's share of it,
    plus half a year for a season."""
    match = _TIME_LABEL.match(" ".join(label.strip().rstrip("*").casefold().split()))
    if match is None or (match["month"] and match["month"] not in _MONTHS):
        return None
    year = int(match["year"]) if match["year"] else 2000 + int(match["short"])
    if match["short"] and year > 2040:
        year -= 100
    part = (_MONTHS.index(match["month"]) / 12 if match["month"] else 0.0) + (
        (int(match["quarter"][1]) - 1) / 4 if match["quarter"] else 0.0)
    return year + part + (0.5 if match["season"] else 0.0)


def _years_descending(rows: tuple[str, ...]) -> bool:
    keys = [time_key(r) for r in rows]
    return len(rows) >= 2 and None not in keys and keys == sorted(keys, reverse=True) and len(set(keys)) == len(keys)


def observed_bounds(values: list[float], unit: str) -> tuple[float, float] | None:
    """What a real table's values can plausibly be: percentages within 0-100, otherwise
    the observed range widened by itself (and not below zero where none is)."""
    if not values:
        return None
    low, high = min(values), max(values)
    if unit == "%" and low >= 0 and high <= 100:
        return (0.0, 100.0)
    span = (high - low) or abs(high) or 1.0
    return (0.0 if low >= 0 else low - span, high + span)


def chartqa_vocabulary(table: Table) -> Vocabulary:
    """Labels edits may add to a ChartQA table: the years around the table's own when an axis
    holds years (listed in order, the table's included, so new rows find their place),
    nothing otherwise (a made-up country or category would not belong to the table)."""

    def years(labels: tuple[str, ...]) -> tuple[str, ...]:
        if len(labels) < 2 or not all(_YEAR.match(x) for x in labels):
            return ()
        numbers = sorted(int(x) for x in labels)
        return tuple(str(y) for y in range(numbers[0] - 3, numbers[-1] + 4))  # in order, the table's own too

    rows = years(table.rows)
    ordered = bool(rows) and Vocabulary(rows).rows_in_order(table.rows)
    return Vocabulary(rows=rows, series=years(table.series), ordered=ordered)


MARK_CHART_TYPES = {"line": ("line",), "bar": ("bar", "grouped_bar", "hbar"), "pie": ("pie",)}
_MARK_WORDS = {"line": {"line", "lines", "curve", "dot", "dots", "point", "points"},
               "bar": {"bar", "bars", "column", "columns"},
               "pie": {"pie", "slice", "slices", "wedge", "donut"}}  # "segment" and "sector" name business units too


def referenced_marks(question: str) -> set[str]:
    words = set(label_key(question).split())
    return {mark for mark, vocabulary in _MARK_WORDS.items() if words & vocabulary}


def default_spec(table: Table, mark: str | None = None) -> ChartSpec:
    """A plain chart spec for a table that came without one (of the ``mark`` type the
    question names, when it names one)."""
    long_labels = len(table.rows) > 10 or max(len(r) for r in table.rows) > 16
    if mark == "line":
        chart_type = "line"
    elif mark == "pie":
        chart_type = "pie"
    elif len(table.series) == 1:
        chart_type = "hbar" if long_labels else "bar"
    else:
        chart_type = "hbar" if len(table.rows) * len(table.series) > 24 else "grouped_bar"
    if chart_type == "pie":
        y_label = ""
    elif len(table.series) == 1:
        y_label = table.series[0][:MAX_TITLE_CHARS]
    else:  # several series name no measure; the unit, where the cells give one, is all the table says
        y_label = "Percent" if table.unit == "%" else ""
    return ChartSpec(chart_type=chart_type, x_label=table.index_name[:MAX_TITLE_CHARS] if chart_type != "pie" else "",
                     y_label=y_label, data_labels=len(table.rows) * len(table.series) <= 16,
                     palette="Paired" if len(table.series) > 10 else "tab10")


def spec_variants(spec: ChartSpec, locked: set[str] = frozenset()) -> list[ChartSpec]:
    """``spec`` and plainer variants to try when a reader could not answer from it: data
    labels on, a wider figure, a smaller font, horizontal bars (where the chart type is
    not locked by the question)."""
    variants = [spec, replace(spec, data_labels=True), replace(spec, data_labels=True, figure_size=(8.0, 6.0)),
                replace(spec, data_labels=True, figure_size=(8.0, 6.0), font_size=8.0),
                replace(spec, data_labels=False, figure_size=(8.0, 6.0), font_size=8.0)]
    if "chart_type" not in locked and spec.chart_type in ("bar", "grouped_bar"):
        flipped = replace(spec, chart_type="hbar", x_label=spec.y_label, y_label=spec.x_label)
        variants += [flipped, replace(flipped, figure_size=(8.0, 6.0), font_size=8.0),
                     replace(flipped, data_labels=False, figure_size=(8.0, 6.0), font_size=8.0)]
    return list(dict.fromkeys(variants))


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


def parse_question(question: str, table: Table, label: str) -> dict[str, Any] | None:  # noqa: C901
    """A table program for a common ChartQA question form, or ``None``.

    Conservative: every row and series the form needs must be named (or the table must
    have one series), one form only, no ordinals ("second highest"), and words that are
    part of the measure's own name ("Average annual wages") do not count as forms. The
    label decides between a label answer (argmax) and a value answer (max)."""
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
    first = text.split()[0] if text.split() else ""
    label_is_row = any(label_key(label) == label_key(r) for r in table.rows)
    numeric = parse_number(label) is not None and not label_is_row
    if first in _YES_NO:
        if len(rows) != 2 or forms:
            return None
        if any(f" {p} " in text for p in _GREATER):
            return {"op": "greater", "a": rows[0], "b": rows[1], "series": series}
        if any(f" {p} " in text for p in _LESS):
            return {"op": "less", "a": rows[0], "b": rows[1], "series": series}
        return None
    if forms == {"max", "min", "difference"} and not rows and numeric:
        return {"op": "range", "series": series}
    if text.startswith(" how many "):
        if forms:
            return None
        numbers = _NUMBER.findall(question)
        if len(numbers) == 1 and any(f" {p} " in text for p in _ABOVE) and not rows and numeric:
            return {"op": "count_above", "series": series, "threshold": float(numbers[0].replace(",", ""))}
        if (" how many times " in text or " how many more times " in text) and len(rows) == 2 and numeric:
            return {"op": "ratio", "a": rows[0], "b": rows[1], "series": series}
        return None
    if not forms and len(rows) == 1 and numeric:
        return {"op": "lookup", "row": rows[0], "series": series}
    # a number that is no row label and no year (a year in a question dates it, it is no value)
    numbers = [n for n in _NUMBER.findall(question)
               if not any(label_key(n) == label_key(r) for r in table.rows) and not _YEAR.match(n)]
    if not forms and not rows and label_is_row and len(numbers) == 1 and words & {"which", "what", "when", "where"}:
        return {"op": "row_with_value", "series": series, "value": float(numbers[0].replace(",", ""))}
    if len(forms) != 1:
        return None
    form = next(iter(forms))
    if not rows and _names_what_the_program_ignores(question, table, series, rows):
        return None  # a whole-column program would not answer what the words ask
    if form in ("max", "min") and not rows:
        if label_is_row:
            return {"op": "argmax" if form == "max" else "argmin", "series": series}
        return {"op": form, "series": series} if numeric else None
    if not numeric:
        return None
    pair = {"difference": "absdiff", "average": "pair_mean", "sum": "pair_sum", "ratio": "ratio"}
    if form in pair and len(rows) == 2:
        return {"op": pair[form], "a": rows[0], "b": rows[1], "series": series}
    if form in ("average", "median") and not rows:
        return {"op": "mean" if form == "average" else "median", "series": series}
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
    target = format_number(float(program["value"]))
    return any(v is not None and format_number(v) == target for v in table.column(program["series"]))


def answers_agree(computed: float | str, label: str) -> bool:
    """Whether a program's raw result is the record's label, at the label's own precision."""
    target = parse_number(label)
    if isinstance(computed, str) or target is None:
        return label_key(str(computed)) == label_key(label)
    places = len(label.strip().split(".")[1]) if "." in label.strip() else 0
    return abs(float(computed) - target) <= 0.5 * 10.0 ** -places + 1e-9 * abs(target)


#: the name pandas gives a column whose header cell is blank: extraction lost the series' name
UNNAMED = re.compile(r"Unnamed: \d+")


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
        if not _TOTAL_LABEL.match(label_key(label)):
            continue
        lines = [(total, parts) for _, total, parts in table.total_lines(label)
                 if total is not None and None not in parts and len(parts) > 1]
        slack = max(table.total_slack(max((len(parts) for _, parts in lines), default=1)), 1.0)
        adding = sum(abs(total - math.fsum(parts)) <= slack for total, parts in lines)  # type: ignore[arg-type]
        if len(lines) >= 3 and 2 * adding >= len(lines) and adding < len(lines):
            return True
    return False


def derivable(table: Table, label: str, question: str) -> bool:
    """Whether a numeric answer follows from the drawn table: it is a drawn value, or what
    one of the programs the parser knows gives on it (a column's sum, mean, median or
    range, the sum of its two or three largest or smallest; two cells' difference, ratio,
    sum or mean, within a series or a row, and two columns' extremes, totals or means, or
    two rows' totals, compared; a count of rows), at the label's own precision. An answer no program reaches
    (a "rise" stored as 70 where the chart prints 71% and no 70 follows) is one the chart
    cannot show a reader."""
    target = parse_number(label)
    if target is None or label_key(label) in {*_keys(table.rows), *_keys(table.series)}:
        return True  # not a number, or a drawn label (a year that names a row)
    if " how many " in f" {label_key(question)} " and target == int(target) and 0 <= target <= len(table.rows):
        return True  # a count of rows meeting some condition: at most every row
    places = len(label.strip().split(".")[1]) if "." in label.strip() else 0
    tolerance = 0.5 * 10.0 ** -places + 1e-9 * abs(target)  # answers_agree's, at once for every candidate
    with np.errstate(all="ignore"):
        return bool(np.any(np.abs(_derived_values(table) - target) <= tolerance))


@lru_cache(maxsize=32)
def _derived_values(table: Table) -> np.ndarray:
    """Every value :func:`derivable` accepts on ``table`` (worked out once per table: a
    source's records share their tables)."""
    columns = [[v for v in table.column(s) if v is not None] for s in table.series]
    rows = [[v for v in row if v is not None] for row in table.values]
    candidates: list[float] = [float(len(table.rows))]
    aggregates: list[float] = []  # one column's extreme, total or mean, compared with another's
    for values in columns:
        if values:
            ranked = sorted(values)
            candidates += values + [float(statistics.median(values)), max(values) - min(values)]
            candidates += [_fsum(ranked[-k:]) for k in (2, 3)] + [_fsum(ranked[:k]) for k in (2, 3)]  # top k
            aggregates += [max(values), min(values), _fsum(values), _fsum(values) / len(values)]
    aggregates += [_fsum(row) for row in rows if row]
    candidates += aggregates
    found = [np.array(candidates, dtype=float)]
    for group in columns + rows + [aggregates]:
        if not group:
            continue
        values = np.array(group, dtype=float)
        first, second = np.triu_indices(len(values), k=1)  # every pair once, as a, b in the group's order
        a, b = values[first], values[second]
        with np.errstate(all="ignore"):
            found += [np.array([_fsum(group)]), np.abs(a - b), a + b, (a + b) / 2.0, (a / b)[b != 0], (b / a)[a != 0]]
    result = np.concatenate(found)
    result.setflags(write=False)
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
    numbers = [n for n in _NUMBER.findall(question) if not _YEAR.match(n)]
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


def classify_record(table: Table, query: str, label: str, tier2: str = "drop") -> Classified:  # noqa: C901
    """Screen and classify one record (see the module notes)."""
    refers = question_references(query)
    if "colour" in refers:
        return Classified("dropped", reason="colour_reference")
    marks = referenced_marks(query)
    mark = next(iter(marks)) if len(marks) == 1 else None
    if len(marks) > 1 or (mark is not None and not any(chart_type_fits(table, c) is None
                                                        for c in MARK_CHART_TYPES[mark])):
        return Classified("dropped", reason="mark_reference")
    if garbled(table):
        return Classified("dropped", reason="garbled_table")
    if unit_conflict(table, query) or measure_conflict(table, query):
        return Classified("dropped", reason="unit_conflict")
    if mark == "line" and not chartqa_vocabulary(table).ordered:
        return Classified("dropped", reason="mark_reference")  # a line over categories with no order
    if mark == "line" and label_key(label) in {label_key(r) for r in table.rows} - {label_key(x) for x in table.series}:
        # "which line ...?" answered by a row: the original chart drew rows as lines, the
        # table holds them across the axis; redrawn from the table, the answer is no line
        return Classified("dropped", reason="mark_reference")
    target = parse_number(label)
    if target is not None and _asks_one_cell(query, table):
        matches = [(r, s) for r, row in zip(table.rows, table.values) for s, v in zip(table.series, row)
                   if v is not None and format_number(v) == format_number(target)]
        if len(matches) == 1:
            row, series = matches[0]
            series_named = mentions(query, series)
            facts = presupposition(query, table, row, series)
            if mentions(query, row) and (len(table.series) == 1 or series_named) and facts is not None:
                return Classified("cell", cell_rule(row, series, series_named, query, refers, facts), mark=mark)
    program = parse_question(query, table, label)
    if program is not None:
        try:
            computed = execute(table, program)
        except InvalidEdit:  # a missing value or a tie: the form does not apply to this table
            computed = None
            if program["op"] == "row_with_value" and not _has_value(table, program):
                computed = ""  # no row has the value the question names: the table contradicts it
        if computed is not None and answers_agree(computed, label):
            return Classified("program", program_rule(program, query, refers), mark=mark)
        if computed is not None and tier2 == "drop":
            return Classified("dropped", reason="contradicts_table")
    if tier2 == "drop" and extremes_combined(table, label, query) is False:
        return Classified("dropped", reason="contradicts_table")  # "the sum of the maximum and minimum": 24, not 31.3
    if tier2 == "drop" and not derivable(table, label, query):
        return Classified("dropped", reason="answer_not_derivable")
    if tier2 == "drop" and extreme_tie(table, label, query):
        return Classified("dropped", reason="tied_extreme")
    if tier2 == "drop" and undrawn_reference(table, query) is not None:
        return Classified("dropped", reason="reference_not_drawn")  # "above the OECD average": a figure not drawn
    if tier2 == "drop" and onset_problem(table, label, query) is not None:
        return Classified("dropped", reason="ambiguous_onset")  # "when did it begin to grow?": two rows fit
    if tier2 == "drop" and threshold_fit(table, label, query) is not None:
        return Classified("dropped", reason="ambiguous_threshold")  # several labels fit, or the answer does not
    return Classified("invariant", invariant_rule(table, label, query, refers), mark=mark)


@dataclass(frozen=True)
class ChartQARecord:
    imgname: str
    query: str
    label: str
    source: str
    line: int


RECORD_KEYS = ("imgname", "query", "label")


def load_chartqa_records(folder: str | Path) -> list[ChartQARecord]:
    """The records of ``qa.jsonl``; :class:`SourceError` names the line of a bad one."""
    folder = Path(folder)
    qa_path = inside(folder, "qa.jsonl", place(folder), "records file")
    shown = place(folder / "qa.jsonl")
    if not qa_path.is_file():
        raise SourceError(
            f"expected ChartQA records at {shown} (one JSON object per line with imgname, query, label)"
        )
    records = []
    lines = read_text(qa_path, what="records file").splitlines()
    for n, data in json_lines(lines, shown, "; each line must be one object with imgname, query, label"):
        if not isinstance(data, dict):
            raise SourceError(
                f"{shown}:{n}: expected a JSON object with imgname, query, label, got {type(data).__name__}"
            )
        missing = [k for k in RECORD_KEYS if k not in data]
        if missing:
            raise SourceError(f"{shown}:{n}: missing {missing}; each record needs imgname, query and label")
        wrong = [k for k in RECORD_KEYS if not isinstance(data[k], (str, int, float)) or isinstance(data[k], bool)]
        if wrong:
            raise SourceError(f"{shown}:{n}: {wrong[0]} must be a string, got {_safe(data[wrong[0]])}")
        imgname, query, label = (str(data[k]) for k in RECORD_KEYS)
        if not imgname.isprintable() or not imgname.strip():
            raise SourceError(f"{shown}:{n}: imgname {_safe(imgname)} is no file name (blank, or holding a control "
                              f"character); give the table's name, e.g. \"two_col_1.png\"")
        for key, value, most in (("query", query, MAX_QUERY_CHARS), ("label", label, MAX_ANSWER_CHARS)):
            if len(value) > most:
                raise SourceError(f"{shown}:{n}: {key} of {len(value)} characters, more than the {most} a record's "
                                  f"{key} may have; shorten it")
        number = parse_number(label)
        if number is not None and not math.isfinite(number):
            raise SourceError(f"{shown}:{n}: label {_safe(label)} is a number too large for a float; give the answer "
                              f"as the chart prints it")
        source = data.get("source", "")
        records.append(ChartQARecord(imgname, query, label, source if isinstance(source, str) else "", n))
    if not records:
        raise SourceError(f"{shown}: no records; expected one JSON object per line with imgname, query, label")
    return records


class ChartQASource:
    """Seeds from a ChartQA-format folder (``tables/*.csv`` and ``qa.jsonl``). Every record
    and every table it names is read, checked and classified when the source is opened."""

    def __init__(self, folder: str | Path, tier2: str = "drop"):
        if tier2 not in TIER2_POLICIES:
            raise ValueError(f"expected tier2 in {TIER2_POLICIES}, got {tier2!r}")
        self.folder = Path(folder)
        tables = contained(self.folder, self.folder / "tables", place(self.folder), "tables folder")
        if not tables.is_dir():
            raise SourceError(f"expected a ChartQA folder with tables/*.csv and qa.jsonl, got {place(self.folder)}")
        self.records = load_chartqa_records(self.folder)
        self._tables: dict[str, Table] = {}
        self.unfit: dict[str, list[str]] = {}  # tables that parse but cannot be drawn as they are
        unfit_reason: dict[str, str] = {}  # and the drop reason of their records
        for record in self.records:
            stem = _stem(record.imgname)
            if stem not in self._tables:
                where = f"{place(self.folder / 'qa.jsonl')}:{record.line}: imgname {_safe(record.imgname)}"
                problems: list[str] = []
                self._tables[stem] = load_chartqa_table(self._table_path(stem, where), problems)
                if problems:
                    self.unfit[stem], unfit_reason[stem] = problems, "mixed_scale"
        for record in self.records:  # one record that gives the cells a scale shows their "%" is extraction junk
            stem = _stem(record.imgname)
            if stem not in self.unfit and unit_conflict(self._tables[stem], record.query):
                self.unfit[stem] = [f"{record.imgname}: cells read as percentages but "
                                    f"{place(self.folder / 'qa.jsonl')}:{record.line} gives them a scale "
                                    f"({_safe(record.query)})"]
                unfit_reason[stem] = "unit_conflict"
        self.classified = [Classified("dropped", reason=unfit_reason[_stem(r.imgname)])
                           if _stem(r.imgname) in self.unfit
                           else classify_record(self.table(r.imgname), r.query, r.label, tier2) for r in self.records]
        self.usable = [i for i, c in enumerate(self.classified) if c.status != "dropped"]

    def _table_path(self, stem: str, where: str) -> Path:
        """The CSV of ``stem``, resolved inside the folder (a ``tables/`` that is a link out
        is refused as any other path out)."""
        path = inside(self.folder, f"{stem}.csv", where, "table", under="tables")
        if not path.is_file():
            raise SourceError(f"{where} has no table at {place(self.folder / 'tables' / f'{stem}.csv')}; add the CSV "
                              f"or remove the record")
        return path

    def table(self, imgname: str) -> Table:
        stem = _stem(imgname)
        if stem not in self._tables:
            self._tables[stem] = load_chartqa_table(self._table_path(stem, f"imgname {_safe(imgname)}"))
        return self._tables[stem]

    def summary(self) -> dict[str, Any]:
        """How the records were classified: counts per status and per drop reason."""
        statuses = Counter(c.status for c in self.classified)
        return {"records": len(self.records), **{k: statuses.get(k, 0) for k in ("cell", "program", "invariant")},
                "dropped": dict(sorted(Counter(c.reason for c in self.classified if c.status == "dropped").items()))}

    def seed(self, index: int) -> Seed:
        if not 0 <= index < len(self.records):
            raise ValueError(f"expected a record index in [0, {len(self.records)}), got {index}")
        record, classified = self.records[index], self.classified[index]
        source_id = f"{record.imgname}#L{record.line}"
        if classified.rule is None:
            raise GenerationError(f"ChartQA record {index} ({source_id}) is not used: {classified.reason}")
        table = self.table(record.imgname)
        answer = relabel(table, classified.rule)
        structure = ChartStructure(table, default_spec(table, classified.mark), chartqa_vocabulary(table))
        return Seed(structure, record.query, answer, classified.rule, "chartqa", source_id)

    def sample(self, rng: np.random.Generator) -> Seed:
        if not self.usable:
            raise GenerationError(f"no usable record in {self.folder} ({self.summary()})")
        return self.seed(pick(rng, self.usable))

    def find(self, source_id: str) -> int:
        """The index of the record a ``source_id`` (``imgname#Lline``) names."""
        for i, record in enumerate(self.records):
            if f"{record.imgname}#L{record.line}" == source_id:
                return i
        raise KeyError(f"no record {_safe(source_id)} in {place(self.folder / 'qa.jsonl')}")


def _stem(imgname: str) -> str:
    return imgname[:-4] if imgname.endswith(".png") else imgname


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


__all__ = ["ChartQASource", "ProceduralSource", "classify_record", "load_chartqa_table", "make_source", "parse_cell",
           "parse_question", "procedural_seed"]
