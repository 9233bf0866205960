"""The evidence-reading action protocol (ViewCraft's): one JSON action per step.

- ``{"action": "zoom", "regions": [{"x0", "y0", "x1", "y1"}], "image": N, "note": "..."}``:
  at most ``max_regions`` regions, each in [0, 1] of image N's frame; each becomes a new
  view cut from the original unit (a zoom inside a zoom maps back to the unit).
- ``{"action": "note", "notes": [{"at": [x, y], "text": "...", "image": N}]}``: persistent
  markers, drawn as numbered coloured rings in every later view that shows the point.
- ``{"action": "view", "units": [i, ...]}``: attach more source units of the task's pool.
- ``{"action": "compose", "units": [...], "cols": C}``: tile units into one labelled sheet.
- ``{"action": "answer", "answer": "...", "note": "..."}``: ends the episode.

:func:`parse_action` turns a string or mapping into a checked action, or raises
:class:`~vicogym.errors.InvalidEdit` with one of :data:`ERROR_CODES` and a message that
says what to change. It knows nothing of the task; the environment checks image and unit
numbers and budgets.
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping

from vicogym.errors import InvalidEdit, register_error_codes
from vicogym.validation import did_you_mean, is_int, is_number

ACTIONS = ("zoom", "note", "view", "compose", "answer")
FIELDS: Mapping[str, tuple[set[str], set[str]]] = {  # action -> (required, optional)
    "zoom": ({"regions", "image"}, {"note"}),
    "note": ({"notes"}, set()),
    "view": ({"units"}, set()),
    "compose": ({"units"}, {"cols"}),
    "answer": ({"answer"}, {"note"}),
}
ERROR_CODES: Mapping[str, str] = {
    "unknown_action": "an action other than zoom, note, view, compose and answer",
    "unknown_image": "an image number that is not among the images sent in this request",
    "unknown_unit": "a unit number outside the task's pool",
    "bad_region": "a region outside [0, 1], empty, or lying on no image of the view",
    "too_many_regions": "more zoom regions than max_regions in one action",
    "crop_budget": "more zoom views than max_crops in the episode",
    "note_budget": "more notes than max_notes in the episode",
    "image_budget": "more units in one view or compose action than images per request allow",
}
register_error_codes("evidence", ERROR_CODES)
MAX_TEXT = 2000
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


def contract_text(max_regions: int) -> str:
    """The protocol as an executor is told it."""
    return (
        "Reply with exactly one JSON object, one action per reply:\n"
        f'- {{"action": "zoom", "image": N, "regions": [{{"x0": .., "y0": .., "x1": .., "y1": ..}}], "note": ".."}} '
        f"(at most {max_regions} regions, fractions in [0, 1] of image N; each region becomes a new, sharper view "
        "cut from the original)\n"
        '- {"action": "note", "notes": [{"image": N, "at": [x, y], "text": ".."}]} (a numbered ring that stays on '
        "later views)\n"
        '- {"action": "view", "units": [i, ...]} (attach more source units of this task)\n'
        '- {"action": "compose", "units": [i, ...], "cols": C} (tile units into one labelled sheet)\n'
        '- {"action": "answer", "answer": "..", "note": ".."} (ends the episode)'
    )


def tool_contract_text(max_regions: int) -> str:
    """The protocol as an executor that calls tools is told it (the tools' schemas carry
    the arguments; rows played by a trainer's tool loop)."""
    return (
        "Read the images through the tools, one or more calls per reply: zoom (at most "
        f"{max_regions} regions of an image, fractions in [0, 1]; each becomes a new, sharper view cut from the "
        "original), note (numbered rings that stay on later views), view (attach more source units of this task), "
        "compose (tile units into one labelled sheet) and answer (ends the task). Images are numbered in the order "
        "they were sent, from 0."
    )


def brief(value: Any, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters (a 400-digit number is not echoed)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _fail(code: str, message: str, action: str | None = None, field: str | None = None) -> InvalidEdit:
    return InvalidEdit(code, message, op=action, field=field)


def decode(action: Any) -> dict[str, Any]:
    """The JSON object of an action given as a mapping or a string (a code fence around
    it is allowed)."""
    if isinstance(action, Mapping):
        return dict(action)
    if not isinstance(action, (str, bytes)):
        raise _fail("malformed", f"expected the action as a JSON object (a string or a dict), got "
                                 f"{type(action).__name__}")
    text = action.decode("utf-8", "replace") if isinstance(action, bytes) else action
    text = text.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        shown = text[:60] + ("..." if len(text) > 60 else "")
        raise _fail("malformed", f"the action is not JSON ({getattr(exc, 'msg', exc)}): {shown!r}; reply with one "
                                 'JSON object such as {"action": "answer", "answer": "..."}') from None
    if not isinstance(value, dict):
        raise _fail("malformed", f"expected one JSON object, got a JSON {type(value).__name__}")
    return value


def _text(value: Any, action: str, field: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _fail("bad_field", f"expected {field} as a string, got {type(value).__name__}", action, field)
    if len(value) > MAX_TEXT:
        raise _fail("bad_value", f"{field} has {len(value)} characters; keep it under {MAX_TEXT}", action, field)
    return value


def _image(value: Any, action: str, field: str = "image") -> int:
    if not is_int(value, 0):
        raise _fail("bad_field", f"expected {field} as an image number (a whole number >= 0), got {brief(value)}",
                    action, field)
    return value


def _region(value: Any, k: int) -> tuple[float, float, float, float]:
    field = f"regions[{k}]"
    if isinstance(value, (list, tuple)) and len(value) == 4:
        value = dict(zip(("x0", "y0", "x1", "y1"), value))
    if not isinstance(value, Mapping) or set(value) != {"x0", "y0", "x1", "y1"}:
        raise _fail("bad_field", f"expected {field} as {{x0, y0, x1, y1}}, got {brief(value)}", "zoom", field)
    coords = [value[name] for name in ("x0", "y0", "x1", "y1")]
    if not all(is_number(c) for c in coords):
        raise _fail("bad_region", f"expected {field}'s coordinates as numbers, got {brief(coords)}", "zoom", field)
    if not all(0 <= c <= 1 for c in coords):
        raise _fail("bad_region", f"{field} has coordinates outside [0, 1] ({brief(coords)}); give fractions "
                                  "of the image's width and height", "zoom", field)
    x0, y0, x1, y1 = (float(c) for c in coords)
    if not (x0 < x1 and y0 < y1):
        raise _fail("bad_region", f"{field} is empty: it needs x0 < x1 and y0 < y1, got {[x0, y0, x1, y1]}",
                    "zoom", field)
    return (x0, y0, x1, y1)


def _listed(obj: Mapping[str, Any], field: str, action: str, what: str) -> list[Any]:
    """``obj[field]`` as a non-empty list (one object alone is taken as a list of one)."""
    value = obj[field]
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, list) or not value:
        raise _fail("bad_field", f"expected {field} as a non-empty list of {what}, got {brief(value)}", action,
                    field)
    return value


def _units(value: Any, action: str) -> list[int]:
    if not isinstance(value, list) or not value or not all(is_int(u, 0) for u in value):
        raise _fail("bad_field", f"expected units as a non-empty list of unit numbers, got {brief(value)}", action,
                    "units")
    if len(set(value)) != len(value):
        raise _fail("bad_value", f"units lists a unit twice: {brief(value)}", action, "units")
    return list(value)


def parse_action(action: Any, max_regions: int = 2) -> dict[str, Any]:
    """A checked action: ``{"action": name, ...fields}`` with regions as 4-tuples,
    texts as strings and numbers as ints."""
    obj = decode(action)
    name = obj.get("action")
    if name not in ACTIONS:
        hint = did_you_mean(name, ACTIONS) if isinstance(name, str) else ""
        raise _fail("unknown_action", f"unknown action {name!r}{hint}; use one of {', '.join(ACTIONS)}",
                    field="action")
    required, optional = FIELDS[name]
    given = set(obj) - {"action"}
    missing, unknown = required - given, given - required - optional
    if missing:
        raise _fail("bad_field", f"{name} needs {', '.join(sorted(missing))}", name, sorted(missing)[0])
    if unknown:
        field = sorted(unknown)[0]
        raise _fail("bad_field", f"{name} has no field {field!r}{did_you_mean(field, required | optional)} "
                                 f"(fields: {', '.join(sorted(required | optional))})", name, field)
    if name == "zoom":
        regions = _listed(obj, "regions", name, "{x0, y0, x1, y1}")
        if len(regions) > max_regions:
            raise _fail("too_many_regions", f"{len(regions)} regions; one zoom takes at most {max_regions}", name,
                        "regions")
        return {"action": name, "image": _image(obj["image"], name),
                "regions": [_region(r, k) for k, r in enumerate(regions)], "note": _text(obj.get("note"), name, "note")}
    if name == "note":
        notes = _listed(obj, "notes", name, "{at, text, image}")
        parsed = []
        for k, note in enumerate(notes):
            field = f"notes[{k}]"
            if not isinstance(note, Mapping) or not {"at", "image"} <= set(note) or set(note) - {"at", "image", "text"}:
                raise _fail("bad_field", f"expected {field} as {{at: [x, y], image: N, text}}, got {brief(note)}", name,
                            field)
            at = note["at"]
            if (not isinstance(at, (list, tuple)) or len(at) != 2 or not all(is_number(v, 0.0, 1.0) for v in at)):
                raise _fail("bad_region", f"expected {field}.at as [x, y] fractions in [0, 1], got {brief(at)}", name,
                            field)
            parsed.append({"at": (float(at[0]), float(at[1])), "image": _image(note["image"], name, f"{field}.image"),
                           "text": _text(note.get("text"), name, f"{field}.text")})
        return {"action": name, "notes": parsed}
    if name in ("view", "compose"):
        out: dict[str, Any] = {"action": name, "units": _units(obj["units"], name)}
        if name == "compose":
            cols = obj.get("cols")
            if cols is not None and not is_int(cols, 1, 8):
                raise _fail("bad_value", f"expected cols as a whole number in [1, 8], got {brief(cols)}", name, "cols")
            out["cols"] = cols
        return out
    answer = obj["answer"]
    if is_number(answer):
        answer = str(answer)
    return {"action": name, "answer": _text(answer, name, "answer"), "note": _text(obj.get("note"), name, "note")}
