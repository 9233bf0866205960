"""Seed problems of the geometry arm: the procedural generator of textbook-style diagrams
and a loader of problems written as JSON, and :func:`make_source`, which gives either.

A :class:`Problem` is a figure (:class:`~vicogym.structures.geometry.Figure`) and a question
on it (a :class:`~vicogym.structures.geometry.GeometryRule` whose ``question`` is the text
:func:`~vicogym.programs.geometry.question_text` derives).

The generator builds a figure from a base shape (a triangle with whole or surd sides and
angles that are multiples of 15 degrees: Pythagorean triples, 30-60-90 and 45-45-90
triangles, isosceles, equilateral and Heronian triangles; a rectangle, parallelogram,
rhombus or trapezoid; a circle with points on it; tangents from an external point) and a
few auxiliary constructions (altitudes, medians, midsegments, the crossing of two cevians,
inscribed and circumscribed circles, a triangle attached on a side, a parallelogram's fourth
vertex, a point on a circle, a distractor segment), then asks a question of the family drawn
whose reasoning takes exactly the level drawn (:func:`~vicogym.programs.geometry.reasoning_steps`).
The givens the answer needs are shown where the presentation says (:data:`PRESENTATIONS`):
only in the question's text, in the text and on the diagram, or only on the diagram.

Every draw uses the ``rng`` it is given and nothing else, so one state gives one problem.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from vicogym.core import canonical_json
from vicogym.errors import GenerationError, InvalidEdit, SourceError
from vicogym.programs.geometry import (
    DISTRACTORS,
    FAMILIES,
    RELATIONS,
    length,
    needed_givens,
    on_drawn,
    question_text,
    reasoning_steps,
    relabel,
    relation_holds,
    undrawn_mark,
    unstated,
)
from vicogym.sources import _safe, place, read_json, source_path
from vicogym.structures.geometry import Figure, Solved, Style, Surd, givens, solve

#: where the givens the answer needs are shown: only in the question's text; in the text and
#: on the diagram; only on the diagram (from text-dominant to vision-only)
PRESENTATIONS = ("text", "both", "diagram")
#: reasoning steps, as :func:`~vicogym.programs.geometry.reasoning_steps` counts them
LEVELS = (1, 2, 3, 4, 5)
#: the lowest level a question of each family can take (perimeter, ratio, count and arc
#: combine measures, which counts one step; an arc needs a circle and two points on it; a
#: count, a figure of two triangles at least)
MIN_LEVEL = {"angle": 1, "length": 1, "area": 1, "relation": 1, "choice": 1, "perimeter": 2, "ratio": 2,
             "count": 3, "arc": 3}
#: the families whose reasoning counts one step more for combining measures
COMBINING = ("perimeter", "ratio", "arc", "count")
#: the longest question text a problem may have (characters)
MAX_QUESTION = 900
#: point names: capital letters without I and O, which name an incircle's and a circle's centre
LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ"
#: the smallest angle between two drawn lines at a point (degrees) and the closest two points
#: may lie, as a share of the figure's extent
MIN_ANGLE, MIN_GAP = 10.0, 1 / 12
#: the closest a point may lie to a drawn segment it is not on, as a share of the extent
MIN_CLEAR = 1 / 24


@dataclass(frozen=True)
class Problem:
    """A figure, a question on it (``rule``, a GeometryRule with its derived ``question``)
    and where it came from (``source_id``); ``level`` and ``presentation`` as drawn by the
    procedural generator (``None`` for a problem from a file)."""

    figure: Figure
    rule: dict
    source_id: str
    level: int | None = field(default=None, compare=False)
    presentation: str | None = field(default=None, compare=False)


# -- numbers the constructions use ----------------------------------------------------------
#: Pythagorean triples (legs, hypotenuse)
TRIPLES = ((3, 4, 5), (5, 12, 13), (6, 8, 10), (8, 15, 17))
#: isosceles triangles (leg, leg, base) and scalene Heronian triangles (whole sides, whole area)
ISOSCELES = ((5, 5, 6), (5, 5, 8), (13, 13, 10), (10, 10, 12), (13, 13, 24), (17, 17, 16))
HERONIAN = ((13, 14, 15), (13, 20, 21), (10, 17, 21), (11, 13, 20), (15, 13, 14))
#: base angles (at the first and second vertex) of triangles solved by ASA: multiples of 15,
#: each at least 30 and the third at least 30
BASE_ANGLES = tuple((a, b) for a in range(30, 121, 15) for b in range(30, 121, 15) if a + b <= 150)
SPECIAL = ((30, 60), (60, 30), (45, 45), (30, 90), (60, 90), (45, 90), (90, 30), (90, 45), (90, 60), (60, 60),
           (30, 30), (75, 75), (45, 60), (60, 45))
SIDES = (4, 5, 6, 8, 10, 12)


def _pick(rng: np.random.Generator, items: Sequence[Any]) -> Any:
    return items[int(rng.integers(len(items)))]


# -- building a figure ------------------------------------------------------------------------
class _Scene:
    """A figure being built: its steps, what is drawn, the triangles it holds (counter-
    clockwise, so a side's outside is on the right of its direction), the polygons and
    circles a question may ask about."""

    def __init__(self, rng: np.random.Generator, names: list[str]):
        self.rng = rng
        self.names = names
        self.steps: list[dict[str, Any]] = []
        self.draw: list[list[str]] = []
        self.triangles: list[tuple[str, str, str]] = []
        self.polygons: list[tuple[str, ...]] = []
        self.circles: list[tuple[str, str]] = []
        self.cevians: list[tuple[str, str, tuple[str, str], tuple[str, str, str]]] = []
        self.midpoints: dict[frozenset[str], str] = {}
        self.inner: set[frozenset[str]] = set()  # sides shared by two triangles
        self.used: set[str] = set()
        self.circle_names = ["w", "k", "c", "s"]

    def new(self, prefer: str | None = None) -> str:
        if prefer is not None and prefer not in self.used:
            self.used.add(prefer)
            return prefer
        for n in self.names:
            if n not in self.used:
                self.used.add(n)
                return n
        raise _Retry("out of names")

    def add(self, step: dict[str, Any]) -> None:
        self.steps.append(step)

    def seg(self, a: str, b: str) -> None:
        if [a, b] not in self.draw and [b, a] not in self.draw and a != b:
            self.draw.append(["segment", a, b])

    def solved(self) -> Solved:
        try:
            return solve(Figure(tuple(self.steps), ()))
        except InvalidEdit as exc:
            raise _Retry(str(exc)) from None

    def exact_length(self, a: str, b: str) -> str:
        value = length(self.solved(), a, b)
        if value.kind != "surd" or len(str(value.number)) > 12:
            raise _Retry("an inexact side")
        return str(value.number)

    # base shapes
    def start(self, length_text: str) -> tuple[str, str]:
        a, b = self.new(), self.new()
        direction = 0 if self.rng.random() < 0.6 else int(_pick(self.rng, (-45, -30, -15, 15, 30, 45)))
        self.add({"op": "origin", "point": a})
        self.add({"op": "polar", "point": b, "from": a, "length": length_text, "angle": str(direction), "ref": None})
        return a, b

    def triangle(self) -> tuple[str, str, str]:
        rng = self.rng
        kind = _pick(rng, ("asa", "special", "special", "right_sss", "right_legs", "right_polar", "isosceles",
                           "equilateral", "heronian", "sas"))
        k = int(_pick(rng, (1, 1, 1, 2)))
        if kind in ("asa", "special"):
            angles = _pick(rng, BASE_ANGLES if kind == "asa" else SPECIAL)
            a, b = self.start(str(_pick(rng, SIDES)))
            c = self.new()
            self.add({"op": "asa", "point": c, "from": [a, b], "angles": [str(angles[0]), str(angles[1])], "side": 1})
        elif kind in ("right_sss", "right_legs", "right_polar"):
            p, q, h = _pick(rng, TRIPLES)
            if rng.random() < 0.5:
                p, q = q, p
            if kind == "right_sss":  # the hypotenuse as the base
                a, b = self.start(str(h * k))
                c = self.new()
                self.add({"op": "sss", "point": c, "from": [a, b], "lengths": [str(p * k), str(q * k)], "side": 1})
            elif kind == "right_legs":  # a leg as the base, the hypotenuse and the other leg given
                a, b = self.start(str(p * k))
                c = self.new()
                self.add({"op": "sss", "point": c, "from": [a, b], "lengths": [str(h * k), str(q * k)], "side": 1})
            else:  # a leg, the right angle and the other leg
                a, b = self.start(str(p * k))
                c = self.new()
                self.add({"op": "polar", "point": c, "from": b, "length": str(q * k), "angle": "-90", "ref": a})
        elif kind == "isosceles":
            leg, _, base = _pick(rng, ISOSCELES)
            a, b = self.start(str(base))
            c = self.new()
            self.add({"op": "sss", "point": c, "from": [a, b], "lengths": [str(leg), str(leg)], "side": 1})
        elif kind == "equilateral":
            s = str(_pick(rng, SIDES))
            a, b = self.start(s)
            c = self.new()
            self.add({"op": "sss", "point": c, "from": [a, b], "lengths": [s, s], "side": 1})
        elif kind == "heronian":
            x, base, y = _pick(rng, HERONIAN)
            if rng.random() < 0.5:
                x, y = y, x
            a, b = self.start(str(base))
            c = self.new()
            self.add({"op": "sss", "point": c, "from": [a, b], "lengths": [str(x), str(y)], "side": 1})
        else:  # two sides and the angle between them, the angle a multiple of 15
            a, b = self.start(str(_pick(rng, SIDES)))
            c = self.new()
            beta = int(_pick(rng, (45, 60, 90, 120, 135)))
            self.add({"op": "polar", "point": c, "from": b, "length": str(_pick(rng, SIDES)), "angle": str(-beta),
                      "ref": a})
        tri = (a, b, c)
        self.triangles.append(tri)
        for x, y in ((a, b), (b, c), (c, a)):
            self.seg(x, y)
        return tri

    def quadrilateral(self) -> tuple[str, str, str, str]:
        rng = self.rng
        kind = _pick(rng, ("rectangle", "square", "parallelogram", "rhombus", "trapezoid", "right_trapezoid"))
        w = int(_pick(rng, (6, 8, 10, 12)))
        a, b = self.start(str(w))
        c, d = self.new(), self.new()
        beta = 90 if kind in ("rectangle", "square", "right_trapezoid") else int(_pick(rng, (45, 60, 120, 135)))
        side = {"square": w, "rhombus": w}.get(kind, int(_pick(rng, (4, 5, 6, 8))))
        self.add({"op": "polar", "point": c, "from": b, "length": str(side), "angle": str(-beta), "ref": a})
        top = str(w) if kind not in ("trapezoid", "right_trapezoid") else str(_pick(rng, (w // 2, w - 2, w + 2)))
        self.add({"op": "parallel", "point": d, "through": c, "to": [b, a], "length": top})
        for x, y in ((a, b), (b, c), (c, d), (d, a)):
            self.seg(x, y)
        self.polygons.append((a, b, c, d))
        self.triangles.append((a, b, c))  # for auxiliary constructions on its sides
        self.inner.add(frozenset((a, c)))
        return a, b, c, d

    def circle_base(self) -> tuple[str, str, str]:
        """A circle with centre O through a first point (the radius)."""
        o = self.new("O")
        a = self.new()
        r = str(_pick(self.rng, (3, 4, 5, 6, 8, 10)))
        direction = 0 if self.rng.random() < 0.5 else int(_pick(self.rng, (-90, -60, 30, 90, 120, 150)))
        self.add({"op": "origin", "point": o})
        self.add({"op": "polar", "point": a, "from": o, "length": r, "angle": str(direction), "ref": None})
        w = self.circle_names.pop(0)
        self.add({"op": "circle", "circle": w, "center": o, "through": a})
        self.circles.append((w, o))
        self.draw.append(["circle", w])
        return o, a, w

    def tangent_scene(self, arcs: bool = False) -> None:
        rng = self.rng
        o, a, w = self.circle_base()
        r = int(self.steps[1]["length"])
        # the distance to the external point: the tangent's length is whole where a triple fits the radius
        # (its angles are multiples of 15 where the distance is twice the radius or the radius times root 2)
        fits = [str(h * r // s) for s, _, h in ((3, 4, 5), (4, 3, 5), (5, 12, 13), (12, 5, 13), (8, 15, 17),
                                                 (15, 8, 17)) if (h * r) % s == 0]
        d = _pick(rng, [str(2 * r), f"{r}*sqrt(2)"] + ([] if arcs else fits))
        p = self.new()
        self.add({"op": "polar", "point": p, "from": o, "length": str(d),
                  "angle": str(_pick(rng, (-150, -135, -120, -90, 90, 120, 135, 150))), "ref": a})
        t1 = self.new()
        self.add({"op": "tangent", "point": t1, "from": p, "circle": w, "side": 1})
        self.seg(p, t1)
        self.seg(o, t1)
        self.seg(o, a)
        if arcs or rng.random() < 0.7:
            t2 = self.new()
            self.add({"op": "tangent", "point": t2, "from": p, "circle": w, "side": -1})
            self.seg(p, t2)
            if rng.random() < 0.6:
                self.seg(o, t2)
            if rng.random() < 0.5:
                self.seg(o, p)
                if ["segment", o, t2] in self.draw:
                    self.triangles.append((o, p, t2) if _left(self, o, p, t2) else (o, t2, p))
        else:
            self.seg(o, p)
            self.triangles.append((o, p, t1) if _left(self, o, p, t1) else (o, t1, p))

    def circle_points(self) -> None:
        rng = self.rng
        o, a, w = self.circle_base()
        n = int(_pick(rng, (2, 2, 3)))
        made = [a]
        # not 180 degrees from another (a given of 180 degrees reads oddly)
        angles = sorted(int(x) for x in rng.choice([15 * i for i in range(2, 23) if i != 12], size=n, replace=False))
        for k, ang in enumerate(angles):
            p = self.new()
            if k and rng.random() < 0.3 and ang - angles[k - 1] != 180:  # from the point before
                ref, rel = made[-1], ang - angles[k - 1]
            else:
                ref, rel = a, ang
            rel = (rel + 179) % 360 - 179  # in (-180, 180]
            self.add({"op": "on_circle", "point": p, "circle": w, "ref": ref, "angle": str(rel)})
            made.append(p)
        style = rng.random()
        if style < 0.5:  # an inscribed polygon
            for x, y in zip(made, made[1:] + made[:1]):
                self.seg(x, y)
            if len(made) == 3:
                self.triangles.append(tuple(made))  # type: ignore[arg-type]
            else:
                self.polygons.append(tuple(made))
        else:  # radii and chords
            for x in made[:2]:
                self.seg(o, x)
            for x, y in zip(made, made[1:]):
                self.seg(x, y)
            self.triangles.append((o, a, made[1]) if _left(self, o, a, made[1]) else (o, made[1], a))
        if rng.random() < 0.3:
            self.seg(o, made[-1])

    # auxiliary constructions
    def aux(self, deep: bool = False) -> None:
        """One auxiliary construction (a few kinds are tried before giving up), on the newest
        triangle mostly, so that constructions build on one another."""
        for _ in range(6):
            ops = ["altitude", "median", "midsegment", "attach", "attach", "incircle", "circumcircle", "midpoint"]
            if deep:  # constructions that make new triangles on the newest one
                ops = ["attach"] * 4 + ["altitude", "altitude", "median", "circumcircle"]
            if len({c[0] for c in self.cevians}) >= 2:
                ops += ["crossing"] * 2
            if self.circles:
                ops += ["on_circle"] * (2 if deep else 1)
            if len(self.triangles) == 1 and not self.polygons:
                ops += ["parallelogram"]
            op = _pick(self.rng, ops)
            if not self.triangles and op != "on_circle":
                continue
            newest = deep or self.rng.random() < 0.6
            tri = self.triangles[-1] if self.triangles and newest else \
                _pick(self.rng, self.triangles) if self.triangles else ("", "", "")
            i = int(self.rng.integers(3))
            saved = self.snapshot()
            try:
                getattr(self, f"_aux_{op}")(tri, tri[i], tri[(i + 1) % 3], tri[(i + 2) % 3])
                self.check()
                return
            except _Retry:
                self.restore(saved)

    def snapshot(self) -> tuple[Any, ...]:
        return (list(self.steps), [list(d) for d in self.draw], list(self.triangles), list(self.polygons),
                list(self.circles), list(self.cevians), dict(self.midpoints), set(self.inner), set(self.used),
                list(self.circle_names))

    def restore(self, saved: tuple[Any, ...]) -> None:
        (self.steps, self.draw, self.triangles, self.polygons, self.circles, self.cevians, self.midpoints, self.inner,
         self.used, self.circle_names) = saved

    def uncrossed(self, new: list[tuple[str, str]]) -> None:
        """``_Retry`` when a new side would cross a drawn segment (an attached shape lies over the figure)."""
        pts = _floats(self.steps)[0]
        for a, b in new:
            for element in self.draw:
                if element[0] == "segment" and not {a, b} & set(element[1:]) and \
                        _cross(pts[a], pts[b], pts[element[1]], pts[element[2]]):
                    raise _Retry("a new side crosses the figure")

    def check(self) -> None:
        """``_Retry`` when the figure so far cannot be constructed or read."""
        figure = Figure(tuple(self.steps), tuple(tuple(d) for d in self.draw))
        if _Layout(figure).legible() is not None:
            raise _Retry("illegible")
        if any(s["op"] in EXACTING for s in self.steps[-2:]):
            self.solved()  # a square root the surds may not hold

    def _aux_altitude(self, tri: tuple[str, str, str], v: str, x: str, y: str) -> None:
        if any(c[0] == v and c[2] == (x, y) for c in self.cevians):
            raise _Retry("drawn already")
        h = self.new()
        self.add({"op": "foot", "point": h, "from": v, "to": [x, y]})
        self.seg(v, h)
        self.cevians.append((v, h, (x, y), tri))
        self._split(v, x, y, h)

    def _split(self, v: str, x: str, y: str, p: str) -> None:
        """Triangle ``v x y`` cut by the cevian ``v p``: its two parts become triangles."""
        self.inner.add(frozenset((v, p)))
        if frozenset((x, y)) in self.inner:
            self.inner.update((frozenset((x, p)), frozenset((p, y))))
        self.triangles += [(v, x, p), (v, p, y)][::1 if self.rng.random() < 0.5 else -1]

    def _aux_median(self, tri: tuple[str, str, str], v: str, x: str, y: str) -> None:
        if any(c[0] == v and c[2] == (x, y) for c in self.cevians):
            raise _Retry("drawn already")
        m = self._midpoint(x, y)
        self.seg(v, m)
        self.cevians.append((v, m, (x, y), tri))
        self._split(v, x, y, m)

    def _aux_midpoint(self, tri: tuple[str, str, str], v: str, x: str, y: str) -> None:
        if frozenset((x, y)) in self.midpoints:
            raise _Retry("made already")
        self._midpoint(x, y)

    def _aux_midsegment(self, tri: tuple[str, str, str], v: str, x: str, y: str) -> None:
        m1, m2 = self._midpoint(v, x), self._midpoint(v, y)
        self.seg(m1, m2)

    def _aux_crossing(self, tri: tuple[str, str, str], v: str, x: str, y: str) -> None:
        firsts: dict[str, tuple[str, str]] = {}
        for c in self.cevians:
            firsts.setdefault(c[0], (c[0], c[1]))
        lines = list(firsts.values())[-2:]
        if any(s["op"] == "intersect" and s["lines"] == [list(line) for line in lines] for s in self.steps):
            raise _Retry("made already")
        name = self.new()
        self.add({"op": "intersect", "point": name, "lines": [list(line) for line in lines]})

    def _aux_incircle(self, tri: tuple[str, str, str], v: str, x: str, y: str) -> None:
        if not self.circle_names or any(s["op"] == "incircle" for s in self.steps):
            raise _Retry("too many circles")
        w, centre = self.circle_names.pop(0), self.new("I")
        self.add({"op": "incircle", "circle": w, "center": centre, "of": list(tri)})
        self.draw.append(["circle", w])
        self.circles.append((w, centre))
        if self.rng.random() < 0.5:
            t = self.new()
            self.add({"op": "foot", "point": t, "from": centre, "to": [x, y]})
            self.seg(centre, t)

    def _aux_circumcircle(self, tri: tuple[str, str, str], v: str, x: str, y: str) -> None:
        if not self.circle_names or any(s["op"] == "circumcircle" for s in self.steps):
            raise _Retry("too many circles")
        w, centre = self.circle_names.pop(0), self.new("O")
        self.add({"op": "circumcircle", "circle": w, "center": centre, "of": list(tri)})
        self.draw.append(["circle", w])
        self.circles.append((w, centre))
        if self.rng.random() < 0.5:
            self.seg(centre, v)
            if self.rng.random() < 0.5:
                self.seg(centre, x)

    def _aux_attach(self, tri: tuple[str, str, str], v: str, x: str, y: str) -> None:
        if frozenset((x, y)) in self.inner:
            raise _Retry("an inner side")
        d = self.new()
        angles = _pick(self.rng, BASE_ANGLES + SPECIAL)
        # tri is counter-clockwise: the outside of x -> y is on the left of y -> x
        self.add({"op": "asa", "point": d, "from": [y, x], "angles": [str(angles[0]), str(angles[1])], "side": 1})
        self.uncrossed([(x, d), (y, d)])
        self.seg(x, d)
        self.seg(y, d)
        self.inner.add(frozenset((x, y)))
        self.triangles.append((y, x, d))

    def _aux_parallelogram(self, tri: tuple[str, str, str], v: str, x: str, y: str) -> None:
        a, b, c = tri
        if frozenset((c, a)) in self.inner:
            raise _Retry("an inner side")
        d = self.new()
        self.add({"op": "parallel", "point": d, "through": c, "to": [b, a], "length": self.exact_length(a, b)})
        self.uncrossed([(c, d), (d, a)])
        self.seg(c, d)
        self.seg(d, a)
        self.polygons.append((a, b, c, d))
        self.inner.add(frozenset((c, a)))

    def _aux_on_circle(self, tri: tuple[str, str, str], v: str, x: str, y: str) -> None:
        w, _ = _pick(self.rng, self.circles)
        on = []
        for s in self.steps:
            if s["op"] == "circle" and s["circle"] == w:
                on.append(s["through"])
            elif s["op"] == "circumcircle" and s["circle"] == w:
                on.extend(s["of"])
            elif s["op"] in ("on_circle", "tangent") and s["circle"] == w:
                on.append(s["point"])
        if not on:
            raise _Retry("no named point on the circle")
        ref = on[-1] if self.rng.random() < 0.6 else _pick(self.rng, on)
        p = self.new()
        self.add({"op": "on_circle", "point": p, "circle": w, "ref": ref,
                  "angle": str(int(_pick(self.rng, (-150, -120, -90, -60, 60, 90, 120, 150))))})
        others = [n for n in on if n != ref]
        self.seg(p, ref)
        if others:
            other = _pick(self.rng, others)
            self.seg(p, other)
            self.triangles.append((ref, p, other) if _left(self, ref, p, other) else (ref, other, p))

    def _midpoint(self, x: str, y: str) -> str:
        key = frozenset((x, y))
        if key not in self.midpoints:
            m = self.new()
            self.add({"op": "midpoint", "point": m, "of": [x, y]})
            self.midpoints[key] = m
        return self.midpoints[key]

    def distractor(self) -> None:
        """A segment the question may not need, between two points not yet joined."""
        pts = [s.get("point") for s in self.steps if "point" in s]
        pairs = [(p, q) for i, p in enumerate(pts) for q in pts[i + 1:]
                 if ["segment", p, q] not in self.draw and ["segment", q, p] not in self.draw]
        if pairs:
            self.seg(*_pick(self.rng, pairs))


class _Retry(Exception):
    """This figure or question cannot be used; draw another."""


def _left(scene: _Scene, a: str, b: str, c: str) -> bool:
    pts = _floats(scene.steps)[0]
    (ax, ay), (bx, by), (cx, cy) = pts[a], pts[b], pts[c]
    return (bx - ax) * (cy - ay) - (by - ay) * (cx - ax) > 0


def _cross(p: tuple[float, float], q: tuple[float, float], r: tuple[float, float], s: tuple[float, float]) -> bool:
    """Whether segments pq and rs (which share no end) cross or touch."""
    def side(a: tuple[float, float], b: tuple[float, float], c: tuple[float, float]) -> float:
        return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])

    return side(p, q, r) * side(p, q, s) <= 0 and side(r, s, p) * side(r, s, q) <= 0


def _to_segment(p: tuple[float, float], a: tuple[float, float], b: tuple[float, float]) -> float:
    dx, dy = b[0] - a[0], b[1] - a[1]
    t = min(1.0, max(0.0, ((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / (dx * dx + dy * dy)))
    return math.dist(p, (a[0] + t * dx, a[1] + t * dy))


def _names(rng: np.random.Generator) -> list[str]:
    """Point names for one figure: a run of consecutive letters from a random start (DEF...,
    PQR...) or letters in a random order."""
    if rng.random() < 0.4:
        start = int(rng.integers(len(LETTERS)))
        return list(LETTERS[start:] + LETTERS[:start])
    return [LETTERS[int(i)] for i in rng.permutation(len(LETTERS))]


def _build(rng: np.random.Generator, family: str, level: int) -> tuple[Figure, list[tuple[str, ...]]]:
    """A figure for a question of ``family`` at ``level`` and the polygons its construction made."""
    scene = _Scene(rng, _names(rng))
    if family == "arc":  # a tangent's figure rests on five steps, a circle's on three or more
        base = _pick(rng, (("circle", "circle", "triangle"), ("circle", "tangent"), ("tangent", "tangent", "circle"))
                     [min(level, 5) - 3])
    else:
        base = _pick(rng, ("triangle", "triangle", "triangle", "quad", "circle", "tangent"))
    if base == "triangle":
        scene.triangle()
    elif base == "quad":
        scene.quadrilateral()
    elif base == "circle":
        scene.circle_points()
    else:
        scene.tangent_scene(arcs=family == "arc")
    # constructions enough for the asked objects to rest on level + 1 steps (level, for a family
    # that combines measures); a count rests on every drawn step, so it gets just enough
    wanted = level + (0 if family in COMBINING else 1) + (0 if family == "count" else int(rng.integers(0, 3)))
    if level >= 4 and family != "count":
        wanted += 1  # deep questions rest on long chains, and the top level holds every deeper one too
    if family == "arc" and base == "triangle" and not scene.circles:
        _circle_aux(scene)
    for _ in range(10):
        if len(scene.steps) - 1 >= wanted or len(scene.steps) >= 14:
            break
        scene.aux(deep=level >= 4)
    if level >= 3 and rng.random() < 0.25:
        scene.distractor()
    try:
        figure = Figure.from_dict({"steps": scene.steps, "draw": scene.draw, "diagram": [],
                                   "style": Style().to_dict()})
    except InvalidEdit as exc:
        raise _Retry(str(exc)) from None
    return figure, scene.polygons


def _circle_aux(scene: _Scene) -> None:
    tri = scene.triangles[0]
    w, centre = scene.circle_names.pop(0), scene.new("O")
    scene.add({"op": "circumcircle", "circle": w, "center": centre, "of": list(tri)})
    scene.draw.append(["circle", w])
    scene.circles.append((w, centre))
    scene.seg(centre, tri[0])
    scene.seg(centre, tri[1])


# -- coordinates in floats, for the checks while a figure is built --------------------------------
#: steps whose exact construction takes a square root the surds may not hold
EXACTING = ("incircle", "sss", "tangent", "parallel")


@functools.lru_cache(maxsize=256)
def _number(text: str) -> float:
    return Surd.parse(text).to_float()


def _rot(v: tuple[float, float], degrees: float) -> tuple[float, float]:
    c, s = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    return v[0] * c - v[1] * s, v[0] * s + v[1] * c


def _meet(a: tuple[float, float], u: tuple[float, float], b: tuple[float, float],
          v: tuple[float, float]) -> tuple[float, float]:
    den = u[0] * v[1] - u[1] * v[0]
    if abs(den) < 1e-12 * (math.hypot(*u) * math.hypot(*v) + 1e-300):
        raise _Retry("parallel lines")
    t = ((b[0] - a[0]) * v[1] - (b[1] - a[1]) * v[0]) / den
    return a[0] + t * u[0], a[1] + t * u[1]


def _floats(steps: Sequence[Mapping[str, Any]]) -> tuple[dict[str, tuple[float, float]],
                                                         dict[str, tuple[str, float]]]:
    """Every point of the construction in floats and every circle's centre and radius (what
    :func:`~vicogym.structures.geometry.solve` gives exactly, here to check a figure's look fast)."""
    pts: dict[str, tuple[float, float]] = {}
    circles: dict[str, tuple[str, float]] = {}
    try:
        for s in steps:
            made = _float_step(s, pts, circles)
            for name in made:
                if any(math.dist(pts[name], q) < 1e-9 for n, q in pts.items() if n != name):
                    raise _Retry(f"{name} falls on another point")
    except (ZeroDivisionError, ValueError, OverflowError):
        raise _Retry("a construction that collapses") from None
    return pts, circles


def _float_step(s: Mapping[str, Any], pts: dict[str, tuple[float, float]],
                circles: dict[str, tuple[str, float]]) -> list[str]:
    """One step of :func:`_floats`; the points it made."""
    op = s["op"]
    if op == "origin":
        pts[s["point"]] = (0.0, 0.0)
    elif op == "polar":
        base, length_ = pts[s["from"]], _number(s["length"])
        if s.get("ref") is None:
            d = _rot((1.0, 0.0), float(s["angle"]))
        else:
            ref = pts[s["ref"]]
            v = (ref[0] - base[0], ref[1] - base[1])
            d = _rot((v[0] / math.hypot(*v), v[1] / math.hypot(*v)), float(s["angle"]))
        pts[s["point"]] = (base[0] + length_ * d[0], base[1] + length_ * d[1])
    elif op == "sss":
        a, b = pts[s["from"][0]], pts[s["from"][1]]
        la, lb = (_number(x) for x in s["lengths"])
        d = math.dist(a, b)
        x = (la * la - lb * lb + d * d) / (2 * d)
        if la * la - x * x <= 0:
            raise _Retry("no triangle with these sides")
        h = math.sqrt(la * la - x * x) * s["side"]
        ux, uy = (b[0] - a[0]) / d, (b[1] - a[1]) / d
        pts[s["point"]] = (a[0] + x * ux - h * uy, a[1] + x * uy + h * ux)
    elif op == "asa":
        a, b = pts[s["from"][0]], pts[s["from"][1]]
        alpha, beta = (float(x) for x in s["angles"])
        u = _rot((b[0] - a[0], b[1] - a[1]), s["side"] * alpha)
        v = _rot((a[0] - b[0], a[1] - b[1]), -s["side"] * beta)
        pts[s["point"]] = _meet(a, u, b, v)
    elif op == "midpoint":
        a, b = pts[s["of"][0]], pts[s["of"][1]]
        pts[s["point"]] = ((a[0] + b[0]) / 2, (a[1] + b[1]) / 2)
    elif op == "foot":
        p, a, b = pts[s["from"]], pts[s["to"][0]], pts[s["to"][1]]
        dx, dy = b[0] - a[0], b[1] - a[1]
        t = ((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / (dx * dx + dy * dy)
        pts[s["point"]] = (a[0] + t * dx, a[1] + t * dy)
    elif op == "intersect":
        (a, b), (c, d) = ([pts[n] for n in line] for line in s["lines"])
        pts[s["point"]] = _meet(a, (b[0] - a[0], b[1] - a[1]), c, (d[0] - c[0], d[1] - c[1]))
    elif op == "parallel":
        a, b, c = pts[s["to"][0]], pts[s["to"][1]], pts[s["through"]]
        k = _number(s["length"]) / math.dist(a, b)
        pts[s["point"]] = (c[0] + (b[0] - a[0]) * k, c[1] + (b[1] - a[1]) * k)
    elif op == "circle":
        circles[s["circle"]] = (s["center"], math.dist(pts[s["center"]], pts[s["through"]]))
    elif op == "on_circle":
        centre_name, r = circles[s["circle"]]
        o, ref = pts[centre_name], pts[s["ref"]]
        v = _rot((ref[0] - o[0], ref[1] - o[1]), float(s["angle"]))
        k = r / math.dist(o, ref)
        pts[s["point"]] = (o[0] + v[0] * k, o[1] + v[1] * k)
    elif op in ("incircle", "circumcircle"):
        a, b, c = (pts[n] for n in s["of"])
        if op == "incircle":
            la, lb, lc = math.dist(b, c), math.dist(a, c), math.dist(a, b)
            per = la + lb + lc
            centre = ((a[0] * la + b[0] * lb + c[0] * lc) / per, (a[1] * la + b[1] * lb + c[1] * lc) / per)
            area2 = abs((b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]))
            r = area2 / per
        else:
            den = 2 * ((b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]))
            if abs(den) < 1e-12:
                raise _Retry("collinear points")
            a2, b2, c2 = (p[0] ** 2 + p[1] ** 2 for p in (a, b, c))
            centre = ((a2 * (b[1] - c[1]) + b2 * (c[1] - a[1]) + c2 * (a[1] - b[1])) / den,
                      (a2 * (c[0] - b[0]) + b2 * (a[0] - c[0]) + c2 * (b[0] - a[0])) / den)
            r = math.dist(centre, a)
        pts[s["center"]] = centre
        circles[s["circle"]] = (s["center"], r)
    elif op == "tangent":
        centre_name, r = circles[s["circle"]]
        p, o = pts[s["from"]], pts[centre_name]
        d2 = (p[0] - o[0]) ** 2 + (p[1] - o[1]) ** 2
        if d2 <= r * r:
            raise _Retry("no tangent from inside the circle")
        k1, k2 = r * r / d2, r * math.sqrt(d2 - r * r) / d2 * s["side"]
        v = (p[0] - o[0], p[1] - o[1])
        pts[s["point"]] = (o[0] + v[0] * k1 - v[1] * k2, o[1] + v[1] * k1 + v[0] * k2)
    if op == "circle":
        return []
    return [s["center"] if op in ("incircle", "circumcircle") else s["point"]]


# -- reading a figure ---------------------------------------------------------------------------
class _Layout:
    """A figure's points as floats, which named points lie on each drawn segment, the
    segments a reader sees (two named points on one drawn segment) and the rays at each
    point."""

    def __init__(self, figure: Figure):
        self.figure = figure
        self.pts, self.circles = _floats(figure.steps)
        self.names = [n for n in figure.point_names() + [s["center"] for s in figure.steps
                                                          if s["op"] in ("incircle", "circumcircle")]
                      if n in self.pts]
        self.names.sort(key=lambda n: self.order(n))
        xs = [p[0] for p in self.pts.values()]
        ys = [p[1] for p in self.pts.values()]
        for centre, r in self.circles.values():
            cx, cy = self.pts[centre]
            xs += [cx - r, cx + r]
            ys += [cy - r, cy + r]
        self.extent = max(max(xs) - min(xs), max(ys) - min(ys), 1e-9)
        self.on: list[list[str]] = []
        for element in figure.draw:
            if element[0] != "segment":
                continue
            a, b = element[1], element[2]
            members = [(t, n) for n in self.names if (t := self._param(a, b, n)) is not None]
            self.on.append([n for _, n in sorted(members)])
        self.visible: list[tuple[str, str]] = []
        seen = set()
        for members in self.on:
            for i, p in enumerate(members):
                for q in members[i + 1:]:
                    if frozenset((p, q)) not in seen:
                        seen.add(frozenset((p, q)))
                        self.visible.append((p, q))
        self.seen = seen

    def order(self, name: str) -> int:
        for i, s in enumerate(self.figure.steps):
            if name in (s.get("point"), s.get("center") if s["op"] != "circle" else None):
                return i
        return len(self.figure.steps)

    def _param(self, a: str, b: str, n: str) -> float | None:
        (ax, ay), (bx, by), (px, py) = self.pts[a], self.pts[b], self.pts[n]
        dx, dy = bx - ax, by - ay
        d2 = dx * dx + dy * dy
        if abs(dx * (py - ay) - dy * (px - ax)) > 1e-9 * d2:
            return None
        t = ((px - ax) * dx + (py - ay) * dy) / d2
        return t if -1e-9 <= t <= 1 + 1e-9 else None

    def joined(self, p: str, q: str) -> bool:
        return frozenset((p, q)) in self.seen

    def rays(self, y: str) -> list[tuple[float, list[str]]]:
        """The distinct directions of visible segments leaving ``y`` and the points along each."""
        out: list[tuple[float, list[str]]] = []
        for p, q in self.visible:
            if y not in (p, q):
                continue
            x = q if p == y else p
            (yx, yy), (xx, xy) = self.pts[y], self.pts[x]
            ang = math.degrees(math.atan2(xy - yy, xx - yx))
            for a, members in out:
                if abs((ang - a + 180) % 360 - 180) < 1e-7:
                    members.append(x)
                    break
            else:
                out.append((ang, [x]))
        return out

    def angle(self, x: str, y: str, z: str) -> float:
        (xx, xy), (yx, yy), (zx, zy) = self.pts[x], self.pts[y], self.pts[z]
        a = math.atan2(xy - yy, xx - yx) - math.atan2(zy - yy, zx - yx)
        return abs(math.degrees((a + math.pi) % (2 * math.pi) - math.pi))

    def legible(self) -> str | None:
        """Why a reader could not read the figure, or ``None``."""
        gap = self.extent * MIN_GAP
        names = list(self.pts)
        for i, p in enumerate(names):
            for q in names[i + 1:]:
                if math.dist(self.pts[p], self.pts[q]) < gap:
                    return f"{p} and {q} are too close"
        for y in self.names:
            rays = self.rays(y)
            for i, (a, _) in enumerate(rays):
                for b, _ in rays[i + 1:]:
                    if abs((a - b + 180) % 360 - 180) < MIN_ANGLE:
                        return f"a small angle at {y}"
        for s in self.figure.steps:  # feet and crossings lie on the drawn segments they are made on
            if s["op"] == "foot":
                t = self._param(s["to"][0], s["to"][1], s["point"])
                if t is None or not 0.04 < t < 0.96 or not self.joined(*s["to"]):
                    return f"{s['point']} lies off side {''.join(s['to'])}"
            if s["op"] == "intersect" and not all(
                    any(s["point"] in m and a in m and b in m for m in self.on) for a, b in s["lines"]):
                return f"{s['point']} lies off the segments it is made on"
        segments = [e for e in self.figure.draw if e[0] == "segment"]
        for (_, a, b), members in zip(segments, self.on):  # no point sits on a segment it is not on
            for n in self.names:
                if n not in members and _to_segment(self.pts[n], self.pts[a], self.pts[b]) < self.extent * MIN_CLEAR:
                    return f"{n} lies close to {a}{b}"
        for i, (_, a, b) in enumerate(segments):  # no drawn segment lies over another
            for _, c, d in segments[i + 1:]:
                if self._param(a, b, c) is not None and self._param(a, b, d) is not None or \
                        self._param(c, d, a) is not None and self._param(c, d, b) is not None:
                    return f"{a}{b} and {c}{d} overlap"
                if {a, b} & {c, d}:
                    continue
                if self._overlap(a, b, c, d):
                    return f"{a}{b} and {c}{d} overlap"
        return None

    def _overlap(self, a: str, b: str, c: str, d: str) -> bool:
        (ax, ay), (bx, by) = self.pts[a], self.pts[b]
        dx, dy = bx - ax, by - ay
        d2 = dx * dx + dy * dy
        for n in (c, d):
            px, py = self.pts[n]
            if abs(dx * (py - ay) - dy * (px - ax)) > 1e-9 * d2:
                return False
        ts = sorted(((self.pts[n][0] - ax) * dx + (self.pts[n][1] - ay) * dy) / d2 for n in (c, d))
        return ts[1] > 1e-9 and ts[0] < 1 - 1e-9

    def triangles(self) -> list[tuple[str, str, str]]:
        out = []
        for i, a in enumerate(self.names):
            for j in range(i + 1, len(self.names)):
                b = self.names[j]
                if not self.joined(a, b):
                    continue
                for c in self.names[j + 1:]:
                    if self.joined(a, c) and self.joined(b, c) and 15 < self.angle(b, a, c) < 165 and \
                            15 < self.angle(a, b, c) < 165:
                        out.append((a, b, c))
        return out

    def on_circle(self, circle: str) -> list[str]:
        centre, r = self.circles[circle]
        return [n for n in self.names if n != centre and abs(math.dist(self.pts[n], self.pts[centre]) - r) < 1e-9 * r]


# -- questions ------------------------------------------------------------------------------------
def _given_marks(figure: Figure) -> tuple[set[frozenset[str]], set[tuple[str, str, str]], list[tuple[str, ...]]]:
    lengths = {frozenset(g.names) for g in givens(figure) if g.kind == "length"}
    angles = {g.names for g in givens(figure) if g.kind == "angle"}
    marks = [g.names for g in givens(figure) if g.kind in ("perpendicular", "parallel", "tangent", "midpoint")]
    return lengths, angles, marks


@dataclass
class _Asking:
    """What the questions of one figure are drawn from."""

    figure: Figure
    layout: _Layout
    polygons: Sequence[tuple[str, ...]]

    def __post_init__(self) -> None:
        self.lengths, self.angles, self.marks = _given_marks(self.figure)
        self.right_at = {m[1] for m in self.marks if len(m) in (3, 4)}
        self.right_at |= {g[1] for g in self.angles if _is_right(self.figure, g)}
        self.tris = self.layout.triangles()
        shapes = [list(t) for t in self.tris] + [list(p) for p in self.polygons]
        solved = solve(self.figure)
        # a polygon a question names is one the picture draws: every side along a drawn line
        self.shapes = [s for s in shapes if all(on_drawn(self.figure, solved, a, b) for a, b in zip(s, s[1:] + s[:1]))]
        self.drawn_circles = [c for c in self.figure.circle_names() if ("circle", c) in self.figure.draw]

    def length(self) -> list[dict[str, Any]]:
        return [{"kind": "length", "target": {"of": [p, q]}} for p, q in self.layout.visible
                if frozenset((p, q)) not in self.lengths and not self.radius(p, q)]

    def radius(self, p: str, q: str) -> bool:
        """Whether pq is a radius of a circle whose radius the figure gives (no question)."""
        for centre, r in self.layout.circles.values():
            if centre in (p, q) and abs(math.dist(self.layout.pts[p], self.layout.pts[q]) - r) < 1e-9 * r:
                return True
        return False

    def angle(self) -> list[dict[str, Any]]:
        out = []
        for y in self.layout.names:
            rays = self.layout.rays(y)
            for i, (a, xs) in enumerate(rays):
                for b, zs in rays[i + 1:]:
                    turn = abs((a - b + 180) % 360 - 180)
                    if not MIN_ANGLE <= turn <= 180 - MIN_ANGLE or abs(turn / 15 - round(turn / 15)) > 1e-6:
                        continue  # a straight angle, or an answer that would be a decimal
                    if y in self.right_at and abs(turn - 90) < 1e-6:
                        continue  # a right angle the figure marks
                    out += [{"kind": "angle", "target": {"at": [x, y, z]}} for x in xs for z in zs
                            if (x, y, z) not in self.angles and (z, y, x) not in self.angles]
        return out

    def area(self) -> list[dict[str, Any]]:
        return [{"kind": "area", "target": {"of": s}} for s in self.shapes] + \
            [{"kind": "area", "target": {"circle": c}} for c in self.drawn_circles]

    def perimeter(self) -> list[dict[str, Any]]:
        return [{"kind": "perimeter", "target": {"of": s}} for s in self.shapes]

    def ratio(self) -> list[dict[str, Any]]:
        segs, shapes = self.layout.visible, self.shapes
        pairs = [("length", list(a), list(b)) for i, a in enumerate(segs) for b in segs[i + 1:]]
        pairs += [("area", a, b) for i, a in enumerate(shapes) for b in shapes[i + 1:]]
        return [{"kind": "ratio", "target": {"of": [{"kind": kind, "target": {"of": a}},
                                                    {"kind": kind, "target": {"of": b}}]}} for kind, a, b in pairs]

    def arc(self) -> list[dict[str, Any]]:
        out = []
        for c in self.drawn_circles:
            on = self.layout.on_circle(c)
            centre = self.layout.circles[c][0]
            for i, p in enumerate(on):
                for q in on[i + 1:]:
                    central = self.layout.angle(p, centre, q)
                    if 20 < central < 170 and abs(central / 15 - round(central / 15)) < 1e-6:
                        out += [{"kind": "arc", "target": {"circle": c, "between": [p, q], "measure": measure}}
                                for measure in ("length", "sector")]
        return out

    def count(self) -> list[dict[str, Any]]:
        return [{"kind": "count", "target": {}}] if len(self.tris) >= 2 else []

    def relation(self) -> list[dict[str, Any]]:
        out = []
        segs = self.layout.visible
        for i, a in enumerate(segs):
            for b in segs[i + 1:]:
                for relation in RELATIONS:
                    if relation != "equal" and (_same_lines(self.layout, a, b) or
                                                (relation == "parallel" and set(a) & set(b))):
                        continue  # on one line, or meeting at a point: no question
                    if not _stated(relation, a, b, self):
                        out.append({"kind": "relation", "target": {"relation": relation, "a": list(a),
                                                                   "b": list(b)}})
        return out

    def choice(self) -> list[dict[str, Any]]:
        """Choice questions over the numeric families (their distractors and order are drawn
        for the one question asked, see :func:`_with_choices`)."""
        inner = self.angle() + self.length() + self.area() + self.perimeter() + self.arc()
        return [{"kind": "choice", "target": {"inner": q, "distractors": list(DISTRACTORS), "order": [0, 1, 2, 3]}}
                for q in inner]


def _is_right(figure: Figure, names: tuple[str, ...]) -> bool:
    return any(g.kind == "angle" and g.names == names and g.value == "90" for g in givens(figure))


def _with_choices(rng: np.random.Generator, rule: dict[str, Any]) -> dict[str, Any]:
    if rule["kind"] != "choice":
        return rule
    recipes = [DISTRACTORS[int(i)] for i in rng.permutation(len(DISTRACTORS))]
    order = [int(i) for i in rng.permutation(4)]
    return {"kind": "choice", "target": {"inner": rule["target"]["inner"], "distractors": recipes, "order": order}}


def _same_lines(layout: _Layout, a: tuple[str, str], b: tuple[str, str]) -> bool:
    """Whether segments ``a`` and ``b`` lie on one line (a question about them is no question)."""
    return any(set(a) <= set(m) and set(b) <= set(m) for m in layout.on)


def _along(layout: _Layout, seg: tuple[str, str], line: tuple[str, str]) -> bool:
    return any(set(seg) <= set(m) and set(line) <= set(m) for m in layout.on) or set(seg) == set(line)


def _stated(relation: str, a: tuple[str, str], b: tuple[str, str], asking: _Asking) -> bool:
    """Whether the relation is a given the figure marks (so the question asks what it shows)."""
    layout = asking.layout
    if relation == "equal":
        if frozenset(a) in asking.lengths and frozenset(b) in asking.lengths:
            return True
        return any(len(m) == 3 and {frozenset(a), frozenset(b)} == {frozenset((m[0], m[1])), frozenset((m[0], m[2]))}
                   for m in asking.marks)
    lines = [((m[0], m[1]), (m[2], m[3])) for m in asking.marks if len(m) == 4]
    if relation == "perpendicular":  # a tangent's radius to its point of contact; a right angle given
        lines += [((m[0], m[1]), (m[2], m[1])) for m in asking.marks if len(m) == 3 and m[0] in layout.pts]
        lines += [((g[0], g[1]), (g[1], g[2])) for g in asking.angles if _is_right(asking.figure, g)]
    return any((_along(layout, a, first) and _along(layout, b, second)) or
               (_along(layout, b, first) and _along(layout, a, second)) for first, second in lines)


# -- the generator ----------------------------------------------------------------------------------
class ProceduralSource:
    """Procedural problems: the level cycles through ``levels`` and the presentation through
    ``presentations`` with the episode, so a run is balanced; the family is drawn among
    ``families`` (all of :data:`~vicogym.programs.geometry.FAMILIES` when ``None``) that can
    reach the level, and a draw gives up after ``max_tries`` figures."""

    def __init__(self, levels: Sequence[int] = LEVELS, families: Sequence[str] | None = None,
                 presentations: Sequence[str] = PRESENTATIONS, max_tries: int = 64):
        levels, presentations = tuple(levels), tuple(presentations)
        families = tuple(FAMILIES if families is None else families)
        if not levels or any(not isinstance(v, int) or isinstance(v, bool) or v not in LEVELS for v in levels):
            raise ValueError(f"levels must be a non-empty list among {list(LEVELS)}, got {_safe(list(levels))}")
        if not families or any(f not in FAMILIES for f in families):
            raise ValueError(f"families must be a non-empty list among {list(FAMILIES)}, got {_safe(list(families))}")
        if not presentations or any(p not in PRESENTATIONS for p in presentations):
            raise ValueError(f"presentations must be a non-empty list among {list(PRESENTATIONS)}, got "
                             f"{_safe(list(presentations))}")
        if isinstance(max_tries, bool) or not isinstance(max_tries, int) or max_tries < 1:
            raise ValueError(f"max_tries must be a positive whole number, got {_safe(max_tries)}")
        for level in levels:
            if not any(MIN_LEVEL[f] <= level for f in families):
                lows = {f: MIN_LEVEL[f] for f in families}
                raise ValueError(f"no family among {list(families)} reaches level {level} (their lowest levels: "
                                 f"{lows}); add a family such as angle or length, or drop level {level}")
        self.levels, self.families, self.presentations, self.max_tries = levels, families, presentations, max_tries

    def draw(self, rng: np.random.Generator, episode: int = 0) -> Problem:
        level = self.levels[episode % len(self.levels)]
        presentation = self.presentations[(episode // len(self.levels)) % len(self.presentations)]
        able = [f for f in self.families if MIN_LEVEL[f] <= level]
        family = _pick(rng, able)
        want = rng.random() < 0.5  # the answer a relation question is to have: Yes or No
        # the drawn family first; if it finds nothing at this level, the others in turn (a run
        # must not stop on one hard pair of family and level)
        order = [family] + [able[int(i)] for i in rng.permutation(len(able)) if able[int(i)] != family]
        for candidate in order:
            for _ in range(self.max_tries):
                try:
                    return _problem(rng, candidate, level, presentation, want)
                except _Retry:
                    continue
        raise GenerationError(f"no geometry problem of any family of {order} at level {level} in {self.max_tries} "
                              "tries each; raise max_tries or choose other levels or families")

    def summary(self) -> dict[str, Any]:
        return {"procedural": True, "levels": list(self.levels), "families": list(self.families),
                "presentations": list(self.presentations)}


#: how many questions of one figure are tried before another figure is drawn
QUESTIONS_PER_FIGURE = 12


def _problem(rng: np.random.Generator, family: str, level: int, presentation: str, want: bool) -> Problem:
    figure, polygons = _build(rng, family, level)
    layout = _Layout(figure)
    if layout.legible() is not None:
        raise _Retry("illegible")
    try:
        solved = solve(figure)
    except InvalidEdit as exc:
        raise _Retry(str(exc)) from None
    polygons = list(dict.fromkeys(polygons + _polygons(figure)))
    found = []
    for rule in getattr(_Asking(figure, layout, polygons), family)():
        try:
            if reasoning_steps(rule, figure) == level:
                found.append(rule)
        except (InvalidEdit, KeyError):
            continue
    if family == "relation":
        found = [r for r in found if relation_holds(solved, r["target"]["relation"], r["target"]["a"],
                                                    r["target"]["b"]) == want]
    if not found:
        raise _Retry("no question at this level")
    for index in rng.permutation(len(found))[:QUESTIONS_PER_FIGURE]:
        rule = _with_choices(rng, found[int(index)])
        problem = _place(rng, figure, solved, rule, level, presentation)
        if problem is not None:
            return problem
    raise _Retry("no question passed")


def _polygons(figure: Figure) -> list[tuple[str, ...]]:
    """Quadrilaterals the construction made: a parallel step's four points, in order."""
    out = []
    for s in figure.steps:
        if s["op"] == "parallel":
            a, b = s["to"][1], s["to"][0]
            out.append((a, b, s["through"], s["point"]))
    return out


def _answer_ok(figure: Figure, solved: Solved, rule: dict[str, Any]) -> bool:
    """The answer has a short exact form (or is a word, a count or a letter)."""
    try:
        answer = relabel(figure, rule)
    except (InvalidEdit, ZeroDivisionError, ValueError):
        return False
    if "." in answer or len(answer) > 24:
        return False
    if rule["kind"] == "ratio" and answer == "1":
        return False
    return not (rule["kind"] == "count" and answer in ("0", "1"))


def _on_drawn(given: Any, drawn: set[frozenset[str]]) -> bool:
    """Whether the segments a length or an angle given is printed on are drawn as such."""
    n = given.names
    if given.kind == "length":
        return frozenset(n) in drawn
    if given.kind == "angle":
        return frozenset((n[0], n[1])) in drawn and frozenset((n[1], n[2])) in drawn
    return False


def _place(rng: np.random.Generator, figure: Figure, solved: Solved, rule: dict[str, Any], level: int,
           presentation: str) -> Problem | None:
    if not _answer_ok(figure, solved, rule):
        return None
    needed = needed_givens(rule, figure, solved)
    keys = [g.key for g in givens(figure)]
    ordered = [k for k in keys if k in needed]
    drawn = {frozenset(e[1:]) for e in figure.draw if e[0] in ("segment", "ray", "line")}
    # a given the answer does not need is shown only where its pieces are drawn (a value beside
    # no line would float in empty space)
    extra = [g.key for g in givens(figure) if g.key not in needed and _on_drawn(g, drawn) and rng.random() < 0.5]
    text = ordered if presentation in ("text", "both") else []
    shown = extra + (ordered if presentation in ("both", "diagram") else [])
    diagram = tuple(k for k in keys if k in shown)
    placed = replace(figure, diagram=diagram)
    rule = {"kind": rule["kind"], "target": rule["target"], "text": text}
    try:
        question = question_text(placed, rule)
    except InvalidEdit:
        return None
    if len(question) > MAX_QUESTION or unstated(rule, placed, solved) or undrawn_mark(placed, solved) is not None:
        return None
    if rule["kind"] == "choice" and re.search(r"\d\.\d", question.rsplit("Choices:", 1)[1]):
        return None  # a choice written as a decimal
    rule["question"] = question
    digest = hashlib.sha256(canonical_json([placed.to_dict(), rule]).encode()).hexdigest()[:6]
    return Problem(placed, rule, f"geometry-L{level}-{rule['kind']}-{digest}", level, presentation)


# -- problems from a file -------------------------------------------------------------------------
QUESTION_KEYS = ("kind", "target", "text")


def check_problem(entry: Any, where: str) -> Problem:
    """One problem of a file (``{"figure": ..., "question": {"kind", "target", "text"}}``),
    checked; ``ValueError`` at ``where`` saying what to change."""
    if not isinstance(entry, Mapping) or set(entry) - {"figure", "question"} or "figure" not in entry or \
            "question" not in entry:
        raise SourceError(f"{where}: a problem is an object with \"figure\" and \"question\", got "
                          f"{_safe(sorted(entry) if isinstance(entry, Mapping) else entry)}")
    question = entry["question"]
    if not isinstance(question, Mapping) or set(question) - {*QUESTION_KEYS, "question"} or \
            not {"kind", "target"} <= set(question):
        raise SourceError(f"{where}: the question is an object with \"kind\", \"target\" and \"text\" (the given "
                          "keys its text states); its wording is derived from the figure, not read")
    text = question.get("text", [])
    if not isinstance(text, list) or not all(isinstance(k, str) for k in text):
        raise SourceError(f"{where}: question.text must be a list of given keys such as \"length:A,B\"")
    try:
        figure = Figure.from_dict(entry["figure"])
    except InvalidEdit as exc:
        raise SourceError(f"{where}: the figure is invalid: {exc}") from None
    except (KeyError, TypeError, ValueError, IndexError) as exc:  # a step the structure's checks let through
        raise SourceError(f"{where}: the figure is invalid: a step lacks or misnames a field ({exc!r}); see the "
                          "steps table of vicogym.structures.geometry") from None
    keys = [g.key for g in givens(figure)]
    stray = [k for k in text if k not in keys]
    if stray:
        raise SourceError(f"{where}: question.text names {stray}, which are not givens of the figure; the givens are "
                          f"{keys}")
    rule: dict[str, Any] = {"kind": question["kind"], "target": question["target"], "text": list(text)}
    if not isinstance(rule["kind"], str) or rule["kind"] not in FAMILIES or not isinstance(rule["target"], Mapping):
        raise SourceError(f"{where}: question.kind must be one of {list(FAMILIES)} with a target object, got "
                          f"{_safe(rule['kind'])}")
    order = rule["target"].get("order")
    if rule["kind"] == "choice" and (not isinstance(order, list) or sorted(map(str, order)) != ["0", "1", "2", "3"]):
        raise SourceError(f"{where}: a choice question's target.order must be a permutation of [0, 1, 2, 3]")
    try:
        solved = solve(figure)
        relabel(figure, rule)
        rule["question"] = question_text(figure, rule, solved)
        missing = unstated(rule, figure, solved)
    except InvalidEdit as exc:
        raise SourceError(f"{where}: {exc}") from None
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise SourceError(f"{where}: the {rule['kind']} question's target is malformed ({exc!r})") from None
    if missing:
        raise SourceError(f"{where}: the answer needs {missing}, which neither question.text nor figure.diagram "
                          "shows; add them to either")
    return Problem(figure, rule, "")


class FileSource:
    """Problems from a JSON file ``{"problems": [{"figure": ..., "question": {"kind",
    "target", "text"}}, ...]}``, every one checked when the file is loaded."""

    def __init__(self, path: str | Path):
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"geometry problems file {place(path)} does not exist")
        data = read_json(path)
        if not isinstance(data, Mapping) or not isinstance(data.get("problems"), list) or not data["problems"]:
            raise SourceError(f"{place(path)}: expected an object {{\"problems\": [...]}} with at least one problem")
        self.path = path
        self.problems = [replace(check_problem(entry, f"{place(path)}: problems[{i}]"), source_id=f"{path.stem}:{i}")
                         for i, entry in enumerate(data["problems"])]

    def problem(self, index: int) -> Problem:
        """The problem at ``index`` (0 to one less than the file's count)."""
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < len(self.problems):
            raise ValueError(f"{place(self.path)} holds problems 0 to {len(self.problems) - 1}; got index "
                             f"{_safe(index)}")
        return self.problems[int(index)]

    def draw(self, rng: np.random.Generator, episode: int = 0) -> Problem:
        return self.problems[int(rng.integers(len(self.problems)))]

    def __len__(self) -> int:
        return len(self.problems)

    def summary(self) -> dict[str, Any]:
        return {"procedural": False, "path": str(self.path), "problems": len(self.problems)}


def make_source(spec: str, levels: Sequence[int] = LEVELS, families: Sequence[str] | None = None,
                presentations: Sequence[str] = PRESENTATIONS, max_tries: int = 64) -> ProceduralSource | FileSource:
    """``"procedural"`` or a path to a JSON problems file (:class:`FileSource`)."""
    if spec == "procedural":
        return ProceduralSource(levels, families, presentations, max_tries)
    expected = "'procedural' or a path to a .json file of geometry problems"
    path, kind = source_path(spec, expected)
    if kind == "none":
        raise FileNotFoundError(f"geometry source {place(path)} does not exist; expected {expected}")
    if kind != "file" or path.suffix.lower() != ".json":
        raise SourceError(f"expected source {expected}, got {_safe(spec)}")
    return FileSource(path)


__all__ = ["LEVELS", "MIN_LEVEL", "PRESENTATIONS", "FileSource", "Problem", "ProceduralSource", "check_problem",
           "make_source"]
