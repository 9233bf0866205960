"""Region renderer of chart units and slides: any window of a unit at any scale, with the
detail of that scale.

A chart is rendered once per unit by the chart arm's renderer at its **full detail**,
``spec["dpi"] * unit.max_scale`` dots per inch (a unit pixel is one dot at ``spec["dpi"]``),
and every view is cut from that render or from a copy of it area-averaged down to a
**bucket** (1/8, 1/4, 1/2, 1 and ``max_scale`` times the unit's pixels; the smallest at
or above the view's scale), cached per (unit, bucket). So a zoom shows what the full
render holds, not enlarged pixels, and a thumbnail costs a small cut.

Why one render, not one per bucket at its own dpi: the chart renderer lays a chart out in
device pixels in places (the room for category labels is rounded up to 24 px, a data
label sits 3 px off its bar), so the same chart at 100 and at 200 dpi puts its labels up
to a few dozen unit pixels apart. A unit's pixels must mean one place at every scale: a
zoom is cut by the box the executor saw, notes are burned where they were put, and the
evidence boxes hold at every scale. Rendering costs about the same at any dpi (matplotlib's
per-artist work dominates), so the full-detail render is the only one.

A slide's text (title, bullets, footer) is drawn with PIL at the view's own scale at its
place in unit pixels, so it is sharp at every zoom; its chart is pasted from the bucket
raster. ``naive`` is the baseline a benchmark compares with: the whole unit drawn again at
full detail (the chart re-rendered, the whole slide composed), then cut and resized.

``prepare(task)`` puts in the evidence boxes only the render knows: each target the task
names in ``meta["evidence"]`` (a data label, a series' data labels, a category label, a
legend entry) is found in the render's facts and mapped into unit pixels.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from vicogym.renderers.chart import ChartFacts, ChartRenderer
from vicogym.renderers.evidence import RasterCache, font, resize, supersample
from vicogym.structures.chart import ChartStructure
from vicogym.structures.evidence import LEGIBLE_TEXT_PX, Box, Evidence, Task, Unit

#: unit scales a view is cut from (with the unit's max_scale), each the one below the last halved
BUCKETS = (0.125, 0.25, 0.5, 1.0)
#: how far an evidence box reaches past the label's own box (unit pixels): anti-aliasing, rounding
EVIDENCE_PAD = 1.5
WHITE = (255, 255, 255)
TEXT = (25, 25, 30)
MUTED = (110, 110, 120)
ACCENTS = ((31, 78, 121), (0, 109, 119), (122, 40, 90), (60, 90, 40), (150, 70, 20), (70, 60, 140))
#: slide text, in unit pixels: (font file, size px) of each kind, and the layout
TITLE_FONT, TITLE_PX, TITLE_SMALL_PX = "DejaVuSans-Bold.ttf", 40, 32
BULLET_FONT, BULLET_PX, BULLET_LINE = "DejaVuSans.ttf", 26, 36
FOOTER_PX = 16
MARGIN = 60
TITLE_TOP = 40
BULLET_TOP = 210
BULLET_INDENT = 30
BULLET_GAP = 18
BAND = 12

Item = tuple[str, int, float, float, str, tuple[int, int, int], Box]  # font, px, x, y, text, colour, box


class RegionRenderer:
    """Draws regions of ``chart`` and ``slide`` units (see the module notes). ``settings``
    takes none yet; ``cache_size`` full-detail renders are kept, and eight times as many
    bucket rasters."""

    def __init__(self, settings: Mapping[str, Any] | None = None, cache_size: int = 8):
        if settings:
            raise ValueError(f"the chart region renderer takes no settings, got {sorted(settings)}")
        self.full = RasterCache(cache_size)
        self.buckets = RasterCache(8 * max(1, int(cache_size)))
        self._layouts: dict[str, list[Item]] = {}
        self._renderers: dict[int, ChartRenderer] = {}

    # -- the full-detail render ---------------------------------------------------------------
    def _renderer(self, dpi: int) -> ChartRenderer:
        if dpi not in self._renderers:
            self._renderers[dpi] = ChartRenderer(dpi=dpi)
        return self._renderers[dpi]

    @staticmethod
    def render_dpi(unit: Unit) -> int:
        """The dpi of ``unit``'s full-detail render."""
        dpi = float(unit.spec.get("dpi", 100)) * float(unit.max_scale)
        if abs(dpi - round(dpi)) > 1e-6 or not 30 <= round(dpi) <= 300:
            raise ValueError(f"a chart unit's dpi x max_scale must be a whole dpi in [30, 300], got {dpi:g}")
        return int(round(dpi))

    @staticmethod
    def chart_box(unit: Unit) -> tuple[int, int, int, int]:
        """Where the chart lies in the unit (unit pixels): a slide's ``chart_box``, or the
        whole of a chart unit."""
        if unit.kind == "slide":
            x0, y0, x1, y1 = (int(v) for v in unit.spec["chart_box"])
            return x0, y0, x1, y1
        if unit.kind == "chart":
            return 0, 0, unit.width, unit.height
        raise ValueError(f"the chart region renderer draws chart and slide units, not {unit.kind!r}")

    @staticmethod
    def key(unit: Unit) -> str:
        """What a unit's drawing depends on (its slide layout is cached by it)."""
        text = json.dumps([unit.kind, unit.width, unit.height, dict(unit.spec), float(unit.max_scale)],
                          sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def chart_key(self, unit: Unit) -> str:
        """What a unit's chart render depends on: the chart and the render's dpi (slides of
        one chart share it)."""
        text = json.dumps([unit.spec["chart"], self.render_dpi(unit)], sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def _render(self, unit: Unit) -> tuple[np.ndarray, ChartFacts]:
        facts = self._renderer(self.render_dpi(unit)).render(ChartStructure.from_dict(unit.spec["chart"]))
        return facts.image, facts

    def render(self, unit: Unit) -> tuple[np.ndarray, ChartFacts]:
        """``unit``'s chart at full detail (exactly its box times ``max_scale`` in pixels)
        and what it shows (cached)."""
        image, facts = self.full.get(self.chart_key(unit), lambda: self._render(unit))  # type: ignore[arg-type]
        x0, y0, x1, y1 = self.chart_box(unit)
        size = (round((x1 - x0) * unit.max_scale), round((y1 - y0) * unit.max_scale))
        if (image.shape[1], image.shape[0]) != size:
            raise ValueError(f"the chart renders {image.shape[1]}x{image.shape[0]} px, its box at max_scale is "
                             f"{size[0]}x{size[1]}; make the chart's figure_size x dpi its box in unit pixels")
        return image, facts

    def facts(self, unit: Unit) -> ChartFacts:
        """The chart renderer's facts of ``unit``'s full-detail render (its label and mark
        boxes in render pixels: ``max_scale`` per unit pixel, from the chart's corner)."""
        return self.render(unit)[1]

    def bucket(self, unit: Unit, scale: float) -> float:
        """The smallest bucket at or above ``scale``."""
        top = float(unit.max_scale)
        for b in BUCKETS:
            if b < top and scale <= b + 1e-9:
                return b
        return top

    def chart_raster(self, unit: Unit, bucket: float) -> np.ndarray:
        """The chart at ``bucket`` times its box (area-averaged from the full render)."""
        if bucket >= float(unit.max_scale):
            return self.render(unit)[0]

        def make() -> np.ndarray:
            x0, y0, x1, y1 = self.chart_box(unit)
            size = (max(1, round((x1 - x0) * bucket)), max(1, round((y1 - y0) * bucket)))
            return resize(self.render(unit)[0], size)

        return self.buckets.get(f"{self.chart_key(unit)}@{bucket}", make)

    # -- drawing ------------------------------------------------------------------------------
    def draw(self, unit: Unit, crop: Box, size: tuple[int, int]) -> np.ndarray:
        """The ``crop`` (unit pixels) of ``unit`` drawn at exactly ``size`` (width, height).

        A slide under one view pixel per unit pixel is composed :func:`supersample` times
        larger and area-averaged down, so its text is the share of each pixel the glyphs
        cover, as its chart (cut from an area-averaged raster) already is."""
        scale = max(size[0] / (crop[2] - crop[0]), size[1] / (crop[3] - crop[1]))
        k = supersample(crop, size) if unit.kind == "slide" else 1
        if k > 1:
            big = (int(size[0]) * k, int(size[1]) * k)
            b = self.bucket(unit, scale * k)
            return resize(self._compose(unit, crop, big, self.chart_raster(unit, b), b), size)
        b = self.bucket(unit, scale)
        return self._compose(unit, crop, size, self.chart_raster(unit, b), b)

    def naive(self, unit: Unit, crop: Box, size: tuple[int, int]) -> np.ndarray:
        """The baseline: the chart rendered again and the whole unit composed at full
        detail, then the crop cut and resized."""
        structure = ChartStructure.from_dict(unit.spec["chart"])
        image = self._renderer(self.render_dpi(unit)).render(structure).image
        top = float(unit.max_scale)
        whole = (round(unit.width * top), round(unit.height * top))
        full = self._compose(unit, unit.frame, whole, image, top)
        x0, y0, x1, y1 = (int(round(v * top)) for v in crop)
        return resize(np.ascontiguousarray(full[y0:y1, x0:x1]), size)

    def _compose(self, unit: Unit, crop: Box, size: tuple[int, int], raster: np.ndarray, bucket: float
                 ) -> np.ndarray:
        """The window ``crop`` at ``size``: the slide's text drawn at the view's scale and
        the chart cut from ``raster`` (the chart at ``bucket`` times its box)."""
        w, h = int(size[0]), int(size[1])
        cx0, cy0, cx1, cy1 = (float(v) for v in crop)
        sx, sy = w / (cx1 - cx0), h / (cy1 - cy0)
        if unit.kind == "slide":
            canvas = self._slide_text(unit, crop, (w, h), sx, sy)
        else:
            canvas = np.full((h, w, 3), 255, np.uint8)
        bx0, by0, bx1, by1 = self.chart_box(unit)
        ix0, iy0, ix1, iy1 = max(cx0, bx0), max(cy0, by0), min(cx1, bx1), min(cy1, by1)
        if ix0 >= ix1 or iy0 >= iy1:
            return canvas
        dx0, dy0 = round((ix0 - cx0) * sx), round((iy0 - cy0) * sy)
        dx1, dy1 = min(w, round((ix1 - cx0) * sx)), min(h, round((iy1 - cy0) * sy))
        if dx1 <= dx0 or dy1 <= dy0:
            return canvas
        rh, rw = raster.shape[:2]
        fx, fy = rw / (bx1 - bx0), rh / (by1 - by0)
        sx0, sy0 = round((ix0 - bx0) * fx), round((iy0 - by0) * fy)
        sx1, sy1 = max(sx0 + 1, round((ix1 - bx0) * fx)), max(sy0 + 1, round((iy1 - by0) * fy))
        canvas[dy0:dy1, dx0:dx1] = resize(np.ascontiguousarray(raster[sy0:sy1, sx0:sx1]), (dx1 - dx0, dy1 - dy0))
        return canvas

    # -- slide text -----------------------------------------------------------------------------
    def layout(self, unit: Unit) -> list[Item]:
        """Where a slide's text lies in unit pixels: (font, px, x, y, text, colour, box) per
        line, the title wrapped to the slide's width (smaller when it needs three lines) and
        the bullets to the column left of the chart."""
        k = self.key(unit)
        if k not in self._layouts:
            if len(self._layouts) > 256:
                self._layouts.clear()
            self._layouts[k] = _slide_layout(unit)
        return self._layouts[k]

    def _slide_text(self, unit: Unit, crop: Box, size: tuple[int, int], sx: float, sy: float) -> np.ndarray:
        from PIL import Image, ImageDraw

        w, h = size
        picture = Image.new("RGB", (w, h), WHITE)
        draw = ImageDraw.Draw(picture)
        cx0, cy0, cx1, cy1 = crop
        accent = accent_of(unit)

        def rect(box: Box, fill: tuple[int, int, int], round_dot: bool = False) -> None:
            x0, y0, x1, y1 = ((box[0] - cx0) * sx, (box[1] - cy0) * sy, (box[2] - cx0) * sx, (box[3] - cy0) * sy)
            if x1 > 0 and y1 > 0 and x0 < w and y0 < h:
                shape = [round(x0), round(y0), max(round(x0), round(x1) - 1), max(round(y0), round(y1) - 1)]
                (draw.ellipse if round_dot else draw.rectangle)(shape, fill=fill)

        rect((0, 0, unit.width, BAND), accent)
        rect((MARGIN, unit.height - 52, unit.width - MARGIN, unit.height - 50), (200, 200, 205))
        for name, px, x, y, text, colour, box in self.layout(unit):
            if box[2] <= cx0 or box[0] >= cx1 or box[3] <= cy0 or box[1] >= cy1:
                continue
            if text == "\u2022":
                rect(box, accent, round_dot=True)
                continue
            face = font(name, max(1, round(px * sy)))
            draw.text(((x - cx0) * sx, (y - cy0) * sy), text, font=face, fill=colour, anchor="la")
        return np.asarray(picture).copy()

    # -- evidence ---------------------------------------------------------------------------------
    def prepare(self, task: Task) -> tuple[Task, dict[str, bytes]]:
        """``task`` with the boxes of the evidence targets it names (``meta["evidence"]``)
        found in its charts' renders; no payloads (charts are drawn from their JSON)."""
        targets = task.meta.get("evidence") if isinstance(task.meta, Mapping) else None
        if not targets:
            return task, {}
        if len(targets) != len(task.evidence):
            raise ValueError(f"task {task.id!r} names {len(targets)} evidence targets for {len(task.evidence)} "
                             f"evidence items; a chart task's meta['evidence'] lists one target per item")
        evidence = []
        for t, given in zip(targets, task.evidence):
            unit = task.units[t["unit"]]
            if unit.kind not in ("chart", "slide"):
                evidence.append(given)  # another kind's evidence: its own renderer completes it
                continue
            box = self.evidence_box(unit, t)
            ink = self.evidence_box(unit, t, pad=0.0)
            evidence.append(Evidence(t["unit"], box, float(t["size"]), LEGIBLE_TEXT_PX, t["what"], ink))
        return replace(task, evidence=tuple(evidence)), {}

    def evidence_box(self, unit: Unit, t: Mapping[str, Any], pad: float = EVIDENCE_PAD) -> Box:
        """The unit-pixel box of evidence target ``t`` in ``unit``'s render (the union of
        its label boxes, padded by ``pad``, :data:`EVIDENCE_PAD` by default; unpadded, the
        texts' own extents: the item's ink), inside the unit."""
        facts = self.facts(unit)
        boxes = find_boxes(facts, t, ChartStructure.from_dict(unit.spec["chart"]).spec.chart_type)
        if not boxes:
            raise ValueError(f"unit {t['unit']}'s rendered chart shows no {t['what']}")
        x0, y0, x1, y1 = self.chart_box(unit)
        f = float(unit.max_scale)
        bx0 = x0 + min(b[0] for b in boxes) / f - pad
        by0 = y0 + min(b[1] for b in boxes) / f - pad
        bx1 = x0 + max(b[2] for b in boxes) / f + pad
        by1 = y0 + max(b[3] for b in boxes) / f + pad
        return (max(0.0, bx0), max(0.0, by0), min(float(unit.width), bx1), min(float(unit.height), by1))

    def close(self) -> None:
        self.full.clear()
        self.buckets.clear()
        self._layouts.clear()
        for renderer in self._renderers.values():
            renderer.close()
        self._renderers.clear()


def find_boxes(facts: ChartFacts, t: Mapping[str, Any], chart_type: str) -> list[Sequence[float]]:
    """The render-pixel boxes of target ``t`` in ``facts``: a cell's data label, a
    series' data labels, a row's category label (a pie's legend entry: its text and swatch),
    a series' legend entry (text and swatch)."""
    kind = t["kind"]
    if kind == "data_label":
        return [lab["box"] for lab in facts.labels
                if lab["kind"] == "data_label" and lab.get("row") == t["row"] and lab.get("series") == t["series"]]
    if kind == "data_labels":
        return [lab["box"] for lab in facts.labels if lab["kind"] == "data_label" and lab.get("series") == t["series"]]
    entries = facts.facts.get("legend_entries") or []
    if kind == "category" and chart_type != "pie":
        return [lab["box"] for lab in facts.labels if lab["kind"] == "category" and lab["text"] == t["row"]]
    if kind in ("category", "legend"):
        name = t["row"] if kind == "category" else t["series"]
        return [box for e in entries if e["text"] == name for box in (e["box"], e["handle_box"])]
    raise ValueError(f"unknown evidence target kind {kind!r} (data_label, data_labels, category, legend)")


def accent_of(unit: Unit) -> tuple[int, int, int]:
    """The deck's accent colour (from its name: every slide of a deck shares it)."""
    digest = hashlib.sha256(str(unit.spec.get("footer", "")).encode()).digest()
    return ACCENTS[digest[0] % len(ACCENTS)]


def _wrap(text: str, face: Any, width: float) -> list[str]:
    """``text`` broken at spaces into lines no wider than ``width`` (a word longer than
    that stands alone)."""
    lines: list[str] = []
    for word in text.split():
        if lines and face.getlength(lines[-1] + " " + word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines or [""]


def _line(name: str, px: int, x: float, y: float, text: str, colour: tuple[int, int, int]) -> Item:
    face = font(name, px)
    return (name, px, x, y, text, colour, (x, y, x + face.getlength(text), y + px * 1.2))


def _slide_layout(unit: Unit) -> list[Item]:
    spec = unit.spec
    items: list[Item] = []
    width = unit.width - 2 * MARGIN
    px = TITLE_PX
    lines = _wrap(spec["title"], font(TITLE_FONT, px), width)
    if len(lines) > 2:
        px = TITLE_SMALL_PX
        lines = _wrap(spec["title"], font(TITLE_FONT, px), width)
    y = TITLE_TOP
    for line in lines:
        items.append(_line(TITLE_FONT, px, MARGIN, y, line, TEXT))
        y += px * 1.25
    column = spec["chart_box"][0] - 30 - MARGIN - BULLET_INDENT
    y = max(float(BULLET_TOP), y + 30)
    face = font(BULLET_FONT, BULLET_PX)
    for bullet in spec.get("bullets", ()):
        dot = BULLET_PX * 0.3
        top = y + BULLET_PX * 0.42
        items.append((BULLET_FONT, BULLET_PX, MARGIN, top, "\u2022", TEXT, (MARGIN, top, MARGIN + dot, top + dot)))
        for line in _wrap(bullet, face, column):
            items.append(_line(BULLET_FONT, BULLET_PX, MARGIN + BULLET_INDENT, y, line, TEXT))
            y += BULLET_LINE
        y += BULLET_GAP
    bottom = unit.height - 40
    items.append(_line(BULLET_FONT, FOOTER_PX, MARGIN, bottom, str(spec.get("footer", "")), MUTED))
    page = f"{spec.get('page', '')} / {spec.get('pages', '')}" if spec.get("page") else ""
    if page:
        length = font(BULLET_FONT, FOOTER_PX).getlength(page)
        items.append(_line(BULLET_FONT, FOOTER_PX, unit.width - MARGIN - length, bottom, page, MUTED))
    return items


__all__ = ["BUCKETS", "RegionRenderer", "accent_of", "find_boxes"]
