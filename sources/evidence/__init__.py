"""Where the evidence arm's tasks come from: procedural task families (unlimited, seeded)
and loaders of real data sets (FUNSD-format folders, generic JSONL).

A family is a module here named after it (``forms``, ``slides``, ``multichart``,
``clevr_detail``, ``clevr_sequence``; its programs and checks, where it has its own, are
the same name in ``programs/evidence/`` and ``checks/evidence/``) with ``DEFAULTS`` (its
settings), ``EXTRAS`` (the packages it needs beyond the base install) and
``draw(rng, settings) -> Task``; the loaders (``funsd``, ``jsonl``) are ``files``. A drawn task may
still lack what only rendering knows (a raster's pixels, a drawn object's box): the
renderer's ``prepare`` completes it (:meth:`vicogym.renderers.evidence.EvidenceRenderer.prepare`).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vicogym.structures.evidence import Task
from vicogym.validation import did_you_mean

#: family name -> module (each with DEFAULTS, EXTRAS and draw)
FAMILIES: Mapping[str, str] = {
    "forms": "vicogym.sources.evidence.forms",
    "slides": "vicogym.sources.evidence.slides",
    "multichart": "vicogym.sources.evidence.multichart",
    "clevr_detail": "vicogym.sources.evidence.clevr_detail",
    "clevr_sequence": "vicogym.sources.evidence.clevr_sequence",
}
#: what needs no extra beyond the base install
BASE_FAMILIES = ("forms", "slides", "multichart")
LOADERS = ("funsd", "jsonl")


def family_module(name: str) -> Any:
    if name not in FAMILIES:
        raise ValueError(f"unknown task family {name!r}{did_you_mean(name, FAMILIES)} (families: "
                         f"{', '.join(FAMILIES)}; or funsd:FOLDER, jsonl:FILE)")
    return importlib.import_module(FAMILIES[name])


def parse_tasks(tasks: Any) -> list[str]:
    """The task specs of a ``tasks`` setting: a family name, ``all`` (every family whose
    extras are installed is not decided here: ``all`` means every family), ``funsd:FOLDER``,
    ``jsonl:FILE``, or a list of these."""
    specs = [tasks] if isinstance(tasks, str) else list(tasks) if isinstance(tasks, (list, tuple)) else None
    if not specs or not all(isinstance(s, str) and s for s in specs):
        raise ValueError(f"expected tasks as a family name, 'funsd:FOLDER', 'jsonl:FILE' or a list of them, got "
                         f"{tasks!r}")
    out: list[str] = []
    for spec in specs:
        if spec == "all":
            out.extend(FAMILIES)
            continue
        kind, _, rest = spec.partition(":")
        if rest and kind in LOADERS:
            out.append(spec)
        else:
            family_module(spec)
            out.append(spec)
    return out


class TaskSource:
    """Draws tasks from the families and data sets of a ``tasks`` setting: a seeded draw
    picks one spec, then a task of it (a data set's tasks by index)."""

    def __init__(self, tasks: Any, settings: Mapping[str, Mapping[str, Any]] | None = None,
                 view_size: int | None = None):
        self.specs = parse_tasks(tasks)
        self.settings = {k: dict(v) for k, v in (settings or {}).items()}
        unknown = set(self.settings) - set(FAMILIES) - set(LOADERS)
        if unknown:
            name = sorted(unknown)[0]
            raise ValueError(f"family_settings names {name!r}, which is no task family{did_you_mean(name, FAMILIES)}")
        self._families: dict[str, tuple[Any, dict[str, Any]]] = {}
        self._datasets: dict[str, list[Task]] = {}
        for spec in self.specs:
            kind, _, rest = spec.partition(":")
            if rest and kind in LOADERS:
                from vicogym.sources.evidence import files

                self._datasets[spec] = files.load(kind, rest)
            else:
                module = family_module(spec)
                given = self.settings.get(spec, {})
                bad = set(given) - set(module.DEFAULTS)
                if bad:
                    name = sorted(bad)[0]
                    raise ValueError(f"the {spec} family has no setting {name!r}{did_you_mean(name, module.DEFAULTS)}"
                                     f" (settings: {', '.join(sorted(module.DEFAULTS))})")
                merged = {**module.DEFAULTS, **given}
                if view_size is not None and "view_size" in module.DEFAULTS and "view_size" not in given:
                    merged["view_size"] = view_size  # a family that hides detail from the default view sizes to it
                if hasattr(module, "check_settings"):
                    module.check_settings(merged)
                self._families[spec] = (module, merged)

    def extras(self) -> set[str]:
        return {e for module, _ in self._families.values() for e in getattr(module, "EXTRAS", ())}

    def size(self) -> int | None:
        """How many tasks there are when every spec is a data set; ``None`` when a family
        makes them without end."""
        if self._families:
            return None
        return sum(len(v) for v in self._datasets.values())

    def task(self, index: int) -> Task:
        """Task ``index`` of the data sets, in the order of the specs."""
        for spec in self.specs:
            tasks = self._datasets.get(spec, [])
            if index < len(tasks):
                return tasks[index]
            index -= len(tasks)
        raise IndexError(index)

    def draw(self, rng: np.random.Generator) -> Task:
        spec = self.specs[int(rng.integers(len(self.specs)))]
        if spec in self._datasets:
            tasks = self._datasets[spec]
            return tasks[int(rng.integers(len(tasks)))]
        module, settings = self._families[spec]
        return module.draw(rng, settings)

    def summary(self) -> dict[str, Any]:
        return {"specs": list(self.specs), "settings": {k: v for k, (_, v) in self._families.items()},
                "tasks": {k: len(v) for k, v in self._datasets.items()}}


def families_of(specs: Sequence[str]) -> list[str]:
    return [s for s in specs if s in FAMILIES]
