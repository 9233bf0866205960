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

:data:`ACTION_TABLE` holds one :class:`Action` per action: its name, its fields' JSON
Schemas (the tools' schemas come from them), the parser that checks its fields, and its
lines in the two contracts. Everything that lists the actions reads it: the text and tool
contracts here, ``EvidenceEnv`` (which plans action ``name`` with its ``_plan_<name>``
method; ``answer`` ends the episode), the TRL tool methods
(:mod:`vicogym.trainers.trl`), the verl tool classes and their YAML
(:mod:`vicogym.trainers.verl_agent`) and the rows' ``tools_kwargs``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from vicogym.core import canonical_json
from vicogym.errors import InvalidEdit, register_error_codes
from vicogym.validation import brief, did_you_mean, int_size, is_int, is_number, loads_json

MAX_TEXT = 2000
#: the longest action text read (256 notes of MAX_TEXT characters fit)
MAX_ACTION_CHARS = 1 << 20
#: how deeply an action's JSON may nest (a note action nests 4 deep)
MAX_ACTION_DEPTH = 32


def _fail(code: str, message: str, action: str | None = None, field: str | None = None) -> InvalidEdit:
    return InvalidEdit(code, message, op=action, field=field)


def decode(action: Any) -> dict[str, Any]:
    """The JSON object of an action given as a mapping or a string (a code fence around
    it is allowed). Anything else, text that is not JSON (or that Python cannot read: an
    integer of more than 4300 digits, nesting too deep), and a mapping that is not JSON
    data (keys that are not strings, values that are not JSON) are ``malformed``."""
    if isinstance(action, Mapping):
        value = _json_data(action)
    elif isinstance(action, (str, bytes, bytearray)):
        text = bytes(action).decode("utf-8", "replace") if not isinstance(action, str) else action
        if len(text) > MAX_ACTION_CHARS:
            raise _fail("malformed", f"the action has {len(text)} characters; one action takes at most "
                                     f"{MAX_ACTION_CHARS}")
        text = _unfenced(text.strip())
        value, problem = loads_json(text)
        if problem is not None:
            raise _fail("malformed", f"the action is {problem}: {brief(text)}; reply with one JSON object such as "
                                     '{"action": "answer", "answer": "..."}')
        value = _json_data(value) if isinstance(value, dict) else value
    else:
        raise _fail("malformed", f"expected the action as a JSON object (a string or a dict), got "
                                 f"{type(action).__name__}")
    if not isinstance(value, dict):
        raise _fail("malformed", f"expected one JSON object, got a JSON {type(value).__name__}")
    return value


def _unfenced(text: str) -> str:
    """``text`` without a code fence around it (```json ... ```), in linear time."""
    if len(text) >= 6 and text.startswith("```") and text.endswith("```"):
        inner = text[3:-3]
        return (inner[4:] if inner.startswith("json") else inner).strip()
    return text


def _json_data(action: Mapping[str, Any]) -> dict[str, Any]:
    """``action`` as a dict, once it is JSON data as ``json.loads`` gives it: objects with
    string keys, lists (tuples taken as lists), strings, numbers, booleans and null, nested
    at most :data:`MAX_ACTION_DEPTH` deep (walked without recursion); ``malformed``
    otherwise. A number that is not finite, or too long, is its field's to refuse."""
    stack: list[tuple[Any, int, str]] = [(action, 0, "the action")]
    while stack:
        item, depth, where = stack.pop()
        if depth > MAX_ACTION_DEPTH:
            raise _fail("malformed", f"the action is nested more than {MAX_ACTION_DEPTH} deep; send one flat JSON "
                                     "object")
        if isinstance(item, Mapping):
            try:
                items = list(item.items())
            except Exception:  # a mapping that cannot be read is no JSON object
                raise _fail("malformed", f"{where} is a {type(item).__name__} that cannot be read") from None
            for key, inner in items:
                if not isinstance(key, str):
                    raise _fail("malformed", f"{where} has the key {brief(key)} ({type(key).__name__}); JSON object "
                                             "keys are strings")
                stack.append((inner, depth + 1, f"{where}[{brief(key, 30)}]"))
        elif isinstance(item, (list, tuple)):
            stack.extend((inner, depth + 1, f"{where}[{i}]") for i, inner in enumerate(item))
        elif item is not None and not isinstance(item, (bool, int, float, str)):
            raise _fail("malformed", f"{where} is of type {type(item).__name__}, which is not JSON data")
    return dict(action)


def _text(value: Any, action: str, field: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _fail("bad_field", f"expected {field} as a string, got {type(value).__name__}", action, field)
    if len(value) > MAX_TEXT:
        raise _fail("bad_value", f"{field} has {len(value)} characters; keep it under {MAX_TEXT}", action, field)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise _fail("bad_value", f"{field} holds a lone surrogate ({brief(value, 30)}), which is not Unicode text; "
                                 "send valid UTF-8", action, field) from None
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


# -- the actions: one record each --------------------------------------------------------------
@dataclass(frozen=True)
class Action:
    """One action of the protocol.

    ``properties`` are its fields' JSON Schemas (the tool's ``parameters``), ``required``
    the fields it needs (the others are optional); ``parse(obj, max_regions)`` checks the
    fields of a decoded action whose field names are known to be right and returns them
    checked (regions as 4-tuples, texts as strings, numbers as ints), raising
    :class:`~vicogym.errors.InvalidEdit`. ``form`` and ``hint`` are its line in
    :func:`contract_text` (``{max_regions}`` in ``hint`` is filled in), ``tool_hint`` its
    words in :func:`tool_contract_text`."""

    name: str
    description: str
    properties: Mapping[str, Any]
    required: tuple[str, ...]
    parse: Callable[[Mapping[str, Any], int], dict[str, Any]]
    form: str
    hint: str
    tool_hint: str

    @property
    def optional(self) -> tuple[str, ...]:
        """The fields it may leave out, in :attr:`properties` order."""
        return tuple(f for f in self.properties if f not in self.required)

    def tool_schema(self) -> dict[str, Any]:
        """The action as an OpenAI function tool (what the verl and TRL tools and the
        OpenEnv server send)."""
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": {"type": "object", "properties": dict(self.properties),
                                                                "required": list(self.required)}}}


def _parse_zoom(obj: Mapping[str, Any], max_regions: int) -> dict[str, Any]:
    regions = _listed(obj, "regions", "zoom", "{x0, y0, x1, y1}")
    if len(regions) > max_regions:
        raise _fail("too_many_regions", f"{len(regions)} regions; one zoom takes at most {max_regions}", "zoom",
                    "regions")
    return {"image": _image(obj["image"], "zoom"), "regions": [_region(r, k) for k, r in enumerate(regions)],
            "note": _text(obj.get("note"), "zoom", "note")}


def _parse_note(obj: Mapping[str, Any], max_regions: int) -> dict[str, Any]:
    name = "note"
    parsed = []
    for k, note in enumerate(_listed(obj, "notes", name, "{at, text, image}")):
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
    return {"notes": parsed}


def _parse_view(obj: Mapping[str, Any], max_regions: int) -> dict[str, Any]:
    return {"units": _units(obj["units"], "view")}


def _parse_compose(obj: Mapping[str, Any], max_regions: int) -> dict[str, Any]:
    cols = obj.get("cols")
    if cols is not None and not is_int(cols, 1, 8):
        raise _fail("bad_value", f"expected cols as a whole number in [1, 8], got {brief(cols)}", "compose", "cols")
    return {"units": _units(obj["units"], "compose"), "cols": cols}


def _parse_answer(obj: Mapping[str, Any], max_regions: int) -> dict[str, Any]:
    answer = obj["answer"]
    if is_int(answer) and answer.bit_length() > 4 * MAX_TEXT:  # more digits than an answer holds
        raise _fail("bad_value", f"answer is {int_size(answer)}; keep it under {MAX_TEXT} characters", "answer",
                    "answer")
    if is_number(answer):
        answer = str(answer)
    return {"answer": _text(answer, "answer", "answer"), "note": _text(obj.get("note"), "answer", "note")}


_REGION = {"type": "object", "description": "a box in fractions [0, 1] of the image",
           "properties": {k: {"type": "number"} for k in ("x0", "y0", "x1", "y1")},
           "required": ["x0", "y0", "x1", "y1"]}
_UNITS = {"type": "array", "items": {"type": "integer"}, "description": "unit numbers of the task's pool"}
_NOTE = {"type": "object", "properties": {
    "image": {"type": "integer"},
    "at": {"type": "array", "items": {"type": "number"}, "description": "[x, y] in [0, 1]"},
    "text": {"type": "string"}}, "required": ["image", "at", "text"]}

#: the actions by name, in the order the contracts list them
ACTION_TABLE: dict[str, Action] = {a.name: a for a in (
    Action("zoom", "Zoom into regions of a sent image: each region becomes a new, sharper view cut from the "
                   "original unit.",
           {"image": {"type": "integer", "description": "the number of a sent image"},
            "regions": {"type": "array", "items": _REGION,
                        "description": "boxes {x0, y0, x1, y1} in fractions [0, 1] of the image (at most max_regions)"},
            "note": {"type": "string", "description": "what you look for"}},
           ("image", "regions"), _parse_zoom,
           '{"action": "zoom", "image": N, "regions": [{"x0": .., "y0": .., "x1": .., "y1": ..}], "note": ".."}',
           "at most {max_regions} regions, fractions in [0, 1] of image N; each region becomes a new, sharper view "
           "cut from the original",
           "at most {max_regions} regions of an image, fractions in [0, 1]; each becomes a new, sharper view cut "
           "from the original"),
    Action("note", "Place numbered rings on points of sent images; they stay drawn on every later view.",
           {"notes": {"type": "array", "description": "rings {image, at: [x, y] in fractions [0, 1], text}",
                      "items": _NOTE}},
           ("notes",), _parse_note, '{"action": "note", "notes": [{"image": N, "at": [x, y], "text": ".."}]}',
           "a numbered ring that stays on later views", "numbered rings that stay on later views"),
    Action("view", "Attach more units of the task's pool, each as its own image.", {"units": _UNITS}, ("units",),
           _parse_view, '{"action": "view", "units": [i, ...]}', "attach more source units of this task",
           "attach more source units of this task"),
    Action("compose", "Tile units of the pool into one labelled sheet.",
           {"units": _UNITS, "cols": {"type": "integer", "description": "columns of the sheet"}}, ("units",),
           _parse_compose, '{"action": "compose", "units": [i, ...], "cols": C}', "tile units into one labelled sheet",
           "tile units into one labelled sheet"),
    Action("answer", "Give the final answer; it ends the task.",
           {"answer": {"type": "string", "description": "the answer, as the question's contract asks"},
            "note": {"type": "string", "description": "why, briefly"}},
           ("answer",), _parse_answer, '{"action": "answer", "answer": "..", "note": ".."}', "ends the episode",
           "ends the task"),
)}
ACTIONS = tuple(ACTION_TABLE)
ERROR_CODES: Mapping[str, str] = {
    "unknown_action": f"an action other than {', '.join(ACTIONS[:-1])} and {ACTIONS[-1]}",
    "unknown_image": "an image number that is not among the images sent in this request",
    "unknown_unit": "a unit number outside the task's pool",
    "bad_region": "a region outside [0, 1], empty, or lying on no image of the view",
    "too_many_regions": "more zoom regions than max_regions in one action",
    "crop_budget": "more zoom views than max_crops in the episode",
    "note_budget": "more notes than max_notes in the episode",
    "image_budget": "more units in one view or compose action than images per request allow",
}
register_error_codes("evidence", ERROR_CODES)


def _listing(items: list[str]) -> str:
    return f"{', '.join(items[:-1])} and {items[-1]}" if len(items) > 1 else "".join(items)


def contract_text(max_regions: int) -> str:
    """The protocol as an executor is told it."""
    lines = [f"- {a.form} ({a.hint.replace('{max_regions}', str(max_regions))})" for a in ACTION_TABLE.values()]
    return "Reply with exactly one JSON object, one action per reply:\n" + "\n".join(lines)


def tool_contract_text(max_regions: int) -> str:
    """The protocol as an executor that calls tools is told it (the tools' schemas carry
    the arguments; rows played by a trainer's tool loop)."""
    tools = [f"{a.name} ({a.tool_hint.replace('{max_regions}', str(max_regions))})" for a in ACTION_TABLE.values()]
    return (f"Read the images through the tools, one or more calls per reply: {_listing(tools)}. Images are numbered "
            "in the order they were sent, from 0.")


def parse_action(action: Any, max_regions: int = 2) -> dict[str, Any]:
    """A checked action: ``{"action": name, ...fields}`` with regions as 4-tuples,
    texts as strings and numbers as ints (the fields as its :class:`Action` parses them)."""
    obj = decode(action)
    name = obj.get("action")
    spec = ACTION_TABLE.get(name) if isinstance(name, str) else None
    if spec is None:
        names = list(ACTION_TABLE)
        hint = did_you_mean(name, names) if isinstance(name, str) else ""
        raise _fail("unknown_action", f"unknown action {brief(name)}{hint}; use one of {', '.join(names)}",
                    field="action")
    required, optional = set(spec.required), set(spec.optional)
    given = set(obj) - {"action"}
    missing, unknown = required - given, given - required - optional
    if missing:
        raise _fail("bad_field", f"{name} needs {', '.join(sorted(missing))}", name, sorted(missing)[0])
    if unknown:
        field = sorted(unknown)[0]
        raise _fail("bad_field", f"{name} has no field {brief(field)}{did_you_mean(field, required | optional)} "
                                 f"(fields: {', '.join(sorted(required | optional))})", name, field)
    return {"action": name, **spec.parse(obj, max_regions)}


def tool_schema_of(action: str) -> dict[str, Any]:
    """The OpenAI function schema of evidence action ``action``."""
    return ACTION_TABLE[action].tool_schema()


def episode_tools_kwargs(seed: int, settings: Mapping[str, Any], task_id: str) -> dict[str, Any]:
    """The ``extra_info.tools_kwargs`` of an evidence row: every tool's ``create_kwargs``
    name the episode (its seed and settings; the task id, checked at the first call)."""
    create = {"seed": int(seed), "settings": canonical_json(dict(settings)), "task_id": task_id}
    return {name: {"create_kwargs": dict(create)} for name in ACTION_TABLE}
