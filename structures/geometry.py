"""The geometry arm's structure: a plane construction, solved exactly.

A :class:`Figure` is a list of construction *steps*, each of which makes one named object
(a point or a circle) from numbers and from the objects made before it, plus what is drawn
(segments, rays, lines, circles, arcs), which givens the diagram shows, and the drawing's
style. The steps' numbers are the *givens*: lengths and angle measures, and the marks that
a construction implies (a midpoint's equal ticks, a foot's right angle, a parallel's
arrows, a tangent's right angle). Because every step is fixed by its givens up to a rigid
motion (the first point is the origin, the second lies on the x axis), every length, angle
and area of the figure is determined by the givens and computed here exactly, in the
field of surds (:class:`Surd`: sums of rationals times square roots), never with floats:
angles are multiples of 15 degrees, whose sines and cosines are surds.

Steps (``op`` and fields; ``side`` is +1 for the left of the directed base, -1 for its right):

============== ================================================ ==============================
op             fields                                           givens it adds
============== ================================================ ==============================
origin         point                                            --
polar          point, from, length, angle, ref (or null)        |from point|; angle ref-from-point
sss            point, from [A, B], lengths [|AP|, |BP|], side   |AP|, |BP|
asa            point, from [A, B], angles [at A, at B], side    angle B-A-P, angle A-B-P
midpoint       point, of [A, B]                                 P is the midpoint of AB
foot           point, from, to [A, B]                           from-P perpendicular to AB
intersect      point, lines [[A, B], [C, D]]                    --
parallel       point, through, to [A, B], length                through-P parallel to AB; |through P|
circle         circle, center, through                          --
on_circle      point, circle, ref, angle                        angle ref-center-point
incircle       circle, center, of [A, B, C]                     the circle is inscribed in ABC
circumcircle   circle, center, of [A, B, C]                     --
tangent        point, from, circle, side                        from-P tangent to the circle at P
============== ================================================ ==============================

Angles are in degrees, counter-clockwise from the ray ``from -> ref``, in (-180, 180];
numbers are JSON strings of exact values (``"6"``, ``"5/2"``, ``"2*sqrt(3)"``) or numbers.

Drawn elements: ``["segment", A, B]``, ``["ray", A, B]`` (from A through B to the frame),
``["line", A, B]``, ``["circle", c]`` and ``["arc", c, P, Q]`` (counter-clockwise from P to Q).
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any, Literal, TypedDict

import numpy as np

from vicogym.core import canonical_json
from vicogym.errors import InvalidEdit, register_error_codes
from vicogym.validation import is_int, is_number

#: edit error codes the geometry arm adds to the core's
ERROR_CODES = {
    "degenerate_figure": "a construction that cannot be carried out or collapses: a triangle that violates the "
                         "triangle inequality, parallel lines asked to meet, a tangent from inside its circle, two "
                         "points at one place, a zero angle",
    "unstated": "a given the answer needs that neither the question's text nor the diagram shows",
    "contradicts_text": "an edit of a given that the question's text states: the figure would contradict the text",
    "crowded": "a figure a reader cannot read: an angle under 10 degrees, points or labels too close, a segment "
               "too short to label, a label over a line or another label, text under the legible size",
    "off_scale": "a drawing that does not agree with its givens within a pixel (not to scale)",
    "named": "a point the question names cannot be renamed, removed or made a new way",
    "undrawn_mark": "the diagram marks a given on a line or circle the figure does not draw (a length beside, an "
                    "angle between, ticks, arrows or a right angle on pieces that are not there)",
}
register_error_codes("geometry", ERROR_CODES)

STEP_FIELDS: Mapping[str, tuple[str, ...]] = {
    "origin": ("point",),
    "polar": ("point", "from", "length", "angle", "ref"),
    "sss": ("point", "from", "lengths", "side"),
    "asa": ("point", "from", "angles", "side"),
    "midpoint": ("point", "of"),
    "foot": ("point", "from", "to"),
    "intersect": ("point", "lines"),
    "parallel": ("point", "through", "to", "length"),
    "circle": ("circle", "center", "through"),
    "on_circle": ("point", "circle", "ref", "angle"),
    "incircle": ("circle", "center", "of"),
    "circumcircle": ("circle", "center", "of"),
    "tangent": ("point", "from", "circle", "side"),
}
DRAW_KINDS = {"segment": 2, "ray": 2, "line": 2, "circle": 1, "arc": 3}
GIVEN_KINDS = ("length", "angle", "midpoint", "perpendicular", "parallel", "tangent", "inscribed")
#: a point's name: a capital letter, optionally primed or with a digit (A, B', P1)
POINT_NAME = re.compile(r"^[A-Z](?:'|[0-9])?$")
CIRCLE_NAME = re.compile(r"^[a-z][a-z0-9]{0,3}$")
MAX_STEPS = 24
#: the largest length and the smallest length a given may take (units)
MAX_LENGTH = 1000


class GeometryRule(TypedDict, total=False):
    """A question's label rule (see :mod:`vicogym.programs.geometry`): ``kind`` is the
    family, ``target`` what it asks, ``text`` the given keys the question's text states."""

    kind: Literal["angle", "length", "perimeter", "area", "ratio", "arc", "count", "relation", "choice"]
    target: dict[str, Any]
    text: list[str]
    question: str


@dataclass(frozen=True)
class Style:
    """How the figure is drawn: ``rotation`` (degrees, counter-clockwise), ``scale`` (the
    share of the canvas the figure's box fills), ``line_width`` and ``font_size`` (points
    at the renderer's dpi), ``flip`` (mirror across the vertical axis)."""

    rotation: int = 0
    scale: float = 0.8
    line_width: float = 1.6
    font_size: float = 11.0
    flip: bool = False

    def __post_init__(self) -> None:
        if not is_int(self.rotation, -180, 180):
            raise InvalidEdit("bad_value", f"rotation must be an integer of degrees in [-180, 180], got "
                              f"{self.rotation!r}", field="rotation")
        for name, low, high in (("scale", 0.4, 0.95), ("line_width", 0.8, 4.0), ("font_size", 7.0, 20.0)):
            v = getattr(self, name)
            if not is_number(v) or not low <= float(v) <= high:
                raise InvalidEdit("bad_value", f"{name} must be a number in [{low}, {high}], got {v!r}", field=name)
            object.__setattr__(self, name, float(v))
        if not isinstance(self.flip, bool):
            raise InvalidEdit("bad_value", f"flip must be true or false, got {self.flip!r}", field="flip")

    def to_dict(self) -> dict[str, Any]:
        return {"rotation": self.rotation, "scale": self.scale, "line_width": self.line_width,
                "font_size": self.font_size, "flip": self.flip}


@dataclass(frozen=True)
class Figure:
    """A construction (``steps``), what is drawn (``draw``), the given keys the diagram
    prints or marks (``diagram``) and the ``style``."""

    steps: tuple[Mapping[str, Any], ...]
    draw: tuple[tuple[str, ...], ...]
    diagram: tuple[str, ...] = ()
    style: Style = field(default_factory=Style)

    def to_dict(self) -> dict[str, Any]:
        return {"steps": [dict(s) for s in self.steps], "draw": [list(d) for d in self.draw],
                "diagram": list(self.diagram), "style": self.style.to_dict()}

    def payloads(self) -> dict[str, bytes]:
        return {}

    def canonical(self) -> str:
        return canonical_json(self.to_dict())

    @classmethod
    def from_dict(cls, data: Any) -> Figure:
        """A figure from its JSON form, checked (``InvalidEdit`` naming what is wrong)."""
        if not isinstance(data, Mapping):
            raise InvalidEdit("bad_value", f"a figure is a JSON object with steps, draw, diagram and style, got "
                              f"{type(data).__name__}")
        unknown = set(data) - {"steps", "draw", "diagram", "style"}
        if unknown:
            raise InvalidEdit("bad_field", f"unknown figure keys {sorted(unknown)}; a figure has steps, draw, "
                              "diagram and style")
        steps, draw = data.get("steps"), data.get("draw", [])
        if not isinstance(steps, list) or not steps:
            raise InvalidEdit("bad_value", "steps must be a non-empty list of construction steps", field="steps")
        if not isinstance(draw, list) or not all(isinstance(d, list) for d in draw):
            raise InvalidEdit("bad_value", "draw must be a list of elements such as [\"segment\", \"A\", \"B\"]",
                              field="draw")
        diagram = data.get("diagram", [])
        if not isinstance(diagram, list) or not all(isinstance(k, str) for k in diagram):
            raise InvalidEdit("bad_value", "diagram must be a list of given keys", field="diagram")
        style = data.get("style", {})
        if not isinstance(style, Mapping) or set(style) - set(Style().to_dict()):
            raise InvalidEdit("bad_field", f"style must be an object with keys among {sorted(Style().to_dict())}",
                              field="style")
        figure = cls(tuple(_check_step(s, i) for i, s in enumerate(steps)),
                     tuple(tuple(str(x) for x in d) for d in draw), tuple(dict.fromkeys(diagram)), Style(**style))
        check_figure(figure)
        return figure

    def point_names(self) -> list[str]:
        return [s["point"] for s in self.steps if "point" in s]

    def circle_names(self) -> list[str]:
        return [s["circle"] for s in self.steps if "circle" in s and s["op"] in ("circle", "incircle",
                                                                                  "circumcircle")]

    def with_steps(self, steps: Sequence[Mapping[str, Any]]) -> Figure:
        return replace(self, steps=tuple(dict(s) for s in steps))


def _check_step(step: Any, index: int) -> dict[str, Any]:
    where = f"steps[{index}]"
    if not isinstance(step, Mapping) or not isinstance(step.get("op"), str) or step["op"] not in STEP_FIELDS:
        raise InvalidEdit("bad_value", f"{where} must be an object whose op is one of {sorted(STEP_FIELDS)}",
                          field="steps")
    expected = set(STEP_FIELDS[step["op"]]) | {"op"}
    missing, extra = expected - set(step) - ({"ref"} if step["op"] == "polar" else set()), set(step) - expected
    if missing or extra:
        raise InvalidEdit("bad_field", f"{where} ({step['op']}) takes {sorted(expected)}; missing {sorted(missing)}, "
                          f"unknown {sorted(extra)}", field="steps")
    out = dict(step)
    if step["op"] == "polar":
        out.setdefault("ref", None)
    _check_names(out, where)
    for key in ("length", "angle"):
        if key in out:  # a polar step without ref sets a direction, no given: 0 is allowed
            out[key] = number_text(out[key], f"{where}.{key}", angle=key == "angle",
                                   zero=out["op"] == "polar" and out.get("ref") is None)
    for key in ("lengths", "angles"):
        if key in out:
            if not isinstance(out[key], list) or len(out[key]) != 2:
                raise InvalidEdit("bad_value", f"{where}.{key} must be a list of two numbers", field=key)
            out[key] = [number_text(v, f"{where}.{key}", angle=key == "angles") for v in out[key]]
    if out["op"] == "asa" and any(Surd.parse(v).to_float() <= 0 for v in out["angles"]):
        raise InvalidEdit("bad_value", f"{where}.angles are the triangle's angles at its base: positive",
                          field="angles")
    if "side" in out and out["side"] not in (1, -1):
        raise InvalidEdit("bad_value", f"{where}.side must be 1 (left of the base) or -1 (right)", field="side")
    return out


#: how many names each list field of a step holds (a name field holds one string)
NAME_LISTS = {"of": {"midpoint": 2, "incircle": 3, "circumcircle": 3}, "to": 2, "lines": 2}


def _check_names(step: dict[str, Any], where: str) -> None:
    """Every field that names objects holds strings, as many as the op reads."""
    op = step["op"]
    for key in ("point", "circle", "center", "through", "ref"):
        if key in step and not (key == "ref" and step[key] is None and op == "polar") and \
                not isinstance(step[key], str):
            raise InvalidEdit("bad_value", f"{where}.{key} must be a name (a string), got {step[key]!r}"[:200],
                              field=key)
    if "from" in step:
        pair = op in ("sss", "asa")
        value = step["from"]
        good = isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value) if pair \
            else isinstance(value, str)
        if not good:
            raise InvalidEdit("bad_value", f"{where}.from must be {'a list of two names' if pair else 'a name'}",
                              field="from")
    for key in ("of", "to"):
        if key in step:
            n = NAME_LISTS[key] if key == "to" else NAME_LISTS["of"][op]
            value = step[key]
            if not isinstance(value, list) or len(value) != n or not all(isinstance(v, str) for v in value):
                raise InvalidEdit("bad_value", f"{where}.{key} must be a list of {n} names", field=key)
    if op == "intersect":
        lines = step["lines"]
        if not isinstance(lines, list) or len(lines) != 2 or not all(
                isinstance(x, list) and len(x) == 2 and all(isinstance(v, str) for v in x) for x in lines):
            raise InvalidEdit("bad_value", f"{where}.lines must be [[A, B], [C, D]]", field="lines")


def number_text(value: Any, where: str, angle: bool = False, zero: bool = False) -> str:
    """A given's number as its canonical exact text (``"5/2"``, ``"2√3"``), checked: a
    finite real of the exact arithmetic (:class:`Surd`); an angle is a whole multiple of
    15 degrees in (-180, 180], not 0 (its sine and cosine are exact surds)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise InvalidEdit("bad_value", f"{where} must be a number or an exact number as text, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidEdit("bad_value", f"{where} must be finite, got {value!r}")
    number = Surd.parse(str(value), where)
    if angle:
        degrees = number.rational()
        if degrees is None or degrees.denominator != 1 or degrees % 15 or not -180 < degrees <= 180 or \
                (degrees == 0 and not zero):
            raise InvalidEdit("bad_value", f"{where} must be a whole multiple of 15 degrees in (-180, 180]"
                              f"{'' if zero else ', not 0'} (so its sine and cosine are exact), got {value!r}")
    elif not number.positive():
        raise InvalidEdit("bad_value", f"{where} must be a positive length, got {value!r}")
    elif number.to_float() > MAX_LENGTH or number.to_float() < 1 / MAX_LENGTH:
        raise InvalidEdit("bad_value", f"{where} must lie in [1/{MAX_LENGTH}, {MAX_LENGTH}], got {value!r}")
    return str(number)


def check_figure(figure: Figure) -> None:
    """Names are unique and made before use, every drawn element names what exists, and
    every diagram key is a given of the figure (``InvalidEdit`` otherwise)."""
    if len(figure.steps) > MAX_STEPS:
        raise InvalidEdit("bad_value", f"a figure has at most {MAX_STEPS} steps, got {len(figure.steps)}",
                          field="steps")
    points: set[str] = set()
    circles: set[str] = set()
    for i, step in enumerate(figure.steps):
        for key, kind in references(step):
            known = points if kind == "point" else circles
            if key not in known:
                raise InvalidEdit("not_found", f"steps[{i}] ({step['op']}) uses {kind} {key!r} before it is made",
                                  field="steps")
        if "point" in step:
            name = step["point"]
            if not isinstance(name, str) or not POINT_NAME.match(name) or name in points:
                raise InvalidEdit("bad_value", f"steps[{i}] makes point {name!r}: a point's name is a new capital "
                                  "letter, optionally followed by ' or a digit", field="point")
            points.add(name)
        if step["op"] in ("circle", "incircle", "circumcircle"):
            name = step["circle"]
            if not isinstance(name, str) or not CIRCLE_NAME.match(name) or name in circles:
                raise InvalidEdit("bad_value", f"steps[{i}] makes circle {name!r}: a circle's name is a new lower-case "
                                  "word of at most 4 characters", field="circle")
            circles.add(name)
            if step["op"] != "circle":
                center = step["center"]
                if not isinstance(center, str) or not POINT_NAME.match(center) or center in points:
                    raise InvalidEdit("bad_value", f"steps[{i}] makes centre {center!r}: a new point name",
                                      field="center")
                points.add(center)
    if figure.steps[0]["op"] != "origin":
        raise InvalidEdit("bad_value", "the first step must be an origin (the figure's first point)", field="steps")
    if sum(s["op"] == "origin" for s in figure.steps) != 1:
        raise InvalidEdit("bad_value", "a figure has exactly one origin step", field="steps")
    for element in figure.draw:
        kind = element[0] if element else None
        if kind not in DRAW_KINDS or len(element) != DRAW_KINDS[kind] + 1:
            raise InvalidEdit("bad_value", f"a drawn element is one of {sorted(DRAW_KINDS)} with its names, got "
                              f"{list(element)}", field="draw")
        names = element[1:]
        circle_first = kind in ("circle", "arc")
        for j, name in enumerate(names):
            pool = circles if circle_first and j == 0 else points
            if name not in pool:
                raise InvalidEdit("not_found", f"drawn {kind} names {name!r}, which the figure does not make",
                                  field="draw")
        if kind in ("segment", "ray", "line") and names[0] == names[1]:
            raise InvalidEdit("bad_value", f"a {kind} joins two different points, got {list(element)}", field="draw")
    seen = {(e[0], frozenset(e[1:])) if e[0] in ("segment", "line") else tuple(e) for e in figure.draw}
    if len(seen) != len(figure.draw):
        raise InvalidEdit("bad_value", "an element is drawn twice (a segment or line AB is BA too)", field="draw")
    keys = {g.key for g in givens(figure)}
    stray = [k for k in figure.diagram if k not in keys]
    if stray:
        raise InvalidEdit("not_found", f"diagram shows {stray}, which are not givens of the figure (givens: "
                          f"{sorted(keys)})", field="diagram")


def references(step: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The names a step reads, with their kind (``point`` or ``circle``)."""
    op = step["op"]
    refs: list[tuple[str, str]] = []
    for key in ("from", "through", "center", "ref"):
        value = step.get(key)
        if key == "center" and op != "circle":
            continue
        if isinstance(value, str):
            refs.append((value, "point"))
        elif isinstance(value, list) and key == "from":
            refs.extend((v, "point") for v in value)
    for key in ("of", "to"):
        if isinstance(step.get(key), list):
            refs.extend((v, "point") for v in step[key])
    if op == "intersect":
        lines = step["lines"]
        if not isinstance(lines, list) or len(lines) != 2 or \
                not all(isinstance(x, list) and len(x) == 2 for x in lines):
            raise InvalidEdit("bad_value", "intersect takes lines as [[A, B], [C, D]]", field="lines")
        refs.extend((v, "point") for line in lines for v in line)
    if op in ("on_circle", "tangent"):
        refs.append((step["circle"], "circle"))
    for name, _ in refs:
        if not isinstance(name, str):
            raise InvalidEdit("bad_value", f"{op} names {name!r}: names are strings", field="steps")
    return refs


# -- givens ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Given:
    """A fact the construction rests on: ``key`` (stable, e.g. ``length:A,B``), ``kind``,
    the ``names`` it is about, its exact ``value`` text (lengths, angles) or ``None``
    (marks), and the ``step`` that made it."""

    key: str
    kind: str
    names: tuple[str, ...]
    value: str | None
    step: int

    def statement(self, figure: Figure | None = None) -> str:
        """How the question's text states it."""
        n = self.names
        if self.kind == "length":
            return f"{n[0]}{n[1]} = {pretty(self.value)}"
        if self.kind == "angle":
            return f"∠{n[0]}{n[1]}{n[2]} = {pretty(self.value)}°"
        if self.kind == "midpoint":
            return f"{n[0]} is the midpoint of {n[1]}{n[2]}"
        if self.kind == "perpendicular":
            return f"{n[0]}{n[1]} ⊥ {n[2]}{n[3]}"
        if self.kind == "parallel":
            return f"{n[0]}{n[1]} ∥ {n[2]}{n[3]}"
        if self.kind == "tangent":
            return f"{n[0]}{n[1]} is tangent to the circle with centre {n[2]} at {n[1]}"
        return f"the circle with centre {n[0]} is inscribed in triangle {n[1]}{n[2]}{n[3]}"


def givens(figure: Figure) -> list[Given]:
    """Every given of the figure, in step order."""
    out: list[Given] = []
    circle_center = {}
    for i, s in enumerate(figure.steps):
        op = s["op"]
        if op in ("circle", "incircle", "circumcircle"):
            circle_center[s["circle"]] = s["center"]
        if op == "polar":
            out.append(Given(f"length:{s['from']},{s['point']}", "length", (s["from"], s["point"]), s["length"], i))
            if s.get("ref") is not None:
                out.append(Given(f"angle:{s['ref']},{s['from']},{s['point']}", "angle",
                                 (s["ref"], s["from"], s["point"]), _abs_text(s["angle"]), i))
        elif op == "sss":
            (a, b), p = s["from"], s["point"]
            out.append(Given(f"length:{a},{p}", "length", (a, p), s["lengths"][0], i))
            out.append(Given(f"length:{b},{p}", "length", (b, p), s["lengths"][1], i))
        elif op == "asa":
            (a, b), p = s["from"], s["point"]
            out.append(Given(f"angle:{b},{a},{p}", "angle", (b, a, p), _abs_text(s["angles"][0]), i))
            out.append(Given(f"angle:{a},{b},{p}", "angle", (a, b, p), _abs_text(s["angles"][1]), i))
        elif op == "midpoint":
            out.append(Given(f"midpoint:{s['point']}", "midpoint", (s["point"], *s["of"]), None, i))
        elif op == "foot":
            out.append(Given(f"perpendicular:{s['point']}", "perpendicular", (s["from"], s["point"], *s["to"]), None,
                             i))
        elif op == "parallel":
            out.append(Given(f"parallel:{s['point']}", "parallel", (s["through"], s["point"], *s["to"]), None, i))
            out.append(Given(f"length:{s['through']},{s['point']}", "length", (s["through"], s["point"]),
                             s["length"], i))
        elif op == "on_circle":
            center = circle_center.get(s["circle"], "?")
            out.append(Given(f"angle:{s['ref']},{center},{s['point']}", "angle", (s["ref"], center, s["point"]),
                             _abs_text(s["angle"]), i))
        elif op == "incircle":
            out.append(Given(f"inscribed:{s['circle']}", "inscribed", (s["center"], *s["of"]), None, i))
        elif op == "tangent":
            center = circle_center.get(s["circle"], "?")
            out.append(Given(f"tangent:{s['point']}", "tangent", (s["from"], s["point"], center), None, i))
    return out


def _abs_text(text: str) -> str:
    return str(abs(Fraction(str(text))))


def pretty(value: str | None) -> str:
    """A given's number as the figure and the text print it (its canonical text)."""
    return "" if value is None else str(value)


# -- exact arithmetic --------------------------------------------------------------------
#: digits every decimal value is computed with (its last digits are never shown)
DIGITS = 60
_TERM = re.compile(r"^(?P<coef>\d+(?:\.\d+)?)?\*?(?:(?:√|sqrt\()(?P<root>\d+)\)?)?(?:/(?P<den>\d+))?$")


@functools.lru_cache(maxsize=4096)
def _squarefree(n: int) -> tuple[int, int]:
    """``n = s**2 * m`` with ``m`` squarefree: ``(s, m)``."""
    s, m, f = 1, 1, 2
    while f * f <= n:
        while n % (f * f) == 0:
            n //= f * f
            s *= f
        if n % f == 0:
            n //= f
            m *= f
        f += 1
    return s, m * n


@functools.lru_cache(maxsize=4096)
def _primes(m: int) -> list[int]:
    out, f = [], 2
    while f * f <= m:
        if m % f == 0:
            out.append(f)
            m //= f
        f += 1
    return out + ([m] if m > 1 else [])


#: bounds of a number of the exact arithmetic: a construction whose numbers grow beyond them
#: (nested roots of roots) is refused rather than computed for minutes
MAX_TERMS = 64
MAX_BITS = 600
MAX_ROOT = 10**9


class TooComplex(ArithmeticError):
    """A number beyond :data:`MAX_TERMS` terms or :data:`MAX_BITS` bits."""


class Surd:
    """An exact real number ``sum(q * sqrt(m))`` over squarefree ``m`` (``m = 1`` is the
    rational part): the field the construction's numbers live in. Zero is decided exactly
    (square roots of distinct squarefree numbers are linearly independent over the
    rationals); a sign, from the value to :data:`DIGITS` digits."""

    __slots__ = ("terms",)

    def __init__(self, terms: Mapping[int, Fraction] | int | Fraction = 0):
        if not isinstance(terms, Mapping):
            terms = {1: terms}
        self.terms: dict[int, Fraction] = {m: q if type(q) is Fraction else Fraction(q)
                                           for m, q in sorted(terms.items()) if q}
        if len(self.terms) > MAX_TERMS or any(m > MAX_ROOT or q.numerator.bit_length() > MAX_BITS or
                                              q.denominator.bit_length() > MAX_BITS for m, q in self.terms.items()):
            raise TooComplex(f"a number of {len(self.terms)} terms, a root of over {MAX_ROOT} or a part of over "
                             f"{MAX_BITS} bits")

    @classmethod
    def root(cls, n: int | Fraction) -> Surd:
        """``sqrt(n)`` of a non-negative rational (``ValueError`` when its squarefree part is
        too large to find: a numerator or denominator over 10^14 that is no perfect square)."""
        n = Fraction(n)
        if n < 0:
            raise ValueError(f"no real square root of {n}")
        parts = []
        for k in (n.numerator, n.denominator):
            r = math.isqrt(k)
            if r * r == k:
                parts.append((r, 1))
            elif k > MAX_ROOT:
                raise ValueError(f"the square root of {n} is too large to write exactly")
            else:
                parts.append(_squarefree(k))
        (s1, m1), (s2, m2) = parts
        return cls({m1 * m2: Fraction(s1, s2 * m2)})

    @classmethod
    def parse(cls, text: str, where: str = "value") -> Surd:
        """An exact number from text: terms joined by ``+`` and ``-``, each a rational
        (``5``, ``2.5``, ``5/2``) times an optional root (``√3``, ``sqrt(3)``, ``2*sqrt(3)/3``)."""
        compact = "".join(str(text).split())
        if not compact or len(compact) > 64:
            raise InvalidEdit("bad_value", f"{where} must be an exact number such as 6, 5/2, 2.5, 2√3 or 2*sqrt(3), "
                              f"got {text!r}")
        total = cls()
        for sign, term in re.findall(r"([+-]?)([^+-]+)", compact if compact[0] in "+-" else "+" + compact):
            match = _TERM.match(term)
            if not match or not (match["coef"] or match["root"]) or "".join(re.findall(r"[+-]?[^+-]+", compact)) != \
                    compact:
                raise InvalidEdit("bad_value", f"{where} must be an exact number such as 6, 5/2, 2.5, 2√3 or "
                                  f"2*sqrt(3), got {text!r}")
            coef = Fraction(match["coef"] or 1) / Fraction(match["den"] or 1)
            if match["den"] == "0":
                raise InvalidEdit("bad_value", f"{where} divides by zero: {text!r}")
            root = int(match["root"] or 1)
            if root > 10**6:
                raise InvalidEdit("bad_value", f"{where} takes roots of numbers up to 10^6, got {text!r}")
            total = total + (cls.root(root) * coef) * (-1 if sign == "-" else 1)
        return total

    # arithmetic
    def __add__(self, other: Any) -> Surd:
        other = _surd(other)
        terms = dict(self.terms)
        for m, q in other.terms.items():
            terms[m] = terms.get(m, Fraction(0)) + q
        return Surd(terms)

    __radd__ = __add__

    def __neg__(self) -> Surd:
        return Surd({m: -q for m, q in self.terms.items()})

    def __sub__(self, other: Any) -> Surd:
        return self + -_surd(other)

    def __rsub__(self, other: Any) -> Surd:
        return _surd(other) - self

    def __mul__(self, other: Any) -> Surd:
        other = _surd(other)
        terms: dict[int, Fraction] = {}
        for m1, q1 in self.terms.items():
            for m2, q2 in other.terms.items():
                g = math.gcd(m1, m2)
                m, q = (m1 // g) * (m2 // g), q1 * q2 * g
                terms[m] = terms.get(m, Fraction(0)) + q
        return Surd(terms)

    __rmul__ = __mul__

    def inverse(self) -> Surd:
        if self.is_zero():
            raise ZeroDivisionError("division by zero")
        primes = sorted({p for m in self.terms for p in _primes(m)})
        if not primes:
            return Surd(1 / self.terms[1])
        a, b = self.split(primes[-1])
        conjugate = a - b * Surd.root(primes[-1])
        return conjugate * (a * a - b * b * primes[-1]).inverse()

    def __truediv__(self, other: Any) -> Surd:
        return self * _surd(other).inverse()

    def __rtruediv__(self, other: Any) -> Surd:
        return _surd(other) * self.inverse()

    def split(self, p: int) -> tuple[Surd, Surd]:
        """``(a, b)`` with ``self = a + b * sqrt(p)`` and neither holding ``sqrt(p)``."""
        a: dict[int, Fraction] = {}
        b: dict[int, Fraction] = {}
        for m, q in self.terms.items():
            if m % p == 0:
                b[m // p] = q
            else:
                a[m] = q
        return Surd(a), Surd(b)

    def sqrt(self, depth: int = 0) -> Surd | None:
        """The non-negative square root when it is a surd (it always is for a rational;
        ``sqrt(a + b sqrt(p))`` when it denests), else ``None``."""
        if self.is_zero():
            return Surd()
        if not self.positive() or depth > 6:
            return None
        q = self.rational()
        if q is not None:
            try:
                return Surd.root(q)
            except ValueError:
                return None
        p = max(p for m in self.terms for p in _primes(m))
        a, b = self.split(p)
        disc = (a * a - b * b * p).sqrt(depth + 1)
        if disc is None:
            return None
        for t in ((a + disc) / 2, (a - disc) / 2):
            x = t.sqrt(depth + 1)
            if x is None or x.is_zero():
                continue
            candidate = x + (b / (x * 2)) * Surd.root(p)
            if candidate * candidate == self:
                return candidate if candidate.positive() else -candidate
        return None

    # comparison
    def is_zero(self) -> bool:
        return not self.terms

    def rational(self) -> Fraction | None:
        if not self.terms:
            return Fraction(0)
        return self.terms[1] if set(self.terms) == {1} else None

    def to_decimal(self, digits: int = DIGITS) -> Decimal:
        with localcontext() as ctx:
            ctx.prec = digits + 10
            total = Decimal(0)
            for m, q in self.terms.items():
                root = Decimal(m).sqrt() if m != 1 else Decimal(1)
                total += Decimal(q.numerator) * root / Decimal(q.denominator)
            return +total

    def to_float(self) -> float:
        """The value as a float (for drawing and for filters that only rule out what is
        clearly not zero; never for a label)."""
        return sum(float(q) * (math.sqrt(m) if m != 1 else 1.0) for m, q in self.terms.items())

    def sign(self) -> int:
        if self.is_zero():
            return 0
        value = self.to_decimal()
        if abs(value) < Decimal(10) ** (-DIGITS + 10):
            value = self.to_decimal(4 * DIGITS)
        return 1 if value > 0 else -1

    def positive(self) -> bool:
        return self.sign() > 0

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (int, Fraction)):
            other = Surd(other)
        return isinstance(other, Surd) and self.terms == other.terms

    def __hash__(self) -> int:
        return hash(tuple(self.terms.items()))

    def __lt__(self, other: Any) -> bool:
        return (self - _surd(other)).sign() < 0

    def __gt__(self, other: Any) -> bool:
        return (self - _surd(other)).sign() > 0

    def __le__(self, other: Any) -> bool:
        return not self > other

    def __ge__(self, other: Any) -> bool:
        return not self < other

    def __abs__(self) -> Surd:
        return -self if self.sign() < 0 else self

    def __repr__(self) -> str:
        return f"Surd({self})"

    def __str__(self) -> str:
        """As a textbook prints it: ``2√3``, ``5/2``, ``3√2/2``, ``1 + √2``, ``-√3``."""
        if not self.terms:
            return "0"
        parts = []
        for m, q in self.terms.items():
            num, den = abs(q.numerator), q.denominator
            body = str(num) if m == 1 else (f"{num if num != 1 else ''}√{m}")
            body += f"/{den}" if den != 1 else ""
            parts.append(("-" if q < 0 else "+", body))
        if parts[0][0] == "-" and any(sign == "+" for sign, _ in parts):  # 15√3 - 15, not -15 + 15√3
            parts.sort(key=lambda part: part[0] == "-")
        text = ("-" if parts[0][0] == "-" else "") + parts[0][1]
        return text + "".join(f" {sign} {body}" for sign, body in parts[1:])


def _surd(value: Any) -> Surd:
    return value if isinstance(value, Surd) else Surd(value)


def _cos_sin(degrees: Fraction | int) -> tuple[Surd, Surd]:
    """The exact cosine and sine of a whole multiple of 15 degrees."""
    d = Fraction(degrees) % 360
    if d.denominator != 1 or d % 15:
        raise ValueError(f"angles are whole multiples of 15 degrees, got {degrees}")
    return _COS_SIN[int(d)]


def _first_quadrants() -> dict[int, tuple[Surd, Surd]]:
    first = {0: (Surd(1), Surd(0)), 15: (Surd.parse("√6/4 + √2/4"), Surd.parse("√6/4 - √2/4")),
             30: (Surd.parse("√3/2"), Surd(Fraction(1, 2))), 45: (Surd.parse("√2/2"), Surd.parse("√2/2")),
             60: (Surd(Fraction(1, 2)), Surd.parse("√3/2")), 75: (Surd.parse("√6/4 - √2/4"), Surd.parse("√6/4 + √2/4"))}
    table = {}
    for d in range(0, 360, 15):
        quarter, rest = divmod(d, 90)
        c, s = first[rest]
        for _ in range(quarter):
            c, s = -s, c
        table[d] = (c, s)
    return table


_COS_SIN = _first_quadrants()


Point = tuple[Surd, Surd]


# -- solving -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Solved:
    """A figure solved exactly: each point's coordinates, each circle's centre and squared
    radius, and for each object the given keys it rests on (its construction's dependency
    closure)."""

    points: Mapping[str, Point]
    circles: Mapping[str, tuple[str, Surd]]
    depends: Mapping[str, frozenset[str]]

    def floats(self) -> dict[str, tuple[float, float]]:
        return {n: (x.to_float(), y.to_float()) for n, (x, y) in self.points.items()}


def solve(figure: Figure) -> Solved:
    """Every point and circle of ``figure`` exactly (``InvalidEdit`` ``degenerate_figure``
    for a construction that cannot be carried out, ``bad_value`` for one whose numbers
    leave the exact arithmetic)."""
    return _solve(canonical_json([dict(s) for s in figure.steps]))


@functools.lru_cache(maxsize=1024)
def _solve(text: str) -> Solved:
    steps = json.loads(text)
    pts: dict[str, Point] = {}
    circles: dict[str, tuple[str, Surd]] = {}
    depends: dict[str, frozenset[str]] = {}
    keys_by_step: dict[int, list[str]] = {}
    for g in givens(Figure(tuple(steps), ())):
        keys_by_step.setdefault(g.step, []).append(g.key)
    for i, s in enumerate(steps):
        op = s["op"]
        refs = references(s)
        reads = frozenset(keys_by_step.get(i, [])).union(*(depends[n] for n, _ in refs))
        try:
            made = _construct(s, pts, circles)
        except (ZeroDivisionError, ValueError) as exc:
            raise InvalidEdit("degenerate_figure", f"steps[{i}] ({op}) cannot be constructed: {exc}",
                              field="steps") from None
        except _Inexact as exc:
            raise InvalidEdit("bad_value", f"steps[{i}] ({op}) needs {exc}, which is not a surd; choose other values "
                              "(for example whole lengths of a right triangle)", field="steps") from None
        except TooComplex as exc:
            raise InvalidEdit("bad_value", f"steps[{i}] ({op}) makes {exc}, beyond the exact arithmetic's bounds; "
                              "choose simpler values (whole lengths, fewer nested constructions)",
                              field="steps") from None
        for name in made:
            depends[name] = reads
            if name in pts:
                for other, p in pts.items():
                    if other != name and p[0] == pts[name][0] and p[1] == pts[name][1]:
                        raise InvalidEdit("degenerate_figure", f"steps[{i}] ({op}) puts {name} where {other} is",
                                          field="steps")
    return Solved(pts, circles, depends)


class _Inexact(Exception):
    """A square root that is not a surd."""


def _sqrt(value: Surd, what: str) -> Surd:
    root = value.sqrt()
    if root is None:
        raise _Inexact(f"the square root of {value} ({what})")
    return root


def squared(a: Point, b: Point) -> Surd:
    return (b[0] - a[0]) * (b[0] - a[0]) + (b[1] - a[1]) * (b[1] - a[1])


def cross(a: Point, b: Point, c: Point) -> Surd:
    """The cross product of ``b - a`` and ``c - a`` (zero: collinear)."""
    return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])


def rotate(v: tuple[Surd, Surd], degrees: Fraction | int) -> tuple[Surd, Surd]:
    c, s = _cos_sin(degrees)
    return v[0] * c - v[1] * s, v[0] * s + v[1] * c


def line_intersection(a: Point, b: Point, c: Point, d: Point) -> Point:
    den = (b[0] - a[0]) * (d[1] - c[1]) - (b[1] - a[1]) * (d[0] - c[0])
    if den.is_zero():
        raise ValueError("the lines are parallel")
    t = ((c[0] - a[0]) * (d[1] - c[1]) - (c[1] - a[1]) * (d[0] - c[0])) / den
    return a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1])


def _construct(s: Mapping[str, Any], pts: dict[str, Point], circles: dict[str, tuple[str, Surd]]) -> list[str]:
    """Carry out one step; the names it made."""
    op = s["op"]
    if op == "origin":
        pts[s["point"]] = (Surd(0), Surd(0))
    elif op == "polar":
        base, length = pts[s["from"]], Surd.parse(s["length"])
        if s.get("ref") is None:
            c, sn = _cos_sin(Fraction(s["angle"]))
            pts[s["point"]] = (base[0] + length * c, base[1] + length * sn)
        else:
            ref = pts[s["ref"]]
            v = rotate((ref[0] - base[0], ref[1] - base[1]), Fraction(s["angle"]))
            scale = length / _sqrt(squared(base, ref), f"|{s['from']}{s['ref']}|")
            pts[s["point"]] = (base[0] + v[0] * scale, base[1] + v[1] * scale)
    elif op == "sss":
        a, b = pts[s["from"][0]], pts[s["from"][1]]
        la, lb = (Surd.parse(v) for v in s["lengths"])
        d = _sqrt(squared(a, b), f"|{s['from'][0]}{s['from'][1]}|")
        if not (la + lb > d and la + d > lb and lb + d > la):
            raise ValueError(f"sides {la} and {lb} on a base of {d} violate the triangle inequality")
        x = (la * la - lb * lb + d * d) / (d * 2)
        h = _sqrt(la * la - x * x, "the triangle's height")
        ux, uy = (b[0] - a[0]) / d, (b[1] - a[1]) / d
        side = int(s["side"])
        pts[s["point"]] = (a[0] + x * ux - h * uy * side, a[1] + x * uy + h * ux * side)
    elif op == "asa":
        a, b = pts[s["from"][0]], pts[s["from"][1]]
        alpha, beta = (Fraction(str(v)) for v in s["angles"])
        if alpha + beta >= 180:
            raise ValueError(f"angles {alpha} and {beta} at the base sum to 180 or more")
        side = int(s["side"])
        u = rotate((b[0] - a[0], b[1] - a[1]), side * alpha)
        v = rotate((a[0] - b[0], a[1] - b[1]), -side * beta)
        pts[s["point"]] = line_intersection(a, (a[0] + u[0], a[1] + u[1]), b, (b[0] + v[0], b[1] + v[1]))
    elif op == "midpoint":
        a, b = pts[s["of"][0]], pts[s["of"][1]]
        pts[s["point"]] = ((a[0] + b[0]) / 2, (a[1] + b[1]) / 2)
    elif op == "foot":
        p, a, b = pts[s["from"]], pts[s["to"][0]], pts[s["to"][1]]
        d2 = squared(a, b)
        t = ((p[0] - a[0]) * (b[0] - a[0]) + (p[1] - a[1]) * (b[1] - a[1])) / d2
        foot = (a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1]))
        if foot[0] == p[0] and foot[1] == p[1]:
            raise ValueError(f"{s['from']} lies on {s['to'][0]}{s['to'][1]}, so it has no perpendicular to it")
        pts[s["point"]] = foot
    elif op == "intersect":
        (a, b), (c, d) = ([pts[n] for n in line] for line in s["lines"])
        pts[s["point"]] = line_intersection(a, b, c, d)
    elif op == "parallel":
        a, b, c = pts[s["to"][0]], pts[s["to"][1]], pts[s["through"]]
        scale = Surd.parse(s["length"]) / _sqrt(squared(a, b), f"|{s['to'][0]}{s['to'][1]}|")
        pts[s["point"]] = (c[0] + (b[0] - a[0]) * scale, c[1] + (b[1] - a[1]) * scale)
    elif op == "circle":
        circles[s["circle"]] = (s["center"], squared(pts[s["center"]], pts[s["through"]]))
        return [s["circle"]]
    elif op == "on_circle":
        center_name, r2 = circles[s["circle"]]
        center, ref = pts[center_name], pts[s["ref"]]
        v = rotate((ref[0] - center[0], ref[1] - center[1]), Fraction(s["angle"]))
        d2 = squared(center, ref)
        scale = Surd(1) if d2 == r2 else _sqrt(r2 / d2, "the radius over the reference's distance")
        pts[s["point"]] = (center[0] + v[0] * scale, center[1] + v[1] * scale)
    elif op in ("incircle", "circumcircle"):
        return _construct_centre(s, pts, circles)
    elif op == "tangent":
        center_name, r2 = circles[s["circle"]]
        p, o = pts[s["from"]], pts[center_name]
        d2 = squared(o, p)
        if not d2 > r2:
            raise ValueError(f"{s['from']} is on or inside the circle, so no tangent leaves it")
        t = _sqrt(d2 - r2, "the tangent's length")
        r = _sqrt(r2, "the radius")
        side = int(s["side"])
        k1, k2 = r2 / d2, r * t / d2 * side
        v = (p[0] - o[0], p[1] - o[1])
        pts[s["point"]] = (o[0] + v[0] * k1 - v[1] * k2, o[1] + v[1] * k1 + v[0] * k2)
    return [s["point"]]


def _construct_centre(s: Mapping[str, Any], pts: dict[str, Point], circles: dict[str, tuple[str, Surd]]) -> list[str]:
    """Carry out a step that makes a circle and its centre; the names it made."""
    op = s["op"]
    if op == "incircle":
        a, b, c = (pts[n] for n in s["of"])
        area2 = cross(a, b, c)
        if area2.is_zero():
            raise ValueError("the three points are collinear")
        la, lb, lc = (_sqrt(squared(p, q), f"|{n}|") for p, q, n in ((b, c, "BC"), (a, c, "AC"), (a, b, "AB")))
        per = la + lb + lc
        pts[s["center"]] = ((a[0] * la + b[0] * lb + c[0] * lc) / per, (a[1] * la + b[1] * lb + c[1] * lc) / per)
        r = abs(area2) / per
        circles[s["circle"]] = (s["center"], r * r)
        return [s["circle"], s["center"]]
    elif op == "circumcircle":
        a, b, c = (pts[n] for n in s["of"])
        den = cross(a, b, c) * 2
        if den.is_zero():
            raise ValueError("three collinear points have no circumcircle")
        a2, b2, c2 = (p[0] * p[0] + p[1] * p[1] for p in (a, b, c))
        center = ((a2 * (b[1] - c[1]) + b2 * (c[1] - a[1]) + c2 * (a[1] - b[1])) / den,
                  (a2 * (c[0] - b[0]) + b2 * (a[0] - c[0]) + c2 * (b[0] - a[0])) / den)
        pts[s["center"]] = center
        circles[s["circle"]] = (s["center"], squared(center, a))
        return [s["circle"], s["center"]]
    raise ValueError(f"{op} makes no centre")


# -- the map from figure units to pixels (what the renderer draws by and the checks measure against)
def _turn(figure: Figure) -> tuple[float, float, float, float]:
    """The linear part (a, b, c, d) of rotation then mirror: (x, y) -> (a x + b y, c x + d y)."""
    t = math.radians(figure.style.rotation)
    cos, sin = math.cos(t), math.sin(t)
    a, b, c, d = cos, -sin, sin, cos
    if figure.style.flip:
        a, b = -a, -b
    return a, b, c, d


def arc_range(start: float, end: float) -> tuple[float, float]:
    """``(start, sweep)`` in radians, the arc running counter-clockwise from start, sweep in (0, 2 pi]."""
    sweep = (end - start) % (2 * math.pi)
    return start, sweep if sweep > 1e-12 else 2 * math.pi


def arc_angles(units: Mapping[str, tuple[float, float]], center: str, p: str, q: str) -> tuple[float, float]:
    """An arc's ``(start, sweep)`` in radians of figure units, counter-clockwise from the
    direction of ``p`` to that of ``q`` seen from ``center`` (sweep in (0, 2 pi]; ends at
    one direction make the whole circle)."""
    o, a, b = units[center], units[p], units[q]
    return arc_range(math.atan2(a[1] - o[1], a[0] - o[0]), math.atan2(b[1] - o[1], b[0] - o[0]))


def figure_map(figure: Figure, solved: Solved, width: int, height: int) -> tuple[np.ndarray, np.ndarray, float]:
    """``(matrix, offset, scale)``: a point ``p`` of the figure (units) is drawn at pixel
    ``matrix @ p + offset``: rotated by ``style.rotation`` degrees counter-clockwise,
    mirrored across the vertical axis when ``style.flip``, then scaled uniformly so the box
    of every point and drawn circle or arc fills ``style.scale`` of the canvas in its
    tighter direction, centred, y down."""
    a, b, c, d = _turn(figure)
    pts = solved.floats()
    turned = {n: (a * x + b * y, c * x + d * y) for n, (x, y) in pts.items()}
    xs = [p[0] for p in turned.values()]
    ys = [p[1] for p in turned.values()]
    for element in figure.draw:
        if element[0] not in ("circle", "arc"):
            continue
        center, r2 = solved.circles[element[1]]
        r = math.sqrt(r2.to_float())
        ox, oy = turned[center]
        if element[0] == "circle":
            xs += [ox - r, ox + r]
            ys += [oy - r, oy + r]
            continue
        start, sweep = arc_angles(pts, center, element[2], element[3])
        ends = (start, start + sweep)
        extremes = [math.atan2(b, a), math.atan2(b, a) + math.pi, math.atan2(d, c), math.atan2(d, c) + math.pi]
        for t in list(ends) + [t for t in extremes if (t - start) % (2 * math.pi) <= sweep]:
            xs.append(ox + r * (a * math.cos(t) + b * math.sin(t)))
            ys.append(oy + r * (c * math.cos(t) + d * math.sin(t)))
    bw, bh = max(xs) - min(xs), max(ys) - min(ys)
    fits = [size / extent for size, extent in ((width, bw), (height, bh)) if extent > 1e-9]
    scale = figure.style.scale * min(fits) if fits else 1.0
    mx, my = (max(xs) + min(xs)) / 2, (max(ys) + min(ys)) / 2
    matrix = np.array([[scale * a, scale * b], [-scale * c, -scale * d]])
    offset = np.array([width / 2 - scale * mx, height / 2 + scale * my])
    return matrix, offset, scale


def clip_to_canvas(p: Sequence[float], q: Sequence[float], width: int, height: int,
                   both_ways: bool) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """The piece of the ray from ``p`` through ``q`` (``both_ways``: the line) inside the
    canvas, or ``None`` when it misses it."""
    dx, dy = q[0] - p[0], q[1] - p[1]
    lo, hi = (-math.inf if both_ways else 0.0), math.inf
    for delta, start, size in ((dx, p[0], width), (dy, p[1], height)):
        if abs(delta) < 1e-12:
            if not 0 <= start <= size:
                return None
            continue
        t0, t1 = (0 - start) / delta, (size - start) / delta
        lo, hi = max(lo, min(t0, t1)), min(hi, max(t0, t1))
    if lo > hi:
        return None
    return (p[0] + lo * dx, p[1] + lo * dy), (p[0] + hi * dx, p[1] + hi * dy)
