"""Questions over a geometry figure as programs, answered exactly.

A question is a label rule (:class:`~vicogym.structures.geometry.GeometryRule`): its
``kind`` is the family (``angle``, ``length``, ``perimeter``, ``area``, ``ratio``, ``arc``,
``count``, ``relation``, ``choice``), ``target`` what it asks, ``text`` the given keys its
text states, and ``question`` the text itself, which :func:`question_text` derives from
the figure and the rule: an edit that would change it (a value the text states, a point the
text names, a choice listed in it) is refused, so nothing drawn contradicts the text.

Answers are computed in the field of surds (:class:`~vicogym.structures.geometry.Surd`)
and written as the question's contract says: an exact value when it has a short closed
form (``12``, ``5/2``, ``2√3``, ``9 - 3√3``, ``4π``, ``45`` degrees), else a decimal rounded
to :data:`PLACES` places from the exact value (never from a float: a value within
``1e-9`` of a rounding boundary is refused as ambiguous). :func:`score` accepts the
equivalent forms a model writes (``2√3``, ``2*sqrt(3)``, ``2\\sqrt{3}``, ``3.46``).
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
from collections.abc import Mapping, Sequence
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from typing import Any

from vicogym.core import canonical_json
from vicogym.errors import InvalidEdit
from vicogym.structures.geometry import (
    Figure,
    Point,
    Solved,
    Surd,
    TooComplex,
    cross,
    givens,
    line_intersection,
    references,
    rotate,
    solve,
    squared,
)

#: decimal places of answers that have no short exact form
PLACES = 2
FAMILIES = ("angle", "length", "perimeter", "area", "ratio", "arc", "count", "relation", "choice")
RELATIONS = ("parallel", "perpendicular", "equal")
CONTRACT = "Give the exact value (such as 2√3 or 4π) or a decimal rounded to 2 places."
ANGLE_CONTRACT = "Answer in degrees, exactly or rounded to 2 decimal places."
LETTERS = "ABCD"
#: how each distractor of a choice question is made from the answer
DISTRACTORS = ("double", "half", "supplement", "complement", "times_sqrt2", "times_sqrt3", "plus_half")


class Value:
    """An exact answer: ``surd`` (the number), ``root`` (the square root of the surd, which
    is no surd itself) or ``pi`` (pi times the surd); or ``decimal`` (a float, for angles that
    are no multiple of 15 degrees, certified to the places shown)."""

    def __init__(self, kind: str, number: Surd | float):
        self.kind, self.number = kind, number

    def to_float(self) -> float:
        if self.kind in ("decimal", "decimal_exact"):
            return float(self.number)
        x = self.number.to_float()
        return math.sqrt(x) if self.kind == "root" else math.pi * x if self.kind == "pi" else x

    def to_decimal(self) -> Decimal:
        if self.kind == "decimal":
            return Decimal(repr(float(self.number)))
        if self.kind == "decimal_exact":  # computed from exact values to DIGITS digits
            return self.number  # type: ignore[return-value]
        d = self.number.to_decimal()
        if self.kind == "root":
            return d.sqrt()
        if self.kind == "pi":
            return d * Decimal("3.14159265358979323846264338327950288419716939937510582097494459")
        return d

    def text(self) -> str:
        """The answer as written (see the module's docstring)."""
        if self.kind == "surd" and _short(self.number):
            return str(self.number)
        if self.kind == "pi" and _short(self.number) and len(self.number.terms) == 1:
            (m, q), = self.number.terms.items()
            coef = "" if q.numerator == 1 and m == 1 else str(abs(q.numerator)) if m == 1 else \
                f"{'' if q.numerator == 1 else q.numerator}√{m}"
            return f"{coef}π" + (f"/{q.denominator}" if q.denominator != 1 else "")
        return rounded(self.to_decimal(), exact=self.kind != "decimal")


def _short(s: Surd) -> bool:
    return len(s.terms) <= 2 and all(q.denominator <= 12 and abs(q.numerator) <= 10_000 for q in s.terms.values())


def rounded(value: Decimal, exact: bool = True) -> str:
    """``value`` to :data:`PLACES` places; ``ambiguous`` when it lies too near a rounding
    boundary for the digits it is known to (60 for exact values, 9 for angles)."""
    step = Decimal(1).scaleb(-PLACES)
    scaled = value / step
    frac = scaled - scaled.to_integral_value(rounding="ROUND_FLOOR")
    margin = Decimal("1e-30") if exact else Decimal("1e-7")
    if abs(frac - Decimal("0.5")) < margin:
        raise InvalidEdit("ambiguous", f"the answer {value:.12f} lies on a rounding boundary at {PLACES} places")
    return str(value.quantize(step, rounding=ROUND_HALF_UP))


# -- measuring -----------------------------------------------------------------------------
def _pt(solved: Solved, name: str) -> Point:
    try:
        return solved.points[name]
    except KeyError:
        raise InvalidEdit("not_found", f"the question names point {name!r}, which the figure does not make") from None


def length(solved: Solved, a: str, b: str) -> Value:
    d2 = squared(_pt(solved, a), _pt(solved, b))
    root = d2.sqrt()
    return Value("surd", root) if root is not None else Value("root", d2)


def angle_value(solved: Solved, x: str, y: str, z: str) -> Value:
    """The angle XYZ in degrees, in [0, 180]: exact when it is a multiple of 15 (proved:
    rotating YX by it gives YZ's direction), else certified decimals."""
    p, q, r = _pt(solved, x), _pt(solved, y), _pt(solved, z)
    u, v = (p[0] - q[0], p[1] - q[1]), (r[0] - q[0], r[1] - q[1])
    if (u[0].is_zero() and u[1].is_zero()) or (v[0].is_zero() and v[1].is_zero()):
        raise InvalidEdit("degenerate_figure", f"angle {x}{y}{z} has a side of length 0")
    for k in range(13):
        for sign in (1, -1):
            w = rotate(u, sign * 15 * k)
            if (w[0] * v[1] - w[1] * v[0]).is_zero() and (w[0] * v[0] + w[1] * v[1]).positive():
                return Value("surd", Surd(15 * k))
    ux, uy, vx, vy = (c.to_float() for c in (*u, *v))
    return Value("decimal", math.degrees(math.atan2(abs(ux * vy - uy * vx), ux * vx + uy * vy)))


def polygon_area(solved: Solved, names: Sequence[str]) -> Surd:
    pts = [_pt(solved, n) for n in names]
    total = Surd(0)
    for (ax, ay), (bx, by) in zip(pts, pts[1:] + pts[:1]):
        total = total + ax * by - ay * bx
    area = abs(total) / 2
    if area.is_zero():
        raise InvalidEdit("degenerate_figure", f"polygon {''.join(names)} has no area")
    return area


def _central(solved: Solved, circle: str, p: str, q: str) -> tuple[Value, Surd]:
    center_name, r2 = _circle(solved, circle)
    return angle_value(solved, p, center_name, q), r2


def _circle(solved: Solved, name: str) -> tuple[str, Surd]:
    try:
        return solved.circles[name]
    except KeyError:
        raise InvalidEdit("not_found", f"the question names circle {name!r}, which the figure does not make") from None


def _sum(values: list[Value]) -> Value:
    if all(v.kind == "surd" for v in values):
        return Value("surd", sum((v.number for v in values), Surd(0)))
    return Value("decimal_exact", sum((v.to_decimal() for v in values), Decimal(0)))  # type: ignore[arg-type]


def evaluate(solved: Solved, figure: Figure, kind: str, target: Mapping[str, Any]) -> Value | str:
    """The answer of a question of family ``kind`` asking ``target`` (a value, or the
    words ``Yes``/``No``, or a count as text)."""
    t = target
    if kind == "angle":
        return angle_value(solved, *t["at"])
    if kind == "length":
        return length(solved, *t["of"])
    if kind == "perimeter":
        names = list(t["of"])
        return _sum([length(solved, a, b) for a, b in zip(names, names[1:] + names[:1])])
    if kind == "area":
        if "circle" in t:
            return Value("pi", _circle(solved, t["circle"])[1])
        return Value("surd", polygon_area(solved, t["of"]))
    if kind == "ratio":
        a, b = (evaluate(solved, figure, q["kind"], q["target"]) for q in t["of"])
        assert isinstance(a, Value) and isinstance(b, Value)
        if a.kind == b.kind and a.kind in ("surd", "root", "pi"):
            if b.number.is_zero():
                raise InvalidEdit("ambiguous", "the ratio divides by zero")
            ratio = a.number / b.number
            if a.kind == "root":
                root = ratio.sqrt()
                return Value("surd", root) if root is not None else Value("root", ratio)
            return Value("surd", ratio)
        return Value("decimal_exact", a.to_decimal() / b.to_decimal())  # type: ignore[arg-type]
    if kind == "arc":
        theta, r2 = _central(solved, t["circle"], *t["between"])
        if theta.kind == "surd" and theta.number.is_zero():
            raise InvalidEdit("degenerate_figure", "the arc's ends are one point")
        if theta.kind == "surd":
            if t["measure"] == "sector":
                return Value("pi", r2 * theta.number / 360)
            r = r2.sqrt()
            if r is not None:
                return Value("pi", r * theta.number / 180)
        pi = Decimal("3.14159265358979323846264338327950288419716939937510582097494459")
        degrees = theta.to_decimal()
        r2d = r2.to_decimal()
        return Value("decimal_exact", r2d * pi * degrees / 360 if t["measure"] == "sector"  # type: ignore[arg-type]
                     else r2d.sqrt() * pi * degrees / 180)
    if kind == "count":
        return str(count_triangles(figure, solved))
    if kind == "relation":
        return "Yes" if relation_holds(solved, t["relation"], t["a"], t["b"]) else "No"
    if kind == "choice":
        raise ValueError("a choice question is answered by relabel, not evaluate")
    raise InvalidEdit("bad_value", f"unknown question family {kind!r}; expected one of {list(FAMILIES)}")


def relation_holds(solved: Solved, relation: str, a: Sequence[str], b: Sequence[str]) -> bool:
    """Whether segment ``a`` and segment ``b`` are parallel, perpendicular or equal, decided
    exactly."""
    p, q, r, s = (_pt(solved, n) for n in (*a, *b))
    u, v = (q[0] - p[0], q[1] - p[1]), (s[0] - r[0], s[1] - r[1])
    if relation == "parallel":
        return (u[0] * v[1] - u[1] * v[0]).is_zero()
    if relation == "perpendicular":
        return (u[0] * v[0] + u[1] * v[1]).is_zero()
    if relation == "equal":
        return squared(p, q) == squared(r, s)
    raise InvalidEdit("bad_value", f"unknown relation {relation!r}; expected one of {list(RELATIONS)}")


# -- counting triangles -------------------------------------------------------------------
#: how far from zero (relative to the figure's scale squared) a float cross product must be
#: for the point to be surely off the line: floats are good to about 1e-15 of it, so only
#: what lies within this is decided in the surds
FLOAT_MARGIN = 1e-9


def _clearly_off(a: Point, b: Point, p: Point) -> bool:
    ax, ay, bx, by, px, py = (c.to_float() for c in (*a, *b, *p))
    scale = max(abs(ax), abs(ay), abs(bx), abs(by), abs(px), abs(py), 1.0) ** 2
    return abs((bx - ax) * (py - ay) - (by - ay) * (px - ax)) > FLOAT_MARGIN * scale


def on_element(kind: str, a: Point, b: Point, p: Point) -> bool:
    if _clearly_off(a, b, p) or not cross(a, b, p).is_zero():
        return False
    t_num = (p[0] - a[0]) * (b[0] - a[0]) + (p[1] - a[1]) * (b[1] - a[1])
    if kind == "line":
        return True
    if kind == "ray":
        return t_num.sign() >= 0
    return t_num.sign() >= 0 and (t_num - squared(a, b)).sign() <= 0


def vertices(figure: Figure, solved: Solved) -> tuple[list[Point], list[list[int]]]:
    """The points a reader counts triangles over (the named points on drawn straight
    elements and every crossing of two of them) and, for each straight element, the
    indices of the vertices on it."""
    straight = [(e[0], _pt(solved, e[1]), _pt(solved, e[2])) for e in figure.draw if e[0] in ("segment", "ray", "line")]
    found: list[Point] = []

    def index(p: Point) -> int:
        for i, q in enumerate(found):
            if q[0] == p[0] and q[1] == p[1]:
                return i
        found.append(p)
        return len(found) - 1

    for p in solved.points.values():
        if any(on_element(k, a, b, p) for k, a, b in straight):
            index(p)
    for (k1, a, b), (k2, c, d) in itertools.combinations(straight, 2):
        try:
            x = line_intersection(a, b, c, d)
        except ValueError:
            continue
        if on_element(k1, a, b, x) and on_element(k2, c, d, x):
            index(x)
    on = [[i for i, p in enumerate(found) if on_element(k, a, b, p)] for k, a, b in straight]
    return found, on


def on_drawn(figure: Figure, solved: Solved, x: str, y: str) -> bool:
    """Whether points ``x`` and ``y`` both lie on one drawn segment, ray or line (exactly)."""
    p, q = _pt(solved, x), _pt(solved, y)
    for e in figure.draw:
        if e[0] in ("segment", "ray", "line"):
            a, b = _pt(solved, e[1]), _pt(solved, e[2])
            if on_element(e[0], a, b, p) and on_element(e[0], a, b, q):
                return True
    return False


def undrawn_mark(figure: Figure, solved: Solved) -> InvalidEdit | None:
    """The refusal of a figure whose diagram shows a given on pieces it does not draw: a
    length needs its segment, an angle its two arms, a midpoint its segment, a foot its two
    lines, a parallel its two lines, a tangent its radius, its tangent line and its circle,
    an inscribed circle its circle; ``None`` when every shown given sits on what is drawn."""
    found = _undrawn(canonical_json([[dict(s) for s in figure.steps], [list(d) for d in figure.draw],
                                     list(figure.diagram)]))
    return None if found is None else InvalidEdit("undrawn_mark", found, field="diagram")


@functools.lru_cache(maxsize=512)
def _undrawn(text: str) -> str | None:
    steps, draw, diagram = json.loads(text)
    figure = Figure(tuple(steps), tuple(tuple(d) for d in draw), tuple(diagram))
    problem = _find_undrawn(figure, solve(figure))
    return None if problem is None else problem.message


def _find_undrawn(figure: Figure, solved: Solved) -> InvalidEdit | None:
    circles_drawn = {e[1] for e in figure.draw if e[0] in ("circle", "arc")}
    centre_of = {c: centre for c, (centre, _) in solved.circles.items()}
    for g in givens(figure):
        if g.key not in figure.diagram:
            continue
        n = g.names
        need: list[tuple[str, str]] = []
        if g.kind == "length":
            need = [(n[0], n[1])]
        elif g.kind == "angle":
            need = [(n[1], n[0]), (n[1], n[2])]
        elif g.kind == "midpoint":
            need = [(n[1], n[2])]
        elif g.kind == "perpendicular":  # from, foot, A, B: the square sits on the foot's side of AB
            need = [(n[1], n[0]), (n[1], n[3] if on_drawn(figure, solved, n[1], n[3]) else n[2])]
        elif g.kind == "parallel":  # C, D, A, B
            need = [(n[0], n[1]), (n[2], n[3])]
        elif g.kind == "tangent":  # P, T, centre
            need = [(n[1], n[0]), (n[1], n[2])]
        for x, y in need:
            if not on_drawn(figure, solved, x, y):
                return InvalidEdit("undrawn_mark", f"the diagram shows {g.key} ({g.statement()}), but no drawn "
                                   f"segment, ray or line runs through {x} and {y}; draw [\"segment\", \"{x}\", "
                                   f"\"{y}\"] or take {g.key} out of diagram (state it in the text)", field="diagram")
        circles = []
        if g.kind == "inscribed":
            circles = [g.key.split(":", 1)[1]]
        elif g.kind == "tangent":
            circles = [c for c, centre in centre_of.items() if centre == n[2]]
        if circles and not set(circles) & circles_drawn:
            return InvalidEdit("undrawn_mark", f"the diagram shows {g.key} ({g.statement()}), but circle {circles[0]} "
                               f"is not drawn; draw [\"circle\", \"{circles[0]}\"] or take {g.key} out of diagram",
                               field="diagram")
    return None


def count_triangles(figure: Figure, solved: Solved) -> int:
    """Triangles whose sides lie along drawn segments, rays and lines, with corners at named
    points or crossings (exact: collinearity and crossings are decided in the surds)."""
    return _count(canonical_json([[dict(s) for s in figure.steps], [list(d) for d in figure.draw]]))


@functools.lru_cache(maxsize=256)
def _count(text: str) -> int:
    steps, draw = json.loads(text)
    figure = Figure(tuple(steps), tuple(tuple(d) for d in draw))
    solved = solve(figure)
    found, on = vertices(figure, solved)
    joined = set()
    for members in on:
        joined.update(itertools.combinations(sorted(members), 2))
    n = 0
    for i, j, k in itertools.combinations(range(len(found)), 3):
        if (i, j) in joined and (i, k) in joined and (j, k) in joined and (
                _clearly_off(found[i], found[j], found[k]) or not cross(found[i], found[j], found[k]).is_zero()):
            n += 1
    return n


# -- what a question reads ------------------------------------------------------------------
def asked_objects(rule: Mapping[str, Any], figure: Figure) -> set[str]:
    """The points and circles the answer is computed from."""
    kind, t = rule["kind"], rule["target"]
    if kind == "choice":
        return asked_objects(t["inner"], figure)
    if kind == "ratio":
        return set().union(*(asked_objects(q, figure) for q in t["of"]))
    if kind == "count":
        return {n for e in figure.draw if e[0] in ("segment", "ray", "line") for n in e[1:]}
    names: set[str] = set()
    for key in ("at", "of", "between", "a", "b"):
        if key in t:
            names.update(t[key])
    if "circle" in t:
        names.add(t["circle"])
    return names


def needed_givens(rule: Mapping[str, Any], figure: Figure, solved: Solved) -> frozenset[str]:
    """The given keys the answer rests on: the givens of every step the asked objects are
    made from (a sufficient set: they fix the asked objects up to a rigid motion)."""
    out: set[str] = set()
    for name in asked_objects(rule, figure):
        out |= solved.depends.get(name, frozenset())
    return frozenset(out)


def asked_angles(rule: Mapping[str, Any]) -> frozenset[str]:
    """The angles the question asks (``"X,Y,Z"``), which may be small."""
    if rule["kind"] == "choice":
        return asked_angles(rule["target"]["inner"])
    if rule["kind"] == "angle":
        x, y, z = rule["target"]["at"]
        return frozenset({f"{x},{y},{z}", f"{z},{y},{x}"})
    return frozenset()


def reasoning_steps(rule: Mapping[str, Any], figure: Figure) -> int:
    """Steps of reasoning, 1 to 5: the construction steps the asked objects rest on beyond
    the first side, plus one for a family that combines measures (perimeter, ratio, arc,
    count)."""
    made = {}
    for i, s in enumerate(figure.steps):
        for key in ("point", "circle", "center"):
            if key in s and not (key == "center" and s["op"] == "circle"):
                made[s[key]] = i
    closure: set[int] = set()
    stack = [made[n] for n in asked_objects(rule, figure) if n in made]
    while stack:
        i = stack.pop()
        if i in closure:
            continue
        closure.add(i)
        stack.extend(made[n] for n, _ in references(figure.steps[i]) if n in made)
    base = len([i for i in closure if figure.steps[i]["op"] not in ("origin",)]) - 1
    kind = rule["kind"] if rule["kind"] != "choice" else rule["target"]["inner"]["kind"]
    extra = 1 if kind in ("perimeter", "ratio", "arc", "count") else 0
    return max(1, min(5, base + extra))


# -- the question's text --------------------------------------------------------------------
def _seg(names: Sequence[str]) -> str:
    return "".join(names)


def _polygon(names: Sequence[str]) -> str:
    return {3: "triangle", 4: "quadrilateral"}.get(len(names), "polygon") + " " + "".join(names)


def ask(kind: str, t: Mapping[str, Any], figure: Figure) -> str:
    centre = _centres(figure)
    if kind == "angle":
        return f"Find ∠{_seg(t['at'])}."
    if kind == "length":
        return f"Find the length of {_seg(t['of'])}."
    if kind == "perimeter":
        return f"Find the perimeter of {_polygon(t['of'])}."
    if kind == "area":
        if "circle" in t:
            return f"Find the area of the circle with centre {centre.get(t['circle'], '?')}."
        return f"Find the area of {_polygon(t['of'])}."
    if kind == "ratio":
        a, b = t["of"]
        return f"Find the ratio of {_measure(a, figure)} to {_measure(b, figure)}, as a single number."
    if kind == "arc":
        p, q = t["between"]
        c = centre.get(t["circle"], "?")
        if t["measure"] == "sector":
            return f"Find the area of the smaller sector {p}{c}{q} of the circle with centre {c}."
        return f"Find the length of the minor arc {p}{q} of the circle with centre {c}."
    if kind == "count":
        return ("How many triangles are there in the figure (their corners at named points or where drawn lines "
                "cross)?")
    if kind == "relation":
        word = {"parallel": "parallel to", "perpendicular": "perpendicular to", "equal": "equal in length to"}
        return f"Is {_seg(t['a'])} {word.get(t['relation'], t['relation'])} {_seg(t['b'])}?"
    raise InvalidEdit("bad_value", f"unknown question family {kind!r}; expected one of {list(FAMILIES)}")


def _measure(q: Mapping[str, Any], figure: Figure) -> str:
    t = q["target"]
    if q["kind"] == "length":
        return _seg(t["of"])
    if q["kind"] == "area" and "of" in t:
        return f"the area of {_polygon(t['of'])}"
    raise InvalidEdit("bad_value", "a ratio compares two lengths or two polygon areas")


def _centres(figure: Figure) -> dict[str, str]:
    return {s["circle"]: s["center"] for s in figure.steps if s["op"] in ("circle", "incircle", "circumcircle")}


def _contract(kind: str) -> str:
    if kind == "angle":
        return ANGLE_CONTRACT
    if kind == "count":
        return "Answer with a whole number."
    if kind == "relation":
        return "Answer Yes or No."
    return CONTRACT


def question_text(figure: Figure, rule: Mapping[str, Any], solved: Solved | None = None) -> str:
    """The question's text: the givens it states, what it asks, and the answer's contract
    (for a choice question, its four choices)."""
    by_key = {g.key: g for g in givens(figure)}
    missing = [k for k in rule.get("text", []) if k not in by_key]
    if missing:
        raise InvalidEdit("contradicts_text", f"the question states {missing}, which are no longer givens of the "
                          "figure")
    stated = [by_key[k].statement() for k in rule.get("text", [])]
    lead = "In the figure, " + "; ".join(stated) + ". " if stated else "Use the figure. "
    kind, t = rule["kind"], rule["target"]
    if kind == "choice":
        inner = t["inner"]
        options = choices(figure, rule, solved or solve(figure))
        listed = " ".join(f"{LETTERS[i]}. {text}" for i, text in enumerate(options))
        return f"{lead}{ask(inner['kind'], inner['target'], figure)} Choices: {listed}. Answer with the letter of " \
               "the correct choice."
    return f"{lead}{ask(kind, t, figure)} {_contract(kind)}"


# -- choices -------------------------------------------------------------------------------
def _distractor(value: Value, recipe: str, angle: bool) -> Value | None:
    if value.kind not in ("surd", "pi"):
        return None
    n = value.number
    made = {"double": n * 2, "half": n / 2, "times_sqrt2": n * Surd.root(2), "times_sqrt3": n * Surd.root(3),
            "plus_half": n * Fraction(3, 2)}
    if angle:
        made = {"double": n * 2, "half": n / 2, "supplement": Surd(180) - n, "complement": Surd(90) - n,
                "plus_half": n * Fraction(3, 2)}
    out = made.get(recipe)
    if out is None or not out.positive() or (angle and out >= Surd(180)):
        return None
    return Value(value.kind, out)


def choices(figure: Figure, rule: Mapping[str, Any], solved: Solved) -> list[str]:
    """The four choices of a choice question in order: the answer and three distractors
    made by the rule's recipes (the first three that give a distinct positive value),
    placed by the rule's ``order``."""
    t = rule["target"]
    inner = t["inner"]
    value = evaluate(solved, figure, inner["kind"], inner["target"])
    if not isinstance(value, Value) or value.kind not in ("surd", "pi"):
        raise InvalidEdit("ambiguous", "a choice question needs an exact answer to make its distractors from")
    texts = [value.text()]
    for recipe in t["distractors"]:
        d = _distractor(value, recipe, inner["kind"] == "angle")
        if d is not None and d.text() not in texts and abs(d.to_float() - value.to_float()) > 0.01:
            texts.append(d.text())
        if len(texts) == 4:
            break
    if len(texts) < 4:
        raise InvalidEdit("ambiguous", f"only {len(texts) - 1} distinct distractors for the answer {texts[0]}")
    order = list(t["order"])
    return [texts[i] for i in order]


# -- label ---------------------------------------------------------------------------------
def relabel(figure: Figure, rule: Mapping[str, Any]) -> str:
    """The answer ``rule`` gives on ``figure`` (``InvalidEdit`` when the figure cannot be
    constructed or the question has no single answer)."""
    solved = solve(figure)
    kind, t = rule.get("kind"), rule.get("target")
    if kind not in FAMILIES or not isinstance(t, Mapping):
        raise InvalidEdit("bad_value", f"a geometry rule has a kind among {list(FAMILIES)} and a target, got {kind!r}")
    try:
        if kind == "choice":
            options = choices(figure, rule, solved)
            inner = t["inner"]
            value = evaluate(solved, figure, inner["kind"], inner["target"])
            assert isinstance(value, Value)
            return LETTERS[options.index(value.text())]
        value = evaluate(solved, figure, kind, t)
    except (KeyError, TypeError) as exc:
        raise InvalidEdit("bad_value", f"the {kind} question's target is malformed ({exc!r})") from None
    except TooComplex as exc:
        raise InvalidEdit("bad_value", f"the answer needs {exc}, beyond the exact arithmetic's bounds; choose simpler "
                          "values") from None
    if isinstance(value, str):
        return value
    return value.text()


def unstated(rule: Mapping[str, Any], figure: Figure, solved: Solved) -> list[str]:
    """Given keys the answer needs that neither the text nor the diagram shows."""
    shown = set(rule.get("text", [])) | set(figure.diagram)
    return sorted(needed_givens(rule, figure, solved) - shown)


def check_question(question: str, rule: Mapping[str, Any], figure: Figure) -> str | None:
    """Why ``question`` is not the one ``rule`` asks on ``figure``, or ``None``."""
    try:
        expected = question_text(figure, rule)
    except InvalidEdit as exc:
        return str(exc)
    if question != expected:
        return f"the figure and rule ask {expected!r}"
    missing = unstated(rule, figure, solve(figure))
    if missing:
        return f"the answer needs {missing}, which neither the text nor the diagram shows"
    return None


# -- scoring -------------------------------------------------------------------------------
_UNITS = re.compile(r"\b(?:square|sq\.?|units?|cm|mm|m|km|in|inches|ft|degrees?|deg)\b|°|\^\\circ|\\circ|\\degree")
_LATEX = ((r"\\left|\\right|\$|\\,|\\!|\\ ", ""), (r"\\cdot|\\times|×|·", "*"), (r"\\pi|π", "(pi)"),
          (r"\\sqrt\s*\{([^{}]*)\}", r"sqrt(\1)"), (r"\\sqrt\s*(\d+)", r"sqrt(\1)"), (r"√\s*\(", "sqrt("),
          (r"√\s*\{([^{}]*)\}", r"sqrt(\1)"), (r"√\s*(\d+(?:\.\d+)?)", r"sqrt(\1)"), (r"\*\*", "^"))
_FRAC = re.compile(r"\\d?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")
_TOKEN = re.compile(r"\s*(?:(\d+(?:\.\d+)?|\.\d+)|(sqrt|pi)|(.))")


def parse_value(text: str) -> float | None:
    """The number a written answer means (``2√3``, ``2*sqrt(3)``, ``2\\sqrt{3}``, ``3π/2``,
    ``\\frac{5}{2}``, ``45°``, ``12 cm``), or ``None``. Read by a small parser of
    arithmetic, never evaluated as code."""
    s = str(text).strip().lower()
    if len(s) > 200:
        return None
    s = re.sub(r"^[a-z ]*(?:=|is|:)\s*", "", s) if re.match(r"^[a-z ]*(?:=|\bis\b|:)", s) else s
    for _ in range(4):
        s = _FRAC.sub(r"((\1)/(\2))", s)
    for pattern, repl in _LATEX:
        s = re.sub(pattern, repl, s)
    s = _UNITS.sub("", s).replace("{", "(").replace("}", ")").rstrip(". ")
    s = re.sub(r"(?<=\d),(?=\d{3}\b)", "", s)
    tokens = []
    for number, name, other in _TOKEN.findall(s):
        if number:
            tokens.append(("num", float(number)))
        elif name:
            tokens.append(("name", name))
        elif other.strip():
            tokens.append(("op", other))
    try:
        value, rest = _expr(tokens, 0)
    except (IndexError, ValueError, ZeroDivisionError, OverflowError):
        return None
    if rest != len(tokens) or value is None or not math.isfinite(value):
        return None
    return value


def _expr(tokens: list, i: int) -> tuple[float, int]:
    value, i = _term(tokens, i)
    while i < len(tokens) and tokens[i] in (("op", "+"), ("op", "-")):
        op = tokens[i][1]
        rhs, i = _term(tokens, i + 1)
        value = value + rhs if op == "+" else value - rhs
    return value, i


def _term(tokens: list, i: int) -> tuple[float, int]:
    value, i = _power(tokens, i)
    while i < len(tokens):
        if tokens[i] in (("op", "*"), ("op", "/")):
            op = tokens[i][1]
            rhs, i = _power(tokens, i + 1)
            value = value * rhs if op == "*" else value / rhs
        elif tokens[i][0] in ("num", "name") or tokens[i] == ("op", "("):  # implicit product: 2√3, 3π
            rhs, i = _power(tokens, i)
            value *= rhs
        else:
            break
    return value, i


def _power(tokens: list, i: int) -> tuple[float, int]:
    base, i = _unary(tokens, i)
    if i < len(tokens) and tokens[i] == ("op", "^"):
        exponent, i = _power(tokens, i + 1)
        if abs(exponent) > 8:
            raise ValueError("exponent too large")
        return base**exponent, i
    return base, i


def _unary(tokens: list, i: int) -> tuple[float, int]:
    kind, v = tokens[i]
    if (kind, v) == ("op", "-"):
        value, i = _unary(tokens, i + 1)
        return -value, i
    if (kind, v) == ("op", "+"):
        return _unary(tokens, i + 1)
    if kind == "num":
        return v, i + 1
    if (kind, v) == ("name", "pi"):
        return math.pi, i + 1
    if (kind, v) == ("name", "sqrt"):
        arg, i = _unary(tokens, i + 1)
        if arg < 0:
            raise ValueError("square root of a negative number")
        return math.sqrt(arg), i
    if (kind, v) == ("op", "("):
        value, i = _expr(tokens, i + 1)
        if tokens[i] != ("op", ")"):
            raise ValueError("unbalanced parenthesis")
        return value, i + 1
    raise ValueError(f"unexpected {v!r}")


def _letter(text: str) -> str | None:
    m = re.fullmatch(r"\(\s*([A-Da-d])\s*\)(?:\s.*)?|([A-Da-d])(?:\s*[.):]\s*.*)?", text.strip().strip("*").strip())
    return (m.group(1) or m.group(2)).upper() if m else None


def score(prediction: str, target: str) -> float:
    """1.0 when ``prediction`` says the answer ``target``: the same words for Yes/No, the same
    letter (or the choice's text) for a choice, the same whole number for a count, and for a
    value any form whose value rounds to the target's at :data:`PLACES` places."""
    pred, truth = str(prediction).strip(), str(target).strip()
    if truth in ("Yes", "No"):
        word = re.sub(r"[^a-z]", "", pred.lower())
        return 1.0 if word == truth.lower() else 0.0
    if len(truth) == 1 and truth in LETTERS:
        return 1.0 if _letter(pred) == truth else 0.0
    want = parse_value(truth)
    got = parse_value(pred)
    if want is None or got is None:
        return 1.0 if pred.lower() == truth.lower() else 0.0
    if re.fullmatch(r"\d+", truth) and abs(got - want) < 1e-9:  # a count or a whole value
        return 1.0
    if max(abs(got), abs(want)) > 1e12:  # beyond what places mean for a figure's measures
        return 1.0 if math.isclose(got, want, rel_tol=1e-12) else 0.0
    step = Decimal(1).scaleb(-PLACES)
    a = Decimal(repr(got)).quantize(step, rounding=ROUND_HALF_UP)
    b = Decimal(repr(want)).quantize(step, rounding=ROUND_HALF_UP)
    return 1.0 if a == b else 0.0





def wrong_answers(figure: Figure, rule: Mapping[str, Any]) -> list[str]:
    """Plausible wrong answers to a value question (for stand-in actors): the answer's
    choice distractors, or for a decimal answer values 25% and 50% off."""
    solved = solve(figure)
    kind, t = rule["kind"], rule["target"]
    value = evaluate(solved, figure, kind, t)
    if isinstance(value, str):  # a count
        n = int(value)
        return [str(m) for m in (n - 1, n + 1, n + 2) if m >= 0 and m != n]
    truth = value.text() if value.kind != "decimal_exact" else rounded(value.number)  # type: ignore[arg-type]
    out: list[str] = []
    for recipe in DISTRACTORS:
        d = _distractor(value, recipe, kind == "angle")
        if d is not None and d.text() != truth and d.text() not in out:
            out.append(d.text())
    if not out:
        x = value.to_decimal()
        out = [rounded(x * Decimal(f)) for f in ("0.5", "0.75", "1.25", "1.5")]
    return out


def answer_terms(answer: str) -> int:
    """How many terms an answer's form has: a whole number, a word or a letter 1; a fraction,
    a root or a multiple of π one more; each further term joined by + or - one more; a
    decimal (a value with no short exact form) 3."""
    text = str(answer).strip()
    if re.fullmatch(r"\d+\.\d+", text):
        return 3
    terms = 1 + len(re.findall(r" [+-] ", text))
    return terms + (1 if re.search(r"[√π/]", text) else 0)
