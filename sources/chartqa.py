"""The ChartQA source: seeds from a folder of ``tables/*.csv`` plus ``qa.jsonl`` records
(``imgname``, ``query``, ``label``), validated when the folder is opened (a problem is
reported with its file, line and fix). Each table is read by
:mod:`vicogym.sources.chartqa_tables` and each record classified by
:mod:`vicogym.sources.chartqa_questions` (a cell, a program, an invariant, or dropped
with its reason); a seed redraws the record's table with a plain chart spec.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vicogym.answers import parse_number
from vicogym.core import Seed
from vicogym.errors import GenerationError, SourceError
from vicogym.programs.chart import relabel
from vicogym.sources import _safe, contained, inside, json_lines, place, read_text
from vicogym.sources.chartqa_questions import Classified, classify_record, unit_conflict
from vicogym.sources.chartqa_tables import chartqa_vocabulary, default_spec, load_chartqa_table, record_title
from vicogym.structures.chart import ChartStructure, Table
from vicogym.validation import pick

#: what becomes of a record whose question has no program and whose answer a screen doubts:
#: ``drop`` it, or ``keep`` it as Tier 2
TIER2_POLICIES = ("drop", "keep")
#: the longest question and label a ChartQA record may have (the environment's longest
#: question setting; ChartQA's are under 200 and 50 characters)
MAX_QUERY_CHARS, MAX_ANSWER_CHARS = 65_536, 1024


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
        queries: dict[str, list[str]] = {}
        for record in self.records:
            queries.setdefault(_stem(record.imgname), []).append(record.query)
        #: the title of each table that names no measure, from its records (:func:`record_title`)
        self.titles = {stem: record_title(f"{stem}.png", found, self._tables[stem]) for stem, found in queries.items()
                       if stem not in self.unfit}

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
        title = self.titles.get(_stem(record.imgname), "")
        structure = ChartStructure(table, default_spec(table, classified.mark, title), chartqa_vocabulary(table))
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
