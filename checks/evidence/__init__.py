"""Answerability checks of the evidence arm's tasks: the generic ones here, each task
family's own in the file named after the family (``checks/evidence/<family>.py``, a
``check(task)`` that re-derives the answer from the task's structure with the family's
programs and says why it is not answerable, or ``None``): ``forms.py``,
``clevr_detail.py``, ``clevr_sequence.py``. Two files serve more than their name
(:data:`SHARED_CHECKS`): ``charts.py`` checks both chart families, ``slides`` and
``multichart`` (one check over their one program language,
:mod:`vicogym.programs.evidence.charts`), and ``forms.py`` also checks the pages the
``funsd`` loader reads. Tasks of the ``jsonl`` loader get the generic checks only."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from collections.abc import Callable
from typing import Any

from vicogym.errors import InvalidEdit
from vicogym.structures.evidence import Task, fit_scale

#: the task families whose check file is not named after them -> that file
SHARED_CHECKS = {"funsd": "forms", "slides": "charts", "multichart": "charts"}
#: the largest view side the legibility check assumes a zoom may fill
ZOOM_SIDE = 768


def first_problem(require: Callable[..., None], *args: Any, **kwargs: Any) -> str | None:
    """A family's ``check`` from its ``require``: the first reason it raises (as
    ``[code] message``), or ``None`` when the task passes."""
    try:
        require(*args, **kwargs)
    except InvalidEdit as exc:
        return str(exc)
    return None


def require_family(task: Task, family: str) -> None:
    """A family's check refuses another family's task (a ``ValueError``: a caller's mistake,
    not the task's)."""
    if task.family != family:
        raise ValueError(f"expected a {family} task, got family {task.family!r}")


def legible_at_full_detail(task: Task, side: int = ZOOM_SIDE) -> str | None:
    """Every evidence item can be made legible: a view of its box alone, fitted into
    ``side`` pixels within its unit's ``max_scale``, shows its detail at its legible size."""
    for k, e in enumerate(task.evidence):
        unit = task.units[e.unit]
        w, h = e.box[2] - e.box[0], e.box[3] - e.box[1]
        scale = fit_scale(w, h, side, side, unit.max_scale)
        if e.size * scale < e.legible:
            return (f"evidence {k} ({e.what or 'unnamed'}) is {e.size:.1f} unit px, {e.size * scale:.1f} px at the "
                    f"largest zoom; it needs {e.legible}")
    return None


def check_task(task: Task, facts: Any = None) -> str | None:
    """The generic checks, then the family's own (when the family has a check file);
    ``facts`` (a unit's render facts, a callable of the unit) lets a family check what was
    drawn as well (a chart's labels readable)."""
    problem = legible_at_full_detail(task)
    if problem is not None:
        return problem
    name = f"vicogym.checks.evidence.{SHARED_CHECKS.get(task.family, task.family)}"
    if importlib.util.find_spec(name) is not None:
        module = importlib.import_module(name)
        if hasattr(module, "check"):
            if facts is not None and "facts" in inspect.signature(module.check).parameters:
                return module.check(task, facts=facts)
            return module.check(task)
    return None
