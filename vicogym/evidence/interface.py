"""A skill's interface expression: which evidence an executor is sent first (selection,
φ) and how every view is drawn (presentation, ψ), in a small declarative grammar that
the package interprets. No expression runs code: it is JSON, checked against
:data:`SCHEMA` (JSON Schema), and :func:`start_plan` and :func:`style` read it.

``select`` (φ):

- ``attach``: rules ``{"when": COND, "pick": PICK, "count": n}``; the first whose
  ``when`` holds for the task decides which units are sent at reset (``start``: the
  task's own start; ``all``; ``first``; ``title_match``: the ``count`` units whose titles
  best match the question, a quoted title first, then shared words; ``spread``: ``count``
  units evenly spread over the pool, the first and the last among them). Up to
  ``max_images`` units are sent whole, more as labelled sheets.
- ``crops``: rules ``{"when": COND, "rows": r, "cols": c, "overlap": f}``; the first that
  holds also sends each unit sent whole as ``r`` x ``c`` crops overlapping by ``f`` of a
  crop's size (zoomed views the executor did not have to ask for), while the request has
  room (``max_images``).

``COND`` is an object whose every key must hold (``{}``: always): ``family`` (the task's
family is one of), ``contract`` (its answer contract is one of), ``question_has`` (the
question holds one of the phrases, case-insensitively), ``units_at_least`` (the pool has
at least that many units).

``present`` (ψ): ``upscale`` (how far past a drawn unit's own ``max_scale`` a view may
enlarge it, 1-4; rasters never), ``grid`` (lines per side of a labelled coordinate grid on
every view, 0: none), ``timestamps`` ("t=i" at every tile's top-left corner, ``i`` its
place in the pool from 1: a frame's place in its sequence), ``rings`` (``ordinal``:
one colour per note, or ``mono``), ``labels`` (what a sheet says of each unit:
``index_title``, ``index``, ``none``: no label band, larger thumbnails), ``sheet_cols``
(columns of the sheets sent at reset, 0: about square).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from typing import Any

#: the answer contracts and sheet label formats the grammar names (the structures' own:
#: ``vicogym.structures.evidence.CONTRACTS`` and ``LABEL_FORMATS``; a test holds them equal)
CONTRACTS = ("text", "number", "letter", "count")
LABEL_FORMATS = ("index_title", "index", "none")
PICKS = ("start", "all", "first", "title_match", "spread")
RING_STYLES = ("ordinal", "mono")

#: the grammar, as JSON Schema (draft 2020-12)
SCHEMA: Mapping[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "vicogym evidence interface expression",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "select": {
            "type": "object", "additionalProperties": False,
            "properties": {
                "attach": {"type": "array", "maxItems": 16, "items": {"$ref": "#/$defs/attach"}},
                "crops": {"type": "array", "maxItems": 16, "items": {"$ref": "#/$defs/crops"}},
            },
        },
        "present": {
            "type": "object", "additionalProperties": False,
            "properties": {
                "upscale": {"type": "number", "minimum": 1, "maximum": 4},
                "grid": {"type": "integer", "minimum": 0, "maximum": 12},
                "timestamps": {"type": "boolean"},
                "rings": {"enum": list(RING_STYLES)},
                "labels": {"enum": list(LABEL_FORMATS)},
                "sheet_cols": {"type": "integer", "minimum": 0, "maximum": 8},
            },
        },
    },
    "$defs": {
        "when": {
            "type": "object", "additionalProperties": False,
            "properties": {
                "family": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
                "contract": {"type": "array", "minItems": 1, "items": {"enum": list(CONTRACTS)}},
                "question_has": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
                "units_at_least": {"type": "integer", "minimum": 1},
            },
        },
        "attach": {
            "type": "object", "additionalProperties": False, "required": ["pick"],
            "properties": {"when": {"$ref": "#/$defs/when"}, "pick": {"enum": list(PICKS)},
                           "count": {"type": "integer", "minimum": 1, "maximum": 16}},
        },
        "crops": {
            "type": "object", "additionalProperties": False, "required": ["rows", "cols"],
            "properties": {"when": {"$ref": "#/$defs/when"},
                           "rows": {"type": "integer", "minimum": 1, "maximum": 4},
                           "cols": {"type": "integer", "minimum": 1, "maximum": 4},
                           "overlap": {"type": "number", "minimum": 0, "maximum": 0.5}},
        },
    },
}

#: what an empty expression means
PRESENT_DEFAULTS: Mapping[str, Any] = {"upscale": 1.0, "grid": 0, "timestamps": False, "rings": "ordinal",
                                       "labels": "index_title", "sheet_cols": 0}


def validate(expression: Any) -> dict[str, Any]:
    """``expression`` checked against :data:`SCHEMA` (a copy); ``ValueError`` naming the
    first place that breaks it and what the grammar allows there."""
    import jsonschema

    if expression is None:
        return {}
    validator = jsonschema.Draft202012Validator(SCHEMA)
    errors = sorted(validator.iter_errors(expression), key=lambda e: (len(e.absolute_path), list(e.absolute_path)))
    if errors:
        error = errors[0]
        where = "/".join(str(p) for p in error.absolute_path) or "(the expression)"
        raise ValueError(f"the interface expression breaks its grammar at {where}: {error.message} (the grammar: "
                         "vicogym.evidence.interface.SCHEMA, `vicogym craft grammar` prints it)")
    return copy.deepcopy(dict(expression))


def holds(when: Mapping[str, Any] | None, task: Any) -> bool:
    """Whether every key of ``when`` holds for ``task``."""
    when = when or {}
    if "family" in when and task.family not in when["family"]:
        return False
    if "contract" in when and task.contract not in when["contract"]:
        return False
    if "question_has" in when:
        text = task.question.lower()
        if not any(p.lower() in text for p in when["question_has"]):
            return False
    return "units_at_least" not in when or len(task.units) >= when["units_at_least"]


def _first(rules: Sequence[Mapping[str, Any]], task: Any) -> Mapping[str, Any] | None:
    return next((r for r in rules if holds(r.get("when"), task)), None)


_WORD = re.compile(r"[a-z0-9]+")
_QUOTED = re.compile(r"['\"\u2018\u201c]([^'\"\u2019\u201d]{3,})['\"\u2019\u201d]")


def title_scores(task: Any) -> list[float]:
    """How well each unit's title matches the question: 2 + overlap for a title the
    question quotes whole, else the share of the title's words the question holds."""
    question = task.question.lower()
    quoted = [q.strip().lower() for q in _QUOTED.findall(task.question)]
    words = set(_WORD.findall(question))
    out = []
    for unit in task.units:
        title = unit.title.lower().strip()
        tw = _WORD.findall(title)
        share = sum(w in words for w in tw) / len(tw) if tw else 0.0
        out.append((2.0 if title and title in quoted else 0.0) + share)
    return out


def pick_units(pick: str, count: int, task: Any) -> list[int]:
    n = len(task.units)
    if pick == "all":
        return list(range(n))
    if pick == "first":
        return [0]
    if pick == "spread":
        k = max(1, min(count, n))
        return sorted({round(i * (n - 1) / (k - 1)) for i in range(k)}) if k > 1 else [0]
    scores = title_scores(task)
    ranked = sorted(range(n), key=lambda i: (-scores[i], i))
    chosen = [i for i in ranked[:count] if scores[i] > 0]
    return sorted(chosen) or [0]


def start_plan(expression: Mapping[str, Any] | None, task: Any) -> dict[str, Any] | None:
    """What the expression sends at reset for ``task``: ``{"units": [...], "crops": rule or
    None}``, or ``None`` for the task's own start (no rule holds, or one picks ``start``)
    with perhaps ``crops``."""
    select = (expression or {}).get("select", {})
    rule = _first(select.get("attach", ()), task)
    crops = _first(select.get("crops", ()), task)
    units = None if rule is None or rule["pick"] == "start" else pick_units(rule["pick"], rule.get("count", 4), task)
    if units is None and crops is None:
        return None
    return {"units": units, "crops": dict(crops) if crops is not None else None}


def families_named(expression: Mapping[str, Any] | None) -> list[str]:
    """The task families the expression's rules name (to check them against the tasks)."""
    select = (expression or {}).get("select", {})
    return sorted({f for kind in ("attach", "crops") for rule in select.get(kind, ())
                   for f in rule.get("when", {}).get("family", ())})


def style(expression: Mapping[str, Any] | None) -> dict[str, Any]:
    """The presentation settings, defaults filled in."""
    return {**PRESENT_DEFAULTS, **(expression or {}).get("present", {})}


def view_style(present: Mapping[str, Any]) -> dict[str, Any]:
    """What of the presentation a view carries to be drawn (only what differs from the
    plain view, so a plain view's record is unchanged)."""
    out: dict[str, Any] = {}
    if present.get("grid"):
        out["grid"] = int(present["grid"])
    if present.get("timestamps"):
        out["timestamps"] = True
    if present.get("rings", "ordinal") != "ordinal":
        out["rings"] = present["rings"]
    return out


def crop_boxes(width: int, height: int, rows: int, cols: int, overlap: float = 0.1) -> list[tuple[float, ...]]:
    """``rows`` x ``cols`` boxes covering a ``width`` x ``height`` unit, each grown by
    ``overlap`` of its size into its neighbours (clipped to the frame), row by row."""
    out = []
    cw, ch = width / cols, height / rows
    for r in range(rows):
        for c in range(cols):
            x0, y0 = c * cw - overlap * cw, r * ch - overlap * ch
            x1, y1 = (c + 1) * cw + overlap * cw, (r + 1) * ch + overlap * ch
            out.append((max(0.0, x0), max(0.0, y0), min(float(width), x1), min(float(height), y1)))
    return out
