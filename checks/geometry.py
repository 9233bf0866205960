"""Checks of the geometry arm's drawing: can a reader read the diagram, and is it drawn to
scale? And, read from the same facts, the visual difficulty features a stand-in actor's
accuracy follows (:func:`difficulty_features`, :func:`difficulty`).

:func:`check_drawing` reads the figure, its exact solution and the renderer's facts
(``vicogym.renderers.geometry.GeometryFacts``: pixel positions, text boxes, drawn pieces),
and the image when given; each problem is an ``InvalidEdit`` naming what, where, and what
to change.

``off_scale`` (the drawing disagrees with the exact figure):

- every point is drawn within :data:`POSITION_PX` (1 px) of where the exact coordinates
  put it under the documented map (:func:`~vicogym.structures.geometry.figure_map`, which
  the renderer draws by: rotate by the style's rotation, mirror when flipped, scale the bounding box of every point and
  drawn circle or arc to ``style.scale`` of the canvas, centred), and so is every drawn
  circle's centre and radius;
- measured in the pixels: the image shows ink (a pixel of grey level at most
  :data:`INK_LEVEL`) within :data:`INK_PX` (1.5 px) of every point, of the middle of
  every drawn straight piece and of every drawn circle's or arc's middle.

``degenerate_figure``: an arc that ends at its own centre (which sets no direction).

``undrawn_mark`` (:func:`check_marks_drawn`): a given the diagram shows on pieces the
figure does not draw (a length beside a segment that is not there, an angle between arms
that are not, ticks, arrows or a right angle in the air).

``crowded`` (a reader cannot read it):

- two drawn pieces meeting at a point (a named one, or where two straight pieces cross)
  make an angle under :data:`MIN_ANGLE_DEG` (10 degrees; pieces that overlap, at 0, are one
  line), unless that angle is what the question asks (``asked``: ``"B,A,C"``);
- two points closer than a text's height (the font size in pixels): their names cannot
  both sit by them;
- a drawn segment, or a segment whose length the diagram prints, shorter than
  :data:`SHORT_SEGMENT_FONTS` (3) text heights: too short to label;
- a text under the legible size: the cap height at which Tesseract reads a word of
  DejaVu Sans drawn by matplotlib's Agg right half of the time, a measured curve
  (:func:`vicogym.legibility.legible_px`), not a threshold of ours;
- a text's box overlapping another's by more than :data:`TEXT_OVERLAP_PX`, or coming
  within a line's half width of a drawn line, circle or arc (the geometric distance from
  the box to the piece), or over a point's dot;
- two texts closer than :data:`TEXT_GAP_FONTS` (half) a text height: they read as one
  ("15 30°");
- a text within a line's half width of a split segment's dimension line (a mark of kind
  ``"dimension"`` with its ends ``"from"`` and ``"to"``);
- an angle's value whose box centre is nearer another point than the angle's vertex (in
  pixels): it reads as that point's angle; or whose centre lies inside a smaller angle that
  a drawn piece from the vertex cuts off the marked angle, without an arc (a mark of kind
  ``"angle_arc"`` with ``"arms"``) spanning the whole marked angle: it reads as the smaller
  angle's;
- a text or a point outside the canvas.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vicogym.errors import InvalidEdit
from vicogym.legibility import legible_px
from vicogym.programs.geometry import on_element, undrawn_mark
from vicogym.structures.geometry import Figure, Solved, arc_angles, arc_range, clip_to_canvas, figure_map, givens

MIN_ANGLE_DEG = 10
POSITION_PX = 1.0
INK_PX = 1.5
INK_LEVEL = 160
SHORT_SEGMENT_FONTS = 3.0
TEXT_OVERLAP_PX = 1.0
#: the least gap between two printed texts, in text heights (the font size in pixels)
TEXT_GAP_FONTS = 0.5
#: slack (px) on the gap between texts, for the rounding of text boxes
TEXT_GAP_SLACK_PX = 0.5
EDGE_SLACK_PX = 0.5
#: how near (text heights) a point may be drawn to a line it is not on
NEAR_LINE_FONTS = 0.35
#: by how much (text heights) a length's value must be nearer its own segment than any other line
LABEL_SIDE_FONTS = 0.3
#: matplotlib's DejaVu Sans drawn by Agg: the legibility curve measured for chart text
TEXT_FONT = "DejaVuSans.ttf"
TEXT_DRAWN = "chart_views"
#: the cap height of DejaVu Sans per pixel of font size (1493 of its 2048 units)
CAP_RATIO = 0.729


class _Drawing:
    """Where everything belongs in pixels, from the exact figure and the documented map."""

    def __init__(self, figure: Figure, solved: Solved, width: int, height: int):
        self.width, self.height, self.solved = width, height, solved
        matrix, offset, self.scale = figure_map(figure, solved, width, height)
        self.units = solved.floats()
        self.points = {n: tuple(float(v) for v in matrix @ np.array(p) + offset) for n, p in self.units.items()}
        #: straight pieces: (element, from, to) in pixels
        self.pieces: list[tuple[tuple[str, ...], tuple[float, float], tuple[float, float]]] = []
        #: circles: (element, cx, cy, r); arcs: (element, cx, cy, r, polyline in pixels)
        self.circles: list[tuple[tuple[str, ...], float, float, float]] = []
        self.arcs: list[tuple[tuple[str, ...], float, float, float, np.ndarray]] = []
        for element in figure.draw:
            kind = element[0]
            if kind in ("segment", "ray", "line"):
                p, q = self.points[element[1]], self.points[element[2]]
                piece = (p, q) if kind == "segment" else clip_to_canvas(p, q, width, height, kind == "line")
                if piece is not None:
                    self.pieces.append((tuple(element), piece[0], piece[1]))
                continue
            center, r2 = solved.circles[element[1]]
            cx, cy = self.points[center]
            r = math.sqrt(r2.to_float()) * self.scale
            if kind == "circle":
                self.circles.append((tuple(element), cx, cy, r))
                continue
            o = self.units[center]
            start, sweep = arc_angles(self.units, center, element[2], element[3])
            ru = math.sqrt(r2.to_float())
            t = start + np.linspace(0.0, sweep, max(int(sweep * r / 0.5), 16) + 1)
            units = np.stack([o[0] + ru * np.cos(t), o[1] + ru * np.sin(t)], axis=1)
            self.arcs.append((tuple(element), cx, cy, r, units @ matrix.T + offset))


# -- distances in pixels ------------------------------------------------------------------------
def _point_box(p: Sequence[float], box: Sequence[float]) -> float:
    dx = max(box[0] - p[0], 0.0, p[0] - box[2])
    dy = max(box[1] - p[1], 0.0, p[1] - box[3])
    return math.hypot(dx, dy)


def _point_segment(p: Sequence[float], a: Sequence[float], b: Sequence[float]) -> float:
    dx, dy = b[0] - a[0], b[1] - a[1]
    n = dx * dx + dy * dy
    t = 0.0 if n == 0 else max(0.0, min(1.0, ((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / n))
    return math.hypot(p[0] - a[0] - t * dx, p[1] - a[1] - t * dy)


def box_segment_distance(box: Sequence[float], a: Sequence[float], b: Sequence[float]) -> float:
    """The distance from an axis-aligned box ``(x0, y0, x1, y1)`` to the segment ``ab`` (0 when they meet)."""
    lo, hi = 0.0, 1.0
    dx, dy = b[0] - a[0], b[1] - a[1]
    meets = True
    for delta, start, low, high in ((dx, a[0], box[0], box[2]), (dy, a[1], box[1], box[3])):
        if abs(delta) < 1e-12:
            if not low <= start <= high:
                meets = False
            continue
        t0, t1 = (low - start) / delta, (high - start) / delta
        lo, hi = max(lo, min(t0, t1)), min(hi, max(t0, t1))
    if meets and lo <= hi:
        return 0.0
    corners = ((box[0], box[1]), (box[2], box[1]), (box[0], box[3]), (box[2], box[3]))
    return min(_point_box(a, box), _point_box(b, box), *(_point_segment(c, a, b) for c in corners))


def box_circle_distance(box: Sequence[float], cx: float, cy: float, r: float) -> float:
    """The distance from a box to a circle's outline (0 when it crosses it)."""
    near = _point_box((cx, cy), box)
    far = max(math.hypot(x - cx, y - cy) for x in (box[0], box[2]) for y in (box[1], box[3]))
    if near > r:
        return near - r
    if far < r:
        return r - far
    return 0.0


def _box_polyline(box: Sequence[float], pts: np.ndarray) -> float:
    x, y = pts[:, 0], pts[:, 1]
    dx = np.maximum(np.maximum(box[0] - x, x - box[2]), 0.0)
    dy = np.maximum(np.maximum(box[1] - y, y - box[3]), 0.0)
    return float(np.sqrt(dx * dx + dy * dy).min())


def _describe(element: Sequence[str]) -> str:
    kind, names = element[0], element[1:]
    if kind in ("segment", "ray", "line"):
        return f"{kind} {names[0]}{names[1]}"
    if kind == "circle":
        return f"circle {names[0]}"
    return f"arc of {names[0]} from {names[1]} to {names[2]}"


def _label_name(label: Mapping[str, Any]) -> str:
    if label.get("kind") == "point":
        return f"the name of point {label['key']}"
    return f"the value {label['text']!r} of {label['key']}"


# -- the check ------------------------------------------------------------------------------------
def check_drawing(figure: Figure, solved: Solved, facts: Any, image: np.ndarray | None = None,
                  asked: frozenset[str] = frozenset()) -> None:
    """Raise ``InvalidEdit`` (``off_scale`` or ``crowded``, see the module docstring) when
    the rendered figure is not to scale or cannot be read; ``image`` (the render's RGB
    pixels), when given, is measured for ink where the figure puts its points and lines;
    ``asked``: the angles (``"B,A,C"``) the question asks, which may be small."""
    if image is not None:
        height, width = image.shape[:2]
    else:
        width, height = int(facts.width), int(facts.height)
    if width <= 0 or height <= 0:
        raise ValueError("expected the image, or facts that carry the canvas' width and height")
    for element in figure.draw:
        center = solved.circles[element[1]][0] if element[0] == "arc" else None
        if center is not None and center in element[2:]:
            raise InvalidEdit("degenerate_figure", f"the arc of {element[1]} runs from {element[2]} to {element[3]}, "
                              f"but {center} is its centre, which sets no direction; end the arc at points whose "
                              f"directions from {center} bound it", field="draw")
    drawing = _Drawing(figure, solved, width, height)
    _check_positions(drawing, facts)
    check_marks_drawn(figure, solved)
    font_px = float(facts.font_px)
    line_px = float(getattr(facts, "line_px", 0.0) or figure.style.line_width / 72.0 * facts.dpi)
    dot_px = float(getattr(facts, "dot_px", 0.0) or max(1.6, 1.15 * line_px))
    _check_text_size(facts)
    _check_canvas(drawing, facts)
    _check_angles(figure, drawing, asked)
    _check_spacing(figure, drawing, font_px)
    _check_labels(drawing, facts, line_px, dot_px)
    _check_values(figure, drawing, facts, font_px, line_px)
    _check_near_lines(figure, drawing, font_px)
    _check_length_sides(figure, drawing, facts, font_px)
    if image is not None:
        _check_ink(drawing, image)


def _check_positions(drawing: _Drawing, facts: Any) -> None:
    for name, (x, y) in drawing.points.items():
        got = facts.points.get(name)
        if got is None:
            raise InvalidEdit("off_scale", f"point {name} is not drawn; every point of the figure is drawn and "
                              "labelled", field="draw")
        off = math.hypot(got[0] - x, got[1] - y)
        if off > POSITION_PX:
            raise InvalidEdit("off_scale", f"point {name} is drawn at ({got[0]:.1f}, {got[1]:.1f}) px but its exact "
                              f"coordinates put it at ({x:.1f}, {y:.1f}) px, {off:.1f} px away (at most "
                              f"{POSITION_PX:g}): the drawing is not to scale; draw from the solved figure",
                              field="steps")
    drawn = {element[1] if element[0] == "circle" else ",".join(element[1:]): (cx, cy, r)
             for element, cx, cy, r in drawing.circles}
    drawn.update({",".join(element[1:]): (cx, cy, r) for element, cx, cy, r, _ in drawing.arcs})
    for key, (cx, cy, r) in drawn.items():
        got = facts.circles.get(key)
        if got is None:
            raise InvalidEdit("off_scale", f"circle {key} is in the figure's draw list but not drawn", field="draw")
        if math.hypot(got[0] - cx, got[1] - cy) > POSITION_PX or abs(got[2] - r) > POSITION_PX:
            raise InvalidEdit("off_scale", f"circle {key} is drawn at {got} px but the exact figure puts it at centre "
                              f"({cx:.1f}, {cy:.1f}) px, radius {r:.1f} px: the drawing is not to scale",
                              field="draw")


def check_marks_drawn(figure: Figure, solved: Solved) -> None:
    """Every given the diagram shows sits on what is drawn (``InvalidEdit``
    ``undrawn_mark``; see :func:`vicogym.programs.geometry.undrawn_mark`)."""
    problem = undrawn_mark(figure, solved)
    if problem is not None:
        raise problem


def _check_text_size(facts: Any) -> None:
    legible = legible_px(TEXT_FONT, TEXT_DRAWN)
    for label in facts.labels:
        cap = float(label.get("cap_px", facts.font_px * CAP_RATIO))
        if cap < legible:
            raise InvalidEdit("crowded", f"{_label_name(label)} is printed {cap:.1f} px tall (capitals), under the "
                              f"legible {legible:.1f} px (where Tesseract reads DejaVu Sans right half of the time); "
                              "raise font_size", field="font_size")


def _check_canvas(drawing: _Drawing, facts: Any) -> None:
    w, h = drawing.width, drawing.height
    for name, (x, y) in drawing.points.items():
        if not (0 <= x <= w and 0 <= y <= h):
            raise InvalidEdit("crowded", f"point {name} lies outside the canvas at ({x:.1f}, {y:.1f}) px; lower "
                              "scale", field="scale")
    for label in facts.labels:
        x0, y0, x1, y1 = label["box"]
        if x0 < -EDGE_SLACK_PX or y0 < -EDGE_SLACK_PX or x1 > w + EDGE_SLACK_PX or y1 > h + EDGE_SLACK_PX:
            raise InvalidEdit("crowded", f"{_label_name(label)} runs off the canvas (box {_fmt(label['box'])} on "
                              f"{w}x{h} px); lower scale so the labels fit around the figure", field="scale")


def _fmt(box: Sequence[float]) -> str:
    return "(" + ", ".join(f"{v:.1f}" for v in box) + ")"


def _angle(v: Sequence[float]) -> float:
    return math.degrees(math.atan2(v[1], v[0]))


def _directions(figure: Figure, solved: Solved, units: Mapping[str, tuple[float, float]], name: str,
                tol: float) -> list[tuple[float, str, str]]:
    """The drawn pieces leaving point ``name`` (figure units): (direction in degrees, the
    point that direction heads to or the piece's name, the piece)."""
    p = units[name]
    out = []
    for element in figure.draw:
        kind = element[0]
        what = _describe(element)
        if kind in ("segment", "ray", "line"):
            a, b = units[element[1]], units[element[2]]
            d = (b[0] - a[0], b[1] - a[1])
            length = math.hypot(*d)
            if element[1] == name:
                out.append((_angle(d), element[2], what))
                if kind == "line":
                    out.append((_angle((-d[0], -d[1])), what, what))
                continue
            if element[2] == name:
                out.append((_angle((-d[0], -d[1])), element[1], what))
                if kind != "segment":
                    out.append((_angle(d), what, what))
                continue
            off = abs(d[0] * (p[1] - a[1]) - d[1] * (p[0] - a[0])) / length
            t = ((p[0] - a[0]) * d[0] + (p[1] - a[1]) * d[1]) / (length * length)
            inside = {"segment": 0 < t < 1, "ray": t > 0, "line": True}[kind]
            if off < tol and inside:
                out.append((_angle(d), element[2] if t < 1 else what, what))
                out.append((_angle((-d[0], -d[1])), element[1] if t > 0 else what, what))
            continue
        center, r2 = solved.circles[element[1]]
        o = units[center]
        r = math.sqrt(r2.to_float())
        if abs(math.hypot(p[0] - o[0], p[1] - o[1]) - r) > tol:
            continue
        radial = math.atan2(p[1] - o[1], p[0] - o[0])
        ccw, cw = math.degrees(radial) + 90, math.degrees(radial) - 90
        if kind == "circle":
            out += [(ccw, what, what), (cw, what, what)]
            continue
        q0, q1 = units[element[2]], units[element[3]]
        start, sweep = arc_range(math.atan2(q0[1] - o[1], q0[0] - o[0]), math.atan2(q1[1] - o[1], q1[0] - o[0]))
        at = (radial - start) % (2 * math.pi)
        eps = 1e-9
        if at < eps or at > 2 * math.pi - eps:  # the arc's start
            out.append((ccw, what, what))
        elif abs(at - sweep) < eps:
            out.append((cw, what, what))
        elif at < sweep:
            out += [(ccw, what, what), (cw, what, what)]
    return out


def _check_angles(figure: Figure, drawing: _Drawing, asked: frozenset[str]) -> None:
    units = drawing.units
    xs = [p[0] for p in units.values()]
    ys = [p[1] for p in units.values()]
    tol = 1e-9 * max(max(xs) - min(xs), max(ys) - min(ys), 1.0)
    for name in units:
        dirs = _directions(figure, drawing.solved, units, name, tol)
        for i in range(len(dirs)):
            for j in range(i + 1, len(dirs)):
                diff = abs((dirs[i][0] - dirs[j][0] + 180) % 360 - 180)
                if not 1e-6 < diff < MIN_ANGLE_DEG:
                    continue
                triple = f"{dirs[i][1]},{name},{dirs[j][1]}"
                if triple in asked or f"{dirs[j][1]},{name},{dirs[i][1]}" in asked:
                    continue
                pieces = dirs[i][2] if dirs[i][2] == dirs[j][2] else f"{dirs[i][2]} and {dirs[j][2]}"
                raise InvalidEdit("crowded", f"the {pieces} meet at {name} at {diff:.1f} degrees, under "
                                  f"{MIN_ANGLE_DEG}: a reader cannot tell them apart; widen that angle (change the "
                                  "givens that set it) or leave one of them undrawn", field="steps")
    # straight pieces crossing where no point is named
    pieces = drawing.pieces
    for i in range(len(pieces)):
        for j in range(i + 1, len(pieces)):
            (e1, a, b), (e2, c, d) = pieces[i], pieces[j]
            r = (b[0] - a[0], b[1] - a[1])
            s = (d[0] - c[0], d[1] - c[1])
            den = r[0] * s[1] - r[1] * s[0]
            if abs(den) < 1e-12:
                continue
            t = ((c[0] - a[0]) * s[1] - (c[1] - a[1]) * s[0]) / den
            u = ((c[0] - a[0]) * r[1] - (c[1] - a[1]) * r[0]) / den
            if not (0 < t < 1 and 0 < u < 1):
                continue
            x, y = a[0] + t * r[0], a[1] + t * r[1]
            if any(math.hypot(x - px, y - py) <= POSITION_PX for px, py in drawing.points.values()):
                continue  # a named point: judged above
            diff = abs((_angle(r) - _angle(s) + 180) % 360 - 180)
            diff = min(diff, 180 - diff)
            if 1e-6 < diff < MIN_ANGLE_DEG:  # at 0 they overlap: one line
                raise InvalidEdit("crowded", f"the {_describe(e1)} and {_describe(e2)} cross at ({x:.0f}, {y:.0f}) px "
                                  f"at {diff:.1f} degrees, under {MIN_ANGLE_DEG}: a reader cannot tell them apart; "
                                  "change the givens that set them or leave one undrawn", field="draw")


def _check_spacing(figure: Figure, drawing: _Drawing, font_px: float) -> None:
    names = list(drawing.points)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            gap = math.dist(drawing.points[a], drawing.points[b])
            if gap < font_px:
                raise InvalidEdit("crowded", f"points {a} and {b} are {gap:.1f} px apart, under a text's height "
                                  f"({font_px:.1f} px): their names cannot both sit by them; move them apart (change "
                                  "the givens that place them) or raise scale", field="steps")
    shortest = SHORT_SEGMENT_FONTS * font_px
    pairs = [(e[1], e[2], _describe(e)) for e in figure.draw if e[0] == "segment"]
    shown = set(figure.diagram)
    pairs += [(g.names[0], g.names[1], f"the length {g.names[0]}{g.names[1]} the diagram prints")
              for g in givens(figure) if g.kind == "length" and g.key in shown]
    for a, b, what in pairs:
        length = math.dist(drawing.points[a], drawing.points[b])
        if length < shortest:
            raise InvalidEdit("crowded", f"{what} is {length:.1f} px long, under {SHORT_SEGMENT_FONTS:g} text heights "
                              f"({shortest:.1f} px): too short to label; lengthen it (its givens) or raise scale",
                              field="steps")


def _check_labels(drawing: _Drawing, facts: Any, line_px: float, dot_px: float) -> None:
    labels = list(facts.labels)
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            ax0, ay0, ax1, ay1 = a["box"]
            bx0, by0, bx1, by1 = b["box"]
            overlap = min(min(ax1, bx1) - max(ax0, bx0), min(ay1, by1) - max(ay0, by0))
            if overlap > TEXT_OVERLAP_PX:
                raise InvalidEdit("crowded", f"{_label_name(a)} and {_label_name(b)} overlap by {overlap:.1f} px: "
                                  "spread the points apart (their givens), raise scale or lower font_size",
                                  field="font_size")
    half = line_px / 2
    for label in labels:
        box = label["box"]
        hits = [(box_segment_distance(box, p, q), _describe(e)) for e, p, q in drawing.pieces]
        hits += [(box_circle_distance(box, cx, cy, r), _describe(e)) for e, cx, cy, r in drawing.circles]
        hits += [(_box_polyline(box, pts), _describe(e)) for e, _cx, _cy, _r, pts in drawing.arcs]
        for distance, what in hits:
            if distance < half:
                raise InvalidEdit("crowded", f"{_label_name(label)} (box {_fmt(box)} px) lies over the {what}: no "
                                  "place around it is clear of the lines; spread the figure out (its givens), raise "
                                  "scale or lower font_size", field="font_size")
        for name, p in drawing.points.items():
            if _point_box(p, box) < dot_px:
                raise InvalidEdit("crowded", f"{_label_name(label)} (box {_fmt(box)} px) covers point {name}; spread "
                                  "the figure out (its givens), raise scale or lower font_size", field="font_size")


def _box_gap(a: Sequence[float], b: Sequence[float]) -> float:
    dx = max(a[0] - b[2], b[0] - a[2], 0.0)
    dy = max(a[1] - b[3], b[1] - a[3], 0.0)
    return math.hypot(dx, dy)


def _screen_angle(v: Sequence[float], p: Sequence[float]) -> float:
    """The direction from pixel ``v`` to pixel ``p`` as seen (degrees counter-clockwise, y up)."""
    return math.degrees(math.atan2(v[1] - p[1], p[0] - v[0])) % 360


def _check_near_lines(figure: Figure, drawing: _Drawing, font_px: float) -> None:
    """A point drawn within :data:`NEAR_LINE_FONTS` text heights of a line it is not on (decided
    exactly) looks like a point of that line."""
    near = max(3.0, NEAR_LINE_FONTS * font_px)
    exact = drawing.solved.points
    for element, p, q in drawing.pieces:
        for name, point in drawing.points.items():
            if name in element[1:]:
                continue
            gap = _point_segment(point, p, q)
            if gap < near and not on_element(element[0], exact[element[1]], exact[element[2]], exact[name]):
                raise InvalidEdit("crowded", f"point {name} is drawn {gap:.1f} px from the {_describe(element)} but "
                                  "is not on it: a reader takes it for a point of that line; move it (its givens) or "
                                  "leave the line undrawn", field="steps")


def _check_length_sides(figure: Figure, drawing: _Drawing, facts: Any, font_px: float) -> None:
    """A length's value sits nearer its own segment (or its dimension line) than any other
    drawn line, by :data:`LABEL_SIDE_FONTS` text heights, or it reads as the other's length."""
    by_key = {g.key: g for g in givens(figure)}
    dims = {m["key"]: m for m in getattr(facts, "marks", []) or [] if m.get("kind") == "dimension" and "from" in m}
    for label in facts.labels:
        g = by_key.get(label.get("key"))
        if label.get("kind") != "given" or g is None or g.kind != "length":
            continue
        a, b = drawing.points[g.names[0]], drawing.points[g.names[1]]
        dim = dims.get(g.key)
        own = box_segment_distance(label["box"], dim["from"], dim["to"]) if dim else \
            box_segment_distance(label["box"], a, b)
        for element, p, q in drawing.pieces:
            if _point_segment(a, p, q) < 1.0 and _point_segment(b, p, q) < 1.0:
                continue  # the segment itself, or a line along it
            other = box_segment_distance(label["box"], p, q)
            if other < own + LABEL_SIDE_FONTS * font_px:
                raise InvalidEdit("crowded", f"{_label_name(label)} sits {other:.1f} px from the {_describe(element)} "
                                  f"and {own:.1f} px from {g.names[0]}{g.names[1]}: it reads as the other's length; "
                                  "spread the figure out (its givens), state the length in the text or raise scale",
                                  field="diagram")


def _check_values(figure: Figure, drawing: _Drawing, facts: Any, font_px: float, line_px: float) -> None:
    labels = list(facts.labels)
    least = TEXT_GAP_FONTS * font_px
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            gap = _box_gap(a["box"], b["box"])
            if gap < least - TEXT_GAP_SLACK_PX:
                raise InvalidEdit("crowded", f"{_label_name(a)} and {_label_name(b)} are {gap:.1f} px apart, under "
                                  f"half a text height ({least:.1f} px): they read as one text; spread the points "
                                  "apart (their givens), raise scale or lower font_size", field="font_size")
    marks = list(getattr(facts, "marks", []) or [])
    for mark in marks:
        if mark.get("kind") != "dimension" or "from" not in mark:
            continue
        for label in labels:
            if box_segment_distance(label["box"], mark["from"], mark["to"]) < line_px / 2:
                raise InvalidEdit("crowded", f"{_label_name(label)} (box {_fmt(label['box'])} px) lies over the "
                                  f"dimension line of {mark['key']}; spread the figure out (its givens), raise scale "
                                  "or lower font_size", field="font_size")
    arcs = {m["key"]: m for m in marks if m.get("kind") == "angle_arc"}
    by_key = {g.key: g for g in givens(figure)}
    points = drawing.points
    for label in labels:
        g = by_key.get(label.get("key"))
        if label.get("kind") != "given" or g is None or g.kind != "angle":
            continue
        x0, y0, x1, y1 = label["box"]
        c = ((x0 + x1) / 2, (y0 + y1) / 2)
        vertex = g.names[1]
        own = math.dist(c, points[vertex])
        others = [(math.dist(c, p), name) for name, p in points.items() if name != vertex]
        near, name = min(others) if others else (math.inf, "")
        if near < own:
            raise InvalidEdit("crowded", f"{_label_name(label)} sits {near:.1f} px from point {name} "
                              f"but {own:.1f} px from {vertex}, the angle's vertex: it reads as an angle at "
                              f"{name}; spread the figure out (its givens), raise scale or lower font_size",
                              field="font_size")
        if abs(float(g.value) - 90) < 1e-9:
            continue
        v = points[vertex]
        a1, a2 = _screen_angle(v, points[g.names[0]]), _screen_angle(v, points[g.names[2]])
        lo, sweep = (a1, (a2 - a1) % 360) if (a2 - a1) % 360 <= 180 else (a2, (a1 - a2) % 360)
        at = (_screen_angle(v, c) - lo) % 360
        if not 0 < at < sweep:
            continue
        units = drawing.units
        tol = 1e-9 * max(1.0, *(abs(t) for p in units.values() for t in p))
        cuts = []
        for _d, toward, _what in _directions(figure, drawing.solved, units, vertex, tol):
            if toward not in points:
                continue
            inside = (_screen_angle(v, points[toward]) - lo) % 360
            if 0.1 < inside < sweep - 0.1:
                cuts.append(toward)
        if not cuts:
            continue
        arc = arcs.get(g.key)
        spans = False
        if arc is not None and "arms" in arc:
            ends = sorted(float(t) % 360 for t in arc["arms"])
            want = sorted([a1, a2])
            spans = all(min(abs(e - w), 360 - abs(e - w)) < 1.0 for e, w in zip(ends, want))
        # even beside an arm-to-arm arc, a value in a cut angle sits in one of its parts, and a
        # careful reader takes it for that part's (seen in audits of drawn samples)
        raise InvalidEdit("crowded", f"{_label_name(label)} sits inside the angle {''.join(g.names)}, which the line "
                          f"to {cuts[0]} cuts at {vertex}{'' if spans else ', with no arc spanning it'}: it reads as "
                          "the smaller angle's; state the angle in the text (hide it from the diagram) or leave the "
                          "line undrawn", field="diagram")


def _has_ink(gray: np.ndarray, x: float, y: float) -> bool:
    h, w = gray.shape
    i0, i1 = max(int(math.floor(y - INK_PX - 0.5)), 0), min(int(math.ceil(y + INK_PX)), h)
    j0, j1 = max(int(math.floor(x - INK_PX - 0.5)), 0), min(int(math.ceil(x + INK_PX)), w)
    if i0 >= i1 or j0 >= j1:
        return False
    rows, cols = np.mgrid[i0:i1, j0:j1]
    near = np.hypot(cols + 0.5 - x, rows + 0.5 - y) <= INK_PX
    return bool(np.any(gray[i0:i1, j0:j1][near] <= INK_LEVEL))


def _check_ink(drawing: _Drawing, image: np.ndarray) -> None:
    gray = np.asarray(image, float)
    gray = gray.mean(axis=2) if gray.ndim == 3 else gray
    spots = [(f"point {n}", p) for n, p in drawing.points.items()]
    spots += [(f"the middle of the {_describe(e)}", ((p[0] + q[0]) / 2, (p[1] + q[1]) / 2))
              for e, p, q in drawing.pieces]
    spots += [(f"the top of the {_describe(e)}", (cx, cy - r)) for e, cx, cy, r in drawing.circles]
    spots += [(f"the middle of the {_describe(e)}", tuple(pts[len(pts) // 2])) for e, _cx, _cy, _r, pts in drawing.arcs]
    for what, (x, y) in spots:
        if not _has_ink(gray, x, y):
            raise InvalidEdit("off_scale", f"the image shows no ink within {INK_PX:g} px of {what} at ({x:.1f}, "
                              f"{y:.1f}) px, where the exact figure puts it: the drawing is not to scale (or its lines "
                              "are too thin to show: raise line_width)", field="line_width")


# -- what the stand-in actor reads: visual difficulty ------------------------------------------
def difficulty_features(figure: Figure, facts: Any, steps: int, needed: frozenset[str],
                        text_keys: frozenset[str]) -> dict[str, Any]:
    """Visual difficulty features of a rendered geometry question.

    - ``steps``: the reasoning steps of the question (1-5, the caller's count);
    - ``diagram_only``: givens the answer needs (``needed``) that only the diagram shows
      (in ``figure.diagram``, not among ``text_keys``, the givens the question's text
      states): the reader must find them in the picture;
    - ``distractors``: what is drawn that the answer does not need: the elements of
      ``figure.draw`` naming a point (a circle or arc by its centre) outside the points the
      needed givens name, plus the figure's points outside them;
    - ``label_density``: share of the image covered by text boxes;
    - ``n_points``: points drawn; ``font_px``: the font size in pixels. :func:`difficulty`
      leaves these two out (the checks keep text legible and points apart).
    """
    by_key = {g.key: g for g in givens(figure)}
    needed_points: set[str] = set()
    for key in needed:
        if key in by_key:
            needed_points.update(by_key[key].names)
    centres = {s["circle"]: s["center"] for s in figure.steps if "circle" in s and "center" in s}
    elements = 0
    for element in figure.draw:
        kind, names = element[0], list(element[1:])
        if kind in ("circle", "arc"):
            names[0] = centres.get(names[0], names[0])
        if any(n not in needed_points for n in names):
            elements += 1
    points = sum(1 for n in facts.points if n not in needed_points)
    shown = set(figure.diagram)
    width = int(getattr(facts, "width", 0) or 0)
    height = int(getattr(facts, "height", 0) or 0)
    area = float(width * height) if width and height else 1.0
    text_area = sum((b["box"][2] - b["box"][0]) * (b["box"][3] - b["box"][1]) for b in facts.labels)
    return {
        "steps": int(steps),
        "diagram_only": sum(1 for k in needed if k in shown and k not in text_keys),
        "distractors": elements + points,
        "label_density": text_area / area if width and height else 0.0,
        "n_points": len(facts.points),
        "font_px": float(facts.font_px),
    }


def difficulty(features: Mapping[str, Any]) -> float:
    """One number from :func:`difficulty_features` (0 is trivial; the default simulated
    actor is right half of the time at 2.0):

        0.45 steps + 0.25 diagram_only + 0.12 distractors + 3 label_density
        + 0.35 (answer_terms - 1)

    ``answer_terms`` (when the caller gives it; 1 otherwise) is how many terms the answer's
    form has (``12``: 1, ``2√3``: 2, ``9 - 3√3``: 3, a decimal that has no short exact form:
    3), the arithmetic a reader must carry. A three-step question with one given read off the
    diagram, three distractors, 2% of the image under text and a whole-number answer sits at
    the simulated actor's midpoint (2.0)."""
    d = (0.45 * features["steps"] + 0.25 * features["diagram_only"] + 0.12 * features["distractors"]
         + 3.0 * features["label_density"] + 0.35 * (features.get("answer_terms", 1) - 1))
    return max(float(d), 0.0)
