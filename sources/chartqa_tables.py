"""Tables of the ChartQA source: one ``tables/*.csv`` read into a :class:`Table` (its size,
encoding and shape checked as it is read, each problem reported with its file, line and
fix), what its labels say (a time, a total, an axis of years), and the plain chart drawn
for a table that comes without one."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from vicogym.answers import parse_number
from vicogym.errors import SourceError
from vicogym.programs.chart import question_references
from vicogym.sources import LIMITS, _safe, decode_text, one_line, place, read_bytes
from vicogym.structures.chart import (
    MAX_DECIMALS,
    MAX_LABEL_CHARS,
    MAX_ROWS,
    MAX_SERIES,
    MAX_TITLE_CHARS,
    PERCENT_TOTAL_SLACK,
    ChartSpec,
    Table,
    Vocabulary,
    decimals_of,
    label_key,
)

#: the most lines a ChartQA CSV may have, blank ones and lines of multi-line cells included
MAX_CSV_LINES = 1024
#: the largest magnitude a ChartQA cell may have (beyond it a float no longer holds every whole number)
MAX_CELL_VALUE = 1e15
#: a label that is a year (1900 to 2099)
YEAR = re.compile(r"^(19|20)\d\d$")
#: the name pandas gives a column whose header cell is blank: extraction lost the series' name
UNNAMED = re.compile(r"Unnamed: \d+")


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
    order = time_order(rows)
    if order is not None:  # a time axis is drawn (as charts draw time) oldest first, whatever the listing
        rows, values = tuple(rows[i] for i in order), [values[i] for i in order]
    series_names = _unique([_clean_label(c) for c in raw[1:]])
    drawn = [j for j in range(len(series_names)) if any(row[j] is not None for row in values)]
    if drawn and len(drawn) < len(series_names):  # a series with no value draws nothing: not one of the chart's
        series_names = tuple(series_names[j] for j in drawn)
        values = [tuple(row[j] for j in drawn) for row in values]
        columns = [columns[j] for j in drawn]
    decimals = min(MAX_DECIMALS, max((decimals_of(v) for v in present), default=0))
    # shares of one whole that are not all of it (the leading grocers' market shares): no
    # column may add up to more than the whole, before or after an edit
    some_shares = (unit == "%" and bool(SHARE_WORDS.search(" ".join(label_key(c) for c in raw[1:])))
                   and all(math.fsum(v for v in c if v is not None) <= 100.0 + PERCENT_TOTAL_SLACK for c in columns))
    return Table(
        index_name="" if UNNAMED.fullmatch(raw[0]) else _clean_label(raw[0]),  # a blank header names no axis
        rows=rows,
        series=series_names,
        values=tuple(values),
        unit=unit,
        decimals=decimals,
        part_of_whole=whole or some_shares,
        complete=whole,
        complete_rows=whole_rows,
        bounds=observed_bounds(present, unit),
        totals=_totals(rows, series_names, values, unit, decimals),
        max_step=observed_step(values, decimals) if order is not None else None,
    )


#: headers that name shares of a whole ("Market share", "Share of respondents", "Percentage of sales")
SHARE_WORDS = re.compile(r"\b(?:share|shares|percentage of|proportion)\b")
#: how much further than the largest change a real time series shows between neighbouring
#: periods an edit may move it (:func:`observed_step`), and the least relative move allowed
STEP_HEADROOM, STEP_FLOOR = 1.5, 0.1


def observed_step(values: Sequence[Sequence[float | None]], decimals: int) -> tuple[float, float]:
    """What a real time series does from one period to the next, as :attr:`Table.max_step`
    (``relative``, ``absolute``): its largest relative change between neighbouring periods
    with :data:`STEP_HEADROOM` (at least :data:`STEP_FLOOR`), and one printed unit or, where
    the series moves from zero (0 in 2002, 30 in 2007), its largest such move with the same
    headroom. Belgium's households do not halve in a year when the table never moves them
    more than 3%."""
    largest, from_zero = 0.0, 0.0
    for a_row, b_row in zip(values, values[1:]):
        for a, b in zip(a_row, b_row):
            if a is None or b is None:
                continue
            if a != 0:
                largest = max(largest, abs(b - a) / abs(a))
            else:
                from_zero = max(from_zero, abs(b))
    return max(STEP_FLOOR, STEP_HEADROOM * largest), max(10.0 ** -decimals, STEP_HEADROOM * from_zero)


#: labels of a row or series that sums the others ("Total", "NET", "World Total")
TOTAL_LABEL = re.compile(r"^(?:total|net|sum|all|overall|world total)(?: \w+)?$")


def _totals(rows: tuple[str, ...], series: tuple[str, ...], values: list, unit: str, decimals: int) -> tuple[str, ...]:
    """The rows and series named as totals whose every complete line holds the sum of the
    others (within their rounding), so edits keep it so; one line that does not (a "NET"
    of 38 beside parts of 42 and 42) makes the label no total."""
    probe = Table("", rows, series, tuple(tuple(r) for r in values), unit, decimals)
    found = []
    for label in (*rows, *series):
        if not TOTAL_LABEL.match(label_key(label)) or (label in series and len(series) < 3) or (
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


def time_order(rows: tuple[str, ...]) -> list[int] | None:
    """The order that puts rows that each name a different time ("2013", "2016/17", "Q3 '20")
    oldest first, or ``None`` for rows that are no time axis."""
    keys = [time_key(r) for r in rows]
    if len(rows) < 2 or None in keys or len(set(keys)) != len(keys):
        return None
    return sorted(range(len(rows)), key=lambda i: keys[i])  # type: ignore[arg-type, return-value]


#: how far beyond the range a real table shows its values may go, as a share of that range
#: (or of the largest magnitude, for a table whose values lie close together)
BOUNDS_MARGIN = 0.5


def observed_bounds(values: list[float], unit: str) -> tuple[float, float] | None:
    """What a real table's values can plausibly be: the observed range widened by half of
    itself, or of a quarter of the largest magnitude where the values lie close together
    (an ACSI score of 70-80 does not fall to 32), never below zero where no value is, never
    above 100 for percentages."""
    if not values:
        return None
    low, high = min(values), max(values)
    span = max(high - low, 0.25 * max(abs(low), abs(high))) or 1.0
    lo, hi = low - BOUNDS_MARGIN * span, high + BOUNDS_MARGIN * span
    if low >= 0:
        lo = max(lo, 0.0)
    if unit == "%" and low >= 0 and high <= 100:
        hi = min(hi, 100.0)
    return (lo, hi)


def chartqa_vocabulary(table: Table) -> Vocabulary:
    """Labels edits may add to a ChartQA table: the years around the table's own when an axis
    holds years (listed in order, the table's included, so new rows find their place), the
    table's own times in order when its rows name other times (seasons, quarters, months:
    they keep their order), nothing otherwise (a made-up country or category would not belong to the table)."""

    def years(labels: tuple[str, ...]) -> tuple[str, ...]:
        if len(labels) < 2 or not all(YEAR.match(x) for x in labels):
            return ()
        numbers = sorted(int(x) for x in labels)
        return tuple(str(y) for y in range(numbers[0] - 3, numbers[-1] + 4))  # in order, the table's own too

    rows = years(table.rows)
    order = time_order(table.rows) if not rows else None
    if order is not None:  # "2016/17", "Q3 '20": the table's own times, in order
        rows = tuple(table.rows[i] for i in order)
    ordered = bool(rows) and Vocabulary(rows).rows_in_order(table.rows)
    return Vocabulary(rows=rows, series=years(table.series), ordered=ordered)


#: an OECD chart's name: the indicator, then the countries' codes and a number
#: ("OECD_HOUSING_PRICES_JPN_RUS_000007")
_OECD_NAME = re.compile(r"^OECD_(?P<indicator>.+?)(?:_[A-Z]{3})+_\d+(?:\.png)?$")
#: the measure a question names after an extreme ("the highest death rates due to outdoor
#: air pollution over the years"), up to where the question goes on to a time, place or group
_MEASURE = re.compile(r"\b(?:highest|lowest|higher|lower|largest|smallest|greatest|most|least)\s+"
                      r"(?P<measure>(?:[a-z][a-z'-]*\s+){0,9}?[a-z][a-z'-]*)"
                      r"(?=\s+(?:over|in|among|between|during|from|for|across|of all|than)\b|\s*[,?]|\s*$)")


#: words a measure's name does not hold: they point at the drawing, not at what it measures
_NO_MEASURE = {"graph", "chart", "value", "values", "data", "figure", "one", "ones", "category", "categories"}


def record_title(imgname: str, queries: Sequence[str], table: Table) -> str:
    """A title for a chart whose table names no measure (several series, no unit: the reader
    would see bars of nothing in particular), from its records: an OECD chart's indicator
    ("Housing prices"), or the measure a question names after an extreme ("Death rates due to
    outdoor air pollution"); ``""`` where the table names its measure or no record does."""
    if len(table.series) == 1 or table.unit == "%":
        return ""  # the one series' name titles the value axis; percentages say "Percent"
    oecd = _OECD_NAME.match(imgname)
    if oecd:
        return oecd["indicator"].replace("_", " ").capitalize()[:MAX_TITLE_CHARS]
    labels = {label_key(x) for x in (*table.rows, *table.series)}
    for query in queries:
        found = _MEASURE.search(" ".join(query.casefold().split()))
        if found is None:
            continue
        words = found["measure"].split()
        if (2 <= len(words) <= 10 and not any(w in labels or w in _NO_MEASURE for w in words)
                and not question_references(found["measure"]) and words[0] not in ("of", "and", "the")):
            return found["measure"].capitalize()[:MAX_TITLE_CHARS]
    return ""


def default_spec(table: Table, mark: str | None = None, title: str = "") -> ChartSpec:
    """A plain chart spec for a table that came without one (of the ``mark`` type the
    question names, when it names one), titled ``title`` (:func:`record_title`)."""
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
    return ChartSpec(chart_type=chart_type, title=title,
                     x_label=table.index_name[:MAX_TITLE_CHARS] if chart_type != "pie" else "",
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
