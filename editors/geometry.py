"""Edits of the geometry arm: op schemas, a pure ``apply`` and a sampler.

Ops (``{"op": name, ...}``; points and circles are addressed by name, givens by key as
:func:`~vicogym.structures.geometry.givens` names them, e.g. ``length:A,B``):

==============  =====================================  =========================================
op              fields                                 changes
==============  =====================================  =========================================
set_given       given, value                           a length's or an angle's value
move_point      point, [length], [angle], [side]       where a made point lies (the numbers of
                                                       the step that makes it)
add_step        step, [draw]                           a construction step at the end (an
                                                       auxiliary line, an inscribed circle) and
                                                       what of it is drawn
remove_step     name                                   the step that makes a point or a circle
                                                       nothing else is made from, and its drawing
add_element     element                                a drawn element (a distractor segment)
remove_element  element                                a drawn element
relabel         point, to                              a point's name (not one the question names)
show            given                                  a given printed or marked on the diagram
hide            given                                  a given taken off the diagram
style           [rotation], [scale], [line_width],     the drawing's style
                [font_size], [flip]
stop            (none)                                 ends the episode
==============  =====================================  =========================================

``{"replace": figure}`` replaces the whole figure (its JSON), checked by the same rules.
The question's text is fixed for an episode: an edit that changes a given the text states,
renames a point it names or changes its choices is refused (``contradicts_text``, ``named``);
a given the answer needs must stay in the text or on the diagram (``unstated``). So within
an episode a given the text states moves between "in the text" and "in the text and on the
diagram", and one only the diagram shows between "on the diagram" and (when the answer does
not need it) "not shown"; the seeds draw the whole ladder (``presentations``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from fractions import Fraction
from typing import Any

import numpy as np

from vicogym.core import Edit, fold_ops
from vicogym.core import short_repr as _short
from vicogym.errors import InvalidEdit
from vicogym.programs import geometry as programs
from vicogym.structures.geometry import (
    DRAW_KINDS,
    STEP_FIELDS,
    Figure,
    GeometryRule,
    Style,
    Surd,
    check_figure,
    givens,
    number_text,
    references,
    solve,
)
from vicogym.validation import pick

OP_FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "set_given": (("given", "value"), ()),
    "move_point": (("point",), ("length", "angle", "side")),
    "add_step": (("step",), ("draw",)),
    "remove_step": (("name",), ()),
    "add_element": (("element",), ()),
    "remove_element": (("element",), ()),
    "relabel": (("point", "to"), ()),
    "show": (("given",), ()),
    "hide": (("given",), ()),
    "style": ((), ("rotation", "scale", "line_width", "font_size", "flip")),
    "stop": ((), ()),
}
_NUMBER = {"oneOf": [{"type": "number"}, {"type": "string", "maxLength": 64}],
           "description": "an exact number: 6, 5/2, 2.5, 2√3 or 2*sqrt(3); angles are multiples of 15 degrees"}
FIELD_SCHEMAS = {
    "given": {"type": "string", "description": "a given's key, e.g. length:A,B or angle:B,A,C"},
    "value": _NUMBER, "length": _NUMBER, "angle": _NUMBER,
    "side": {"enum": [1, -1]},
    "point": {"type": "string", "description": "a point's name"},
    "to": {"type": "string", "description": "a new point name: a capital letter, optionally followed by ' or a digit"},
    "name": {"type": "string", "description": "a point's or a circle's name"},
    "step": {"type": "object", "description": "a construction step: {\"op\": one of " + ", ".join(STEP_FIELDS)
             + ", ...} (see docs/geometry.md)"},
    "draw": {"type": "array", "items": {"type": "array", "items": {"type": "string"}}},
    "element": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 4,
                "description": "[\"segment\", \"A\", \"B\"], [\"ray\", A, B], [\"line\", A, B], [\"circle\", c] or "
                               "[\"arc\", c, P, Q]"},
    "rotation": {"type": "integer", "minimum": -180, "maximum": 180},
    "scale": {"type": "number", "minimum": 0.4, "maximum": 0.95},
    "line_width": {"type": "number", "minimum": 0.8, "maximum": 4.0},
    "font_size": {"type": "number", "minimum": 7.0, "maximum": 20.0},
    "flip": {"type": "boolean"},
}


def named_points(rule: Any) -> set[str]:
    """The points (and circles) the question names: what it asks and the givens it states."""
    out: set[str] = set()
    if isinstance(rule, Mapping):
        for key, value in rule.items():
            if key in ("question", "kind", "relation", "measure", "distractors", "order"):
                continue
            if key == "text":
                for k in value:
                    out.update(k.split(":", 1)[1].split(","))
            else:
                out |= named_points(value)
    elif isinstance(rule, (list, tuple)):
        for v in rule:
            out |= named_points(v)
    elif isinstance(rule, str):
        out.add(rule)
    return out


def _figure_from(figure: Figure, steps: list[dict[str, Any]] | None = None, **changes: Any) -> Figure:
    """A checked figure (the editors' one way to build one)."""
    data = figure.to_dict()
    if steps is not None:
        data["steps"] = steps
    data.update(changes)
    return Figure.from_dict(data)


def _made_by(figure: Figure, name: Any, field: str) -> int:
    for i, s in enumerate(figure.steps):
        if name in (s.get("point"), s.get("circle")) or (s["op"] in ("incircle", "circumcircle")
                                                         and name == s["center"]):
            return i
    raise InvalidEdit("not_found", f"{field} {_short(name)} is not a point or circle of the figure (it has "
                      f"{figure.point_names() + figure.circle_names()})", field=field)


def _set_given(figure: Figure, op: Mapping[str, Any], rule: GeometryRule) -> Figure:
    key = op["given"]
    by_key = {g.key: g for g in givens(figure)}
    if not isinstance(key, str) or key not in by_key:
        raise InvalidEdit("not_found", f"given {_short(key)} is not a given of the figure; givens: {sorted(by_key)}",
                          field="given")
    g = by_key[key]
    if g.value is None:
        raise InvalidEdit("bad_value", f"{key} is a mark with no value; show or hide it instead", field="given")
    if key in rule.get("text", []):
        raise InvalidEdit("contradicts_text", f"the question's text states {g.statement()}; change a given the "
                          "diagram alone shows", field="given")
    steps = [dict(s) for s in figure.steps]
    s = steps[g.step]
    angle = g.kind == "angle"
    value = number_text(op["value"], "value", angle=angle)
    if angle:
        measure = Fraction(value)
        if measure <= 0:
            raise InvalidEdit("bad_value", f"an angle's measure is positive, got {_short(op['value'])}", field="value")
        if s["op"] == "asa":
            index = 0 if g.names[1] == s["from"][0] else 1
            s["angles"] = [value if i == index else a for i, a in enumerate(s["angles"])]
        else:  # the step's own sign says which way it turns; the given is the measure
            turned = -measure if Fraction(s["angle"]) < 0 and measure != 180 else measure
            s["angle"] = str(turned)
    elif s["op"] == "sss":
        index = 0 if g.names[0] == s["from"][0] else 1
        s["lengths"] = [value if i == index else v for i, v in enumerate(s["lengths"])]
    else:
        s["length"] = value
    if steps[g.step] == dict(figure.steps[g.step]):
        raise InvalidEdit("no_change", f"{key} already has the value {g.value}", field="value")
    return _figure_from(figure, steps)


def _move_point(figure: Figure, op: Mapping[str, Any], rule: GeometryRule) -> Figure:
    i = _made_by(figure, op["point"], "point")
    steps = [dict(s) for s in figure.steps]
    s = steps[i]
    fields = {k: op[k] for k in ("length", "angle", "side") if k in op}
    if not fields:
        raise InvalidEdit("bad_field", "move_point takes length, angle or side (the numbers of the step that makes "
                          "the point)", field="point")
    for k, v in fields.items():
        if k == "side":
            if "side" not in s:
                raise InvalidEdit("bad_field", f"{op['point']} is made by {s['op']}, which has no side", field="side")
            s["side"] = v
        elif k in s:
            s[k] = v
        elif k + "s" in s:
            raise InvalidEdit("bad_field", f"{op['point']} is made by {s['op']} from two numbers ({k}s); change them "
                              "with set_given", field=k)
        else:
            raise InvalidEdit("bad_field", f"{op['point']} is made by {s['op']}, which has no {k}", field=k)
    new = _figure_from(figure, steps)
    stated = {g.key: g.value for g in givens(figure) if g.key in rule.get("text", [])}
    now = {g.key: g.value for g in givens(new)}
    if any(now.get(k) != v for k, v in stated.items()):
        raise InvalidEdit("contradicts_text", f"moving {op['point']} changes a given the question's text states "
                          f"({sorted(k for k, v in stated.items() if now.get(k) != v)})", field="point")
    return new


def _add_step(figure: Figure, op: Mapping[str, Any], rule: GeometryRule) -> Figure:
    step = op["step"]
    draw = op.get("draw", [])
    if not isinstance(step, Mapping):
        raise InvalidEdit("bad_field", "step must be a construction step object", field="step")
    if not isinstance(draw, list):
        raise InvalidEdit("bad_field", "draw must be a list of elements", field="draw")
    return _figure_from(figure, [dict(s) for s in figure.steps] + [dict(step)],
                        draw=[list(d) for d in figure.draw] + [list(d) if isinstance(d, list) else d for d in draw])


def _remove_step(figure: Figure, op: Mapping[str, Any], rule: GeometryRule) -> Figure:
    name = op["name"]
    i = _made_by(figure, name, "name")
    s = figure.steps[i]
    made = {s.get("point"), s.get("circle"), s.get("center") if s["op"] != "circle" else None} - {None}
    if i == 0 or s["op"] == "origin":
        raise InvalidEdit("bad_value", "the origin cannot be removed", field="name")
    if made & named_points(rule) or made & programs.asked_objects(rule, figure):
        raise InvalidEdit("named", f"the question reads {sorted(made)}", field="name")
    users = [t.get("point") or t.get("circle") for t in figure.steps[i + 1:]
             if any(n in made for n, _ in references(t))]
    if users:
        raise InvalidEdit("bad_value", f"{sorted(made)} is used by {users}; remove those first", field="name")
    keys = {g.key for g in givens(figure) if g.step == i}
    return _figure_from(figure, [dict(t) for j, t in enumerate(figure.steps) if j != i],
                        draw=[list(d) for d in figure.draw if not set(d[1:]) & made],
                        diagram=[k for k in figure.diagram if k not in keys])


def _element(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value) or \
            value[0] not in DRAW_KINDS:
        raise InvalidEdit("bad_field", f"element must be like [\"segment\", \"A\", \"B\"], got {_short(value)}",
                          field="element")
    return tuple(value)


def _add_element(figure: Figure, op: Mapping[str, Any], rule: GeometryRule) -> Figure:
    element = _element(op["element"])
    if element in figure.draw:
        raise InvalidEdit("no_change", f"{list(element)} is already drawn", field="element")
    return _figure_from(figure, draw=[list(d) for d in figure.draw] + [list(element)])


def _remove_element(figure: Figure, op: Mapping[str, Any], rule: GeometryRule) -> Figure:
    element = _element(op["element"])
    if element not in figure.draw:
        raise InvalidEdit("not_found", f"{list(element)} is not drawn; drawn: {[list(d) for d in figure.draw]}",
                          field="element")
    return _figure_from(figure, draw=[list(d) for d in figure.draw if d != element])


def _rename(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        return new if value == old else value
    if isinstance(value, list):
        return [_rename(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: _rename(v, old, new) for k, v in value.items()}
    return value


def _relabel(figure: Figure, op: Mapping[str, Any], rule: GeometryRule) -> Figure:
    old, new = op["point"], op["to"]
    if old not in figure.point_names() and old not in {s["center"] for s in figure.steps if "center" in s}:
        raise InvalidEdit("not_found", f"point {_short(old)} is not in the figure", field="point")
    if old in named_points(rule):
        raise InvalidEdit("named", f"the question names {old}; rename a point it does not name", field="point")
    if not isinstance(new, str):
        raise InvalidEdit("bad_value", "to must be a point name", field="to")
    data = figure.to_dict()
    steps = _rename(data["steps"], old, new)
    draw = _rename(data["draw"], old, new)
    renamed = {g.key: None for g in givens(figure)}
    new_keys = [g.key for g in givens(Figure(tuple(steps), ()))]
    mapping = dict(zip(renamed, new_keys))
    return _figure_from(figure, steps, draw=draw, diagram=[mapping.get(k, k) for k in figure.diagram])


def _show(figure: Figure, op: Mapping[str, Any], rule: GeometryRule) -> Figure:
    key = op["given"]
    keys = [g.key for g in givens(figure)]
    if key not in keys:
        raise InvalidEdit("not_found", f"given {_short(key)} is not a given of the figure; givens: {keys}",
                          field="given")
    if key in figure.diagram:
        raise InvalidEdit("no_change", f"the diagram already shows {key}", field="given")
    return _figure_from(figure, diagram=list(figure.diagram) + [key])


def _hide(figure: Figure, op: Mapping[str, Any], rule: GeometryRule) -> Figure:
    key = op["given"]
    if key not in figure.diagram:
        raise InvalidEdit("not_found", f"the diagram does not show {_short(key)}; it shows {list(figure.diagram)}",
                          field="given")
    return _figure_from(figure, diagram=[k for k in figure.diagram if k != key])


def _style(figure: Figure, op: Mapping[str, Any], rule: GeometryRule) -> Figure:
    changes = {k: v for k, v in op.items() if k != "op"}
    if not changes:
        raise InvalidEdit("bad_field", "style takes rotation, scale, line_width, font_size or flip", field="op")
    return replace(figure, style=Style(**{**figure.style.to_dict(), **changes}))


#: the JSON type each name-like field must have (the op functions may then look names up)
FIELD_TYPES: dict[str, tuple[type, ...]] = {"given": (str,), "point": (str,), "to": (str,), "name": (str,),
                                            "element": (list,), "step": (dict,), "draw": (list,)}


def _checked(op: Mapping[str, Any]) -> Mapping[str, Any]:
    for field, types in FIELD_TYPES.items():
        if field in op and not isinstance(op[field], types):
            kind = {str: "a string", list: "a list", dict: "an object"}[types[0]]
            raise InvalidEdit("bad_field", f"{field} must be {kind}, got {_short(op[field])}", field=field)
    return op


OPS: dict[str, Callable[[Figure, Mapping[str, Any], GeometryRule], Figure]] = {
    "set_given": _set_given, "move_point": _move_point, "add_step": _add_step, "remove_step": _remove_step,
    "add_element": _add_element, "remove_element": _remove_element, "relabel": _relabel, "show": _show,
    "hide": _hide, "style": _style,
}


def apply(figure: Figure, edit: Edit | Mapping[str, Any] | str, rule: GeometryRule) -> Figure:
    """The figure after ``edit``, or ``InvalidEdit``. Pure. The result is constructible,
    answers the rule, asks the rule's question word for word and shows every given the
    answer needs (in the text or on the diagram)."""
    edit = Edit.parse(edit)
    if edit.replace is not None:
        new = Figure.from_dict(dict(edit.replace))
        where = "replace"
    else:
        new, stopped = fold_ops(edit, figure, lambda current, op: OPS[op["op"]](current, _checked(op), rule),
                                OP_FIELDS)
        if stopped:
            return figure
        where = f"ops[{len(edit.ops) - 1}] {edit.ops[-1]['op']}"
    try:
        check_figure(new)
        solved = solve(new)
        programs.relabel(new, rule)
        question = programs.question_text(new, rule, solved)
    except InvalidEdit as exc:
        raise exc.at(where) from None
    if question != rule.get("question"):
        raise InvalidEdit("contradicts_text", f"the edit changes the question's text to {question!r}; the text is "
                          "fixed for the episode (keep the givens it states, the points it names and its choices)",
                          op=where)
    missing = programs.unstated(rule, new, solved)
    if missing:
        raise InvalidEdit("unstated", f"the answer needs {missing}, which neither the text nor the diagram would show; "
                          "show it on the diagram", op=where)
    return new


# -- sampling the edit space ---------------------------------------------------------------
def sample_op(figure: Figure, rule: GeometryRule, rng: np.random.Generator) -> dict[str, Any]:
    """One op from the arm's edit space (it may still be rejected)."""
    gs = givens(figure)
    valued = [g for g in gs if g.value is not None and g.key not in rule.get("text", [])]
    kind = pick(rng, ["set_given", "set_given", "set_given", "show", "hide", "style", "add_element", "add_element",
                      "remove_element", "relabel", "add_step", "add_step"])
    if kind == "set_given" and valued:
        g = pick(rng, valued)
        if g.kind == "angle":
            v = Fraction(g.value) + 15 * int(rng.choice([-2, -1, 1, 2]))
            return {"op": "set_given", "given": g.key, "value": str(v)}
        if "√" in g.value:  # a root back to a whole number near it
            near = max(1, round(Surd.parse(g.value).to_float()))
            return {"op": "set_given", "given": g.key, "value": str(near)}
        v = Fraction(g.value)
        if rng.random() < 0.3:  # a whole length to a root: the answer's arithmetic grows
            root = f"{v.numerator}√{int(rng.choice([2, 3]))}" + (f"/{v.denominator}" if v.denominator != 1 else "")
            return {"op": "set_given", "given": g.key, "value": root}
        new = v + int(rng.choice([-2, -1, 1, 2])) if v > 2 else v * 2
        return {"op": "set_given", "given": g.key, "value": str(new)}
    if kind == "show":
        hidden = [g.key for g in gs if g.key not in figure.diagram]
        if hidden:
            return {"op": "show", "given": pick(rng, hidden)}
    if kind == "hide" and figure.diagram:
        return {"op": "hide", "given": pick(rng, list(figure.diagram))}
    if kind == "add_element":
        pts = figure.point_names()
        a, b = (pts[int(i)] for i in rng.choice(len(pts), 2, replace=False))
        return {"op": "add_element", "element": ["segment", a, b]}
    if kind == "remove_element" and figure.draw:
        return {"op": "remove_element", "element": list(pick(rng, list(figure.draw)))}
    if kind == "relabel":
        free = [p for p in figure.point_names() if p not in named_points(rule)]
        unused = [c for c in "DEFGHJKLMNPQRSTUVWXYZ" if c not in figure.point_names()
                  and c not in {s.get("center") for s in figure.steps}]
        if free and unused:
            return {"op": "relabel", "point": pick(rng, free), "to": pick(rng, unused)}
    if kind == "add_step":
        pts = figure.point_names()
        unused = [c for c in "DEFGHJKLMNPQRSTUVWXYZ" if c not in pts and c not in {s.get("center")
                                                                                   for s in figure.steps}]
        if len(pts) >= 2 and unused:
            a, b = (pts[int(i)] for i in rng.choice(len(pts), 2, replace=False))
            name = pick(rng, unused)
            return {"op": "add_step", "step": {"op": "midpoint", "point": name, "of": [a, b]},
                    "draw": [["segment", a, b]] if ("segment", a, b) not in figure.draw
                    and ("segment", b, a) not in figure.draw else []}
    rotation = int(rng.integers(-12, 13)) * 15
    return {"op": "style", "rotation": rotation if rotation != figure.style.rotation else 0,
            "font_size": float(pick(rng, [10.0, 11.0, 12.0, 13.0])), "flip": bool(rng.random() < 0.3)}

