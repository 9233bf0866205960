"""Geometry renderer: a solved figure -> RGB pixels of a textbook diagram, drawn to scale,
plus the facts of what was drawn where (points, printed texts, lines, circles, marks).

The map from the figure's units to pixels (:func:`figure_map`) is an affine map: rotate by
``style.rotation`` degrees counter-clockwise, mirror across the vertical axis when
``style.flip``, then scale uniformly so the bounding box of everything drawn (every point,
every drawn circle, every drawn arc's extent; not rays and lines, which run to the canvas'
edges) fills ``style.scale`` of the canvas in its tighter direction, centred; y runs up in
figure units and down in pixels (origin top-left). ``vicogym.checks.geometry`` computes the
same map on its own and holds the drawing to it.

What is drawn: white ground; black lines of ``style.line_width`` points; every point as a
dot with its name; the figure's ``draw`` elements (a ray from its first point through its
second to the canvas' edge, a line both ways to the edges, an arc counter-clockwise from
its first point to its second in figure units); and for each given key of ``diagram``:
a length's value beside the middle of its segment, on the side away from the figure's
centroid, or, where other points of the figure split the segment, a dimension line (a
thin line parallel to it, :data:`DIMENSION_OFFSET` text heights outside it, from end to
end with ticks across both ends) with the value beside its middle, so that it cannot read
as one part's length; an angle's arc from arm to arm and its value with a degree sign, or
a right-angle square for 90 degrees; a midpoint's equal ticks on both halves; a
right-angle square at a foot and at a tangent's point of contact; a parallel's arrows on
both lines; nothing for an inscribed circle (the text states it). An angle that a drawn
line from its vertex cuts gets an arc at least :data:`CUT_RADIUS` text heights wide, seen
crossing the line, and its value right outside the arc near the arc's middle; angles that
overlap at one vertex get nested arcs, the smaller angle's inside with room for its value
between the arcs. An angle's value goes where it is nearer its own vertex than any other
point, and printed texts keep :data:`TEXT_GAP` text heights apart.

Texts are placed clear of what is drawn: a value label takes the first of a few
candidate places (in order of preference) that keeps clear of every drawn piece and
placed text, else the clearest; a point's name then takes, of 16 directions around its
dot, the one farthest from every drawn line, circle, mark, dot and placed text (ties go
to the direction away from the figure's centroid), and where none of them is clear, the
clearest of 16 more a little further out. Values keep room by other points for their
names. Text is DejaVu Sans (matplotlib's default) at ``style.font_size`` points; boxes
are matplotlib's layout boxes from the Agg renderer. matplotlib's object API draws it on
the Agg canvas (no pyplot state); the same figure gives the same bytes. An arc's ends are
the directions of its two points seen from its centre, in figure units (a point at the
centre itself gives direction 0; the checks refuse such an arc).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from vicogym.structures.geometry import Figure, Solved, arc_angles, clip_to_canvas, figure_map, givens, pretty

#: the cap height of DejaVu Sans per pixel of font size (1493 of its 2048 units)
CAP_RATIO = 0.729
#: directions tried around a point for its name
LABEL_DIRECTIONS = 16
#: the gap between a text and what it labels, in font pixels
LABEL_GAP = 0.22
#: sampling step (px) of drawn outlines when texts are placed
SAMPLE_PX = 1.0
#: a split segment's dimension line runs this many font pixels outside it
DIMENSION_OFFSET = 0.9
#: the least gap between two printed texts, in font pixels
TEXT_GAP = 0.5
#: the least arc radius (font pixels) of an angle that a drawn line from its vertex cuts
CUT_RADIUS = 2.4


@dataclass(frozen=True)
class RenderSettings:
    width: int = 448
    height: int = 448
    dpi: int = 100


@dataclass(frozen=True)
class GeometryFacts:
    """One rendered figure, in image pixels (origin top-left, y down).

    ``points``: point name -> (x, y); ``labels``: every printed text, ``{"text", "kind"
    ("point" or "given"), "key" (the point's name or the given's key), "box" (x0, y0, x1,
    y1), "cap_px"}``; ``segments``: every drawn straight piece, ``{"element", "from",
    "to"}`` (rays and lines clipped to the canvas); ``circles``: each drawn circle (keyed by
    its name) and arc (keyed ``"c,P,Q"``) -> (cx, cy, r); ``arcs``: each drawn arc's key ->
    (start, end) in degrees as seen on screen (counter-clockwise, 0 to the right), the arc
    running counter-clockwise from start to end; ``marks``: ``{"kind" ("right_angle",
    "ticks", "arrows", "angle_arc", "dimension"), "key", "box"}``, an angle's arc with its
    ``"vertex"``, ``"radius"`` and ``"arms"`` (the two arms' directions in degrees as seen), a
    dimension line with its ends ``"from"`` and ``"to"``; ``scale``: pixels per unit of the
    figure; ``font_px``: font size in pixels; ``dot_px``: a point's dot radius; ``width``
    and ``height``: the canvas."""

    points: dict[str, tuple[float, float]]
    labels: list[dict]
    segments: list[dict]
    circles: dict[str, tuple[float, float, float]]
    marks: list[dict]
    scale: float
    font_px: float
    dpi: int
    line_px: float = 0.0
    dot_px: float = 0.0
    width: int = 0
    height: int = 0
    arcs: dict[str, tuple[float, float]] = field(default_factory=dict)


# -- text placement ---------------------------------------------------------------------------
def _box_to_points(boxes: np.ndarray, pts: np.ndarray) -> np.ndarray:
    """Distance of each box (n x 4) to its nearest point of ``pts`` (m x 2): n values."""
    if len(pts) == 0:
        return np.full(len(boxes), np.inf)
    x, y = pts[None, :, 0], pts[None, :, 1]
    dx = np.maximum(np.maximum(boxes[:, None, 0] - x, x - boxes[:, None, 2]), 0.0)
    dy = np.maximum(np.maximum(boxes[:, None, 1] - y, y - boxes[:, None, 3]), 0.0)
    return np.sqrt(dx * dx + dy * dy).min(axis=1)


def _box_to_boxes(boxes: np.ndarray, others: Sequence[Sequence[float]]) -> np.ndarray:
    if not others:
        return np.full(len(boxes), np.inf)
    o = np.asarray(others, float)
    dx = np.maximum(np.maximum(boxes[:, None, 0] - o[None, :, 2], o[None, :, 0] - boxes[:, None, 2]), 0.0)
    dy = np.maximum(np.maximum(boxes[:, None, 1] - o[None, :, 3], o[None, :, 1] - boxes[:, None, 3]), 0.0)
    return np.sqrt(dx * dx + dy * dy).min(axis=1)


def _sample_polyline(points: Sequence[Sequence[float]]) -> np.ndarray:
    """Points along a polyline at most :data:`SAMPLE_PX` apart, its vertices included."""
    p = np.asarray(points, float).reshape(-1, 2)
    if len(p) < 2:
        return p
    d = p[1:] - p[:-1]
    n = np.maximum((np.hypot(d[:, 0], d[:, 1]) / SAMPLE_PX).astype(int), 1)
    piece = np.repeat(np.arange(len(d)), n)
    t = (np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)) / np.repeat(n, n)
    return np.vstack([p[piece] + d[piece] * t[:, None], p[-1:]])


class _Obstacles:
    """What a text must keep clear of: sampled outlines (less the line's half width), dots
    (less their radius) and placed texts."""

    def __init__(self, line_half: float, dot_r: float):
        self.line_half, self.dot_r = line_half, dot_r
        self.text_gap = 0.0
        self.outline: list[np.ndarray] = []
        self.dots: dict[str, tuple[float, float]] = {}
        self.boxes: list[list[float]] = []
        self._cloud: np.ndarray | None = None

    def add_polyline(self, points: Sequence[Sequence[float]]) -> None:
        self.outline.append(_sample_polyline(points))
        self._cloud = None

    def clearance(self, boxes: np.ndarray, skip_dot: str | None = None, room: float = 0.0) -> np.ndarray:
        """Each box's distance to the nearest obstacle; ``room``: besides the dots' radius,
        what to keep clear around points (other than ``skip_dot``)."""
        if self._cloud is None:
            self._cloud = np.concatenate(self.outline) if self.outline else np.zeros((0, 2))
        out = _box_to_points(boxes, self._cloud) - self.line_half
        dots = np.array([p for n, p in self.dots.items() if n != skip_dot], float).reshape(-1, 2)
        out = np.minimum(out, _box_to_points(boxes, dots) - self.dot_r - room)
        return np.minimum(out, _box_to_boxes(boxes, self.boxes) - self.text_gap)


def _support(u: Sequence[float], half: Sequence[float]) -> float:
    """How far a box of half sizes ``half`` reaches from its centre in direction ``u``."""
    return abs(u[0]) * half[0] + abs(u[1]) * half[1]


def _unit(v: Sequence[float]) -> np.ndarray:
    n = math.hypot(v[0], v[1])
    return np.array([v[0] / n, v[1] / n]) if n > 1e-12 else np.array([1.0, 0.0])


# -- the renderer --------------------------------------------------------------------------------
class GeometryRenderer:
    """Draws solved figures on one reusable Agg canvas of ``settings``' size."""

    def __init__(self, settings: RenderSettings | None = None):
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure as MplFigure

        self.settings = settings or RenderSettings()
        s = self.settings
        if not (isinstance(s.width, int) and isinstance(s.height, int) and 32 <= s.width <= 4096
                and 32 <= s.height <= 4096 and isinstance(s.dpi, int) and 10 <= s.dpi <= 600):
            raise ValueError(f"expected width and height as whole pixels in [32, 4096] and dpi in [10, 600], got {s}")
        self._fig = MplFigure(figsize=(s.width / s.dpi, s.height / s.dpi), dpi=s.dpi)
        self._canvas = FigureCanvasAgg(self._fig)
        self._sizes: dict[tuple[str, float], tuple[float, float]] = {}

    def close(self) -> None:
        self._fig.clear()
        self._sizes.clear()

    # text measured once per (string, size): (width, height) of its layout box in pixels
    def _text_size(self, text: str, size: float) -> tuple[float, float]:
        key = (text, size)
        if key not in self._sizes:
            from matplotlib.text import Text

            probe = Text(0, 0, text, fontsize=size, fontfamily="DejaVu Sans", ha="center", va="center")
            probe.set_figure(self._fig)
            box = probe.get_window_extent(self._canvas.get_renderer())
            self._sizes[key] = (float(box.width), float(box.height))
        return self._sizes[key]

    def render(self, figure: Figure, solved: Solved) -> tuple[np.ndarray, GeometryFacts]:
        from matplotlib.lines import Line2D
        from matplotlib.patches import Circle
        from matplotlib.text import Text
        from matplotlib.transforms import IdentityTransform

        s = self.settings
        W, H = s.width, s.height
        style = figure.style
        font_px = style.font_size / 72.0 * s.dpi
        line_px = style.line_width / 72.0 * s.dpi
        dot_r = max(1.6, 1.15 * line_px)
        matrix, offset, scale = figure_map(figure, solved, W, H)
        exact = solved.floats()
        points = {n: tuple(float(v) for v in matrix @ np.array(p) + offset) for n, p in exact.items()}
        centroid = np.mean(np.array(list(points.values())), axis=0)

        strokes: list[list[tuple[float, float]]] = []  # polylines drawn in line width
        segments: list[dict] = []
        circles: dict[str, tuple[float, float, float]] = {}
        arcs: dict[str, tuple[float, float]] = {}
        round_circles: list[tuple[float, float, float]] = []
        obstacles = _Obstacles(line_px / 2, dot_r)
        for element in figure.draw:
            kind = element[0]
            if kind in ("segment", "ray", "line"):
                p, q = points[element[1]], points[element[2]]
                piece = (p, q) if kind == "segment" else clip_to_canvas(p, q, W, H, kind == "line")
                if piece is None:
                    continue
                segments.append({"element": list(element), "from": piece[0], "to": piece[1]})
                strokes.append([piece[0], piece[1]])
                obstacles.add_polyline([piece[0], piece[1]])
                continue
            center, r2 = solved.circles[element[1]]
            cx, cy = points[center]
            r = math.sqrt(r2.to_float()) * scale
            if kind == "circle":
                circles[element[1]] = (cx, cy, r)
                round_circles.append((cx, cy, r))
                n = max(int(2 * math.pi * r / SAMPLE_PX), 16)
                t = np.linspace(0, 2 * math.pi, n + 1)
                obstacles.add_polyline(list(zip(cx + r * np.cos(t), cy + r * np.sin(t))))
                continue
            key = ",".join(element[1:])
            start, sweep = arc_angles(exact, center, element[2], element[3])
            circles[key] = (cx, cy, r)
            ends = [matrix @ np.array([math.cos(t), math.sin(t)]) for t in (start, start + sweep)]
            seen = [math.degrees(math.atan2(-v[1], v[0])) % 360 for v in ends]  # as seen: y up
            arcs[key] = (seen[1], seen[0]) if style.flip else (seen[0], seen[1])
            ru = math.sqrt(r2.to_float())
            o = exact[center]
            t = start + np.linspace(0, sweep, max(int(sweep * r / 1.5), 8) + 1)
            units = np.stack([o[0] + ru * np.cos(t), o[1] + ru * np.sin(t)], axis=1)
            poly = [tuple(p) for p in units @ matrix.T + offset]
            strokes.append(poly)
            obstacles.add_polyline(poly)

        cloud = np.concatenate([_sample_polyline(poly) for poly in strokes]) if strokes else np.zeros((0, 2))
        marks, mark_strokes, angle_labels = self._marks(figure, points, exact, font_px, line_px, centroid, cloud)
        for poly in mark_strokes:
            obstacles.add_polyline(poly)
        obstacles.dots = dict(points)
        obstacles.text_gap = TEXT_GAP * font_px + 0.5

        labels: list[dict] = []
        cap = font_px * CAP_RATIO
        name_room = (LABEL_GAP + 0.9) * font_px  # a value keeps this far from other points: room for their names
        texts: list[tuple[str, tuple[float, float]]] = []
        # value labels first: their places are few (beside a segment, inside an angle)
        for key, text, candidates in self._value_candidates(figure, points, centroid, font_px, line_px,
                                                             angle_labels):
            w, h = self._text_size(text, style.font_size)
            centres = np.array(candidates, float)
            boxes = np.stack([centres[:, 0] - w / 2, centres[:, 1] - h / 2, centres[:, 0] + w / 2,
                              centres[:, 1] + h / 2], axis=1)
            own = key.split(":")[1].split(",")[1] if key.startswith("angle:") else None
            clear = np.minimum(obstacles.clearance(boxes, skip_dot=own, room=name_room), _edge_clearance(boxes, W, H))
            enough = line_px / 2 + 0.15 * font_px
            score = np.minimum(clear, enough) - 0.001 * np.arange(len(candidates))
            if own is not None:  # an angle's value sits nearer its own vertex than any other point
                others = np.array([p for n, p in points.items() if n != own], float).reshape(-1, 2)
                if len(others):
                    near_own = np.hypot(centres[:, 0] - points[own][0], centres[:, 1] - points[own][1])
                    near_other = np.hypot(centres[:, None, 0] - others[None, :, 0],
                                          centres[:, None, 1] - others[None, :, 1]).min(axis=1)
                    score = score - 1000.0 * (near_other < near_own + 1.0)
            best = int(np.argmax(score))
            obstacles.boxes.append(boxes[best].tolist())
            texts.append((text, (float(centres[best, 0]), float(centres[best, 1]))))
            labels.append({"text": text, "kind": "given", "key": key, "cap_px": round(cap, 3)})
        # then each point's name, in the figure's order
        gap = LABEL_GAP * font_px + dot_r
        for name, (x, y) in points.items():
            w, h = self._text_size(name, style.font_size)
            out = _unit((x - centroid[0], y - centroid[1])) if math.hypot(x - centroid[0], y - centroid[1]) > 1e-6 \
                else np.array([0.0, -1.0])
            # a ring of directions by the dot; where none is clear, a second ring further out
            chosen: tuple[float, np.ndarray, np.ndarray] | None = None
            for ring in (0.0, 0.6 * font_px):
                centres, pref = [], []
                for k in range(LABEL_DIRECTIONS):
                    t = 2 * math.pi * k / LABEL_DIRECTIONS
                    u = (math.cos(t), -math.sin(t))
                    d = gap + ring + _support(u, (w / 2, h / 2))
                    centres.append((x + d * u[0], y + d * u[1]))
                    pref.append(u[0] * out[0] + u[1] * out[1])
                c = np.array(centres)
                boxes = np.stack([c[:, 0] - w / 2, c[:, 1] - h / 2, c[:, 0] + w / 2, c[:, 1] + h / 2], axis=1)
                clear = np.minimum(obstacles.clearance(boxes, skip_dot=name), _edge_clearance(boxes, W, H))
                score = np.round(clear, 1) + 0.05 * np.array(pref)
                best = int(np.argmax(score))
                if chosen is None or clear[best] > chosen[0]:
                    chosen = (float(clear[best]), boxes[best], c[best])
                if clear[best] >= line_px / 2 + 1.0:
                    break
            _, box, centre = chosen
            obstacles.boxes.append(box.tolist())
            texts.append((name, (float(centre[0]), float(centre[1]))))
            labels.append({"text": name, "kind": "point", "key": name, "cap_px": round(cap, 3)})

        # -- draw --------------------------------------------------------------------------
        fig = self._fig
        fig.clear()
        fig.patch.set_facecolor("white")
        ident = IdentityTransform()
        ink = "black"
        for poly in strokes:
            xs, ys = zip(*poly)
            fig.add_artist(Line2D(xs, [H - v for v in ys], transform=ident, color=ink, linewidth=style.line_width,
                                  solid_capstyle="round", solid_joinstyle="round", snap=False))
        for cx, cy, r in round_circles:
            fig.add_artist(Circle((cx, H - cy), r, transform=ident, fill=False, edgecolor=ink,
                                  linewidth=style.line_width, snap=False))
        for poly in mark_strokes:
            xs, ys = zip(*poly)
            fig.add_artist(Line2D(xs, [H - v for v in ys], transform=ident, color=ink,
                                  linewidth=max(style.line_width * 0.7, 0.6), solid_capstyle="butt",
                                  solid_joinstyle="miter", snap=False))
        for x, y in points.values():
            fig.add_artist(Circle((x, H - y), dot_r, transform=ident, facecolor=ink, edgecolor="none", snap=False))
        renderer = self._canvas.get_renderer()
        for label, (text, (x, y)) in zip(labels, texts):
            artist = Text(x, H - y, text, fontsize=style.font_size, fontfamily="DejaVu Sans", ha="center",
                          va="center", color=ink, transform=ident)
            fig.add_artist(artist)
            box = artist.get_window_extent(renderer)
            label["box"] = (round(float(box.x0), 2), round(float(H - box.y1), 2), round(float(box.x1), 2),
                            round(float(H - box.y0), 2))
        self._canvas.draw()
        image = np.asarray(self._canvas.buffer_rgba())[:, :, :3].copy()
        if image.shape[:2] != (H, W):  # figsize * dpi rounded down by a hair
            padded = np.full((H, W, 3), 255, np.uint8)
            padded[: min(H, image.shape[0]), : min(W, image.shape[1])] = image[:H, :W]
            image = padded
        ordered = [labels[i] for i in range(len(labels))]
        facts = GeometryFacts(points=points, labels=ordered, segments=segments, circles=circles, marks=marks,
                              scale=float(scale), font_px=float(font_px), dpi=s.dpi, line_px=float(line_px),
                              dot_px=float(dot_r), width=W, height=H, arcs=arcs)
        return image, facts

    # -- the diagram's marks ----------------------------------------------------------------
    def _marks(self, figure: Figure, points: dict[str, tuple[float, float]], exact: dict[str, tuple[float, float]],
               font_px: float, line_px: float, centroid: np.ndarray,
               cloud: np.ndarray) -> tuple[list[dict], list, dict]:
        """The marks of the diagram's givens: their facts, their strokes (pixel polylines)
        and, per printed value, where it goes: an angle's ``("angle", vertex, radius, sub-angles
        (screen radians, widest first), arms)``, a split length's ``("dimension", middle of the
        dimension line, outward normal, direction along)``; ``cloud``: the drawn lines sampled
        (pixels), which a dimension line keeps clear of where it can."""
        shown = set(figure.diagram)
        marks: list[dict] = []
        strokes: list[list[tuple[float, float]]] = []
        angle_labels: dict[str, tuple] = {}
        counts = {"midpoint": 0, "parallel": 0}
        radii = _angle_radii(figure, points, font_px, LABEL_GAP * font_px + line_px / 2,
                             lambda text: self._text_size(text, figure.style.font_size))

        def add(kind: str, key: str, polys: list[list[tuple[float, float]]]) -> None:
            xs = [p[0] for poly in polys for p in poly]
            ys = [p[1] for poly in polys for p in poly]
            marks.append({"kind": kind, "key": key, "box": (round(min(xs), 2), round(min(ys), 2),
                                                              round(max(xs), 2), round(max(ys), 2))})
            strokes.extend(polys)

        def square(vertex: str, toward1: str, toward2: str) -> list[tuple[float, float]]:
            v = np.array(points[vertex])
            a, b = np.array(points[toward1]) - v, np.array(points[toward2]) - v
            side = min(0.55 * font_px, 0.3 * min(np.hypot(*a), np.hypot(*b)))
            u1, u2 = _unit(a) * side, _unit(b) * side
            return [tuple(v + u1), tuple(v + u1 + u2), tuple(v + u2)]

        for g in givens(figure):
            if g.key not in shown:
                continue
            n = g.names
            if g.kind == "angle":
                v = np.array(points[n[1]])
                d1, d2 = _unit(np.array(points[n[0]]) - v), _unit(np.array(points[n[2]]) - v)
                if abs(float(g.value) - 90) < 1e-9:
                    add("right_angle", g.key, [square(n[1], n[0], n[2])])
                    continue
                a1, a2 = math.atan2(-d1[1], d1[0]), math.atan2(-d2[1], d2[0])
                sweep = (a2 - a1 + math.pi) % (2 * math.pi) - math.pi
                theta = abs(sweep)
                radius = radii[g.key]
                t = a1 + np.linspace(0, sweep, max(int(theta * radius / 1.5), 6) + 1)
                add("angle_arc", g.key, [list(zip(v[0] + radius * np.cos(t), v[1] - radius * np.sin(t)))])
                marks[-1].update({"vertex": (round(float(v[0]), 2), round(float(v[1]), 2)),
                                  "radius": round(float(radius), 2),
                                  "arms": (round(math.degrees(a1) % 360, 3), round(math.degrees(a2) % 360, 3))})
                inside = sorted(((_drawn_directions(figure, points, n[1]) - a1) * np.sign(sweep)) % (2 * math.pi))
                cuts = [0.0] + [c for c in inside if 1e-3 < c < theta - 1e-3] + [theta]
                subs = sorted(((cuts[i], cuts[i + 1]) for i in range(len(cuts) - 1)), key=lambda c: c[0] - c[1])
                sign = 1.0 if sweep >= 0 else -1.0
                angle_labels[g.key] = ("angle", v, radius, [(a1 + sign * lo, a1 + sign * hi) for lo, hi in subs],
                                       (a1, a1 + sweep))
            elif g.kind == "length" and g.key in shown:
                between = _points_between(exact, n[0], n[1])
                if not between:
                    continue
                p, q = np.array(points[n[0]]), np.array(points[n[1]])
                along = _unit(q - p)
                normal = np.array([-along[1], along[0]])
                if float(np.dot(normal, (p + q) / 2 - centroid)) < 0:
                    normal = -normal
                off = DIMENSION_OFFSET * font_px
                # outside the figure, unless drawn lines crowd that side and not the other
                length = float(np.hypot(*(q - p)))
                trim = min(0.8 * font_px / max(length, 1e-9), 0.5)
                share = np.linspace(trim, 1 - trim, 24)[:, None]
                room = []
                for side in (normal, -normal):
                    line = p + (q - p) * share + side * off
                    room.append(float(_box_to_points(np.hstack([line, line]), cloud).min()) if len(cloud) else np.inf)
                if room[0] < 0.5 * font_px and room[1] > room[0]:
                    normal = -normal
                a, b = p + normal * off, q + normal * off
                tick_in, tick_out = 0.45 * font_px, 0.3 * font_px
                polys = [[tuple(a), tuple(b)], [tuple(a - normal * tick_in), tuple(a + normal * tick_out)],
                         [tuple(b - normal * tick_in), tuple(b + normal * tick_out)]]
                add("dimension", g.key, polys)
                marks[-1].update({"from": (round(float(a[0]), 2), round(float(a[1]), 2)),
                                  "to": (round(float(b[0]), 2), round(float(b[1]), 2))})
                angle_labels[g.key] = ("dimension", (a + b) / 2, normal, along)
            elif g.kind == "perpendicular":  # (from, foot, A, B)
                frm, foot, a, b = n
                along = a if a != foot else b
                if b != foot and math.dist(points[b], points[foot]) > math.dist(points[along], points[foot]):
                    along = b
                add("right_angle", g.key, [square(foot, frm, along)])
            elif g.kind == "tangent":  # (P, T, centre)
                add("right_angle", g.key, [square(n[1], n[2], n[0])])
            elif g.kind == "midpoint":  # (M, A, B)
                counts["midpoint"] += 1
                polys = []
                for end in (n[1], n[2]):
                    polys += _ticks(points[n[0]], points[end], counts["midpoint"], font_px, line_px,
                                    avoid=list(points.values()))
                add("ticks", g.key, polys)
            elif g.kind == "parallel":  # (C, D, A, B)
                counts["parallel"] += 1
                polys = _arrows(points[n[0]], points[n[1]], counts["parallel"], font_px, line_px)
                polys += _arrows(points[n[2]], points[n[3]], counts["parallel"], font_px, line_px)
                add("arrows", g.key, polys)
        return marks, strokes, angle_labels

    def _value_candidates(self, figure: Figure, points: dict[str, tuple[float, float]], centroid: np.ndarray,
                          font_px: float, line_px: float, angle_labels: dict) -> list[tuple[str, str, list]]:
        """Each printed value of the diagram: (key, text, candidate centres in order of preference)."""
        out = []
        size = figure.style.font_size
        gap = LABEL_GAP * font_px + line_px / 2
        for g in givens(figure):
            if g.key not in figure.diagram:
                continue
            if g.kind == "length" and g.key in angle_labels:  # a split segment: beside its dimension line
                text = pretty(g.value)
                w, h = self._text_size(text, size)
                _, mid, normal, along = angle_labels[g.key]
                length = math.dist(points[g.names[0]], points[g.names[1]])
                d = gap + _support(normal, (w / 2, h / 2))
                cands = [tuple(mid + normal * (d + extra) + along * shift * length)
                         for extra in (0.0, 0.4 * font_px) for shift in (0.0, 0.08, -0.08, 0.16, -0.16)]
                out.append((g.key, text, cands))
            elif g.kind == "length":
                text = pretty(g.value)
                w, h = self._text_size(text, size)
                p, q = np.array(points[g.names[0]]), np.array(points[g.names[1]])
                mid = (p + q) / 2
                along = _unit(q - p)
                normal = np.array([-along[1], along[0]])
                if float(np.dot(normal, mid - centroid)) < 0:
                    normal = -normal
                d = gap + _support(normal, (w / 2, h / 2))
                length = float(np.hypot(*(q - p)))
                cands = []
                for side in (normal, -normal):
                    for shift in (0.0, 0.18, -0.18, 0.32, -0.32):
                        for extra in (0.0, 0.5 * font_px):
                            cands.append(tuple(mid + side * (d + extra) + along * shift * length))
                out.append((g.key, text, cands))
            elif g.kind == "angle" and g.key in angle_labels:
                text = f"{pretty(g.value)}°"
                w, h = self._text_size(text, size)
                _, v, radius, subs, (a1, a2) = angle_labels[g.key]
                cands = []
                if len(subs) > 1:  # a drawn line cuts the angle: the value right by its arc, near the arc's middle
                    for share in (0.5, 0.42, 0.58, 0.34, 0.66, 0.26, 0.74, 0.18, 0.82):
                        t = a1 + share * (a2 - a1)
                        u = np.array([math.cos(t), -math.sin(t)])
                        for extra in (0.0, 0.25 * font_px):
                            cands.append(tuple(v + u * (radius + gap + _support(u, (w / 2, h / 2)) + extra)))
                # just outside the arc, in the widest of the sub-angles the drawn lines from the vertex cut
                for lo, hi in subs:
                    for share in (0.5, 0.35, 0.65):
                        t = lo + share * (hi - lo)
                        u = np.array([math.cos(t), -math.sin(t)])
                        fit = 0.0  # far enough out along u that the text keeps off the sub-angle's sides
                        for side in (lo, hi):
                            ray = (math.cos(side), -math.sin(side))
                            sine = abs(float(ray[0] * u[1] - ray[1] * u[0]))
                            need = gap + _support((-ray[1], ray[0]), (w / 2, h / 2))
                            fit = max(fit, need / sine if sine > 1e-6 else math.inf)
                        start = max(radius + gap + _support(u, (w / 2, h / 2)), fit)
                        if not math.isfinite(start):
                            continue
                        for extra in (0.0, 0.4 * font_px, 0.9 * font_px):
                            cands.append(tuple(v + u * (start + extra)))
                mid = (subs[0][0] + subs[0][1]) / 2
                fallback = v + np.array([math.cos(mid), -math.sin(mid)]) * (radius + gap + w)
                out.append((g.key, text, cands or [tuple(fallback)]))
        return out


def _points_between(units: Mapping[str, tuple[float, float]], a: str, b: str) -> list[str]:
    """The figure's points strictly inside segment ``ab`` (figure units)."""
    pa, pb = units[a], units[b]
    dx, dy = pb[0] - pa[0], pb[1] - pa[1]
    n = dx * dx + dy * dy
    if n <= 0:
        return []
    out = []
    for name, (x, y) in units.items():
        if name in (a, b):
            continue
        t = ((x - pa[0]) * dx + (y - pa[1]) * dy) / n
        if 1e-6 < t < 1 - 1e-6 and abs(dx * (y - pa[1]) - dy * (x - pa[0])) <= 1e-7 * n:
            out.append(name)
    return out


def _drawn_directions(figure: Figure, points: Mapping[str, tuple[float, float]], name: str) -> np.ndarray:
    """Screen directions (radians, counter-clockwise as seen, 0 to the right) of the drawn
    straight pieces leaving point ``name``."""
    x, y = points[name]
    out = []
    for element in figure.draw:
        kind = element[0]
        if kind not in ("segment", "ray", "line"):
            continue
        p, q = points[element[1]], points[element[2]]
        dx, dy = q[0] - p[0], q[1] - p[1]
        n = math.hypot(dx, dy)
        if n < 1e-9:
            continue
        forward, back = math.atan2(-dy, dx), math.atan2(dy, -dx)
        t = ((x - p[0]) * dx + (y - p[1]) * dy) / (n * n)
        if abs(dx * (y - p[1]) - dy * (x - p[0])) / n > 0.5:
            continue
        tol = 0.5 / n
        starts, ends = t < tol, t > 1 - tol
        if kind == "segment":
            if starts and t > -tol:
                out.append(forward)
            elif ends and t < 1 + tol:
                out.append(back)
            elif not starts and not ends:
                out += [forward, back]
        elif kind == "ray":
            if abs(t) < tol:
                out.append(forward)
            elif t > 0:
                out += [forward, back]
        else:
            out += [forward, back]
    return np.array(out, float)


def _angle_radii(figure: Figure, points: Mapping[str, tuple[float, float]], font_px: float, gap: float,
                 text_size) -> dict[str, float]:
    """The arc radius (px) of each angle the diagram shows with a value: by its size, wider
    where a drawn line from the vertex cuts it, and at one vertex the arcs of overlapping
    angles nested: the smaller angle's inside, with room for its value between the arcs."""
    shown = set(figure.diagram)
    found = []
    for g in givens(figure):
        if g.kind != "angle" or g.key not in shown or abs(float(g.value) - 90) < 1e-9:
            continue
        n = g.names
        v = np.array(points[n[1]])
        d1, d2 = np.array(points[n[0]]) - v, np.array(points[n[2]]) - v
        a1 = math.atan2(-d1[1], d1[0])
        sweep = (math.atan2(-d2[1], d2[0]) - a1 + math.pi) % (2 * math.pi) - math.pi
        lo = a1 if sweep >= 0 else a1 + sweep
        theta = abs(sweep)
        reach = min(float(np.hypot(*d1)), float(np.hypot(*d2)))
        radius = min(max(0.9 * font_px, min(0.8 * font_px / max(theta, 1e-3), 2.2 * font_px)), 0.45 * reach)
        inside = ((_drawn_directions(figure, points, n[1]) - lo) % (2 * math.pi))
        cuts = sorted(c for c in inside if 1e-3 < c < theta - 1e-3)
        if cuts:  # cut: an arc wide enough to be seen spanning the line
            radius = max(radius, min(CUT_RADIUS * font_px, 0.6 * reach))
        widest = max(b - a for a, b in zip([0.0] + cuts, cuts + [theta]))
        w, h = text_size(f"{pretty(g.value)}°")
        diag = math.hypot(w, h)
        fit = (gap + diag / 2) / math.sin(widest / 2) if widest < math.pi else 0.0
        found.append((theta, g.key, n[1], lo % (2 * math.pi), radius, diag, fit))
    radii: dict[str, float] = {}
    done: list[tuple[str, float, float, float]] = []
    for theta, key, vertex, lo, radius, diag, fit in sorted(found):
        for other_vertex, other_lo, other_theta, other_far in done:
            if other_vertex != vertex:
                continue
            start = (other_lo - lo) % (2 * math.pi)
            overlap = min(theta, start + other_theta) - start if start < theta else \
                min(other_theta, (lo - other_lo) % (2 * math.pi) + theta) - (lo - other_lo) % (2 * math.pi)
            if overlap > 1e-3:
                radius = max(radius, other_far + gap)
        radii[key] = radius
        done.append((vertex, lo, theta, max(radius + gap, fit) + diag))
    return radii


def _edge_clearance(boxes: np.ndarray, width: int, height: int) -> np.ndarray:
    return np.minimum.reduce([boxes[:, 0], boxes[:, 1], width - boxes[:, 2], height - boxes[:, 3]])


def _ticks(p: Sequence[float], q: Sequence[float], count: int, font_px: float,
           line_px: float, avoid: Sequence[Sequence[float]] = ()) -> list[list[tuple[float, float]]]:
    """``count`` short strokes across the middle of ``pq``, or, where a drawn point sits at
    the middle (a midpoint of a midpoint), as near it as clears the point's dot."""
    p, q = np.array(p), np.array(q)
    along = _unit(q - p)
    normal = np.array([-along[1], along[0]])
    half, step = 0.32 * font_px, max(1.8 * line_px, 3.0)
    others = [np.array(a) for a in avoid if min(math.dist(a, p), math.dist(a, q)) > 1e-6]
    mid = (p + q) / 2
    for t in (0.5, 0.36, 0.64, 0.28, 0.72):
        mid = p + (q - p) * t
        if all(math.dist(mid, a) > 0.5 * font_px + count * step for a in others):
            break
    out = []
    for k in range(count):
        c = mid + along * (k - (count - 1) / 2) * step
        out.append([tuple(c - normal * half), tuple(c + normal * half)])
    return out


def _arrows(p: Sequence[float], q: Sequence[float], count: int, font_px: float,
            line_px: float) -> list[list[tuple[float, float]]]:
    """``count`` chevrons at the middle of ``pq``, pointing from ``p`` to ``q``."""
    p, q = np.array(p), np.array(q)
    along = _unit(q - p)
    normal = np.array([-along[1], along[0]])
    mid, size, step = (p + q) / 2, 0.38 * font_px, max(2.2 * line_px, 4.0)
    out = []
    for k in range(count):
        tip = mid + along * ((k - (count - 1) / 2) * step + size / 2)
        back = tip - along * size
        out.append([tuple(back + normal * size * 0.6), tuple(tip), tuple(back - normal * size * 0.6)])
    return out
