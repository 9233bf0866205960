"""The chart arm's structure: a table plus a chart spec, as immutable plain data.

A :class:`Table` has a category axis (row labels, the first CSV column) and one or
more numeric series (the other columns). Values are floats or ``None`` (missing), kept
at the table's precision (``decimals``); ``part_of_whole`` says whether the values are
parts of one total (the only data a pie may draw). A :class:`Vocabulary` lists the
labels edits may add, so a rewritten table still makes sense, and whether the rows follow
an order (years, months) that edits must keep. ``bounds`` limit values to what the topic
allows (no 150% shares), and ``stackable`` says whether series add up (parts of one total
per row), the only ones a stacked bar may draw. Everything round-trips
through JSON (``to_dict`` / ``from_dict``) and CSV text.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal, TypedDict

from vicogym.answers import format_number
from vicogym.core import canonical_json
from vicogym.validation import is_int

Value = float | None

CHART_TYPES = ("bar", "hbar", "grouped_bar", "stacked_bar", "line", "pie")
PALETTES = ("tab10", "Set2", "Dark2", "Paired", "viridis", "Pastel1")
LEGEND_POSITIONS = ("outside", "upper right", "upper left", "lower right", "lower left", "top", "none")

MAX_ROWS = 50
MAX_SERIES = 12
MAX_LABEL_CHARS = 90
MAX_TITLE_CHARS = 140
MAX_DECIMALS = 6
#: a pie of percentages must add up to 100 within this much
PERCENT_TOTAL_SLACK = 1.0

_FOOTNOTE = re.compile(r"[*\u2020\u2021\u00b9\u00b2\u00b3\u2070-\u2079]+")
_PUNCT = re.compile(r"[^\w%]+")


def label_key(label: str) -> str:
    """What a reader sees as the same label: case, spacing, punctuation and footnote marks
    (``*``, ``\u2020``, superscripts) do not count (``"2017**"`` and ``"2017"``, ``"WESTERN
    EUROPE"`` and ``"Western Europe"`` share a key)."""
    text = unicodedata.normalize("NFKC", _FOOTNOTE.sub("", str(label))).casefold()
    return " ".join(_PUNCT.sub(" ", text).split())


def reflect_into(value: float, low: float, high: float) -> float:
    """``value`` folded back into [low, high] by reflection at its ends (``high + d`` becomes
    ``high - d``): clipping instead piles values up on the ends (three sources at exactly
    800 TWh, two countries at exactly 90 years)."""
    width = high - low
    if width <= 0:
        return low
    t = (value - low) % (2.0 * width)
    return low + width - abs(t - width)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def decimals_of(value: float) -> int:
    """Decimal places a value needs (``12.25`` -> 2, ``3.0`` -> 0), at most 12."""
    for d in range(13):
        if abs(round(value, d) - value) <= 1e-9 * max(1.0, abs(value)):
            return d
    return 12


def at_precision(value: float, decimals: int) -> bool:
    return decimals_of(value) <= decimals


@dataclass(frozen=True)
class Table:
    """A category axis named ``index_name`` with ``rows`` labels, and ``series`` columns.

    ``values[i][j]`` is the value of row ``rows[i]`` in series ``series[j]``.
    """

    index_name: str
    rows: tuple[str, ...]
    series: tuple[str, ...]
    values: tuple[tuple[Value, ...], ...]
    unit: str = ""
    decimals: int = 2
    part_of_whole: bool = False
    stackable: bool = False
    bounds: tuple[float, float] | None = None
    #: how far apart a row's series may lie (a country's female and male life expectancies),
    #: or ``None`` for no limit
    row_spread: float | None = None
    #: series whose values keep this order in every row, the first the largest (a country's
    #: female life expectancy above its male one), or ``()``
    ranked: tuple[str, ...] = ()
    #: every series holds all the parts of its whole: percentages that add up to 100 and
    #: must keep doing so (a survey's Yes, No and Don't know), not some of them (leading vendors)
    complete: bool = False
    #: every row holds all the parts of its whole (each year's shares of agriculture,
    #: industry and services): percentages that add up to 100 across the row
    complete_rows: bool = False
    #: rows or series that hold the sum of the others along their axis (a "Total" row, a
    #: "NET" series), kept equal to it by every edit, or ``()``
    totals: tuple[str, ...] = ()
    #: how far a series may move between neighbouring rows, for rows that follow an order
    #: (years, months, quarters), as ``(relative, absolute)``: from one row to the next a
    #: value may change by at most ``max(relative * |the earlier value|, absolute)`` (half a
    #: unit of the table's precision more for rounding); ``(0.25, 0.0)`` lets a series
    #: change by a quarter of its value per period, ``(0.0, 5.0)`` by 5 units (a rate that
    #: crosses zero needs an absolute part). Rows with a missing value on either side are
    #: not compared. ``None`` for no limit. Edits that change values, add or remove rows
    #: keep every neighbouring pair inside it (:meth:`step_problem`)
    max_step: tuple[float, float] | None = None
    #: pairs ``(upper, lower)`` of series: in every row where both have a value, ``upper``'s
    #: is at least ``lower``'s (youth unemployment above men's and women's, urban internet
    #: use above rural), kept by every edit (:meth:`relation_problem`), or ``()``
    above: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.index_name, str):
            raise TypeError(f"expected index_name to be a string, got {self.index_name!r}")
        if not is_int(self.decimals, 0, MAX_DECIMALS):
            raise ValueError(f"expected decimals as an integer in [0, {MAX_DECIMALS}], got {self.decimals!r}")
        for name in ("part_of_whole", "stackable", "complete", "complete_rows"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"expected {name} to be true or false, got {getattr(self, name)!r}")
        if self.bounds is not None:
            b = self.bounds
            if (not isinstance(b, (list, tuple)) or len(b) != 2
                    or not all(_is_number(v) and math.isfinite(v) for v in b) or not b[0] < b[1]):
                raise ValueError(f"expected bounds as [low, high] with low < high, got {b!r}")
            object.__setattr__(self, "bounds", (float(b[0]), float(b[1])))
        if self.row_spread is not None:
            if not (_is_number(self.row_spread) and math.isfinite(self.row_spread) and self.row_spread > 0):
                raise ValueError(f"expected row_spread as a positive number or None, got {self.row_spread!r}")
            object.__setattr__(self, "row_spread", float(self.row_spread))
        if not isinstance(self.ranked, (list, tuple)) or not all(isinstance(x, str) for x in self.ranked):
            raise TypeError(f"expected ranked as a list of series names, got {self.ranked!r}")
        object.__setattr__(self, "ranked", tuple(self.ranked))
        if not isinstance(self.totals, (list, tuple)) or not all(isinstance(x, str) for x in self.totals):
            raise TypeError(f"expected totals as a list of row or series names, got {self.totals!r}")
        object.__setattr__(self, "totals", tuple(self.totals))
        self._check_max_step()
        if (not isinstance(self.above, (list, tuple)) or not all(
                isinstance(p, (list, tuple)) and len(p) == 2 and all(isinstance(x, str) for x in p) and p[0] != p[1]
                for p in self.above)):
            raise TypeError(f"expected above as a list of [upper, lower] pairs of two different series names, got "
                            f"{self.above!r}")
        object.__setattr__(self, "above", tuple((str(a), str(b)) for a, b in self.above))
        if len(self.values) != len(self.rows):
            raise ValueError(f"expected {len(self.rows)} value rows, got {len(self.values)}")
        for label, row in zip(self.rows, self.values):
            if len(row) != len(self.series):
                raise ValueError(f"expected {len(self.series)} values in row {label!r}, got {len(row)}")
            for v in row:
                if v is not None and not (_is_number(v) and math.isfinite(v)):
                    raise ValueError(f"expected finite numbers or None in row {label!r}, got {v!r}")

    def _check_max_step(self) -> None:
        step = self.max_step
        if step is None:
            return
        if (not isinstance(step, (list, tuple)) or len(step) != 2
                or not all(_is_number(v) and math.isfinite(v) and v >= 0 for v in step) or not any(step)):
            raise ValueError(f"expected max_step as [relative, absolute] (numbers >= 0, not both 0: the largest "
                             f"change between neighbouring rows, max(relative * |earlier value|, absolute)) or "
                             f"None, got {step!r}")
        object.__setattr__(self, "max_step", (float(step[0]), float(step[1])))

    # -- access -------------------------------------------------------------------
    def row_index(self, row: str) -> int:
        return self.rows.index(row)

    def series_index(self, series: str) -> int:
        return self.series.index(series)

    def cell(self, row: str, series: str) -> Value:
        return self.values[self.rows.index(row)][self.series.index(series)]

    def column(self, series: str) -> tuple[Value, ...]:
        j = self.series.index(series)
        return tuple(r[j] for r in self.values)

    def all_values(self) -> Iterable[Value]:
        for row in self.values:
            yield from row

    def has_negative(self) -> bool:
        return any(v is not None and v < 0 for v in self.all_values())

    def has_missing(self) -> bool:
        return any(v is None for v in self.all_values())

    # -- serialisation ------------------------------------------------------------
    def to_dict(self) -> TableDict:
        return {
            "index_name": self.index_name,
            "rows": list(self.rows),
            "series": list(self.series),
            "values": [list(r) for r in self.values],
            "unit": self.unit,
            "decimals": self.decimals,
            "part_of_whole": self.part_of_whole,
            "stackable": self.stackable,
            "bounds": None if self.bounds is None else list(self.bounds),
            **({} if self.row_spread is None else {"row_spread": self.row_spread}),
            **({"ranked": list(self.ranked)} if self.ranked else {}),
            **({"complete": True} if self.complete else {}),
            **({"complete_rows": True} if self.complete_rows else {}),
            **({"totals": list(self.totals)} if self.totals else {}),
            **({} if self.max_step is None else {"max_step": list(self.max_step)}),
            **({"above": [list(p) for p in self.above]} if self.above else {}),
        }

    def in_bounds(self, value: float) -> bool:
        return self.bounds is None or self.bounds[0] <= value <= self.bounds[1]

    def total_lines(self, name: str) -> list[tuple[str, Value, list[Value]]]:
        """Each line of the total ``name`` (a row: one per series; a series: one per row) as
        (where, the total, its parts); ``[]`` when ``name`` is no row or series."""
        if name in self.rows:
            i = self.rows.index(name)
            return [(x, self.values[i][j], [r[j] for n, r in enumerate(self.values) if n != i])
                    for j, x in enumerate(self.series)]
        if name in self.series:
            j = self.series.index(name)
            return [(label, row[j], [v for n, v in enumerate(row) if n != j])
                    for label, row in zip(self.rows, self.values)]
        return []

    def total_slack(self, parts: int) -> float:
        """How far a total may lie from its parts' sum: each part's rounding (a point for
        percentages, which sources round each on its own)."""
        return max(parts * 0.5 * 10.0 ** -self.decimals + 1e-9, 1.0 if self.unit == "%" else 0.0)

    def total_problem(self) -> str | None:
        """The first total that no longer adds up its parts, said, or ``None``."""
        for name in self.totals:
            for where, total, parts in self.total_lines(name):
                if total is None or None in parts:
                    continue
                expected = math.fsum(parts)  # type: ignore[arg-type]
                if abs(total - expected) > self.total_slack(len(parts)):
                    return (f"{name!r} holds the sum of the others, {format_number(expected)} at {where!r}, not "
                            f"{format_number(total)}")
        return None

    def rank_problem(self) -> str | None:
        """The first row whose ranked series are out of their order, said, or ``None``."""
        present = [x for x in self.ranked if x in self.series]
        for label, row in zip(self.rows, self.values):
            ranked = [(x, row[self.series.index(x)]) for x in present]
            ranked = [(x, v) for x, v in ranked if v is not None]
            for (a, va), (b, vb) in zip(ranked, ranked[1:]):
                if va < vb:
                    return f"{label!r} would have {b!r} above {a!r}"
        return None

    def step_allowed(self, earlier: float) -> float:
        """How far a value may move from ``earlier`` in the next row (:attr:`max_step`), not
        counting the rounding slack :meth:`step_problem` allows."""
        if self.max_step is None:
            return math.inf
        relative, absolute = self.max_step
        return max(relative * abs(earlier), absolute)

    def step_fits(self, earlier: float, later: float) -> bool:
        """Whether ``later`` may follow ``earlier`` in the next row."""
        return abs(later - earlier) <= self.step_allowed(earlier) + 0.5 * 10.0 ** -self.decimals + 1e-9

    def step_problem(self) -> str | None:
        """The first pair of neighbouring rows a series moves between by more than
        :attr:`max_step` allows, said, or ``None``."""
        if self.max_step is None:
            return None
        for j, name in enumerate(self.series):
            for (a, row_a), (b, row_b) in zip(zip(self.rows, self.values), zip(self.rows[1:], self.values[1:])):
                va, vb = row_a[j], row_b[j]
                if va is not None and vb is not None and not self.step_fits(va, vb):
                    limit = format_number(round(self.step_allowed(va), self.decimals))
                    return (f"{name!r} would move from {format_number(va)} at {a!r} to {format_number(vb)} at {b!r}, "
                            f"more than the {limit} its values may change by from one row to the next")
        return None

    def relation_problem(self) -> str | None:
        """The first row where a series falls below one it stays above (:attr:`above`),
        said, or ``None``."""
        for upper, lower in self.above:
            if upper not in self.series or lower not in self.series:
                continue
            ju, jl = self.series.index(upper), self.series.index(lower)
            for label, row in zip(self.rows, self.values):
                if row[ju] is not None and row[jl] is not None and row[ju] < row[jl]:
                    return f"{label!r} would have {lower!r} ({format_number(row[jl])}) above {upper!r} " \
                           f"({format_number(row[ju])})"
        return None

    def total(self) -> float:
        return float(sum(v for v in self.all_values() if v is not None))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Table:
        if not isinstance(data, Mapping):
            raise TypeError(f"expected a table object, got {type(data).__name__}")
        missing = {"rows", "series", "values"} - set(data)
        if missing:
            raise ValueError(f"expected table keys rows, series, values; missing {sorted(missing)}")
        unknown = set(data) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"expected table keys among {sorted(f.name for f in fields(cls))}, got unknown "
                             f"{sorted(unknown)}")
        rows, series, values = data["rows"], data["series"], data["values"]
        for name, seq in (("rows", rows), ("series", series), ("values", values)):
            if not isinstance(seq, (list, tuple)):
                raise TypeError(f"expected {name} to be a list, got {type(seq).__name__}")
        if not all(isinstance(r, str) for r in rows) or not all(isinstance(s, str) for s in series):
            raise TypeError("expected rows and series to be lists of strings")
        if len(rows) > MAX_ROWS or len(series) > MAX_SERIES:
            raise ValueError(f"expected at most {MAX_ROWS} rows and {MAX_SERIES} series (no chart draws more), got "
                             f"{len(rows)} rows and {len(series)} series")
        if not all(isinstance(r, (list, tuple)) for r in values):
            raise TypeError("expected values to be a list of lists")
        if len(values) != len(rows) or any(len(r) != len(series) for r in values):
            raise ValueError(f"expected values as {len(rows)} rows of {len(series)} cells (one per row and series)")
        cells = tuple(tuple(None if v is None else float(v) if _is_number(v) else v for v in r) for r in values)
        present = [v for r in cells for v in r if isinstance(v, float) and math.isfinite(v)]
        inferred = min(MAX_DECIMALS, max((decimals_of(v) for v in present), default=0))
        return cls(
            index_name=str(data.get("index_name", "")),
            rows=tuple(rows),
            series=tuple(series),
            values=cells,
            unit=str(data.get("unit", "")),
            decimals=data.get("decimals", inferred),
            part_of_whole=data.get("part_of_whole", False),
            stackable=data.get("stackable", False),
            bounds=data.get("bounds"),
            row_spread=data.get("row_spread"),
            ranked=data.get("ranked", ()),
            complete=data.get("complete", False),
            complete_rows=data.get("complete_rows", False),
            totals=data.get("totals", ()),
            max_step=data.get("max_step"),
            above=data.get("above", ()),
        )

    def to_csv(self) -> str:
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow([self.index_name, *self.series])
        for label, row in zip(self.rows, self.values):
            writer.writerow([label, *("" if v is None else format_number(v) for v in row)])
        return buf.getvalue()


@dataclass(frozen=True)
class ChartSpec:
    """How a table is drawn. Every field is a style or layout choice: none changes a value."""

    chart_type: str = "bar"
    title: str = ""
    x_label: str = ""
    y_label: str = ""
    palette: str = "tab10"
    legend: str = "outside"
    data_labels: bool = False
    gridlines: bool = True
    font_size: float = 10.0
    figure_size: tuple[float, float] = (6.4, 4.8)

    def __post_init__(self) -> None:
        if self.chart_type not in CHART_TYPES:
            raise ValueError(f"expected chart_type in {CHART_TYPES}, got {self.chart_type!r}")
        if self.palette not in PALETTES:
            raise ValueError(f"expected palette in {PALETTES}, got {self.palette!r}")
        if self.legend not in LEGEND_POSITIONS:
            raise ValueError(f"expected legend in {LEGEND_POSITIONS}, got {self.legend!r}")
        for name in ("title", "x_label", "y_label"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise TypeError(f"expected {name} to be a string, got {value!r}")
            if len(value) > MAX_TITLE_CHARS:
                raise ValueError(f"expected {name} of at most {MAX_TITLE_CHARS} characters, got {len(value)}")
            if not value.isprintable():
                raise ValueError(f"expected {name} of printable characters on one line, got {value!r}")
        for name in ("data_labels", "gridlines"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"expected {name} to be true or false, got {getattr(self, name)!r}")
        if not _is_number(self.font_size) or not 6.0 <= self.font_size <= 20.0:
            raise ValueError(f"expected font_size between 6 and 20, got {self.font_size!r}")
        size = self.figure_size
        if (
            not isinstance(size, (tuple, list))
            or len(size) != 2
            or not all(_is_number(v) for v in size)
            or not (3.0 <= size[0] <= 8.0 and 2.5 <= size[1] <= 6.0)
        ):
            raise ValueError(f"expected figure_size [width, height] in inches within [3, 8] x [2.5, 6], got {size!r}")
        object.__setattr__(self, "figure_size", (float(size[0]), float(size[1])))

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["figure_size"] = list(self.figure_size)
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ChartSpec:
        if not isinstance(data, Mapping):
            raise TypeError(f"expected a chart spec object, got {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"expected chart spec fields among {sorted(known)}, got unknown {sorted(unknown)}")
        return cls(**data)  # __post_init__ turns a JSON list figure_size into a tuple

    @staticmethod
    def style_fields() -> tuple[str, ...]:
        return tuple(f.name for f in fields(ChartSpec))


@dataclass(frozen=True)
class Vocabulary:
    """Labels edits may add: new rows (categories of the table's topic) and new series."""

    rows: tuple[str, ...] = ()
    series: tuple[str, ...] = ()
    ordered: bool = False

    def __post_init__(self) -> None:
        for name in ("rows", "series"):
            labels = getattr(self, name)
            if not isinstance(labels, (list, tuple)) or not all(isinstance(x, str) for x in labels):
                raise TypeError(f"expected vocabulary {name} as a list of strings, got {labels!r}")
            object.__setattr__(self, name, tuple(labels))
        if not isinstance(self.ordered, bool):
            raise TypeError(f"expected ordered to be true or false, got {self.ordered!r}")

    def to_dict(self) -> dict[str, Any]:
        return {"rows": list(self.rows), "series": list(self.series), "ordered": self.ordered}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Vocabulary:
        if not isinstance(data, Mapping) or set(data) - {"rows", "series", "ordered"}:
            raise ValueError(f"expected a vocabulary object with rows, series and ordered, got {data!r}")
        return cls(tuple(data.get("rows", ())), tuple(data.get("series", ())), data.get("ordered", False))

    def rows_in_order(self, rows: tuple[str, ...]) -> bool:
        """For an ordered vocabulary (years, months ...): whether ``rows`` follow its order."""
        rank = {x: i for i, x in enumerate(self.rows)}
        ranks = [rank.get(r) for r in rows]
        return None not in ranks and ranks == sorted(ranks)  # type: ignore[type-var]


@dataclass(frozen=True)
class ChartStructure:
    """The whole edited object of the chart arm: what is drawn and how, and the labels
    edits may add."""

    table: Table
    spec: ChartSpec = field(default_factory=ChartSpec)
    vocabulary: Vocabulary = field(default_factory=Vocabulary)

    def to_dict(self) -> dict[str, Any]:
        return {"table": self.table.to_dict(), "spec": self.spec.to_dict(), "vocabulary": self.vocabulary.to_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ChartStructure:
        if not isinstance(data, Mapping) or "table" not in data:
            raise ValueError("expected a structure object with a 'table' (and optional 'spec', 'vocabulary')")
        unknown = set(data) - {"table", "spec", "vocabulary"}
        if unknown:
            raise ValueError(f"expected structure keys table, spec, vocabulary; got unknown {sorted(unknown)}")
        return cls(Table.from_dict(data["table"]), ChartSpec.from_dict(data.get("spec", {})),
                   Vocabulary.from_dict(data.get("vocabulary", {})))

    def payloads(self) -> dict[str, bytes]:
        return {}  # a chart is all JSON

    def to_json(self) -> str:
        return canonical_json(self.to_dict())

    @classmethod
    def from_json(cls, text: str) -> ChartStructure:
        return cls.from_dict(json.loads(text))

    def with_table(self, table: Table) -> ChartStructure:
        return replace(self, table=table)

    def with_spec(self, **changes: Any) -> ChartStructure:
        return replace(self, spec=replace(self.spec, **changes))


def chart_type_fits(table: Table, chart_type: str) -> str | None:
    """Why ``chart_type`` cannot draw ``table``, or ``None`` when it fits."""
    n_series = len(table.series)
    if chart_type in ("bar", "pie") and n_series != 1:
        return f"{chart_type} draws exactly one series, the table has {n_series}"
    if chart_type in ("grouped_bar", "stacked_bar") and n_series < 2:
        return f"{chart_type} needs at least two series, the table has {n_series}"
    if chart_type == "stacked_bar" and not table.stackable:
        return "stacked_bar adds series up, and this table's series are not parts of one total"
    if chart_type in ("stacked_bar", "pie") and table.has_negative():
        return f"{chart_type} cannot draw negative values"
    if chart_type == "pie":
        if not table.part_of_whole:
            return "pie draws parts of one whole, and this table's values are not"
        if table.has_missing():
            return "pie cannot draw missing values"
        if table.total() <= 0:
            return "pie needs a positive total"
        if table.unit == "%" and abs(table.total() - 100.0) > PERCENT_TOTAL_SLACK:
            return f"a pie of percentages must add up to 100, these add up to {format_number(table.total())}"
    if chart_type == "line" and len(table.rows) < 2:
        return "line needs at least two rows"
    return None


# -- JSON records -------------------------------------------------------------------------
class _TableDict(TypedDict):
    index_name: str
    rows: list[str]
    series: list[str]
    values: list[list[Value]]
    unit: str
    decimals: int
    part_of_whole: bool
    stackable: bool
    bounds: list[float] | None


class TableDict(_TableDict, total=False):
    """A :class:`Table` as JSON (:meth:`Table.to_dict`); the optional keys appear only when set."""

    row_spread: float
    ranked: list[str]
    complete: bool
    complete_rows: bool
    totals: list[str]
    max_step: list[float]
    above: list[list[str]]


class _Sourced(TypedDict, total=False):
    #: a question from data (not a template) keeps its text and what it refers to besides
    #: labels and values (``"colour"``, ``"mark"``, ``"position"``, ``"legend"``), sorted
    question: str
    refers: list[str]


class _CellRule(TypedDict):
    kind: Literal["cell"]
    row: str
    series: str
    #: ``False`` when the question names only the row (the chart must keep one series)
    series_named: bool


class CellRule(_CellRule, _Sourced, total=False):
    """Tier 1: the answer is the one cell at ``row`` and ``series``."""

    #: the question calls the cell the largest (``"max"``) or smallest (``"min"``) of its series
    presupposes: Literal["max", "min"]
    #: the question places the cell past a number: ``["above" | "below", threshold]``
    past: list[Any]


class _ChartProgramRule(TypedDict):
    kind: Literal["program"]
    #: a table program ``{"op": name, ...arguments}`` (see :mod:`vicogym.programs.chart`);
    #: a templated one also names its ``"template"``
    program: dict[str, Any]


class ChartProgramRule(_ChartProgramRule, _Sourced, total=False):
    """The answer is the program's result on the table."""


class _InvariantRule(TypedDict):
    kind: Literal["invariant"]
    #: the source table, every value of which the answer needs
    table: TableDict
    answer: str


class InvariantRule(_InvariantRule, _Sourced, total=False):
    """Tier 2: no program is known, so ``answer`` holds only while every value of ``table`` does."""


#: a chart sample's label rule, by ``kind``
ChartRule = CellRule | ChartProgramRule | InvariantRule
