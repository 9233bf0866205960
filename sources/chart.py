"""Seed samples of the chart arm: a procedural table generator and a ChartQA loader.

Both give :class:`~vicogym.core.Seed` objects (structure, question, answer, label rule). The
procedural generator draws a topic from ``assets/chart_topics.json`` (realistic titles,
category names, magnitudes and units) and a templated question with a table program.
The ChartQA loader reads a folder of ``tables/*.csv`` plus ``qa.jsonl`` records
(``imgname``, ``query``, ``label``) and classifies each record as Tier 1 (the label is
exactly one cell, named in the question) or Tier 2 (the label is kept only while every
value stays fixed). A ChartQA folder is validated when it is opened: every record and
every table it names is read, and a problem is reported with its file, line and fix.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from vicogym.answers import format_number, parse_number
from vicogym.core import Seed
from vicogym.errors import GenerationError, SourceError
from vicogym.programs.chart import (
    cell_rule,
    generate_question,
    invariant_rule,
    program_rule,
    relabel,
)
from vicogym.structures.chart import (
    MAX_LABEL_CHARS,
    MAX_TITLE_CHARS,
    PALETTES,
    ChartSpec,
    ChartStructure,
    Table,
    chart_type_fits,
)


@lru_cache(maxsize=1)
def topics() -> dict[str, Any]:
    """The shipped topic table (parsed once)."""
    text = resources.files("vicogym.assets").joinpath("chart_topics.json").read_text(encoding="utf-8")
    return json.loads(text)


def all_category_labels() -> tuple[str, ...]:
    """Every category name the topics know; rewriters draw new row labels from here."""
    return tuple(label for labels in topics()["categories"].values() for label in labels)


# -- procedural ---------------------------------------------------------------------
def _draw_values(rng: np.random.Generator, topic: Mapping[str, Any], n_rows: int, n_series: int) -> np.ndarray:
    low, high, decimals = float(topic["low"]), float(topic["high"]), int(topic["decimals"])
    base = rng.uniform(low, high, size=(n_rows, 1))
    spread = (high - low) * 0.25
    values = np.clip(base + rng.normal(0.0, spread, size=(n_rows, n_series)), low, high)
    return np.round(values, decimals)


def procedural_seed(rng: np.random.Generator, max_tries: int = 16, templates: tuple[str, ...] | None = None) -> Seed:
    """A random table, chart spec and program-backed question. Bounded by ``max_tries``."""
    data = topics()
    for attempt in range(max_tries):
        topic = data["topics"][int(rng.integers(len(data["topics"])))]
        pool = data["categories"][topic["index"]]
        n_rows = int(rng.integers(3, min(9, len(pool)) + 1))
        multi = bool(rng.random() < 0.45)
        series = topic["multi"][: int(rng.integers(2, len(topic["multi"]) + 1))] if multi else topic["series"]
        picked = rng.choice(len(pool), size=n_rows, replace=False)
        ordered = topic["index"] in ("year", "month", "quarter")
        rows = [pool[i] for i in (sorted(picked) if ordered else picked)]
        values = _draw_values(rng, topic, n_rows, len(series))
        table = Table(
            index_name=topic["index_name"],
            rows=tuple(rows),
            series=tuple(series),
            values=tuple(tuple(float(v) for v in row) for row in values),
            unit=topic["unit"],
        )
        candidates = ("bar", "hbar", "grouped_bar", "stacked_bar", "line", "pie") if ordered else ("bar", "hbar", "grouped_bar", "stacked_bar", "pie")
        chart_types = [c for c in candidates if chart_type_fits(table, c) is None]
        weights = np.array([{"bar": 3, "hbar": 2, "grouped_bar": 3, "stacked_bar": 1, "line": 2, "pie": 1}[c] for c in chart_types], float)
        chart_type = chart_types[int(rng.choice(len(chart_types), p=weights / weights.sum()))]
        index_word = topic["index_name"].lower()
        spec = ChartSpec(
            chart_type=chart_type,
            title=topic["title"].format(index=index_word),
            x_label=topic["index_name"] if chart_type != "pie" else "",
            y_label=topic["y_label"] if chart_type != "pie" else "",
            palette=PALETTES[int(rng.integers(len(PALETTES)))],
            legend="outside",
            data_labels=bool(rng.random() < 0.35),
            gridlines=bool(rng.random() < 0.7),
            font_size=float(rng.choice([9.0, 10.0, 11.0])),
        )
        try:
            question, program, answer = generate_question(table, rng, templates=templates)
        except GenerationError:
            continue
        structure = ChartStructure(table, spec)
        return Seed(structure, question, answer, program_rule(program), "procedural", f"procedural-{attempt}")
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
    if value is None:
        raise ValueError(f"expected a number or a missing-value mark in a ChartQA cell, got {text!r}")
    return value


def _clean_label(text: str, limit: int = MAX_LABEL_CHARS) -> str:
    label = " ".join(str(text).split())
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


def load_chartqa_table(path: str | Path) -> Table:
    """Read one ChartQA CSV: quoting, thousands separators, %, M suffixes, missing cells.
    Raises :class:`SourceError` naming the file, the line and what to change."""
    import pandas as pd

    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8", skip_blank_lines=False)
    except UnicodeDecodeError as exc:
        raise SourceError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); save the CSV as UTF-8") from None
    except pd.errors.EmptyDataError:
        raise SourceError(f"{path}: the file is empty; expected a header row (category, series ...) and data rows") from None
    except pd.errors.ParserError as exc:
        reason = str(exc).replace("Error tokenizing data. C error: ", "").strip()
        raise SourceError(f"{path}: {reason}; quote fields that contain commas so that every row has as many fields "
                          f"as the header") from None
    if frame.shape[1] < 2:
        raise SourceError(f"{path}:1: expected a category column and at least one series column, got {list(frame.columns)}")
    frame = frame[~(frame == "").all(axis=1)]
    if frame.empty:
        raise SourceError(f"{path}: no data rows; expected at least one row under the header")
    raw = [str(c) for c in frame.columns]
    values = []
    for line, row in zip(frame.index, frame.iloc[:, 1:].itertuples(index=False)):
        parsed = []
        for column, text in zip(raw[1:], row):
            try:
                parsed.append(parse_cell(text))
            except ValueError:
                raise SourceError(f"{path}:{line + 2}: column {column!r} holds {text!r}; expected a number (1,327.7 / "
                                  f"80% / 0.26M) or a missing-value mark (empty, -, nan)") from None
        values.append(tuple(parsed))
    cells = frame.iloc[:, 1:].to_numpy().ravel()
    units = {"%" if "%" in c else "M" if c.strip()[-1:] in "Mm" and parse_number(c.strip()[:-1]) is not None else ""
             for c in cells if c.strip()}
    return Table(
        index_name=_clean_label(raw[0]),
        rows=_unique([_clean_label(r) for r in frame.iloc[:, 0]]),
        series=_unique([_clean_label(c) for c in raw[1:]]),
        values=tuple(values),
        unit="%" if "%" in units else "M" if "M" in units else "",
    )


def default_spec(table: Table) -> ChartSpec:
    """A plain chart spec for a table that came without one."""
    if len(table.series) == 1:
        chart_type = "bar" if len(table.rows) <= 10 and max(len(r) for r in table.rows) <= 16 else "hbar"
        y_label = table.series[0][:MAX_TITLE_CHARS]
    else:
        chart_type = "grouped_bar" if len(table.rows) * len(table.series) <= 24 else "hbar"
        y_label = ""
    return ChartSpec(chart_type=chart_type, x_label=table.index_name[:MAX_TITLE_CHARS], y_label=y_label,
                     data_labels=len(table.rows) * len(table.series) <= 16)


def _words(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    return " " + " ".join(re.findall(r"[a-z0-9]+(?:\.[0-9]+)?", text)) + " "


def _mentions(query: str, label: str) -> bool:
    needle = _words(label).strip()
    return bool(needle) and f" {needle} " in _words(query)


def classify_record(table: Table, query: str, label: str) -> dict[str, Any]:
    """Tier 1 ``cell`` rule when the label is exactly one cell whose row (and, with several
    series, whose series) the question names; else the Tier 2 ``invariant`` rule."""
    target = parse_number(label)
    if target is not None:
        matches = [
            (r, s) for r, row in zip(table.rows, table.values) for s, v in zip(table.series, row)
            if v is not None and format_number(v) == format_number(target)
        ]
        if len(matches) == 1:
            row, series = matches[0]
            series_named = _mentions(query, series)
            if _mentions(query, row) and (len(table.series) == 1 or series_named):
                return cell_rule(row, series, series_named)
    return invariant_rule(table, label)


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
    qa_path = Path(folder) / "qa.jsonl"
    if not qa_path.is_file():
        raise SourceError(f"expected ChartQA records at {qa_path} (one JSON object per line with imgname, query, label)")
    records = []
    try:
        lines = qa_path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise SourceError(f"{qa_path}: not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SourceError(f"{qa_path}:{n}: not valid JSON ({exc.msg} at column {exc.colno}); each line must be one "
                              f"object with imgname, query, label") from None
        if not isinstance(data, dict):
            raise SourceError(f"{qa_path}:{n}: expected a JSON object with imgname, query, label, got {type(data).__name__}")
        missing = [k for k in RECORD_KEYS if k not in data]
        if missing:
            raise SourceError(f"{qa_path}:{n}: missing {missing}; each record needs imgname, query and label")
        wrong = [k for k in RECORD_KEYS if not isinstance(data[k], (str, int, float)) or isinstance(data[k], bool)]
        if wrong:
            raise SourceError(f"{qa_path}:{n}: {wrong[0]} must be a string, got {data[wrong[0]]!r}")
        records.append(ChartQARecord(str(data["imgname"]), str(data["query"]), str(data["label"]),
                                     str(data.get("source", "")), n))
    if not records:
        raise SourceError(f"{qa_path}: no records; expected one JSON object per line with imgname, query, label")
    return records


class ChartQASource:
    """Seeds from a ChartQA-format folder (``tables/*.csv`` and ``qa.jsonl``). Every record
    and every table it names is read and checked when the source is opened."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        if not (self.folder / "tables").is_dir():
            raise SourceError(f"expected a ChartQA folder with tables/*.csv and qa.jsonl, got {self.folder}")
        self.records = load_chartqa_records(self.folder)
        self._tables: dict[str, Table] = {}
        for record in self.records:
            stem = _stem(record.imgname)
            if stem not in self._tables:
                path = self.folder / "tables" / f"{stem}.csv"
                if not path.is_file():
                    raise SourceError(f"{self.folder / 'qa.jsonl'}:{record.line}: imgname {record.imgname!r} has no "
                                      f"table at {path}; add the CSV or remove the record")
                self._tables[stem] = load_chartqa_table(path)

    def table(self, imgname: str) -> Table:
        stem = _stem(imgname)
        if stem not in self._tables:
            path = self.folder / "tables" / f"{stem}.csv"
            if not path.is_file():
                raise SourceError(f"no table for {imgname!r} at {path}")
            self._tables[stem] = load_chartqa_table(path)
        return self._tables[stem]

    def seed(self, index: int) -> Seed:
        if not 0 <= index < len(self.records):
            raise ValueError(f"expected a record index in [0, {len(self.records)}), got {index}")
        record = self.records[index]
        table = self.table(record.imgname)
        rule = classify_record(table, record.query, record.label)
        answer = relabel(table, rule)
        return Seed(ChartStructure(table, default_spec(table)), record.query, answer, rule,
                    "chartqa", f"{record.imgname}#L{record.line}")

    def sample(self, rng: np.random.Generator) -> Seed:
        return self.seed(int(rng.integers(len(self.records))))


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


def make_source(source: str, templates: tuple[str, ...] | None = None,
                max_tries: int = 16) -> ProceduralSource | ChartQASource:
    """``"procedural"`` or a path to a ChartQA-format folder."""
    if source == "procedural":
        return ProceduralSource(templates, max_tries)
    if Path(source).is_dir():
        return ChartQASource(source)
    raise SourceError(f"expected source 'procedural' or a ChartQA folder (tables/ + qa.jsonl), got {source!r}")


__all__ = ["ChartQASource", "ProceduralSource", "classify_record", "load_chartqa_table", "make_source", "parse_cell",
           "procedural_seed", "all_category_labels"]
