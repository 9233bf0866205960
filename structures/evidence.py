"""The evidence arm's structures: tasks, their units and evidence, and the views an
executor is sent, as immutable plain data with exact geometry.

A :class:`Task` is one question over a pool of source **units** (a form page, a slide, a
chart, a CLEVR frame, a photo). Each unit has a full-resolution frame in **unit pixels**
(``width`` x ``height``); every box here is ``[x0, y0, x1, y1]`` in those pixels, origin
top-left. A task knows its **evidence**: the boxes that must be seen to answer, each with
the size that carries its detail (``size``: a text's cap height, an object's extent, in
unit pixels) and the size in *view* pixels at which it becomes legible (``legible``).

A :class:`View` is one image sent to the executor: one or more :class:`Tile` s, each a
crop of one unit (``crop``, unit pixels) drawn at ``scale`` view pixels per unit pixel at
offset ``at`` in the view. A zoom's view is cut from the original unit, so its crop maps
straight back to unit pixels however deep the zoom; a composed sheet has one tile per
unit. Evidence is *supported* by a view when one of its tiles shows the whole box with the
detail at or above its legible size (:func:`support`): exact, from geometry alone.

Everything round-trips through JSON (``to_dict`` / ``from_dict``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vicogym.legibility import TEXT_DRAWN, TEXT_FONT, legible_px
from vicogym.validation import is_int, is_number

Box = tuple[float, float, float, float]

#: what a unit is, and so how the renderer draws a region of it
UNIT_KINDS = ("form", "chart", "slide", "clevr", "image")
#: what an answer is (the contract the executor is told) and how it is scored
CONTRACTS = ("text", "number", "letter", "count")
SCORERS = ("anls", "relaxed", "letter", "short", "exact")
#: the cap height (view pixels) from which printed text is legible: the legible size of the
#: charts' font as the evidence arm shows it, measured with Tesseract (the cap height at which
#: it reads a word right half of the time; ``vicogym.legibility``, ``assets/legibility.json``,
#: made by ``benchmarks/legibility.py``; 7 px was assumed before), and the default for text
#: whose font is unknown (FUNSD, JSONL files); form text carries its own font's size. And the
#: extent from which a CLEVR object's colour, shape and size can be told (no reader measured it)
LEGIBLE_TEXT_PX = legible_px(TEXT_FONT, TEXT_DRAWN)
LEGIBLE_OBJECT_PX = 16.0
#: how much a view's geometry may be off from a box and still show all of it (float rounding)
SLACK_PX = 0.5
#: two views are indistinguishable when no pixel differs by more than this many levels (of
#: 255) in any channel: 1.6% contrast in a detail a pixel or two wide, below what a person
#: sees there (the Weber fraction is about 2% on a large patch and several times that on a
#: pixel-sized detail); the bound of "hidden" (a start view that draws the same within it
#: whichever answer is true cannot tell the answers apart)
HIDDEN_LEVELS = 4


def box_of(value: Any, name: str = "box") -> Box:
    """A ``[x0, y0, x1, y1]`` box of finite numbers with ``x0 < x1`` and ``y0 < y1``."""
    if not isinstance(value, (list, tuple)) or len(value) != 4 or not all(is_number(v) for v in value):
        raise ValueError(f"expected {name} as [x0, y0, x1, y1] (four finite numbers), got {value!r}")
    x0, y0, x1, y1 = (float(v) for v in value)
    if not (x0 < x1 and y0 < y1):
        raise ValueError(f"expected {name} with x0 < x1 and y0 < y1, got {list(value)!r}")
    return (x0, y0, x1, y1)


def intersect(a: Box, b: Box) -> Box | None:
    x0, y0, x1, y1 = max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])
    return (x0, y0, x1, y1) if x0 < x1 and y0 < y1 else None


def contains(outer: Box, inner: Box, slack: float = SLACK_PX) -> bool:
    return (inner[0] >= outer[0] - slack and inner[1] >= outer[1] - slack
            and inner[2] <= outer[2] + slack and inner[3] <= outer[3] + slack)


def _rounded(box: Box) -> list[float]:
    return [round(v, 4) for v in box]


@dataclass(frozen=True)
class Evidence:
    """One thing that must be seen to answer: ``what`` (a short description), in ``unit``
    at ``box``; its detail is ``size`` unit pixels (a text's cap height) and becomes
    legible at ``legible`` view pixels. ``ink``, where known, is the box of the glyphs
    themselves inside ``box`` (which keeps a margin): a view that shows all of the ink
    shows the item, even where it cuts the margin."""

    unit: int
    box: Box
    size: float
    legible: float
    what: str = ""
    ink: Box | None = None

    def __post_init__(self) -> None:
        if not is_int(self.unit, 0):
            raise ValueError(f"expected evidence unit as a unit index, got {self.unit!r}")
        object.__setattr__(self, "box", box_of(self.box, "evidence box"))
        for name in ("size", "legible"):
            if not is_number(getattr(self, name)) or getattr(self, name) <= 0:
                raise ValueError(f"expected evidence {name} as a positive number, got {getattr(self, name)!r}")
        if self.ink is not None:
            object.__setattr__(self, "ink", box_of(self.ink, "evidence ink box"))
            if not contains(self.box, self.ink):
                raise ValueError(f"expected the evidence ink box {list(self.ink)} inside its box {list(self.box)}")

    @property
    def shown_by(self) -> Box:
        """What a view must show all of to show the item: its ink, else its box."""
        return self.ink if self.ink is not None else self.box

    def to_dict(self) -> dict[str, Any]:
        out = {"unit": self.unit, "box": _rounded(self.box), "size": round(float(self.size), 4),
               "legible": float(self.legible), "what": self.what}
        if self.ink is not None:
            out["ink"] = _rounded(self.ink)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Evidence:
        return cls(d["unit"], tuple(d["box"]), d["size"], d["legible"], d.get("what", ""),
                   tuple(d["ink"]) if d.get("ink") is not None else None)


@dataclass(frozen=True)
class Unit:
    """One source unit: its ``kind`` (:data:`UNIT_KINDS`), its full-resolution frame,
    what the renderer draws it from (``spec``: a form's layout, a chart's structure, a
    scene and its seed, an image's path and SHA-256), a ``title`` for sheets, and how far
    a view may enlarge it (``max_scale``: drawn units are re-drawn at any scale up to it;
    a raster has no detail beyond its own pixels, 1.0)."""

    kind: str
    width: int
    height: int
    spec: Mapping[str, Any]
    title: str = ""
    max_scale: float = 4.0

    def __post_init__(self) -> None:
        if self.kind not in UNIT_KINDS:
            raise ValueError(f"expected a unit kind in {UNIT_KINDS}, got {self.kind!r}")
        for name in ("width", "height"):
            if not is_int(getattr(self, name), 1):
                raise ValueError(f"expected unit {name} as a positive integer, got {getattr(self, name)!r}")
        if not is_number(self.max_scale) or self.max_scale <= 0:
            raise ValueError(f"expected max_scale as a positive number, got {self.max_scale!r}")

    @property
    def frame(self) -> Box:
        return (0.0, 0.0, float(self.width), float(self.height))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "width": self.width, "height": self.height, "spec": dict(self.spec),
                "title": self.title, "max_scale": float(self.max_scale)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Unit:
        return cls(d["kind"], d["width"], d["height"], d.get("spec", {}), d.get("title", ""),
                   d.get("max_scale", 4.0))


#: how an episode starts: the first unit alone, a thumbnail sheet of the pool, or every
#: unit at once (Direct)
STARTS = ("first", "sheet", "all")


@dataclass(frozen=True)
class Task:
    """One verifiable question over ``units``.

    ``answer`` is the gold answer (``golds`` any others a scorer accepts), ``contract``
    what the answer is (:data:`CONTRACTS`), ``scorer`` how it is scored
    (:data:`SCORERS`), ``options`` a multiple-choice question's options (letters A, B,
    ... in order), ``start`` what is sent first (:data:`STARTS`), ``evidence`` what must
    be seen, and ``meta`` what re-derives the answer (the program, the edit sequence, the
    source record)."""

    id: str
    family: str
    question: str
    answer: str
    units: tuple[Unit, ...]
    evidence: tuple[Evidence, ...]
    contract: str = "text"
    scorer: str = "anls"
    golds: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    start: str = "first"
    meta: Mapping[str, Any] = field(default_factory=dict)
    #: the largest scale (view pixels per unit pixel) the task's own start draws a unit at:
    #: a thumbnail's, small enough that the start hides the answer; ``None``: as large as
    #: the view allows
    start_scale: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "units", tuple(self.units))
        if self.start_scale is not None and (not is_number(self.start_scale) or self.start_scale <= 0):
            raise ValueError(f"expected start_scale as a positive number or None, got {self.start_scale!r}")
        object.__setattr__(self, "evidence", tuple(self.evidence))
        object.__setattr__(self, "golds", tuple(self.golds))
        object.__setattr__(self, "options", tuple(self.options))
        if not self.units:
            raise ValueError(f"task {self.id!r} has no units")
        if self.contract not in CONTRACTS:
            raise ValueError(f"expected a contract in {CONTRACTS}, got {self.contract!r}")
        if self.scorer not in SCORERS:
            raise ValueError(f"expected a scorer in {SCORERS}, got {self.scorer!r}")
        if self.start not in STARTS:
            raise ValueError(f"expected start in {STARTS}, got {self.start!r}")
        if not isinstance(self.question, str) or not self.question.strip():
            raise ValueError(f"task {self.id!r} has no question")
        for e in self.evidence:
            if e.unit >= len(self.units):
                raise ValueError(f"task {self.id!r}: evidence names unit {e.unit}, the task has {len(self.units)}")
            if not contains(self.units[e.unit].frame, e.box):
                raise ValueError(f"task {self.id!r}: evidence box {list(e.box)} lies outside unit {e.unit}'s frame "
                                 f"{self.units[e.unit].width}x{self.units[e.unit].height}")
        if self.contract == "letter" and self.answer not in letters(len(self.options)):
            raise ValueError(f"task {self.id!r}: a letter answer must be one of the options' letters, got "
                             f"{self.answer!r} for {len(self.options)} options")

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "family": self.family, "question": self.question, "answer": self.answer,
                "golds": list(self.golds), "contract": self.contract, "scorer": self.scorer,
                "options": list(self.options), "start": self.start,
                "units": [u.to_dict() for u in self.units], "evidence": [e.to_dict() for e in self.evidence],
                "meta": dict(self.meta), **({} if self.start_scale is None else {"start_scale": self.start_scale})}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Task:
        return cls(d["id"], d["family"], d["question"], d["answer"], tuple(Unit.from_dict(u) for u in d["units"]),
                   tuple(Evidence.from_dict(e) for e in d.get("evidence", ())), d.get("contract", "text"),
                   d.get("scorer", "anls"), tuple(d.get("golds", ())), tuple(d.get("options", ())),
                   d.get("start", "first"), d.get("meta", {}), d.get("start_scale"))


def letters(n: int) -> tuple[str, ...]:
    return tuple(chr(ord("A") + i) for i in range(n))


@dataclass(frozen=True)
class Tile:
    """A crop of one unit inside a view: unit pixels ``crop`` drawn at ``scale`` view
    pixels per unit pixel, its top-left at ``at`` (view pixels); ``label`` is drawn above
    it on a sheet."""

    unit: int
    crop: Box
    scale: float
    at: tuple[int, int] = (0, 0)
    label: str = ""

    @property
    def size(self) -> tuple[int, int]:
        """The tile's width and height in view pixels."""
        return (max(1, round((self.crop[2] - self.crop[0]) * self.scale)),
                max(1, round((self.crop[3] - self.crop[1]) * self.scale)))

    @property
    def rect(self) -> Box:
        """Where the tile lies in the view, in view pixels."""
        w, h = self.size
        return (float(self.at[0]), float(self.at[1]), float(self.at[0] + w), float(self.at[1] + h))

    def to_unit(self, x: float, y: float) -> tuple[float, float]:
        """The unit pixel under view pixel (``x``, ``y``)."""
        w, h = self.size
        sx, sy = (self.crop[2] - self.crop[0]) / w, (self.crop[3] - self.crop[1]) / h
        return (self.crop[0] + (x - self.at[0]) * sx, self.crop[1] + (y - self.at[1]) * sy)

    def to_view(self, x: float, y: float) -> tuple[float, float]:
        """The view pixel that shows unit pixel (``x``, ``y``)."""
        w, h = self.size
        sx, sy = w / (self.crop[2] - self.crop[0]), h / (self.crop[3] - self.crop[1])
        return (self.at[0] + (x - self.crop[0]) * sx, self.at[1] + (y - self.crop[1]) * sy)

    def to_dict(self) -> dict[str, Any]:
        return {"unit": self.unit, "crop": _rounded(self.crop), "scale": round(float(self.scale), 6),
                "at": list(self.at), "label": self.label}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Tile:
        return cls(d["unit"], tuple(d["crop"]), d["scale"], tuple(d.get("at", (0, 0))), d.get("label", ""))


@dataclass(frozen=True)
class Note:
    """A persistent marker: ``text`` at unit pixel ``at`` of ``unit``, ring colour by its
    ``ordinal`` (0, 1, ...)."""

    ordinal: int
    unit: int
    at: tuple[float, float]
    text: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"ordinal": self.ordinal, "unit": self.unit, "at": [round(v, 4) for v in self.at], "text": self.text}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Note:
        return cls(d["ordinal"], d["unit"], tuple(d["at"]), d.get("text", ""))


@dataclass(frozen=True)
class View:
    """One image sent to the executor: ``tiles`` on a ``width`` x ``height`` canvas, the
    ``notes`` burned into it, and how it came to be (``made_by``: the step, the action,
    the view it was cut from and the region)."""

    id: int
    width: int
    height: int
    tiles: tuple[Tile, ...]
    notes: tuple[Note, ...] = ()
    made_by: Mapping[str, Any] = field(default_factory=dict)
    #: how it is drawn beyond its tiles (a skill's presentation): ``grid`` (lines per side
    #: of a coordinate grid), ``timestamps`` (a row naming each tile's unit), ``rings``
    #: (``mono``: every note ring in one colour); empty: the plain view
    style: Mapping[str, Any] = field(default_factory=dict)

    def tile_at(self, x: float, y: float) -> Tile | None:
        for tile in self.tiles:
            x0, y0, x1, y1 = tile.rect
            if x0 <= x < x1 and y0 <= y < y1:
                return tile
        return None

    def units(self) -> list[int]:
        return [t.unit for t in self.tiles]

    def to_dict(self) -> dict[str, Any]:
        out = {"id": self.id, "width": self.width, "height": self.height, "tiles": [t.to_dict() for t in self.tiles],
               "notes": [n.to_dict() for n in self.notes], "made_by": dict(self.made_by)}
        if self.style:
            out["style"] = dict(self.style)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> View:
        return cls(d["id"], d["width"], d["height"], tuple(Tile.from_dict(t) for t in d["tiles"]),
                   tuple(Note.from_dict(n) for n in d.get("notes", ())), d.get("made_by", {}), d.get("style", {}))


def fit_scale(width: float, height: float, max_w: float, max_h: float, max_scale: float) -> float:
    """The largest scale that fits ``width`` x ``height`` in ``max_w`` x ``max_h`` and
    does not pass ``max_scale``."""
    return min(max_w / width, max_h / height, max_scale)


def snap(crop: Box, unit: Unit) -> Box:
    """``crop`` grown to whole unit pixels and clipped to the unit's frame (a view's crop
    is always whole pixels, so every renderer cuts the same window)."""
    x0, y0 = max(0, math.floor(crop[0] + 1e-6)), max(0, math.floor(crop[1] + 1e-6))
    x1, y1 = min(unit.width, math.ceil(crop[2] - 1e-6)), min(unit.height, math.ceil(crop[3] - 1e-6))
    return (float(x0), float(y0), float(max(x1, x0 + 1)), float(max(y1, y0 + 1)))


def whole_view(view_id: int, unit_index: int, unit: Unit, max_side: int, notes: Sequence[Note] = (),
               made_by: Mapping[str, Any] | None = None, style: Mapping[str, Any] | None = None,
               max_scale: float | None = None) -> View:
    """A view of the whole of ``unit``, as large as fits ``max_side`` (and ``max_scale``)."""
    return crop_view(view_id, unit_index, unit, unit.frame, max_side, notes, made_by, style=style,
                     max_scale=max_scale)


def scale_cap(unit: Unit, upscale: float = 1.0) -> float:
    """How far a view may enlarge ``unit``: its ``max_scale`` times ``upscale`` for a unit
    that is re-drawn at scale; a raster (``max_scale`` 1) holds no detail beyond its own
    pixels and is never upscaled."""
    return unit.max_scale * upscale if unit.max_scale > 1.0 else unit.max_scale


def crop_view(view_id: int, unit_index: int, unit: Unit, crop: Box, max_side: int, notes: Sequence[Note] = (),
              made_by: Mapping[str, Any] | None = None, upscale: float = 1.0,
              style: Mapping[str, Any] | None = None, max_scale: float | None = None) -> View:
    """A view of ``crop`` (unit pixels) of ``unit``, as large as fits ``max_side`` and
    the unit's ``max_scale`` (times ``upscale``, :func:`scale_cap`) allow, and no larger
    than ``max_scale`` (a thumbnail's scale) when given."""
    crop = snap(crop, unit)
    w, h = crop[2] - crop[0], crop[3] - crop[1]
    cap = scale_cap(unit, upscale)
    scale = fit_scale(w, h, max_side, max_side, cap if max_scale is None else min(cap, max_scale))
    tile = Tile(unit_index, crop, scale)
    tw, th = tile.size
    shown = tuple(n for n in notes if n.unit == unit_index and _inside(crop, n.at))
    return View(view_id, tw, th, (tile,), shown, dict(made_by or {}), dict(style or {}))


#: what a sheet's label says of each unit: its index and title, its index, nothing
LABEL_FORMATS = ("index_title", "index", "none")


def unit_label(index: int, unit: Unit, labels: str = "index_title") -> str:
    if labels == "none":
        return ""
    return f"Unit {index}" + (f": {unit.title}" if unit.title and labels == "index_title" else "")


def sheet_view(view_id: int, units: Sequence[tuple[int, Unit]], cols: int, max_side: int, label_px: int,
               notes: Sequence[Note] = (), made_by: Mapping[str, Any] | None = None, labels: str = "index_title",
               style: Mapping[str, Any] | None = None, max_scale: float | None = None) -> View:
    """Whole units tiled ``cols`` to a row on one ``max_side`` square sheet, each under a
    ``label_px`` band for its label (``labels``: "Unit i: title", "Unit i" or none), each
    no larger than ``max_scale`` (thumbnails) when given."""
    if not units:
        raise ValueError("a sheet needs at least one unit")
    cols = max(1, min(cols, len(units)))
    rows = math.ceil(len(units) / cols)
    gap = 4
    cell_w, cell_h = (max_side - gap * (cols - 1)) // cols, (max_side - gap * (rows - 1)) // rows
    if cell_w < 8 or cell_h <= label_px + 8:
        raise ValueError(f"{len(units)} units in {cols} columns leave cells of {cell_w}x{cell_h} px on a "
                         f"{max_side} px sheet; use fewer units or other columns")
    scales = [fit_scale(u.width, u.height, cell_w, cell_h - label_px,
                        u.max_scale if max_scale is None else min(u.max_scale, max_scale)) for _, u in units]
    tiles, top = [], 0
    for r in range(rows):  # each row as tall as its tallest tile: no empty bands on wide units
        row = list(range(r * cols, min(len(units), (r + 1) * cols)))
        for c, k in enumerate(row):
            index, unit = units[k]
            label = unit_label(index, unit, labels)
            tiles.append(Tile(index, unit.frame, scales[k], (c * (cell_w + gap), top + label_px), label))
        top += label_px + max(tiles[k].size[1] for k in row) + gap
    width = max(t.rect[2] for t in tiles)
    if label_px:  # a labelled cell keeps its width when its thumbnail is smaller: its label has the room
        width = max(width, max(t.at[0] for t in tiles) + cell_w)
    height = max(t.rect[3] for t in tiles)
    shown = tuple(n for n in notes if any(t.unit == n.unit and _inside(t.crop, n.at) for t in tiles))
    return View(view_id, int(width), int(height), tuple(tiles), shown, dict(made_by or {}), dict(style or {}))


def _inside(crop: Box, point: tuple[float, float]) -> bool:
    return crop[0] <= point[0] <= crop[2] and crop[1] <= point[1] <= crop[3]


def region_to_unit(view: View, region: Box) -> tuple[Tile, Box]:
    """The tile a zoom region (fractions of ``view``'s frame) falls in, and the region in
    that tile's unit pixels, clipped to the tile: the tile holding the region's centre.

    ``ValueError`` when the centre lies on no tile (a sheet's gap or label band)."""
    vx0, vy0 = region[0] * view.width, region[1] * view.height
    vx1, vy1 = region[2] * view.width, region[3] * view.height
    tile = view.tile_at((vx0 + vx1) / 2, (vy0 + vy1) / 2)
    if tile is None:
        raise ValueError("the region's centre lies on no image in that view (a sheet's gap or label)")
    clipped = intersect((vx0, vy0, vx1, vy1), tile.rect)
    if clipped is None:
        raise ValueError("the region does not overlap the image under its centre")
    ux0, uy0 = tile.to_unit(clipped[0], clipped[1])
    ux1, uy1 = tile.to_unit(clipped[2], clipped[3])
    inside = intersect((ux0, uy0, ux1, uy1), tile.crop)
    if inside is None:
        raise ValueError("the region maps to no pixels of its unit")
    return tile, inside


def point_to_unit(view: View, x: float, y: float) -> tuple[int, tuple[float, float]] | None:
    """The unit and unit pixel under a point given in fractions of ``view``'s frame."""
    tile = view.tile_at(x * view.width, y * view.height)
    if tile is None:
        return None
    return tile.unit, tile.to_unit(x * view.width, y * view.height)


def shown_px(evidence: Evidence, view: View) -> float:
    """How many view pixels ``evidence``'s detail spans in ``view`` (0 when no tile shows
    all of its ink, or its box where its ink is not known); a unit is never shown with
    more detail than its own pixels hold beyond ``max_scale`` (the scale is capped when
    the view is made)."""
    best = 0.0
    for tile in view.tiles:
        if tile.unit == evidence.unit and contains(tile.crop, evidence.shown_by):
            w, _ = tile.size
            best = max(best, evidence.size * w / (tile.crop[2] - tile.crop[0]))
    return best


def support(evidence: Sequence[Evidence], views: Sequence[View]) -> dict[str, Any]:
    """Which evidence the sent ``views`` support: per item the largest detail shown (view
    pixels) and whether it reached its legible size; ``share`` the supported fraction (1.0
    for a task with no evidence listed)."""
    items = []
    for e in evidence:
        best = max((shown_px(e, v) for v in views), default=0.0)
        items.append({"what": e.what, "unit": e.unit, "shown_px": round(best, 3), "legible": e.legible,
                      "supported": best >= e.legible})
    share = sum(i["supported"] for i in items) / len(items) if items else 1.0
    return {"items": items, "share": share, "all": all(i["supported"] for i in items)}
